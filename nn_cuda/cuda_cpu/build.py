"""Building kernels/*.cu for the CPU: the host C++ compiler, one shared library per kernel file.

A library holds runtime.h (the CUDA built-ins on fibers), the kernel file unchanged, and a table of
the template instances that `nn_cuda.kernel_info.name_expressions` lists for it, in that order. It is
built once per content hash (the kernel file and every header it includes, the instances, the
compiler and the flags) into the cache directory, `$NN_CUDA_CACHE_DIR/cuda_cpu` (default
`~/.cache/nn_cuda/cuda_cpu`), so a second run loads it at once; the build
writes a temporary file and renames it, so concurrent ranks are safe.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import kernel_info
from ..cache import cache_dir
from ..backends.base import BackendUnavailable, KernelFailure

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


def library_path(filename: str, check: bool) -> Path:
    """The cached shared library of kernels/<filename>, built first if needed."""
    compiler = find_compiler()
    kernel_file = kernel_info.kernel_dir() / filename
    unit = translation_unit(kernel_file, kernel_info.name_expressions(filename))
    flags = [*BASE_FLAGS, *(CHECK_FLAGS if check else ()), f"-I{kernel_file.parent}"]

    key = hashlib.sha256()
    for part in (unit, RUNTIME_HEADER.read_text(), kernel_info.sources_digest(kernel_file, [kernel_file.parent]),
                 compiler,
                 _compiler_version(compiler), " ".join(flags)):
        key.update(part.encode())
    target = cache_dir() / "cuda_cpu" / f"{Path(filename).stem}-{key.hexdigest()[:16]}.so"
    if not target.is_file():
        _compile(compiler, flags, unit, target, filename)
    return target


def _compile(compiler: str, flags: list, unit: str, target: Path, filename: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Built under a name of this process's, then renamed: another rank may build the same library.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="nn_cuda_cpu_") as work:
        source = Path(work) / f"{Path(filename).stem}_cpu.cpp"
        source.write_text(unit)
        command = [compiler, *flags, "-o", str(temporary), str(source)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                raise KernelBuildError(
                    f"kernels/{filename} does not compile for the CPU ({Path(compiler).name} exited with "
                    f"status {result.returncode}):\n{result.stderr.strip()}"
                )
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
