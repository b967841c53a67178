"""The host C++ compiler, and the files its preprocessor reads for a source: what a compile cache
must be keyed by.

The CPU build (nn_cuda.cuda_cpu) compiles kernels with this compiler. Both compile caches, the CPU
build's and CuPy's, must change their key when any file a kernel reads changes, including a header
named by a macro (`#include SCALE_HEADER`) or one reached through another header. Only the
preprocessor knows that list: the compiler writes it with -MD (or -M alone), in make's syntax, and
`dependency_list` reads it. NVRTC, which CuPy compiles with, has no such option, so the CuPy
backend asks this compiler's preprocessor instead (`files_read`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path


class CompilerMissing(RuntimeError):
    """No host C++ compiler was found; the message says what to install."""

_COMPILER_HINT = (
    "install one (Debian/Ubuntu: apt install g++; Fedora: dnf install gcc-c++; macOS: "
    "xcode-select --install) or name it in the CXX environment variable"
)


def find_compiler(purpose: str = "backend 'cuda-cpu' compiles kernels/*.cu with a C++ compiler") -> str:
    """The host C++ compiler: $CXX, else g++, clang++ or c++ on PATH; CompilerMissing naming
    `purpose` and what to install when there is none."""
    wanted = os.environ.get("CXX")
    candidates = [wanted] if wanted else ["g++", "clang++", "c++"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return found
    looked_for = f"$CXX={wanted}" if wanted else "g++, clang++ or c++"
    raise CompilerMissing(f"{purpose} and found none ({looked_for}); " + _COMPILER_HINT)


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    """What `compiler --version` prints (part of every cache key: another compiler builds anew)."""
    result = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    return result.stdout


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


@functools.lru_cache(maxsize=None)
def has_fma(compiler: str) -> bool:
    """True when this processor has the FMA instruction, as the compiler sees it (-march=native)."""
    result = subprocess.run([compiler, "-march=native", "-dM", "-E", "-x", "c++", os.devnull],
                            capture_output=True, text=True, timeout=60)
    return "#define __FMA__ 1" in result.stdout


@functools.lru_cache(maxsize=None)
def has_ubsan_runtime(compiler: str) -> bool:
    """True when the compiler can link GCC's undefined-behaviour sanitizer library (libubsan), which
    a library built with a sanitizer that calls handlers (not traps) needs at link time: GCC
    installs have it on Debian and Ubuntu, Fedora's as a package of its own."""
    result = subprocess.run([compiler, "-print-file-name=libubsan.so"], capture_output=True, text=True, timeout=60)
    found = result.stdout.strip()
    return result.returncode == 0 and os.path.isabs(found) and os.path.exists(found)


@functools.lru_cache(maxsize=None)
def accepts(compiler: str, flag: str) -> bool:
    """True when the compiler takes `flag` (GCC 10 and clang 12 brought -fno-finite-loops, say)."""
    result = subprocess.run([compiler, flag, "-fsyntax-only", "-x", "c++", os.devnull], capture_output=True,
                            timeout=60)
    return result.returncode == 0


# A make rule: "target: first second \<newline> third", where a space inside a name is "\ ".
_CONTINUATION = re.compile(r"\\\r?\n")
_NAME = re.compile(r"(?:\\.|[^\s\\])+")


def dependency_list(make_rule: str) -> list[Path]:
    """The prerequisites of the first rule in what -M / -MD writes, in its order."""
    text = _CONTINUATION.sub(" ", make_rule)
    _, separator, prerequisites = text.partition(": ")
    if not separator:
        return []
    first_rule = prerequisites.split("\n", 1)[0]
    return [Path(re.sub(r"\\(.)", r"\1", name)) for name in _NAME.findall(first_rule)]


class PreprocessorFailed(RuntimeError):
    """The preprocessor could not read a source (its message is the compiler's)."""


def files_read(source: Path, flags=(), compiler: str | None = None) -> list[Path]:
    """Every file the preprocessor reads for `source` with `flags` (-I, -D, -std), `source` first.

    A header it cannot find is listed too (-MG: the kernel's own compiler may provide it, as NVRTC
    provides cuda_fp16.h), under the name the source gives it.
    """
    compiler = compiler or find_compiler("listing the headers a kernel reads needs a C++ compiler")
    command = [compiler, "-x", "c++", *flags, "-M", "-MG", str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise PreprocessorFailed(result.stderr.strip() or f"{Path(compiler).name} exited with {result.returncode}")
    return dependency_list(result.stdout)


def files_digest(paths) -> str:
    """SHA-256 of the names and contents of `paths` (a name that is not a file counts by its name)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(f"{path}\0".encode())
        if os.path.isfile(path):
            digest.update(Path(path).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
