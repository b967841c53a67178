"""Grading mode 4: the course's GEMM test, C <- 2 A B + 5 C on the course's inputs.

    A[i, j] = i j / M   (M x K)     B[i, j] = (i j + 1) / N   (K x N)     C[i, j] = (i j + 2) / N

for (M, N, K) = (800, 1000, 784), (800, 10, 1000), (800, 100, 1000), each times --scale. The backend's
GEMM algorithm is compared with the reference (cuBLAS on a GPU, NumPy on the CPU) in the same precision
by the relative inf-norm error, and passes at 1e-6 (float32) / 1e-12 (float64); both are timed.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from . import kernel_info
from .backends import get_backend
from .kernel_grading import what_is_graded
from .course_gemm import COURSE_GEMM_SIZES, GEMM_ALPHA, GEMM_BETA
from .gpu_timer import gpu_events, is_simulated, time_calls
from .relative_errors import relative_error

ALPHA, BETA = GEMM_ALPHA, GEMM_BETA
THRESHOLDS = {"float32": 1e-6, "float64": 1e-12}
REPEAT = 10


def course_inputs(M: int, N: int, K: int, dtype):
    """The course's deterministic A (M x K), B (K x N), C (M x N), built in float64 then cast."""
    def grid(rows, cols):
        i = np.arange(rows, dtype=np.float64)[:, None]
        j = np.arange(cols, dtype=np.float64)[None, :]
        return i * j

    return ((grid(M, K) / M).astype(dtype), ((grid(K, N) + 1) / N).astype(dtype),
            ((grid(M, N) + 2) / N).astype(dtype))


def _timed_ms(backend, timer, run, repeat=REPEAT) -> float:
    """Median milliseconds of run(): on a GPU CUDA events around calls queued back to back
    (nn_cuda.gpu_timer.time_calls, no host time in them), on the CPU the host clock."""
    if timer is not None:
        return statistics.median(time_calls(timer, lambda index: run(), repeat, warmup=1))
    run()
    backend.synchronize()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append(1e3 * (time.perf_counter() - started))
    return statistics.median(samples)


def run_gemm_grade(backend_name: str, gemm: str | None, dtype: str, scale: int = 1, log=print) -> bool:
    if is_simulated(backend_name):
        raise ValueError("mode 4 runs the course's sizes (up to 800x1000x784), far too large for "
                         "Numba's simulator; on a CPU use --backend numpy, or check the kernels "
                         "with: python -m nn_cuda.bench gemm --backend numba-sim")
    backend = get_backend(backend_name, gemm)
    emulated = getattr(backend, "emulated", False)
    reference_algo = "cublas" if "cublas" in backend.gemm_algos else None
    reference_backend = backend if reference_algo else get_backend("numpy")
    timer = gpu_events(backend)
    limit = THRESHOLDS[dtype]
    log(f"mode 4: C <- {ALPHA:g} A B + {BETA:g} C, {dtype}, {backend.name}/{backend.gemm_algo} against "
        f"{reference_algo or 'NumPy'} (fail above {limit:g})")
    for line in what_is_graded(backend):
        log(line)
    if emulated:
        log("the CUDA C kernels run on the CPU here (cuda-cpu): the comparison is theirs with NumPy, "
            "and 'own ms' is one emulated call, not a GPU time")
    unwritten = (kernel_info.unwritten_tasks([kernel_info.GEMM_KERNEL_FILES[backend.gemm_algo]])
                 if backend.runs_kernel_files and backend.gemm_algo in kernel_info.GEMM_KERNEL_FILES else [])
    if unwritten:  # a workspace's TODO: the verdict is FAIL, and this says why
        log(f"the kernel is not written yet: {unwritten[0]}; write it, and check it with "
            f"{kernel_info.course_check_command()}")
    log(f"{'M':>6s} {'N':>6s} {'K':>6s} {'rel. error':>11s} {'reference ms':>13s} {'own ms':>9s}")
    ok = True
    for M, N, K in COURSE_GEMM_SIZES:
        M, N, K = M * scale, N * scale, K * scale
        A, B, C0 = course_inputs(M, N, K, dtype)
        dA, dB, dC = backend.to_device(A), backend.to_device(B), backend.to_device(C0)
        rA, rB, rC = (reference_backend.to_device(A), reference_backend.to_device(B),
                      reference_backend.to_device(C0))
        backend.gemm(dA, dB, dC, ALPHA, BETA)
        reference_backend.gemm(rA, rB, rC, ALPHA, BETA, algo=reference_algo)
        error = relative_error(reference_backend.to_host(rC), backend.to_host(dC), np.inf)
        passed = error <= limit  # NaN fails
        ok &= passed
        own_ms = _timed_ms(backend, timer, lambda: backend.gemm(dA, dB, dC, ALPHA, BETA),
                           repeat=1 if emulated else REPEAT)
        ref_ms = _timed_ms(reference_backend, timer if reference_algo else None,
                           lambda: reference_backend.gemm(rA, rB, rC, ALPHA, BETA, algo=reference_algo))
        log(f"{M:6d} {N:6d} {K:6d} {error:11.3e} {ref_ms:13.3f} {own_ms:9.3f}   "
            f"{'PASS' if passed else 'FAIL'}")
    return ok
