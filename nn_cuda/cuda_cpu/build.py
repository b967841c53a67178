"""Building kernels/*.cu for the CPU: the host C++ compiler, one shared library per kernel file.

A library holds runtime.h (the CUDA built-ins on fibers), the kernel file unchanged, and a table of
the template instances that `nn_cuda.kernel_info.name_expressions` lists for it, in that order. It is
built once per content hash (the kernel file and every header it includes, the instances, the
compiler and the flags) into the private build cache, `$NN_CUDA_CACHE_DIR/cuda_cpu` (default
`~/.cache/nn_cuda/cuda_cpu`; build_cache.py), so a second run loads it at once; the build writes a
temporary file and renames it, so concurrent ranks are safe. `load_library` loads a library only
after checking that it is what was built, and rebuilds one that is not, saying so in one line.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import kernel_info
from ..backends.base import BackendUnavailable, KernelFailure
from . import build_cache

RUNTIME_HEADER = Path(__file__).with_name("runtime.h")

# -O2: the kernels' loops are worth optimising; -U_FORTIFY_SOURCE: the fibers switch stacks, which
# glibc's fortified longjmp checks would take for stack corruption; #pragma unroll is CUDA's.
BASE_FLAGS = ("-O2", "-std=c++17", "-fPIC", "-shared", "-U_FORTIFY_SOURCE", "-Wno-unknown-pragmas")
# The checking mode traps indices outside a fixed-size array (__shared__ tiles, c[16]) with no
# run-time library: the trap instruction raises SIGILL, which the launcher reports.
CHECK_FLAGS = ("-fsanitize=bounds", "-fsanitize-undefined-trap-on-error")

_COMPILER_HINT = (
    "install one (Debian/Ubuntu: apt install g++; Fedora: dnf install gcc-c++; macOS: "
    "xcode-select --install) or name it in the CXX environment variable"
)


class KernelBuildError(KernelFailure):
    """A kernel file does not compile for the CPU; the message holds the compiler's diagnostics."""


def find_compiler() -> str:
    """The host C++ compiler: $CXX, else g++, clang++ or c++ on PATH."""
    wanted = os.environ.get("CXX")
    candidates = [wanted] if wanted else ["g++", "clang++", "c++"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return found
    looked_for = f"$CXX={wanted}" if wanted else "g++, clang++ or c++"
    raise BackendUnavailable(
        f"backend 'cuda-cpu' compiles kernels/*.cu with a C++ compiler and found none ({looked_for}); "
        + _COMPILER_HINT
    )


@functools.lru_cache(maxsize=None)
def _compiler_version(compiler: str) -> str:
    result = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    return result.stdout


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
    """(compiler, flags, translation unit, the library's path in the cache) of kernels/<filename>."""
    compiler = find_compiler()
    kernel_file = kernel_info.kernel_path(filename)
    unit = translation_unit(kernel_file, kernel_info.name_expressions(filename))
    flags = [*BASE_FLAGS, *(CHECK_FLAGS if check else ()), f"-I{kernel_file.parent}"]
    key = hashlib.sha256()
    for part in (unit, RUNTIME_HEADER.read_text(), kernel_info.sources_digest(kernel_file, [kernel_file.parent]),
                 compiler, _compiler_version(compiler), " ".join(flags)):
        key.update(part.encode())
    return compiler, flags, unit, build_cache.folder() / f"{Path(filename).stem}-{key.hexdigest()[:16]}.so"


def library_path(filename: str, check: bool) -> Path:
    """The cached shared library of kernels/<filename>, built first if missing."""
    compiler, flags, unit, target = _build_plan(filename, check)
    if not target.is_file():
        _compile(compiler, flags, unit, target, filename)
    return target


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


def _compile(compiler: str, flags: list, unit: str, target: Path, filename: str) -> None:
    # Built under a name of this process's, then renamed: another rank may build the same library.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="nn_cuda_cpu_") as work:
        source = Path(work) / f"{Path(filename).stem}_cpu.cpp"
        source.write_text(unit)
        command = [compiler, *flags, "-o", str(temporary), str(source)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                written = next((line for line in result.stderr.splitlines()
                                if any(failure in line for failure in _WRITE_FAILURES)), None)
                if written is not None:
                    raise BackendUnavailable(
                        f"the CPU build of kernels/{filename} could not be written to {target.parent} "
                        f"({written.strip()}); free space there or set NN_CUDA_CACHE_DIR to a writable folder")
                # The generated file is deleted with `work`: name it by what it holds.
                log = result.stderr.strip().replace(str(source), f"(the instance table of {filename})")
                raise KernelBuildError(
                    f"kernels/{filename} does not compile for the CPU ({Path(compiler).name} exited with "
                    f"status {result.returncode}):\n{log}"
                )
            build_cache.store(temporary, target)
        except OSError as error:
            raise BackendUnavailable(
                f"the CPU build of kernels/{filename} could not be written to {target.parent} "
                f"({error.strerror or error}); free space there or set NN_CUDA_CACHE_DIR to a writable folder"
            ) from None
        finally:
            temporary.unlink(missing_ok=True)
            build_cache.digest_path(temporary).unlink(missing_ok=True)
