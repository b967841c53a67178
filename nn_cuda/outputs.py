"""Writing output files: complete or not at all, and never over something that is not a file.

Every file a command writes (checkpoints, predictions, JSON records, the report and its figures, the
grading files, downloads) goes through `atomic_file`:

- the data goes to a hidden temporary file beside the target, renamed over the target only once it
  is complete and on disk (a rename within one folder is atomic): a failed or interrupted write (a
  full disk, Ctrl-C, SIGTERM; see nn_cuda.interrupts) leaves the previous file as it was and no
  temporary file behind;
- a symbolic link is written through: the file it leads to is replaced, the link stays;
- an existing target that is not a regular file (a device such as /dev/null, a FIFO, a folder, a
  socket) is refused, never replaced;
- an operating-system error (a full disk, a read-only folder, a file where a folder should be)
  becomes one OutputError naming the file, the reason and what to do.

`check_output_paths` makes the same checks before a command starts its work, so that a run fails in
its first second rather than after the training.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from pathlib import Path


class OutputError(Exception):
    """An output file cannot be written; `str(error)` is one line naming the file, why and what to do."""


# errno -> what to do about it
ADVICE = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space or write elsewhere",
    errno.EFBIG: "write elsewhere",
    errno.EROFS: "choose a writable folder",
    errno.EACCES: "choose a writable folder",
    errno.EPERM: "choose a writable folder",
}


def write_each(*writers) -> None:
    """Call every writer of `writers` (None: nothing to write), also after one has failed, so that an
    output that cannot be written costs no other; then one OutputError naming every failure."""
    failures = []
    for writer in writers:
        try:
            if writer is not None:
                writer()
        except OutputError as error:
            failures.append(str(error))
    if failures:
        raise OutputError("; ".join(failures))


def write_text(path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_file(path) as stream:
        stream.write(data)


@contextlib.contextmanager
def atomic_file(path):
    """A new binary stream whose contents appear at `path`, complete, only if the with-block succeeds.

    A symbolic link at `path` is written through; a target that exists and is not a regular file
    raises OutputError before anything is written, as does any failure to write (the stream's
    writes, the final rename). On any error or interruption the temporary file is removed and the
    previous file, if any, is left as it was.
    """
    path = Path(path)
    target = _regular_file_target(path)
    _make_folder(path, target.parent)
    temporary = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    try:
        with _open_temporary(temporary, path) as stream:
            yield stream
            with _reported_as_output_error(path):
                stream.flush()
                os.fsync(stream.fileno())  # on disk before the rename makes it the file
        with _reported_as_output_error(path):
            _keep_permissions(target, temporary)
            os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise


def check_output_paths(outputs: dict) -> None:
    """Fail before the work rather than after it when an output file cannot be written.

    `outputs`: {flag: path or None}. A path must be absent or a regular file (through its symbolic
    links), its folder is created here (as the writers would do) and a file must be creatable in it.
    Raises OutputError "FLAG PATH: why; what to do".
    """
    for flag, path in outputs.items():
        if path is None:
            continue
        if not str(path).strip():
            raise OutputError(f"{flag}: the file name is empty; give a path")
        try:
            check_writable(path)
        except OutputError as error:
            raise OutputError(f"{flag} {error}") from None


def check_writable(path) -> None:
    """OutputError unless a file can be written at `path` now (see check_output_paths)."""
    path = Path(path)
    target = _regular_file_target(path)
    _make_folder(path, target.parent)
    probe = target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.probe"
    try:
        probe.open("xb").close()
        probe.unlink()
    except OSError as error:
        raise OutputError(f"{path}: its folder {target.parent} is not writable "
                          f"({_reason(error)}); {_advice(error, 'choose another folder')}") from None


# ---- helpers ----------------------------------------------------------------------------------


def _regular_file_target(path: Path) -> Path:
    """The file that writing `path` replaces (`path` itself, or where its symbolic links lead),
    checked to be absent or a regular file; OutputError otherwise."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return target  # a new file (a file among its folders is _make_folder's to report)
    except OSError as error:
        raise OutputError(_cannot_write(path, error)) from None
    if not stat.S_ISREG(mode):
        link = f" (a link to {target})" if os.path.islink(path) else ""
        raise OutputError(f"{path}{link} is {_kind(mode)}, not a regular file; give a file name")
    return target


def _make_folder(path: Path, folder: Path) -> None:
    """Create `folder`, the folder of output `path` (through its links), and its parents;
    OutputError when one of them is a file (named as `path` names it) or cannot be created."""
    blocking = next((f for f in path.parents if f.exists() and not f.is_dir()), None)
    if blocking is not None:
        raise OutputError(f"{path}: {blocking} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{path}: cannot create its folder ({_reason(error)}); "
                          f"{_advice(error, 'choose another folder')}") from None


class _TemporaryFile(io.FileIO):
    """The raw stream of the temporary file: a write that fails (a full disk) raises OutputError
    naming the final path, so that the caller's message is about the file it asked for."""

    final_path: Path

    def write(self, data):
        try:
            return super().write(data)
        except OSError as error:
            raise OutputError(_cannot_write(self.final_path, error)) from None


def _open_temporary(temporary: Path, path: Path) -> io.BufferedWriter:
    with _reported_as_output_error(path):
        raw = _TemporaryFile(temporary, "xb")  # "x": never reuse a file; permissions follow umask
    raw.final_path = path
    return io.BufferedWriter(raw)


@contextlib.contextmanager
def _reported_as_output_error(path: Path):
    try:
        yield
    except OSError as error:
        raise OutputError(_cannot_write(path, error)) from None


def _keep_permissions(target: Path, temporary: Path) -> None:
    """A replaced file keeps its permission bits (a private file stays private)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))


def _cannot_write(path, error: OSError) -> str:
    return f"{path}: cannot write it ({_reason(error)}); {_advice(error, 'write elsewhere')}"


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _advice(error: OSError, default: str) -> str:
    return ADVICE.get(error.errno, default)


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")
