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

from .backends import get_backend
from .course import COURSE_GEMM_SIZES, GEMM_ALPHA, GEMM_BETA
from .bench.gemm import CupyTimer, NumbaTimer, _is_simulated, rel_inf_norm_error

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


def _timed_ms(be, timer, run, repeat=REPEAT) -> float:
    """Median milliseconds of run(): CUDA events on a GPU, the host clock on the CPU."""
    run()
    be.synchronize()
    samples = []
    for _ in range(repeat):
        if timer is not None:
            start, end = timer.event(), timer.event()
            timer.record(start)
            run()
            timer.record(end)
            be.synchronize()
            samples.append(timer.elapsed_ms(start, end))
        else:
            started = time.perf_counter()
            run()
            samples.append(1e3 * (time.perf_counter() - started))
    return statistics.median(samples)


def run_gemm_grade(backend: str, gemm: str | None, dtype: str, scale: int = 1, log=print) -> bool:
    if backend == "numba-sim" or (backend == "numba" and _is_simulated(backend)):
        raise ValueError("mode 4 runs the course's sizes (up to 800x1000x784), far too large for "
                         "Numba's simulator; on a CPU use --backend numpy, or check the kernels "
                         "with: python -m nn_cuda.bench gemm --backend numba-sim")
    be = get_backend(backend, gemm)
    emulated = getattr(be, "emulated", False)
    reference_algo = "cublas" if "cublas" in be.gemm_algos else None
    reference_be = be if reference_algo else get_backend("numpy")
    timer = CupyTimer() if backend == "cupy" else NumbaTimer() if backend == "numba" else None
    limit = THRESHOLDS[dtype]
    log(f"mode 4: C <- {ALPHA:g} A B + {BETA:g} C, {dtype}, {be.name}/{be.gemm_algo} against "
        f"{reference_algo or 'NumPy'} (fail above {limit:g})")
    if emulated:
        log("the CUDA C kernels run on the CPU here (cuda-cpu): the comparison is theirs with NumPy, "
            "and 'own ms' is one emulated call, not a GPU time")
    log(f"{'M':>6s} {'N':>6s} {'K':>6s} {'rel. error':>11s} {'reference ms':>13s} {'own ms':>9s}")
    ok = True
    for M, N, K in COURSE_GEMM_SIZES:
        M, N, K = M * scale, N * scale, K * scale
        A, B, C0 = course_inputs(M, N, K, dtype)
        dA, dB, dC = be.to_device(A), be.to_device(B), be.to_device(C0)
        rA, rB, rC = reference_be.to_device(A), reference_be.to_device(B), reference_be.to_device(C0)
        be.gemm(dA, dB, dC, ALPHA, BETA)
        reference_be.gemm(rA, rB, rC, ALPHA, BETA, algo=reference_algo)
        error = rel_inf_norm_error(be.to_host(dC), reference_be.to_host(rC).astype(np.float64))
        passed = error <= limit  # NaN fails
        ok &= passed
        own_ms = _timed_ms(be, timer, lambda: be.gemm(dA, dB, dC, ALPHA, BETA), repeat=1 if emulated else REPEAT)
        ref_ms = _timed_ms(reference_be, timer if reference_algo else None,
                           lambda: reference_be.gemm(rA, rB, rC, ALPHA, BETA, algo=reference_algo))
        log(f"{M:6d} {N:6d} {K:6d} {error:11.3e} {ref_ms:13.3f} {own_ms:9.3f}   "
            f"{'PASS' if passed else 'FAIL'}")
    return ok
