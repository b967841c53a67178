"""The cache of the CPU builds: private to its user, and what it loads is what was built.

A shared library runs code as soon as it is loaded (its constructors), so a cache that loads any file
with the expected name runs whatever another local user planted there. Hence:
- the folder, `$NN_CUDA_CACHE_DIR/cuda_cpu`, is created 0700 whatever the umask; one owned by
  another user, or a link, is refused (UnsafeBuildCache); one of ours left open by a loose umask is
  closed to 0700 (its files are verified one by one below);
- a library is stored with the SHA-256 of its bytes beside it (`NAME.so.sha256`), both synced to
  disk before they are renamed into place, so a crash cannot leave a half-written library under the
  final name;
- a library is loaded through a descriptor opened without following links, after checking that the
  file is a regular file of ours that no other user can write and that its bytes still have the
  recorded SHA-256; on Linux the loader reads that very descriptor (/proc/self/fd), so nothing can
  be swapped between the check and the load. A library that fails (truncated, empty, replaced,
  another user's) is not loaded: the caller rebuilds it and says so in one line.
A build's manifest (the files it read, build.py) is written 0600 the same way; at worst a damaged
one makes the next lookup build again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
from pathlib import Path

from ..errors import BackendUnavailable
from ..cache import cache_dir

#: the folder of the builds inside the cache directory
FOLDER = "cuda_cpu"
_DIGEST_SUFFIX = ".sha256"
_FIX = "set NN_CUDA_CACHE_DIR to a folder of your own"


class UnsafeBuildCache(BackendUnavailable):
    """The build folder is not private to this user: what it holds could be another user's code."""


def folder() -> Path:
    """The private build folder, created 0700 if missing; UnsafeBuildCache when it belongs to
    another user or is not a plain folder; BackendUnavailable when it cannot be created."""
    path = cache_dir() / FOLDER
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as error:
        raise BackendUnavailable(f"cannot create the kernel build cache {path} ({error.strerror or error}); "
                                 f"{_FIX} that you can write") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeBuildCache(f"the kernel build cache {path} is not a folder (a link or a file); remove it or "
                               f"{_FIX}")
    if info.st_uid != os.geteuid():
        raise UnsafeBuildCache(f"the kernel build cache {path} belongs to another user (uid {info.st_uid}), and "
                               f"what it holds would run as you; {_FIX}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


@contextlib.contextmanager
def building(manifest: Path):
    """The build of the library that `manifest` names, by one process at a time (an exclusive lock on a
    file of its own beside it, released when the process ends): MPI ranks that need the same library
    build it once, the others wait and then find it stored, and none reads it half stored (a library
    and its record are renamed into place one after the other)."""
    descriptor = os.open(manifest.with_name(f".{manifest.name}.lock"),
                         os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def digest_path(library: Path) -> Path:
    return library.with_name(library.name + _DIGEST_SUFFIX)


def store(temporary: Path, library: Path) -> None:
    """Move a freshly built `temporary` to `library`, with the SHA-256 of its bytes recorded beside
    it; both written to disk before they are renamed (another rank may store the same library)."""
    os.chmod(temporary, 0o700)
    data = temporary.read_bytes()
    _sync(temporary)
    recorded = digest_path(temporary)
    descriptor = os.open(recorded, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(descriptor, hashlib.sha256(data).hexdigest().encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, library)
    os.replace(recorded, digest_path(library))


def write_private_text(path: Path, text: str) -> None:
    """Write `text` to `path` (mode 0600) through a file of this process's, renamed into place."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def _sync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def open_verified(library: Path) -> tuple[int | None, str]:
    """(a descriptor of `library`, "") when it may be loaded, else (None, what is wrong with it)."""
    descriptor, problem = _open_own_file(library)
    if descriptor is None:
        return None, problem
    recorded, problem = _recorded_digest(library)
    if recorded is None:
        os.close(descriptor)
        return None, problem
    digest = hashlib.sha256()
    while True:
        chunk = os.read(descriptor, 1 << 20)
        if not chunk:
            break
        digest.update(chunk)
    if digest.hexdigest() != recorded:
        os.close(descriptor)
        return None, "is not what was built (damaged, truncated or replaced)"
    return descriptor, ""


def _open_own_file(path: Path) -> tuple[int | None, str]:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        return None, f"cannot be opened ({error.strerror or error})"
    info = os.fstat(descriptor)
    problem = ""
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif info.st_uid != os.geteuid():
        problem = f"belongs to another user (uid {info.st_uid})"
    elif stat.S_IMODE(info.st_mode) & 0o022:
        problem = "can be written by other users"
    if problem:
        os.close(descriptor)
        return None, problem
    return descriptor, ""


def _recorded_digest(library: Path) -> tuple[str | None, str]:
    descriptor, problem = _open_own_file(digest_path(library))
    if descriptor is None:
        return None, f"has no trustworthy record of what was built (its {_DIGEST_SUFFIX} file {problem})"
    try:
        text = os.read(descriptor, 128).decode(errors="replace").strip()
    finally:
        os.close(descriptor)
    if len(text) != 64:
        return None, f"has a damaged record of what was built (its {_DIGEST_SUFFIX} file)"
    return text, ""


def loader_path(descriptor: int, library: Path) -> str:
    """The name to hand the dynamic loader: the open descriptor itself where the system allows."""
    by_descriptor = f"/proc/self/fd/{descriptor}"
    return by_descriptor if os.path.exists(by_descriptor) else str(library)


def tool_path(descriptor: int, library: Path) -> str:
    """The name under which another process (nm) reads the same file."""
    by_descriptor = f"/proc/{os.getpid()}/fd/{descriptor}"
    return by_descriptor if os.path.exists(by_descriptor) else str(library)


def discard(library: Path) -> None:
    """Remove a library that failed verification, and its record."""
    for path in (library, digest_path(library)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
