"""The CUDA C kernels of kernels/*.cu: where they are, which template instances exist, and the
options they are compiled with.

The .cu files hold templates only (no `extern "C"`, no explicit instantiations), which is what CuPy
wants: it compiles a file with NVRTC and instantiates exactly the kernels named in
`name_expressions`. This module owns that list (`name_expressions(filename)`) and the compiler
options (`compile_options()`); the CuPy backend, the CPU build (nn_cuda.cuda_cpu) and the compile
checks (nn_cuda.kernel_resources) all read them, so they can never disagree.
`NN_CUDA_KERNEL_DIR=DIR` points all of them at an edited copy of kernels/.
"""


from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from . import host_compiler

# ---- the kernels and their instances ------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GemmKernel:
    """One rung of the course's GEMM ladder: its algorithm name, its file in kernels/, a one-line
    summary. Its template is gemm_<algo> (and its Numba mirror, where there is one,
    nn_cuda/backends/numba_kernels/gemm_<algo>.py)."""

    algo: str
    file: str
    summary: str

    @property
    def template(self) -> str:
        return f"gemm_{self.algo}"


#: The hand-written GEMM kernels, simplest first. Adding a GEMM is its .cu file in kernels/ (with its
#: `// launch:` line, see nn_cuda/kernel_geometry.py) plus one line here: every list of GEMM
#: algorithms in the code (backends, launches, instances, compile checks, benchmarks) derives from it.
GEMM_LADDER = (
    GemmKernel("naive", "gemm1_naive.cu", "one thread per element of C, operands read from global memory"),
    GemmKernel("tiled", "gemm2_tiled.cu", "square tiles of op(A) and op(B) staged in shared memory"),
    GemmKernel("regblock", "gemm3_regblock.cu", "the course's register blocking: a row of C per thread in registers"),
)
#: the algorithm names of the ladder, in its order
KERNEL_GEMMS = tuple(gemm.algo for gemm in GEMM_LADDER)
#: GEMM algorithm -> the file that implements it
GEMM_KERNEL_FILES = {gemm.algo: gemm.file for gemm in GEMM_LADDER}
#: the file of the element-wise and reduction kernels, and the templates it defines
NN_OPS_FILE = "nn_ops.cu"
NN_OPS = (
    "bias_sigmoid", "bias_softmax", "softmax_grad", "sigmoid_backward", "col_sum", "sgd_update", "pgd_step",
)

#: NumPy dtype name -> CUDA C type
CUDA_TYPES = {"float32": "float", "float64": "double"}


def _cuda_type(dtype) -> str:
    name = np.dtype(dtype).name
    try:
        return CUDA_TYPES[name]
    except KeyError:
        raise ValueError(
            f"the CUDA kernels support float32 and float64, not {name}; convert the arrays first"
        ) from None


@functools.lru_cache(maxsize=None)
def gemm_kernel_name(algo: str, dtype, trans_a: bool, trans_b: bool) -> str:
    """The template instance, e.g. 'gemm_tiled<float, false, true>' (a CuPy name expression)."""
    flag = {False: "false", True: "true"}
    return f"gemm_{algo}<{_cuda_type(dtype)}, {flag[bool(trans_a)]}, {flag[bool(trans_b)]}>"


@functools.lru_cache(maxsize=None)
def nn_op_kernel_name(op: str, dtype) -> str:
    """The template instance of an element-wise or reduction kernel, e.g. 'col_sum<double>'."""
    return f"{op}<{_cuda_type(dtype)}>"


def name_expressions(filename: str) -> list[str]:
    """Every template instance that `filename` (a name in kernels/) must provide."""
    dtypes = tuple(CUDA_TYPES)
    for algo, gemm_file in GEMM_KERNEL_FILES.items():
        if filename == gemm_file:
            return [
                gemm_kernel_name(algo, dtype, trans_a, trans_b)
                for dtype in dtypes
                for trans_a in (False, True)
                for trans_b in (False, True)
            ]
    if filename == NN_OPS_FILE:
        return [nn_op_kernel_name(op, dtype) for dtype in dtypes for op in NN_OPS]
    known = ", ".join([*GEMM_KERNEL_FILES.values(), NN_OPS_FILE])
    raise ValueError(
        f"no kernel list for {filename!r}; known files: {known} "
        "(a new kernels/*.cu file needs its instances listed in nn_cuda/kernel_info.py)"
    )


# ---- where the kernels are ----------------------------------------------------------------------

#: names a directory that replaces kernels/ (an edited copy of it) for compiling and loading
KERNEL_DIR_VARIABLE = "NN_CUDA_KERNEL_DIR"


def kernel_dir() -> Path:
    """$NN_CUDA_KERNEL_DIR when set, else kernels/ at the repository root, next to the nn_cuda package."""
    chosen = os.environ.get(KERNEL_DIR_VARIABLE)
    if chosen:
        return _chosen_kernel_dir(Path(chosen))
    return project_kernel_dir()


@contextlib.contextmanager
def kernels_from(folder: Path):
    """KERNEL_DIR_VARIABLE pointed at `folder` for the duration (every backend reads it)."""
    previous = os.environ.get(KERNEL_DIR_VARIABLE)
    os.environ[KERNEL_DIR_VARIABLE] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(KERNEL_DIR_VARIABLE, None)
        else:
            os.environ[KERNEL_DIR_VARIABLE] = previous


def project_kernel_dir() -> Path:
    """The project's own kernels/ (what Numba's mirrors mirror, whatever NN_CUDA_KERNEL_DIR says)."""
    path = Path(__file__).resolve().parent.parent / "kernels"
    if not path.is_dir():
        raise FileNotFoundError(
            f"the CUDA kernels directory {path} is missing; install nn_cuda from a checkout of the "
            "repository in editable mode (pip install -e .) so that kernels/ sits next to nn_cuda/"
        )
    return path


def describe_kernel_dir() -> str:
    """Which kernel files run, for the first lines of a run: 'kernels: DIR (NN_CUDA_KERNEL_DIR)'."""
    if os.environ.get(KERNEL_DIR_VARIABLE):
        return f"kernels: {kernel_dir()} ({KERNEL_DIR_VARIABLE})"
    return f"kernels: {kernel_dir()} (the project's)"


def _chosen_kernel_dir(path: Path) -> Path:
    if not path.is_dir():
        raise FileNotFoundError(
            f"{KERNEL_DIR_VARIABLE}={path} is not a directory; point it at a copy of kernels/ or unset it"
        )
    if not any(path.glob("*.cu")):
        raise FileNotFoundError(
            f"{KERNEL_DIR_VARIABLE}={path} holds no .cu files; point it at a copy of kernels/ or unset it"
        )
    return path.resolve()


def kernel_files() -> list[Path]:
    """Every kernels/*.cu file, sorted by name."""
    return sorted(kernel_dir().glob("*.cu"))


class MissingKernelFile(ValueError):
    """The kernel folder lacks a file the project launches kernels from."""


def kernel_path(filename: str) -> Path:
    """kernels/<filename> (or in $NN_CUDA_KERNEL_DIR); MissingKernelFile when it is not there."""
    path = kernel_dir() / filename
    if not path.is_file():
        where = f"{KERNEL_DIR_VARIABLE}={path.parent}" if os.environ.get(KERNEL_DIR_VARIABLE) else str(path.parent)
        raise MissingKernelFile(f"{where} has no {filename}; copy it from the project's kernels/ folder "
                                "(every file of it is needed)")
    return path


#: the line a course workspace (nn_cuda.workspace) leaves for a task's body until it is written
TASK_TODO = "TODO (task {name})"
_TASK_TODO = re.compile(re.escape(TASK_TODO).replace(re.escape("{name}"), r"(\w+)"))


def todo_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, task name) of every workspace TODO line in the file `path` (none if it is absent)."""
    lines = path.read_text().splitlines() if path.is_file() else []
    return [(number, match[1]) for number, line in enumerate(lines, 1) if (match := _TASK_TODO.search(line))]


def unwritten_tasks(filenames) -> list[str]:
    """'PATH:LINE (task NAME)' for every workspace TODO line left in kernels/<filename> of `filenames`."""
    return [f"{path}:{number} (task {task})" for path in map(kernel_path, filenames)
            for number, task in todo_lines(path)]


def course_check_command() -> str:
    """The command that checks the tasks of the workspace whose kernels are in use (NN_CUDA_KERNEL_DIR)."""
    return f"python -m nn_cuda.course check {kernel_dir().parent}"


def files_launched_by_training(gemm: str) -> list[str]:
    """The kernel files a training run with GEMM algorithm `gemm` launches kernels of."""
    return [*([GEMM_KERNEL_FILES[gemm]] if gemm in GEMM_KERNEL_FILES else []), NN_OPS_FILE]


def kernel_source(filename: str) -> str:
    """The CUDA C source of kernels/<filename>."""
    return kernel_path(filename).read_text()


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)


def included_files(path: Path, include_dirs=()) -> list[Path]:
    """`path` and every file it #includes by a literal name, directly or through another header,
    found beside the including file (for "...") or in `include_dirs`. A scan of the #include lines,
    for where no preprocessor is at hand: an #include whose name is a macro is not followed, which
    is why `files_read` asks the preprocessor first."""
    found, pending = [], [Path(path).resolve()]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.append(current)
        for quote, name in _INCLUDE.findall(current.read_text(errors="replace")):
            folders = ([current.parent] if quote == '"' else []) + [Path(folder) for folder in include_dirs]
            for folder in folders:
                candidate = (folder / name).resolve()
                if candidate.is_file():
                    pending.append(candidate)
                    break
    return found


#: what NVRTC defines in every compile, so that the host preprocessor takes NVRTC's branches
NVRTC_MACROS = ("-D__CUDACC__", "-D__CUDACC_RTC__")


def files_read(filename: str) -> list[Path]:
    """Every file the preprocessor reads when NVRTC compiles kernels/<filename> with
    `compile_options()`: the file, its headers at any depth, a header named by a macro. NVRTC cannot
    list them (it has no -M option), so the host C++ compiler's preprocessor does, with NVRTC's
    macros defined (not __CUDA_ARCH__, whose value depends on the device: a header included only
    for some architectures is missed). Without a host compiler the #include lines are scanned instead
    (`included_files`), and one line on stderr says that a header named by a macro is then missed."""
    path = kernel_path(filename)
    try:
        return host_compiler.files_read(path, ("-std=c++17", f"-I{kernel_dir()}", *NVRTC_MACROS))
    except host_compiler.CompilerMissing as missing:
        _say_once(f"nn_cuda: {missing}; until there is one, a header that kernels/*.cu include through a "
                  "macro is not part of CuPy's cache key (edit the kernel file too to recompile)")
    except (host_compiler.PreprocessorFailed, OSError, subprocess.SubprocessError):
        pass  # NVRTC reports the same error when it compiles; the scan is enough to key that attempt
    return included_files(path, [kernel_dir()])


@functools.lru_cache(maxsize=None)
def _say_once(line: str) -> None:
    print(line, file=sys.stderr)


# ---- how they are compiled ----------------------------------------------------------------------


def compile_options() -> tuple:
    """The NVRTC options the CuPy backend gives RawModule: C++17, and kernels/ on the include path
    (the files #include "common.cuh")."""
    return ("-std=c++17", f"-I{kernel_dir()}")


def cupy_module_arguments(filename: str) -> dict:
    """What the CuPy backend gives `cupy.RawModule` for kernels/<filename>: code, options and
    name_expressions.

    CuPy keys its compile cache by the code text and the options, not by the files the code
    #includes (cupy/cuda/compiler.py, _compile_with_cache_cuda): an edited kernels/common.cuh would
    load the binary compiled before the edit. So the code ends with a comment holding the SHA-256 of
    every file the preprocessor reads for it (`files_read`), and any header edit changes the key.
    """
    path = kernel_path(filename)
    digest = host_compiler.files_digest(files_read(filename))
    return {
        "code": f"{path.read_text()}\n// nn_cuda: sources and headers sha256 {digest}\n",
        "options": compile_options(),
        "name_expressions": name_expressions(filename),
    }
