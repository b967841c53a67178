"""The CUDA C kernels of kernels/*.cu: where they are, which template instances exist, what they cost.

The .cu files hold templates only (no `extern "C"`, no explicit instantiations), which is what CuPy
wants: it compiles a file with NVRTC and instantiates exactly the kernels named in
`name_expressions`. This module owns that list (`name_expressions(filename)`), and the CuPy backend
and the compile checks both read it, so the two can never disagree.

To see the registers, spills and shared memory that ptxas gives each kernel, `compile_report` writes
a small translation unit that #includes the kernel file and takes the address of every instance in
host code (which makes nvcc instantiate and compile them), runs `nvcc -arch=sm_XX -Xptxas -v` on it,
and parses the ptxas report:

    from nn_cuda.kernel_info import compile_report
    report = compile_report("gemm_regblock.cu", arch="sm_90")
    report.kernels["gemm_regblock<float, false, false>"]["registers"]
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

# ---- the kernels and their instances ------------------------------------------------------------

#: GEMM algorithm -> the file that implements it
GEMM_KERNEL_FILES = {
    "naive": "gemm_naive.cu",
    "tiled": "gemm_tiled.cu",
    "regblock": "gemm_regblock.cu",
}
#: the file of the element-wise and reduction kernels, and the templates it defines
NN_OPS_FILE = "nn_ops.cu"
NN_OPS = ("bias_sigmoid", "bias_softmax", "softmax_grad", "sigmoid_backward", "col_sum", "sgd_update")

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


def gemm_kernel_name(algo: str, dtype, trans_a: bool, trans_b: bool) -> str:
    """The template instance, e.g. 'gemm_tiled<float, false, true>' (a CuPy name expression)."""
    flag = {False: "false", True: "true"}
    return f"gemm_{algo}<{_cuda_type(dtype)}, {flag[bool(trans_a)]}, {flag[bool(trans_b)]}>"


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


def kernel_dir() -> Path:
    """kernels/ at the repository root, next to the nn_cuda package."""
    path = Path(__file__).resolve().parent.parent / "kernels"
    if not path.is_dir():
        raise FileNotFoundError(
            f"the CUDA kernels directory {path} is missing; install nn_cuda from a checkout of the "
            "repository in editable mode (pip install -e .) so that kernels/ sits next to nn_cuda/"
        )
    return path


def kernel_files() -> list[Path]:
    """Every kernels/*.cu file, sorted by name."""
    return sorted(kernel_dir().glob("*.cu"))


def kernel_source(filename: str) -> str:
    """The CUDA C source of kernels/<filename>."""
    return (kernel_dir() / filename).read_text()


# ---- compiling with nvcc and reading the ptxas report -------------------------------------------


def find_nvcc() -> str | None:
    """The nvcc executable: on PATH, else under $CUDA_HOME or $CUDA_PATH; None when absent."""
    found = shutil.which("nvcc")
    if found:
        return found
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def instantiation_unit(kernel_file: Path, expressions: list[str]) -> str:
    """A translation unit that #includes `kernel_file` and instantiates every expression.

    Taking the address of a kernel template instance in host code makes nvcc instantiate it and
    compile its device code, exactly like a launch would, without writing out its signature.
    """
    include = Path(kernel_file).resolve().as_posix()
    lines = [f'#include "{include}"', "", "void instantiate_all_kernels()", "{"]
    lines += [f"    (void)&{expression};" for expression in expressions]
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclasses.dataclass
class CompileReport:
    """The outcome of compiling one kernel file for one architecture."""

    file: str
    arch: str
    #: False when nvcc is absent or the compilation failed (see `reason`)
    ok: bool
    #: kernel (demangled template instance where possible) -> registers, spill_stores,
    #: spill_loads, stack_bytes, smem_bytes (bytes of static shared memory)
    kernels: dict = dataclasses.field(default_factory=dict)
    #: why ok is False
    reason: str = ""
    #: the nvcc command line and its output (ptxas prints its report on stderr)
    command: list = dataclasses.field(default_factory=list)
    log: str = ""

    def spills(self) -> dict:
        """kernel -> (spill stores, spill loads) for every kernel that spills."""
        return {
            name: (info["spill_stores"], info["spill_loads"])
            for name, info in self.kernels.items()
            if info["spill_stores"] or info["spill_loads"]
        }


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPERTIES = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
    r"(?P<loads>\d+) bytes spill loads"
)
_USED = re.compile(r"Used (?P<registers>\d+) registers")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")


def parse_ptxas(text: str) -> dict:
    """Parse `ptxas -v` output into {mangled name: {registers, spill_stores, spill_loads, ...}}.

    ptxas reports each entry function as
        ptxas info    : Compiling entry function '_Z10gemm_naive...' for 'sm_80'
        ptxas info    : Function properties for _Z10gemm_naive...
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 40 registers, used 1 barriers, 8448 bytes smem, 412 bytes cmem[0]
    (the exact wording of the last line changes between CUDA versions; only the numbers are read).
    Device functions that were not inlined get a "Function properties" block of their own; they
    are reported too (with registers None), so that their spills are not missed.
    """
    kernels: dict = {}
    entry = None  # the entry function whose "Used ... registers" line comes next
    properties_of = None  # the function whose stack/spill line comes next

    def record(name):
        return kernels.setdefault(
            name,
            {"registers": None, "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0, "smem_bytes": 0},
        )

    for line in text.splitlines():
        match = _ENTRY.search(line)
        if match:
            entry = match["name"]
            record(entry)["arch"] = match["arch"]
            continue
        match = _PROPERTIES.search(line)
        if match:
            properties_of = match["name"]
            record(properties_of)
            continue
        match = _FRAME.search(line)
        if match and properties_of is not None:
            info = record(properties_of)
            info["stack_bytes"] = int(match["stack"])
            info["spill_stores"] = int(match["stores"])
            info["spill_loads"] = int(match["loads"])
            properties_of = None
            continue
        match = _USED.search(line)
        if match and entry is not None:
            info = record(entry)
            info["registers"] = int(match["registers"])
            smem = _SMEM.search(line)
            info["smem_bytes"] = int(smem["smem"]) if smem else 0
            entry = None
    return kernels


def demangle(names) -> dict:
    """{mangled: readable}, e.g. 'gemm_tiled<float, false, true>'; names stay mangled without c++filt."""
    names = list(names)
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not names or tool is None:
        return {name: name for name in names}
    try:
        result = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return {name: name for name in names}
    readable = result.stdout.splitlines()
    if len(readable) != len(names):
        return {name: name for name in names}
    return {name: _template_id(text) for name, text in zip(names, readable)}


def _template_id(signature: str) -> str:
    """'void gemm_naive<float, false, true>(float const*, ...)' -> 'gemm_naive<float, false, true>'."""
    text = signature.strip()
    if text.startswith("void "):
        text = text[len("void "):]
    depth = 0
    for position, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            return text[:position]
    return text


def compile_report(
    filename: str, arch: str = "sm_80", nvcc: str | None = None, timeout: float = 600
) -> CompileReport:
    """Compile kernels/<filename> with every instance for `arch` and report ptxas's resource usage."""
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"arch must look like sm_80 or sm_90a, not {arch!r}")
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        return CompileReport(
            file=filename,
            arch=arch,
            ok=False,
            reason="nvcc not found (put the CUDA toolkit's bin/ on PATH or set CUDA_HOME)",
        )
    source_file = kernel_dir() / filename
    unit = instantiation_unit(source_file, name_expressions(filename))
    with tempfile.TemporaryDirectory(prefix="nn_cuda_nvcc_") as work:
        unit_path = Path(work) / f"instantiate_{Path(filename).stem}.cu"
        unit_path.write_text(unit)
        command = [
            nvcc, "-std=c++17", f"-arch={arch}", "-Xptxas", "-v",
            "-c", str(unit_path), "-o", str(Path(work) / "kernels.o"),
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as error:
            return CompileReport(
                file=filename, arch=arch, ok=False, reason=f"nvcc could not run: {error}", command=command
            )
    log = result.stdout + result.stderr
    if result.returncode != 0:
        return CompileReport(
            file=filename, arch=arch, ok=False, reason=f"nvcc exited with status {result.returncode}",
            command=command, log=log,
        )
    mangled = parse_ptxas(log)
    readable = demangle(mangled)
    kernels = {readable[name]: info for name, info in mangled.items()}
    return CompileReport(file=filename, arch=arch, ok=True, kernels=kernels, command=command, log=log)


def gemm_registers(algo: str, dtype, arch: str = "sm_80") -> dict:
    """{kernel instance: registers} for the four transpose variants of a GEMM algorithm in `dtype`.

    Empty when nvcc is absent or the algorithm has no CUDA C file (cublas, numpy).
    """
    filename = GEMM_KERNEL_FILES.get(algo)
    if filename is None:
        return {}
    report = _cached_report(filename, arch)
    if not report.ok:
        return {}
    wanted = {gemm_kernel_name(algo, dtype, ta, tb) for ta in (False, True) for tb in (False, True)}
    return {name: info["registers"] for name, info in report.kernels.items() if name in wanted}


_REPORTS: dict = {}


def _cached_report(filename: str, arch: str) -> CompileReport:
    key = (filename, arch)
    if key not in _REPORTS:
        _REPORTS[key] = compile_report(filename, arch)
    return _REPORTS[key]
