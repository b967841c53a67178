"""The one writer of output files (nn_cuda.outputs): through symbolic links, never over a device, a
FIFO or a folder, all or nothing when the disk fails mid-write, and the same checks before a run."""

import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nn_cuda.checkpoint import load_checkpoint, save_checkpoint
from nn_cuda.outputs import OutputError, atomic_file, check_output_paths, write_text


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".part", ".probe")))


def test_a_symbolic_link_is_written_through_and_kept(tmp_path):
    """Before, the link was replaced by a regular file and its target left stale."""
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "pred.txt"
    target.write_text("old")
    link = tmp_path / "pred.txt"
    link.symlink_to(target)
    old_inode = target.stat().st_ino
    with atomic_file(link) as stream:
        stream.write(b"new")
        # the temporary file lies beside the target (the rename is atomic within one folder)
        assert len(leftovers(tmp_path / "runs")) == 1 and leftovers(tmp_path) == []
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert target.stat().st_ino != old_inode  # replaced by a rename, not rewritten in place
    assert leftovers(tmp_path / "runs") == []


def test_a_dangling_link_gets_its_target_written(tmp_path):
    link = tmp_path / "latest.npz"
    link.symlink_to(tmp_path / "weights" / "run1.npz")
    write_text(link, "x")
    assert link.is_symlink() and (tmp_path / "weights" / "run1.npz").read_text() == "x"


@pytest.mark.parametrize("make, kind", [
    (os.mkfifo, "a FIFO (named pipe)"),
    (os.mkdir, "a folder"),
])
def test_a_target_that_is_not_a_regular_file_is_refused(tmp_path, make, kind):
    """Before, a FIFO (like a device such as /dev/null) was replaced by a regular file."""
    special = tmp_path / "special"
    make(special)
    with pytest.raises(OutputError) as error:
        write_text(special, "data")
    assert str(error.value) == f"{special} is {kind}, not a regular file; give a file name"
    assert not stat.S_ISREG(special.stat().st_mode)  # left as it was
    link = tmp_path / "link"
    link.symlink_to(special)
    with pytest.raises(OutputError) as error:
        write_text(link, "data")
    assert str(error.value).startswith(f"{link} (a link to {special}) is {kind}, not a regular file")
    assert link.is_symlink() and leftovers(tmp_path) == []


def test_output_paths_are_checked_as_the_writer_checks_them(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputError) as error:
        check_output_paths({"--save": None, "--json": tmp_path / "ok.json", "--predictions": fifo})
    assert str(error.value) == f"--predictions {fifo} is a FIFO (named pipe), not a regular file; give a file name"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OutputError, match=f"--history {blocker / 'sub' / 'h.json'}: {blocker} is a file, not a folder"):
        check_output_paths({"--history": blocker / "sub" / "h.json"})
    check_output_paths({"--save": tmp_path / "new" / "w.npz"})
    assert (tmp_path / "new").is_dir() and leftovers(tmp_path / "new") == []


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "private.json"
    path.write_text("{}")
    path.chmod(0o600)
    write_text(path, "[]")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "[]"


DISK_FILLS_UP = textwrap.dedent("""
    import resource, signal, sys
    import numpy as np
    from nn_cuda.checkpoint import save_checkpoint
    from nn_cuda.outputs import OutputError, write_text

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    big = {"W1": np.ones((40, 784)), "b1": np.ones(40), "W2": np.ones((10, 40)), "b2": np.ones(10)}
    try:
        if sys.argv[1] == "text":
            write_text(sys.argv[2], "x" * 100_000)
        else:
            save_checkpoint(sys.argv[2], big)
    except OutputError as error:
        print(error)
""")


@pytest.mark.parametrize("writer", ["text", "checkpoint"])
def test_a_write_failing_midway_leaves_the_previous_file_and_no_temporary_file(tmp_path, writer):
    """A real failure of the operating system after 4 KiB (the file-size limit, as a full disk fails
    a write): one OutputError line, the old file intact, no .part file. Subprocess: the limit holds
    for the whole process."""
    target = tmp_path / "out"
    previous = {"W1": np.zeros((1, 784)), "b1": np.zeros(1), "W2": np.zeros((10, 1)), "b2": np.zeros(10)}
    save_checkpoint(target, previous)
    before = target.read_bytes()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp_path / "no-such-folder")}
    result = subprocess.run([sys.executable, "-c", DISK_FILLS_UP, writer, str(target)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0 and result.stderr == ""
    (message,) = result.stdout.splitlines()
    assert message.startswith(f"{target}: cannot write it (File too large); write elsewhere")
    if writer == "checkpoint":  # the rescue copy in the system's temporary folder fails too, and says so
        assert "instead failed too" in message and message.endswith("the trained weights are lost")
    assert target.read_bytes() == before
    np.testing.assert_array_equal(load_checkpoint(target)[0]["W1"], previous["W1"])
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, RuntimeError])
def test_an_error_inside_the_block_removes_the_temporary_file(tmp_path, interruption):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(interruption):
        with atomic_file(target) as stream:
            stream.write(b"half")
            raise interruption
    assert target.read_bytes() == b"old" and leftovers(tmp_path) == []
    with atomic_file(target) as stream:  # and the next write goes through
        stream.write(b"new")
    assert target.read_bytes() == b"new" and leftovers(tmp_path) == []
