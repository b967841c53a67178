"""What each kernel instance costs on a GPU, found without one: `python -m nn_cuda.kernel_resources`.

`compile_report` compiles a kernel file as CuPy does, without a GPU and without CuPy: NVRTC from the
nvidia-cuda-nvrtc wheel (nn_cuda.nvrtc) turns it into PTX with CuPy's options, the ptxas of the
nvidia-cuda-nvcc wheel assembles that PTX for one GPU with -v, and its report gives every instance's
registers, spills, stack and static shared memory:

    from nn_cuda.kernel_resources import compile_report
    report = compile_report("gemm3_regblock.cu", arch="sm_90")
    report.kernels["gemm_regblock<float, false, false>"]["registers"]

`resource_table()` adds each instance's launch block (its `// launch:` line,
nn_cuda.kernel_launch.block_of) and the occupancy it allows on sm_80 and sm_90.
`python -m nn_cuda.kernel_resources [--json PATH]` prints that table and writes it for
`python -m nn_cuda.report`.
"""

from __future__ import annotations

from .errors import failed
from .interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.kernel_resources", running=__name__ == "__main__"):
    import argparse
    import dataclasses
    import re
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from . import kernel_launch, nvrtc
    from .records import machine_info, write_json
    from .kernel_info import (GEMM_KERNEL_FILES, compile_options, cupy_module_arguments, gemm_kernel_name,
                              kernel_files, kernel_source, name_expressions)
    from .outputs import OutputError

# ---- compiling as CuPy does: NVRTC to PTX, then ptxas for one GPU -------------------------------

#: the virtual architectures every kernel must compile for (CUDA 13 dropped compute_70)
NVRTC_ARCHS = ("compute_75", "compute_80", "compute_90")
#: the GPUs whose resources (registers, shared memory, occupancy) are reported
PTXAS_ARCHS = ("sm_80", "sm_90")


def cupy_added_options(compute: str, nvrtc_version: tuple) -> tuple:
    """What CuPy adds to those options before calling NVRTC (cupy/cuda/compiler.py): denormals
    flushed to zero, the GPU's virtual architecture and, from NVRTC 12 on, functions without an
    execution space taken as device functions."""
    added = ("-ftz=true", f"-arch={compute}")
    if nvrtc_version >= (12, 0):
        added += ("--device-as-default-execution-space",)
    return added


def _check_arch(arch: str, prefix: str) -> None:
    if not re.fullmatch(rf"{prefix}_\d+[a-z]?", arch):
        raise ValueError(f"arch must look like {prefix}_80 or {prefix}_90a, not {arch!r}")


def _compute_of(arch: str) -> str:
    """The virtual architecture of a GPU: 'sm_90' -> 'compute_90'."""
    return "compute_" + arch[len("sm_"):]


def compile_ptx(filename: str, compute: str = "compute_80") -> nvrtc.Compiled:
    """kernels/<filename> compiled by NVRTC with every instance, as CuPy compiles it for `compute`.

    Raises nvrtc.CompileError (naming the file, with NVRTC's log) when the source does not compile.
    """
    _check_arch(compute, "compute")
    options = compile_options() + cupy_added_options(compute, nvrtc.version())
    return nvrtc.compile_source(kernel_source(filename), filename, options, name_expressions(filename))


def run_ptxas(ptx: str, arch: str, timeout: float = 600) -> tuple[list, subprocess.CompletedProcess]:
    """`ptxas -v -arch=<arch>` on `ptx`: (the command line, its result; the report is in its output)."""
    ptxas = nvrtc.find_tool("ptxas")
    with tempfile.TemporaryDirectory(prefix="nn_cuda_ptxas_") as work:
        source = Path(work) / "kernels.ptx"
        source.write_text(ptx)
        command = [str(ptxas), "-v", f"-arch={arch}", str(source), "-o", str(Path(work) / "kernels.cubin")]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return command, result


@dataclasses.dataclass
class CompileReport:
    """The outcome of compiling one kernel file for one GPU architecture."""

    file: str
    arch: str
    #: False when the compilers are not installed or the compilation failed (see `reason`)
    ok: bool
    #: kernel (the name expression of each instance; mangled names for device functions that ptxas
    #: reports on their own) -> registers, spill_stores, spill_loads, stack_bytes, smem_bytes
    #: (bytes of static shared memory)
    kernels: dict = dataclasses.field(default_factory=dict)
    #: why ok is False
    reason: str = ""
    #: the ptxas command line
    command: list = dataclasses.field(default_factory=list)
    #: ptxas's output (its resource report), or NVRTC's log when NVRTC rejected the source
    log: str = ""
    #: what NVRTC said about a source it compiled (empty when it had nothing to say)
    nvrtc_log: str = ""

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


def compile_report(filename: str, arch: str = "sm_80", timeout: float = 600) -> CompileReport:
    """Compile kernels/<filename> with every instance (NVRTC for compute_XX, then ptxas for sm_XX)
    and report ptxas's resource usage, each instance under its name expression."""
    _check_arch(arch, "sm")
    try:
        compiled = compile_ptx(filename, _compute_of(arch))
        command, result = run_ptxas(compiled.ptx, arch, timeout)
    except nvrtc.CompilerNotFound as error:
        return CompileReport(file=filename, arch=arch, ok=False, reason=str(error))
    except nvrtc.CompileError as error:
        reason = str(error).splitlines()[0]
        return CompileReport(file=filename, arch=arch, ok=False, reason=reason, log=error.log)
    except (OSError, subprocess.TimeoutExpired) as error:
        return CompileReport(file=filename, arch=arch, ok=False, reason=f"ptxas could not run: {error}")
    log = result.stdout + result.stderr
    if result.returncode != 0:
        return CompileReport(
            file=filename, arch=arch, ok=False, command=command, log=log,
            reason=f"ptxas exited with status {result.returncode} on the PTX of {filename} for {arch}",
        )
    expression_of = {mangled: expression for expression, mangled in compiled.lowered_names.items()}
    kernels = {expression_of.get(name, name): info for name, info in parse_ptxas(log).items()}
    return CompileReport(
        file=filename, arch=arch, ok=True, kernels=kernels, command=command, log=log, nvrtc_log=compiled.log
    )


def gemm_registers(algo: str, dtype, arch: str = "sm_80") -> dict:
    """{kernel instance: registers} for the four transpose variants of a GEMM algorithm in `dtype`.

    Empty when the compilers are not installed, a kernel does not compile, or the algorithm has no
    CUDA C file (cublas, numpy).
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
    """compile_report, kept for the process under what NVRTC compiles (the code with its headers'
    digest, and the options, which name the kernel folder): an edited file is compiled again."""
    compiled = cupy_module_arguments(filename)
    key = (compiled["code"], tuple(compiled["options"]), filename, arch)
    if key not in _REPORTS:
        _REPORTS[key] = compile_report(filename, arch)
    return _REPORTS[key]


# ---- occupancy: how many blocks of a kernel one SM holds at once --------------------------------


@dataclasses.dataclass(frozen=True)
class SMLimits:
    """What one streaming multiprocessor offers, and one block may take, on a GPU architecture.

    The sizes are those of the CUDA C++ Programming Guide ("Compute Capabilities", table "Technical
    Specifications per Compute Capability", 8.0 and 9.0); the allocation rules (units, sub-partitions,
    the driver's 1 KiB per block) are those of the CUDA Occupancy Calculator, cuda_occupancy.h in the
    CUDA toolkit's include/.
    """

    shared_memory: int  # bytes of shared memory per SM, at the largest carveout
    registers: int = 65536  # 32-bit registers per SM, and at most per block
    threads: int = 2048  # resident threads per SM (64 warps)
    blocks: int = 32  # resident blocks per SM
    threads_per_block: int = 1024
    registers_per_thread: int = 255
    static_shared_per_block: int = 48 * 1024  # bytes of static (__shared__) memory per block
    reserved_shared_per_block: int = 1024  # the driver's share of each block's shared memory
    shared_allocation_unit: int = 128  # bytes
    register_allocation_unit: int = 256  # registers, allocated per warp
    register_subpartitions: int = 4  # each SM quadrant holds its warps' registers
    warp_size: int = 32


SM_LIMITS = {
    "sm_80": SMLimits(shared_memory=164 * 1024),  # A100
    "sm_90": SMLimits(shared_memory=228 * 1024),  # H100
}


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps of one kernel per SM, and which limits set them."""

    blocks_per_sm: int
    warps_per_sm: int
    #: resident warps / the SM's maximum
    fraction: float
    #: the limits that allow no more blocks: threads, registers, shared memory, blocks (or "block"
    #: alone when one block exceeds a per-block limit and cannot launch)
    limited_by: tuple


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def block_limit_violations(threads: int, registers: int, smem_bytes: int, limits: SMLimits) -> list[str]:
    """Why a block of `threads` threads cannot launch at all (empty when it can)."""
    warps = -(-threads // limits.warp_size)
    registers_per_warp = _round_up(registers * limits.warp_size, limits.register_allocation_unit)
    violations = []
    if threads > limits.threads_per_block:
        violations.append(f"{threads} threads > {limits.threads_per_block} per block")
    if registers > limits.registers_per_thread:
        violations.append(f"{registers} registers > {limits.registers_per_thread} per thread")
    if registers_per_warp * _round_up(warps, limits.register_subpartitions) > limits.registers:
        violations.append(f"{warps} warps x {registers_per_warp} registers > {limits.registers} per block")
    if smem_bytes > limits.static_shared_per_block:
        violations.append(f"{smem_bytes} bytes of static shared memory > {limits.static_shared_per_block}")
    return violations


def occupancy(threads: int, registers: int, smem_bytes: int, limits: SMLimits) -> Occupancy:
    """How many blocks of `threads` threads using `registers` registers each and `smem_bytes` of
    static shared memory one SM holds (the CUDA Occupancy Calculator's rules, no dynamic memory)."""
    warps = -(-threads // limits.warp_size)
    max_warps = limits.threads // limits.warp_size
    if block_limit_violations(threads, registers, smem_bytes, limits):
        return Occupancy(0, 0, 0.0, ("block",))
    registers_per_warp = _round_up(registers * limits.warp_size, limits.register_allocation_unit)
    per_subpartition = limits.registers // limits.register_subpartitions
    warps_by_registers = (
        per_subpartition // registers_per_warp * limits.register_subpartitions if registers_per_warp else max_warps
    )
    shared_per_block = _round_up(smem_bytes + limits.reserved_shared_per_block, limits.shared_allocation_unit)
    blocks_by = {
        "threads": max_warps // warps,
        "registers": warps_by_registers // warps,
        "shared memory": limits.shared_memory // shared_per_block,
        "blocks": limits.blocks,
    }
    blocks = min(blocks_by.values())
    limited_by = tuple(name for name, count in blocks_by.items() if count == blocks)
    return Occupancy(blocks, blocks * warps, blocks * warps / max_warps, limited_by)


# ---- the resources table: every instance, its launch block and occupancy ------------------------


class CompileFailed(RuntimeError):
    """A kernel file did not compile (the message holds the reason and the compilers' log)."""


def _launch_threads(name_expression: str) -> int:
    # nn_cuda.kernel_launch builds on this module (it imports it), so it is imported only when asked for.

    x, y, z = kernel_launch.block_of(kernel_launch.template_of(name_expression))
    return x * y * z


def resource_table(archs=PTXAS_ARCHS) -> list[dict]:
    """One row per kernel instance and architecture: ptxas's resources, the launch block, occupancy."""
    rows = []
    for path in kernel_files():
        reports = {arch: _successful_report(path.name, arch) for arch in archs}
        for kernel in name_expressions(path.name):
            threads = _launch_threads(kernel)
            for arch, report in reports.items():
                rows.append(_resource_row(path.name, kernel, arch, threads, report.kernels[kernel]))
    return rows


def _successful_report(filename: str, arch: str) -> CompileReport:
    report = compile_report(filename, arch)
    if not report.ok:
        raise CompileFailed(f"{report.reason}\n{report.log}".rstrip())
    return report


def _resource_row(filename: str, kernel: str, arch: str, threads: int, info: dict) -> dict:
    fit = occupancy(threads, info["registers"], info["smem_bytes"], SM_LIMITS[arch])
    return {
        "file": filename, "kernel": kernel, "arch": arch, "threads": threads,
        "registers": info["registers"], "smem_bytes": info["smem_bytes"], "stack_bytes": info["stack_bytes"],
        "spill_stores": info["spill_stores"], "spill_loads": info["spill_loads"],
        "blocks_per_sm": fit.blocks_per_sm, "warps_per_sm": fit.warps_per_sm,
        "occupancy": fit.fraction, "limited_by": list(fit.limited_by),
    }


def compiler_versions() -> dict:
    """The NVRTC and ptxas that made the numbers: {'nvrtc': '13.0', 'ptxas': '... release 13.0, V13.0.88'}."""
    major, minor = nvrtc.version()
    result = subprocess.run([str(nvrtc.find_tool("ptxas")), "--version"], capture_output=True, text=True)
    release = [line for line in result.stdout.splitlines() if "release" in line]
    return {"nvrtc": f"{major}.{minor}", "ptxas": release[0].strip() if release else "unknown"}


def _portable(option: str) -> str:
    """An option as recorded: the include path relative to the working folder when it lies inside it
    (a record says which options were used, not where this machine keeps its checkout)."""
    if option.startswith("-I"):
        folder = Path(option[2:])
        if folder.is_absolute() and folder.is_relative_to(Path.cwd()):
            return "-I" + folder.relative_to(Path.cwd()).as_posix()
    return option


def resources_record(rows: list[dict], command: str) -> dict:
    """The table as a result of kind "resources" (what python -m nn_cuda.report reads): the rows, the
    compilers and options that made them, the SM limits of the occupancy, the machine and `command`."""
    machine = machine_info()
    machine["command"] = command
    archs = list(dict.fromkeys(row["arch"] for row in rows))
    return {
        "benchmark": "resources", "machine": machine, "compiler": compiler_versions(),
        "nvrtc_options": {arch: [_portable(option) for option in
                                 (*compile_options(), *cupy_added_options(_compute_of(arch), nvrtc.version()))]
                          for arch in archs},
        "sm_limits": {arch: dataclasses.asdict(SM_LIMITS[arch]) for arch in archs},
        "results": rows,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m nn_cuda.kernel_resources",
        description="Compile every kernels/*.cu file as CuPy does (NVRTC, then ptxas for "
        + " and ".join(PTXAS_ARCHS) + ") and print each kernel instance's registers, spills, shared "
        "memory, launch block and occupancy. Needs no GPU: pip install -e '.[dev]' installs the compilers.",
    )
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as JSON (python -m nn_cuda.report reads it)")
    return parser


@ends_in_one_line_when_interrupted("nn_cuda.kernel_resources")
def main(argv=None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(given)
    try:
        rows = resource_table()
    except (CompileFailed, FileNotFoundError, ValueError) as error:
        return failed("nn_cuda.kernel_resources", error)
    # the command prints the report's own table (imported here: numba_link and bench use this module
    # as a library, and need not load the report)
    from .report.markdown import printed, resources_table

    record = resources_record(rows, " ".join(["python", "-m", "nn_cuda.kernel_resources", *given]))
    printed("resources", record, resources_table)
    if args.json:
        try:
            write_json(args.json, record)
        except OutputError as error:
            return failed("nn_cuda.kernel_resources", error)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
