"""`python -m nn_cuda.bench gemm`: the GEMM kernels against float64 NumPy and, on a GPU, cuBLAS.

For every algorithm and size it computes the course's mode-4 product C <- 2 op(A) op(B) + 5 C, and
the same with beta = 0 on a C filled with NaN (an element the kernel leaves unwritten stays NaN),
on inputs drawn from [0, 1), and compares both with float64 NumPy by the course's measure, the
relative inf-norm error ||C - C_ref||_inf / ||C_ref||_inf (largest absolute row sum). Nothing
cancels with these inputs, so any order of summation stays within (K + 3) u of the exact result, to
first order (u = 2^-24 in float32, 2^-53 in float64). The float64 reference is itself that far from
the exact result in its own u, so the tolerance is (K + 3) (u + u_64): for float32 kernels the second
term is negligible, for float64 ones it doubles the bound. The exit status is non-zero when an
algorithm misses it.

On a GPU (backend cupy, or numba outside the simulator) it then times each algorithm with CUDA
events: a few warm-up calls, then --repeat calls queued back to back behind a short busy kernel
(so that Python's launch overhead does not show up between them), each call on one of enough copies
of A, B and C that the inputs come from memory rather than from the L2 cache. It reports the median,
GFLOP/s (2 M N K per call) and, on cupy, the percentage of cuBLAS timed in the same run.

    python -m nn_cuda.bench gemm --backend cupy --json results/gemm.json
    python -m nn_cuda.bench gemm --backend numba-sim       # correctness only, tiny sizes
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import numpy as np
from tqdm import tqdm

from .. import kernel_info, kernel_resources, memory
from ..backends import BACKENDS, get_backend
from ..course_gemm import COURSE_GEMM_SIZES, GEMM_ALPHA, GEMM_BETA
from ..gpu_timer import gpu_events, is_simulated, time_calls
from ..records import machine_info, machine_line, write_json
from ..relative_errors import relative_error
from ..report.markdown import gemm_table, printed
from .common import default_backend, host_seconds

ALPHA, BETA = GEMM_ALPHA, GEMM_BETA  # the course's mode-4 test
COURSE_SIZES = COURSE_GEMM_SIZES
GPU_SIZES = COURSE_SIZES + [(10 * m, 10 * n, 10 * k) for m, n, k in COURSE_SIZES] + [(4096, 4096, 4096)]
CPU_SIZES = [(17, 33, 65), (64, 16, 4), (65, 17, 5)]
TRANSPOSES = {"NN": (False, False), "NT": (False, True), "TN": (True, False), "TT": (True, True)}
WARMUP = 3
MAX_COPIES = 256


def _numpy_ms(problem, repeat: int) -> float:
    """The same product by NumPy (its BLAS) on the host, the median of `repeat` calls after a warm-up:
    the baseline an emulated call is compared with in the same run (one call swung 100-fold on a
    loaded 2-core machine: 0.24 ms, 60 ms and 24 ms in three runs of a 256^3 product)."""
    a = problem.A.T if problem.trans_a else problem.A
    b = problem.B.T if problem.trans_b else problem.B
    return 1e3 * statistics.median(host_seconds(lambda: ALPHA * np.matmul(a, b) + BETA * problem.C, repeat))


# ---- command line -------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    sizes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        try:
            M, N, K = (int(p) for p in parts)
        except ValueError:
            raise argparse.ArgumentTypeError(f"size {item!r} is not MxNxK (e.g. 800x1000x784)") from None
        if min(M, N, K) < 1:
            raise argparse.ArgumentTypeError(f"size {item!r}: M, N and K must be at least 1")
        sizes.append((M, N, K))
    return sizes


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nn_cuda.bench gemm", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="default: cupy when CuPy sees a GPU, else numpy")
    p.add_argument("--algo", default=None,
                   help="comma-separated GEMM algorithms (default: all of the backend's)")
    p.add_argument("--sizes", type=parse_sizes, default=None,
                   help="comma-separated MxNxK (default: the course's mode-4 sizes, the same x10 "
                        "and 4096^3 on a GPU; " + ", ".join("x".join(map(str, s)) for s in CPU_SIZES)
                        + " on the CPU)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--trans", default="NN",
                   help="comma-separated transpose cases among NN, NT, TN, TT (op(A), op(B)); default NN")
    p.add_argument("--repeat", type=int, default=20,
                   help="timed calls per case (median reported, >= 10); on the CPU runner, of the NumPy baseline "
                        "(its kernels take seconds: one call each)")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


# ---- accuracy -----------------------------------------------------------------------------------


def tolerance(K: int, dtype) -> float:
    """(K + 3) (u + u_64): the first-order error bound of any summation order for non-negative data
    and alpha, beta > 0, in the kernel's precision plus in the float64 reference's."""
    def unit_roundoff(t):
        return float(np.finfo(t).eps) / 2

    return (K + 3) * (unit_roundoff(dtype) + unit_roundoff(np.float64))


class Problem:
    """Host inputs of one (M, N, K, trans) case and their float64 references."""

    def __init__(self, M, N, K, trans_a, trans_b, dtype, seed=0):
        rng = np.random.default_rng(seed)
        self.M, self.N, self.K = M, N, K
        self.trans_a, self.trans_b = trans_a, trans_b
        self.A = rng.random((K, M) if trans_a else (M, K)).astype(dtype)
        self.B = rng.random((N, K) if trans_b else (K, N)).astype(dtype)
        self.C = rng.random((M, N)).astype(dtype)
        op_a = self.A.T if trans_a else self.A
        op_b = self.B.T if trans_b else self.B
        self.product = ALPHA * (op_a.astype(np.float64) @ op_b.astype(np.float64))
        self.reference = self.product + BETA * self.C.astype(np.float64)


def check(backend, algo, problem, A, B, C) -> float:
    """The larger relative error of beta = 0 (C poisoned with NaN) and of the mode-4 product."""
    backend.fill(C, np.nan)
    backend.gemm(A, B, C, alpha=ALPHA, beta=0.0, trans_a=problem.trans_a, trans_b=problem.trans_b, algo=algo)
    error_beta0 = relative_error(problem.product, backend.to_host(C), np.inf)
    C_start = backend.to_device(problem.C)
    backend.copy(C_start, C)
    backend.gemm(A, B, C, alpha=ALPHA, beta=BETA, trans_a=problem.trans_a, trans_b=problem.trans_b, algo=algo)
    error = relative_error(problem.reference, backend.to_host(C), np.inf)
    if math.isnan(error_beta0) or math.isnan(error):
        return float("nan")
    return max(error_beta0, error)


def check_host_memory(M: int, N: int, K: int, dtype, on_host: bool) -> None:
    """NotEnoughMemory before a size allocates: its inputs drawn in float64 and cast, the float64
    products of the reference (op(A) and op(B) converted, alpha op(A) op(B), and + beta C), C's
    read-backs, and on a CPU backend its own copies of A, B and C."""
    item = np.dtype(dtype).itemsize
    inputs = M * K + K * N + M * N
    parts = {"inputs": inputs * (8 + item) + (inputs * item if on_host else 0),
             "float64 reference": (M * K + K * N) * 8 + 2 * M * N * 8,
             "read-backs of C": 2 * M * N * item}
    memory.require(parts, "use smaller --sizes", what=f"bench gemm at {M}x{N}x{K}")


# ---- timing on a GPU ----------------------------------------------------------------------------


def device_copies(backend, problem, l2_bytes):
    """Enough (A, B, C) copies on the device that cycling through them defeats the L2 cache."""
    set_bytes = problem.A.nbytes + problem.B.nbytes + problem.C.nbytes
    count = min(MAX_COPIES, max(2, math.ceil(2 * l2_bytes / set_bytes)))
    return [(backend.to_device(problem.A), backend.to_device(problem.B), backend.to_device(problem.C))
            for _ in range(count)]


def time_gemm(backend, timer, algo, problem, copies, repeat) -> list[float]:
    """Milliseconds of each of `repeat` calls, queued back to back and timed with CUDA events
    (nn_cuda.gpu_timer.time_calls), each call on the next copy of A, B and C.

    C changes at every call (it is multiplied by 5 and accumulated into); its values do not affect
    the speed of the kernels.
    """
    def call(index):
        A, B, C = copies[index % len(copies)]
        backend.gemm(A, B, C, alpha=ALPHA, beta=BETA, trans_a=problem.trans_a, trans_b=problem.trans_b,
                     algo=algo)

    return time_calls(timer, call, repeat, warmup=WARMUP)


# ---- the benchmark ------------------------------------------------------------------------------


def _registers(algo, dtype, trans_a, trans_b, arch):
    """(kernel instance, registers) from ptxas, or None (no nvcc, no CUDA C kernel, unknown arch)."""
    if algo not in kernel_info.GEMM_KERNEL_FILES:
        return None
    try:
        registers = kernel_resources.gemm_registers(algo, dtype, arch)
    except ValueError:
        return None
    name = kernel_info.gemm_kernel_name(algo, dtype, trans_a, trans_b)
    return (name, registers[name]) if name in registers else None


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.repeat < 10:
        parser.error("--repeat must be at least 10 (the median of fewer calls is noisy)")
    trans_cases = list(dict.fromkeys(t.strip().upper() for t in args.trans.split(",")))  # each once, in order
    unknown = [t for t in trans_cases if t not in TRANSPOSES]
    if unknown:
        parser.error(f"--trans {','.join(unknown)}: choose among {', '.join(TRANSPOSES)}")
    dtype = np.dtype(args.dtype)

    backend_name = args.backend or default_backend()
    try:
        backend = get_backend(backend_name)
    except (ImportError, RuntimeError, ValueError) as error:  # no usage text: the flag is not the mistake
        parser.exit(2, f"{parser.prog}: error: --backend {backend_name}: {error}\n")
    algos = list(dict.fromkeys(args.algo.split(","))) if args.algo else list(backend.gemm_algos)
    unknown = [a for a in algos if a not in backend.gemm_algos]
    if unknown:
        parser.error(f"--algo {','.join(unknown)}: backend {backend_name!r} has no such GEMM algorithm; "
                     f"choose among {', '.join(backend.gemm_algos)}")

    timed = backend.on_device and not is_simulated(backend_name)
    # cuda-cpu: one host-clock call each (Numba's simulator, emulated too, is not timed at all)
    emulated = getattr(backend, "emulated", False) and not timed and not is_simulated(backend_name)
    anchor = "cublas" if timed and "cublas" in backend.gemm_algos else None
    if anchor and anchor not in algos:
        algos.append(anchor)  # timed in the same run, as the reference for "% of cuBLAS"
    sizes = args.sizes or (GPU_SIZES if timed else CPU_SIZES)
    limit = backend.largest_dimension
    for M, N, K in sizes:
        if limit is not None and max(M, N, K) > limit:
            parser.exit(2, f"{parser.prog}: error: --sizes {M}x{N}x{K}: the kernels of backend {backend_name} "
                           f"take M, N and K as 32-bit ints (at most {limit}); use smaller --sizes\n")
    try:
        for M, N, K in sizes:
            check_host_memory(M, N, K, dtype, on_host=not backend.on_device)
    except memory.NotEnoughMemory as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    timer = gpu_events(backend)  # None exactly when not `timed`
    arch = timer.arch() if timer is not None and backend_name == "cupy" else None

    info = machine_info(backend_name)
    if timer is not None:
        info["device"] = timer.describe()
        info["gpu"] = info.get("gpu") or info["device"]["gpu"]
    print(f"GEMM C <- {ALPHA:g} op(A) op(B) + {BETA:g} C, {args.dtype}, backend {backend_name}, "
          f"inputs in [0, 1), tolerance (K + 3) (u + u_64)")
    print(f"machine: {machine_line(info)}")
    if backend.runs_kernel_files:  # whose kernels are timed: the project's, or NN_CUDA_KERNEL_DIR's
        print(kernel_info.describe_kernel_dir())
    records, failures = [], []
    cases = [(size, trans) for size in sizes for trans in trans_cases]
    for (M, N, K), trans in tqdm(cases, unit="case"):
        trans_a, trans_b = TRANSPOSES[trans]
        problem = Problem(M, N, K, trans_a, trans_b, dtype)
        limit = tolerance(K, dtype)
        copies = device_copies(backend, problem, timer.l2_bytes()) if timed else None
        if timed:
            A, B, C = copies[0]
        else:
            A, B, C = (backend.to_device(x) for x in (problem.A, problem.B, problem.C))
        rows = []
        for algo in algos:
            error = check(backend, algo, problem, A, B, C)
            record = {"algo": algo, "backend": backend_name, "dtype": args.dtype, "trans": trans,
                      "M": M, "N": N, "K": K, "alpha": ALPHA, "beta": BETA,
                      "rel_err": error, "tolerance": limit, "passed": bool(error <= limit)}
            if not record["passed"]:
                failures.append(f"{algo} {trans} {M}x{N}x{K}: relative error {error:.3g} > {limit:.3g}")
            if timed:
                samples = time_gemm(backend, timer, algo, problem, copies, args.repeat)
                ms = statistics.median(samples)
                record.update(time_ms=ms, time_ms_min=min(samples), gflops=2.0 * M * N * K / (ms * 1e6),
                              repeat=args.repeat, copies=len(copies))
            if emulated:
                started = time.perf_counter()
                backend.gemm(A, B, C, alpha=ALPHA, beta=BETA, trans_a=trans_a, trans_b=trans_b, algo=algo)
                # one call of the emulated kernel (seconds, after check's call warmed it up); NumPy's median
                record.update(emulated_ms=1e3 * (time.perf_counter() - started), emulated_calls=1,
                              numpy_ms=_numpy_ms(problem, args.repeat), numpy_calls=args.repeat)
            if arch is not None:
                found = _registers(algo, dtype, trans_a, trans_b, arch)
                if found is not None:
                    record.update(kernel=found[0], registers=found[1], arch=arch)
            rows.append(record)
        anchor_ms = next((r["time_ms"] for r in rows if r["algo"] == anchor), None)
        for record in rows:
            if anchor_ms is not None:
                record["percent_of_cublas"] = 100.0 * anchor_ms / record["time_ms"]
        records.extend(rows)
        del copies, A, B, C
        backend.synchronize()

    payload = {"benchmark": "gemm", "machine": info, "backend": backend_name, "timed": timed,
               "emulated": emulated,
               "config": {"dtype": args.dtype, "trans": trans_cases, "repeat": args.repeat,
                          "warmup": WARMUP, "alpha": ALPHA, "beta": BETA,
                          "sizes": [list(s) for s in sizes], "algos": algos},
               "results": records}
    printed("gemm", payload, gemm_table)
    if args.json:
        write_json(args.json, payload)
        print(f"wrote {args.json}")
    if failures:
        print("FAILED (relative error above tolerance):", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
