"""What training leaves behind when its output cannot be written or it is interrupted: the trained
weights somewhere it says, one line and a non-zero exit status, never a traceback or a .part file."""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path


from nn_cuda import grade, train, training
from nn_cuda.checkpoint import load_checkpoint

SMALL = ["--dataset", "mnist-sample", "--quiet", "-n", "8"]
REPOSITORY = Path(__file__).resolve().parent.parent


def leftovers(folder: Path) -> list:
    return sorted(p.name for p in folder.rglob("*.part"))


def break_folder_during_training(monkeypatch, folder: Path, module=training) -> None:
    """After the output paths are checked and the data loaded (by `module`'s load_splits), `folder`
    becomes a file: the writes at the end of the training fail as on a disk that filled up meanwhile."""
    load_splits = module.load_splits

    def load_then_break(*args, **kwargs):
        splits = load_splits(*args, **kwargs)
        folder.rmdir()
        folder.write_text("")
        return splits

    monkeypatch.setattr(module, "load_splits", load_then_break)


def test_weights_that_cannot_be_saved_go_to_the_temporary_folder(tmp_path, monkeypatch, capsys):
    """Before, the failed --save ended in a traceback after the training, and the weights were lost."""
    out, rescue = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    rescue.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(rescue))
    break_folder_during_training(monkeypatch, out)
    assert train.main([*SMALL, "--max-steps", "2", "--save", str(out / "w.npz")]) == 1
    captured = capsys.readouterr()
    assert "validation accuracy" in captured.out  # the training ran
    (line,) = captured.err.splitlines()
    (saved,) = rescue.glob("nn_cuda-weights-*.npz")
    assert line == (f"nn_cuda.train: error: {out / 'w.npz'}: {out} is a file, not a folder; "
                    f"the weights were saved to {saved} instead")
    params, metadata = load_checkpoint(saved)
    assert params["W1"].shape == (8, 784) and metadata["steps"] == 2


def test_weights_that_cannot_be_saved_anywhere_are_said_lost(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    break_folder_during_training(monkeypatch, out)
    assert train.main([*SMALL, "--max-steps", "1", "--save", str(out / "w.npz")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"nn_cuda.train: error: {out / 'w.npz'}: {out} is a file, not a folder; "
                           f"saving them to {tmp_path / 'no-such-folder'} instead failed too")
    assert line.endswith("the trained weights are lost")


def test_a_rescue_that_fails_too_leaves_no_empty_file(tmp_path, monkeypatch, capsys):
    # the rescue's write failing (a full disk) left mkstemp's empty nn_cuda-weights-*.npz behind
    from nn_cuda import checkpoint
    from nn_cuda.outputs import OutputError

    out, rescue = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    rescue.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(rescue))

    def disk_full(path, arrays):
        raise OutputError(f"{path}: cannot write it (No space left on device)")

    monkeypatch.setattr(checkpoint, "_write", disk_full)
    assert train.main([*SMALL, "--max-steps", "1", "--save", str(out / "w.npz")]) == 1
    assert capsys.readouterr().err.rstrip().endswith("the trained weights are lost")
    assert list(rescue.iterdir()) == []


def test_adversarial_outputs_are_written_when_the_save_fails(tmp_path, monkeypatch, capsys):
    # a failed --save stopped --json from being written (and, with --async, --staleness-log)
    from nn_cuda.adversarial import cli
    from nn_cuda.adversarial.cli import main as adversarial_main

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    report = tmp_path / "report.json"
    break_folder_during_training(monkeypatch, out, cli)
    assert adversarial_main(["train", *SMALL, "--max-steps", "1", "--eval-limit", "20", "--save",
                             str(out / "w.npz"), "--json", str(report)]) == 1
    assert f"{out / 'w.npz'}: {out} is a file, not a folder" in capsys.readouterr().err
    assert report.is_file()


def test_a_fifo_as_output_stops_the_run_before_training(tmp_path, capsys):
    """Before, the FIFO (as a device such as /dev/null would be) was replaced by a regular file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for flag in ("--save", "--predictions", "--history", "--profile"):
        assert train.main([*SMALL, "--max-steps", "1", flag, str(fifo)]) == 1
        captured = capsys.readouterr()
        assert captured.err == (f"nn_cuda.train: error: {flag} {fifo} is a FIFO (named pipe), not a "
                                "regular file; give a file name\n")
        assert "validation accuracy" not in captured.out
    assert not fifo.is_file()


def test_grading_outputs_under_a_file_stop_before_training(tmp_path, capsys):
    """Before, `Outputs` being a file ended the grading in a traceback after both trainings."""
    blocker = tmp_path / "Outputs"
    blocker.write_text("")
    assert grade.main(["--mode", "3", "--dataset", "mnist-sample", "--hidden", "4", "--max-steps", "1",
                       "--outputs", str(blocker)]) == 1  # errors.FAILED, as every command
    captured = capsys.readouterr()
    assert captured.err == (f"nn_cuda.grade: error: {blocker / 'NNErrors.txt'}: {blocker} is a file, "
                            "not a folder\n")
    assert "reference" not in captured.out


def test_seq_debug_outputs_under_a_file_stop_before_training(tmp_path, monkeypatch, capsys):
    """-s -d writes Outputs/*.txt after two trainings; before, `Outputs` being a file ended there."""
    monkeypatch.chdir(tmp_path)
    Path("Outputs").write_text("")
    assert train.main([*SMALL, "--max-steps", "2", "-s", "-d"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "nn_cuda.train: error: Outputs/NNErrors.txt: Outputs is a file, not a folder\n"
    assert "validation accuracy" not in captured.out


SAVE_NEVER_ENDS = textwrap.dedent("""
    import sys, time
    import numpy as np
    from nn_cuda.train import main

    def slow_savez(stream, **arrays):
        stream.write(b"the first bytes of a checkpoint")
        stream.flush()
        print("saving", flush=True)
        # in short sleeps, as a real save writes in chunks: a signal that lands on another thread
        # (a BLAS worker) does not interrupt the main thread's sleep, only its next step
        for _ in range(1200):
            time.sleep(0.1)

    np.savez = slow_savez
    sys.exit(main(sys.argv[1:]))
""")


def run_until(line: str, command: list, **kwargs) -> subprocess.Popen:
    """Start `command` and return once it has printed `line` (so a signal sent next lands after it)."""
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"}, **kwargs)
    for printed in job.stdout:
        if printed.startswith(line):
            return job
    job.kill()
    raise AssertionError(f"{command} ended without printing {line!r}: {job.stderr.read()}")


def test_sigterm_during_a_save_leaves_no_temporary_file(tmp_path):
    """Deterministic: the signal is sent while the checkpoint's bytes are being written. Before,
    SIGTERM killed the process at once and the .part file stayed beside the target."""
    target = tmp_path / "w.npz"
    job = run_until("saving", [sys.executable, "-c", SAVE_NEVER_ENDS, *SMALL, "--max-steps", "1",
                               "--save", str(target)])
    assert leftovers(tmp_path) != []  # the save is under way
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 128 + signal.SIGTERM
    assert err == "nn_cuda.train: interrupted (SIGTERM)\n"
    assert leftovers(tmp_path) == [] and not target.exists()


def test_ctrl_c_of_a_serial_run_is_one_line_and_status_130(tmp_path):
    """Before, a KeyboardInterrupt traceback."""
    job = run_until("nn_cuda: mnist-sample", [sys.executable, "-m", "nn_cuda.train", *SMALL, "-e", "100000",
                                              "--save", str(tmp_path / "w.npz")], cwd=tmp_path)
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 130
    assert err == "nn_cuda.train: interrupted (SIGINT)\n"
    assert list(tmp_path.iterdir()) == []

