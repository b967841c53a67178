"""Building kernels/*.cu for the CPU: the host C++ compiler, one shared library per kernel file.

A library holds runtime.h (the CUDA built-ins on fibers), the kernel file unchanged, and a table of
the template instances that `nn_cuda.kernel_info.name_expressions` lists for it, in that order. It is
built once into the private build cache, `$NN_CUDA_CACHE_DIR/cuda_cpu` (default
`~/.cache/nn_cuda/cuda_cpu`; build_cache.py), so a second run loads it at once.

A library is named by the files it was built from, the way ccache's direct mode finds a result:
every build writes the compiler's own list of the files its preprocessor read (-MD), the kernel
file, every header, a header named by a macro, runtime.h and the system headers, into a manifest
keyed by what is known before compiling (the translation unit, the compiler and its version, the
flags). A lookup reads that manifest and hashes the files it lists, now: an edit to any of them gives
another name, which is not in the cache, so the kernel is built again. The build writes temporary
files and renames them, so concurrent ranks are safe. `load_library` loads a library only after
checking that it is what was built, and rebuilds one that is not, saying so in one line.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import host_compiler, kernel_info
from ..backends.base import BackendUnavailable, KernelFailure
from . import build_cache

RUNTIME_HEADER = Path(__file__).with_name("runtime.h")

# -O2: the kernels' loops are worth optimising; -U_FORTIFY_SOURCE: the fibers switch stacks, which
# glibc's fortified longjmp checks would take for stack corruption; #pragma unroll is CUDA's.
BASE_FLAGS = ("-O2", "-std=c++17", "-fPIC", "-shared", "-U_FORTIFY_SOURCE", "-Wno-unknown-pragmas")
# The checking mode traps indices outside a fixed-size array (__shared__ tiles, c[16]) with no
# run-time library: the trap instruction raises SIGILL, which the launcher reports.
CHECK_FLAGS = ("-fsanitize=bounds", "-fsanitize-undefined-trap-on-error")



class KernelBuildError(KernelFailure):
    """A kernel file does not compile for the CPU; the message holds the compiler's diagnostics."""


def find_compiler() -> str:
    """The host C++ compiler: $CXX, else g++, clang++ or c++ on PATH."""
    try:
        return host_compiler.find_compiler()
    except host_compiler.CompilerMissing as missing:
        raise BackendUnavailable(str(missing)) from None


def translation_unit(kernel_file: Path, instances: list[str]) -> str:
    """The C++ source of one library: the runtime, the kernel file, its instance table."""
    rows = "".join(f"    NN_CUDA_CPU_INSTANCE({name}),\n" for name in instances)
    return (
        f'#include "{RUNTIME_HEADER.as_posix()}"\n'
        f'#include "{kernel_file.resolve().as_posix()}"\n\n'
        f"static const nn_cuda_cpu::Instance instances[] = {{\n{rows}}};\n"
        "NN_CUDA_CPU_EXPORT(instances)\n"
    )


def _build_plan(filename: str, check: bool) -> tuple[str, list, str, Path]:
    """(compiler, flags, translation unit, the manifest of kernels/<filename>'s build in the cache)."""
    compiler = find_compiler()
    kernel_file = kernel_info.kernel_path(filename)
    unit = translation_unit(kernel_file, kernel_info.name_expressions(filename))
    flags = [*BASE_FLAGS, *(CHECK_FLAGS if check else ()), f"-I{kernel_file.parent}"]
    key = hashlib.sha256()
    for part in (unit, compiler, host_compiler.compiler_version(compiler), " ".join(flags)):
        key.update(part.encode())
        key.update(b"\0")
    return compiler, flags, unit, build_cache.folder() / f"{Path(filename).stem}-{key.hexdigest()[:16]}{_MANIFEST}"


#: the manifest's suffix: the files the preprocessor read for one translation unit, one per line
_MANIFEST = ".deps"


def _library_named_by(manifest: Path, files_read: list[Path]) -> Path:
    """The library built from the current contents of `files_read` under this manifest's key."""
    digest = host_compiler.files_digest(files_read)
    return manifest.with_name(f"{manifest.name[:-len(_MANIFEST)]}-{digest[:16]}.so")


def _cached_library(manifest: Path) -> Path | None:
    """The library the manifest names for the files as they are now; None when there is no
    manifest, when a file it lists is gone, or when the library for today's contents is not built."""
    try:
        listed = [Path(line) for line in manifest.read_text().splitlines() if line]
    except (OSError, UnicodeDecodeError):
        return None
    if not listed or not all(path.is_file() for path in listed):
        return None
    library = _library_named_by(manifest, listed)
    return library if library.is_file() else None


def library_path(filename: str, check: bool) -> Path:
    """The cached shared library of kernels/<filename>, built first if missing or if a file it was
    built from has changed since."""
    compiler, flags, unit, manifest = _build_plan(filename, check)
    return _cached_library(manifest) or _compile(compiler, flags, unit, manifest, filename)


def load_library(filename: str, check: bool) -> tuple[ctypes.CDLL, str]:
    """(the loaded library of kernels/<filename>, a name under which another process reads it).

    Built first if missing; a cached library that is not what was built (build_cache.open_verified)
    is never loaded: it is built again, and one line on stderr says why.
    """
    target = library_path(filename, check)
    descriptor, problem = build_cache.open_verified(target)
    if descriptor is None:
        print(f"nn_cuda: the cached CPU build of kernels/{filename} ({target.name}) {problem}; building it again",
              file=sys.stderr)
        build_cache.discard(target)
        library_path(filename, check)
        descriptor, problem = build_cache.open_verified(target)
        if descriptor is None:
            raise KernelBuildError(f"the CPU build of kernels/{filename} {problem} right after it was built, in "
                                   f"{target.parent}; set NN_CUDA_CACHE_DIR to a folder of your own")
    # The descriptor stays open: the library is never unloaded, and nm reads it through it.
    return (ctypes.CDLL(build_cache.loader_path(descriptor, target)),
            build_cache.tool_path(descriptor, target))


#: what the compiler says when it could not write its output (the kernel is not at fault)
_WRITE_FAILURES = ("No space left on device", "Read-only file system", "Permission denied",
                   "cannot open output file", "Disk quota exceeded")


def _compile(compiler: str, flags: list, unit: str, manifest: Path, filename: str) -> Path:
    """Build the library, then store it under the name of the files it was built from, and the list
    of those files as the manifest; return the library's path."""
    # Built under a name of this process's, then renamed: another rank may build the same library.
    temporary = manifest.with_name(f".{manifest.stem}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="nn_cuda_cpu_") as work:
        source = Path(work) / f"{Path(filename).stem}_cpu.cpp"
        source.write_text(unit)
        depfile = Path(work) / "files_read.d"
        command = [compiler, *flags, "-MD", "-MF", str(depfile), "-o", str(temporary), str(source)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                written = next((line for line in result.stderr.splitlines()
                                if any(failure in line for failure in _WRITE_FAILURES)), None)
                if written is not None:
                    raise BackendUnavailable(
                        f"the CPU build of kernels/{filename} could not be written to {manifest.parent} "
                        f"({written.strip()}); free space there or set NN_CUDA_CACHE_DIR to a writable folder")
                # The generated file is deleted with `work`: name it by what it holds.
                log = result.stderr.strip().replace(str(source), f"(the instance table of {filename})")
                raise KernelBuildError(
                    f"kernels/{filename} does not compile for the CPU ({Path(compiler).name} exited with "
                    f"status {result.returncode}):\n{log}"
                )
            # The unit itself is in the manifest's key; the files it reads name the library.
            read = [path.resolve() for path in host_compiler.dependency_list(depfile.read_text())
                    if path != source]
            target = _library_named_by(manifest, read)
            build_cache.store(temporary, target)
            build_cache.write_private_text(manifest, "".join(f"{path}\n" for path in read))
            return target
        except OSError as error:
            raise BackendUnavailable(
                f"the CPU build of kernels/{filename} could not be written to {manifest.parent} "
                f"({error.strerror or error}); free space there or set NN_CUDA_CACHE_DIR to a writable folder"
            ) from None
        finally:
            temporary.unlink(missing_ok=True)
            build_cache.digest_path(temporary).unlink(missing_ok=True)
