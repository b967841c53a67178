"""Checks of the CUDA C kernels that catch the bugs students write, with the case and a hint.

The course's mode 4 runs three products whose sizes are multiples of 32 with beta = 5, so a kernel
that drops the last partial tile, or reads C when beta = 0, passes it. The checks here run every
GEMM of the ladder on sizes that are multiples of no tile (1, 17, 31, 33, 65, ... and the course's
800 x 10 x 1000), with every transpose, both dtypes, and beta = 0 with C poisoned (NaN) as well as
beta != 0; and every element-wise kernel on matrices of odd sizes. On the CPU they run in the CPU
runner's checking mode (--backend cuda-cpu), so a race, a missing barrier or an out-of-bounds access
is reported too.

A GEMM result passes when every element is within Higham's bound for a sum of K products computed
in any order (FMA included), |C - C_ref| <= (K + 2) eps (|alpha| |op(A)| |op(B)| + |beta C|), with
C_ref computed in float64: a correct kernel cannot exceed it, and a missing or doubled term (about
1/K of that scale) is far above it for the sizes used. The first element beyond it is reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np

from . import kernel_info, kernel_launch
from .backends import get_backend
from .relative_errors import relative_error

#: (M, N, K), smallest first: multiples of no tile of the ladder, then the course's 800 x 10 x 1000
GEMM_SIZES = ((1, 1, 1), (17, 31, 33), (33, 65, 17), (65, 33, 100), (800, 10, 1000))
#: the dtypes checked, float32 first (the one the network trains in)
DTYPES = ("float32", "float64")
ALPHA = 1.5
#: beta != 0 (C is read and scaled) first, then beta = 0 (C holds NaN and must not be read)
BETAS = (0.5, 0.0)
#: rows x columns of the element-wise checks: a single element, odd sizes, a partial last block
OP_SHAPES = ((1, 1), (3, 10), (33, 7), (67, 65))


@dataclasses.dataclass(frozen=True)
class Case:
    """One run of one kernel: what was run and the numbers that describe it."""

    kernel: str  # 'gemm tiled' or 'bias_sigmoid'
    shape: tuple  # (M, N, K) of a GEMM, (rows, cols) of an element-wise kernel
    dtype: str
    trans: str = ""  # 'NN', 'NT', 'TN', 'TT' (GEMM only)
    beta: float | None = None  # GEMM only

    def __str__(self) -> str:
        size = " x ".join(str(n) for n in self.shape)
        gemm = f" {self.trans}, alpha {ALPHA:g}, beta {self.beta:g}" if self.beta is not None else ""
        return f"{self.kernel}: {size}{gemm}, {self.dtype}"


@dataclasses.dataclass(frozen=True)
class Result:
    case: Case
    passed: bool
    #: relative Frobenius error against float64 (None when the kernel failed to run, NaN where it left one)
    error: float | None = None
    #: what went wrong, in one line: the first wrong element, or the kernel's error
    detail: str = ""
    hint: str = ""
    #: the kernel raised in a way every later case would repeat (it does not build, the watchdog)
    repeats: bool = False

    def line(self) -> str:
        if self.passed:
            return f"PASS  {self.case}  (relative error {self.error:.1e})"
        return f"FAIL  {self.case}\n      {self.detail}" + (f"\n      hint: {self.hint}" if self.hint else "")


# ---- GEMM ------------------------------------------------------------------------------------------


def gemm_cases(algo: str, sizes=None, dtypes=None) -> Iterator[Case]:
    """Every case of GEMM `algo` (on GEMM_SIZES and DTYPES unless given), fastest first."""
    for M, N, K in sizes or GEMM_SIZES:
        for dtype in dtypes or DTYPES:
            for beta in BETAS:
                for trans in ("NN", "NT", "TN", "TT"):
                    yield Case(f"gemm {algo}", (M, N, K), dtype, trans, beta)


def _inputs(case: Case, rng):
    M, N, K = case.shape
    dtype = np.dtype(case.dtype)
    A = rng.uniform(-1, 1, (K, M) if case.trans[0] == "T" else (M, K)).astype(dtype)
    B = rng.uniform(-1, 1, (N, K) if case.trans[1] == "T" else (K, N)).astype(dtype)
    C = rng.uniform(-1, 1, (M, N)).astype(dtype) if case.beta else np.full((M, N), np.nan, dtype)
    return A, B, C


def _first_wrong(got, wrong) -> str:
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    return f"{int(wrong.sum())} of {wrong.size} elements wrong; the first is C[{i}, {j}] = {got[i, j]:.6g}"


def check_gemm_case(backend, algo: str, case: Case, rng, read_beta_passed=False, untransposed_passed=False) -> Result:
    """Run one case of GEMM `algo` on `backend` and compare it with float64 NumPy.
    `read_beta_passed`: the same product with beta != 0 passed (so a NaN now comes from reading C);
    `untransposed_passed`: the same product without transposes (NN) passed (so the indexing of a
    transposed operand is what is wrong)."""
    A, B, C0 = _inputs(case, rng)
    trans_a, trans_b = case.trans[0] == "T", case.trans[1] == "T"
    dC = backend.to_device(C0)
    try:
        backend.gemm(backend.to_device(A), backend.to_device(B), dC, ALPHA, case.beta, trans_a, trans_b, algo=algo)
        got = backend.to_host(dC)
    except Exception as error:  # a fault, race or assert the backend reports: the student's verdict
        return _did_not_run(case, error)
    opA = (A.T if trans_a else A).astype(np.float64)
    opB = (B.T if trans_b else B).astype(np.float64)
    C64 = np.nan_to_num(C0.astype(np.float64)) if case.beta else np.zeros(C0.shape)
    expected = ALPHA * opA @ opB + case.beta * C64
    scale = abs(ALPHA) * np.abs(opA) @ np.abs(opB) + abs(case.beta) * np.abs(C64)
    bound = (case.shape[2] + 2) * np.finfo(C0.dtype).eps * scale + np.finfo(C0.dtype).tiny
    wrong = ~(np.abs(got - expected) <= bound)  # NaN is wrong
    error = relative_error(expected, got, None)
    if not wrong.any():
        return Result(case, True, error)
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    detail = f"{_first_wrong(got, wrong)}, expected {expected[i, j]:.6g}"
    return Result(case, False, error, detail, _gemm_hint(algo, case, got, wrong, read_beta_passed, untransposed_passed))


def _transposed_hint(case: Case) -> str:
    return (f"check how a transposed operand is indexed: with {case.trans}, A is stored "
            f"{'K x M' if case.trans[0] == 'T' else 'M x K'} and B {'N x K' if case.trans[1] == 'T' else 'K x N'}")


def _gemm_hint(algo: str, case: Case, got, wrong, read_beta_passed: bool, untransposed_passed: bool) -> str:
    M, N, K = case.shape
    if case.beta == 0 and read_beta_passed and np.isnan(got).any():
        return _BETA_ZERO_HINT
    if np.isnan(got).all() or (wrong.all() and not np.isfinite(got).any()):
        return "no element of C was written: is the kernel launched, and does every thread reach its store?"
    if untransposed_passed:
        return _transposed_hint(case)
    rows, cols = kernel_launch.gemm_tile(algo)
    full_rows, full_cols = M - M % rows, N - N % cols
    if full_rows and full_cols and not wrong[:full_rows, :full_cols].any():
        return (f"only the last, partial tiles of C are wrong ({rows} x {cols} tiles, C is {M} x {N}): check the "
                "bounds tests (row < M, column < N) where tiles are loaded and where C is stored")
    if wrong.all():
        return (f"every element is wrong: check that the loop along K covers all K = {K} (a last, partial step "
                "loads zeros past K) and the formula alpha * acc + beta * C")
    if case.trans != "NN":
        return _transposed_hint(case)
    return "compare one element by hand: C[i, j] = alpha * sum_k op(A)[i, k] op(B)[k, j] + beta * C[i, j]"


_OUT_OF_BOUNDS_HINT = ("an access past the end of an array: guard every load and store with the matrix bounds "
                       "(i < M, j < N, k < K), and every shared-memory index with the tile's size")
#: after a CUDA error, which names no thread and no line
_WHERE_ON_THE_CPU = ("A GPU does not say where: run the same check with --backend cuda-cpu, whose CPU runner names "
                     "the block, the thread and the line of the kernel file")
_BETA_ZERO_HINT = ("with beta = 0, C holds garbage (NaN here) and must not be read: beta * C is NaN when C is "
                   "NaN, so write alpha * acc alone when beta == 0")


def _error_hint(message: str, case: Case, timed_out: bool) -> str:
    if case.beta == 0 and "NaN after the launch" in message:
        return _BETA_ZERO_HINT
    if "where no thread of the block had written it" in message:
        return ("a tile of shared memory was read before it was stored: a __syncthreads() goes between the "
                "stores of a tile and its first reads (and another after its last reads), and every element "
                "of the tile is stored, zeros where it lies past the matrix")
    if "NaN after the launch" in message:
        return ("an element of the output was never written, or was computed from memory nobody wrote: check "
                "that the grid and the bounds tests reach every element, and that shared memory is stored "
                "before it is read")
    if any(word in message for word in ("outside", "out of bounds", "past the end", "invalid memory access")):
        return _OUT_OF_BOUNDS_HINT
    if "cudaErrorIllegalAddress" in message or "cudaErrorMisalignedAddress" in message:
        return f"{_OUT_OF_BOUNDS_HINT}. {_WHERE_ON_THE_CPU}"
    if "cudaErrorAssert" in message or "cudaErrorLaunchFailure" in message:
        return f"a device assert() failed, or __trap() ran, or a fault the GPU does not name. {_WHERE_ON_THE_CPU}"
    if "__syncthreads" in message or "race" in message or "barrier" in message:
        return ("shared memory is read before every thread has written it (or written while others still "
                "read it): a __syncthreads() goes after the tiles are stored and another after they are used")
    if timed_out:
        return ("the kernel did not finish: look for a loop whose index never reaches its bound (or never "
                "changes), or a thread that waits for a value another thread writes")
    return ""


def check_gemm(backend, algo: str, stop_at_first_failure=False, sizes=None, dtypes=None,
               progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Every case of GEMM `algo` on `backend` (fastest first); the results so far at the first
    failure when `stop_at_first_failure`, or at a failure every later case would repeat."""
    rng = np.random.default_rng(0)
    results = []
    cases = list(gemm_cases(algo, sizes, dtypes))
    for case in cases:
        read_beta_passed = any(r.passed and r.case == dataclasses.replace(case, beta=BETAS[0]) for r in results)
        untransposed_passed = any(r.passed and r.case == dataclasses.replace(case, trans="NN") for r in results)
        results.append(check_gemm_case(backend, algo, case, rng, read_beta_passed, untransposed_passed))
        if _stop(results, len(cases), stop_at_first_failure, progress):
            break
    return results


def _did_not_run(case: Case, error: Exception) -> Result:
    """The verdict of a case whose kernel raised: the error and its hint; `repeats` when every later
    case would end the same way (the code does not build or is missing, or the watchdog stopped it:
    each case would wait for it again) rather than being a fault of this case's sizes."""
    from .cuda_cpu.runner import KernelError, KernelTimeout  # the runner's module, once a kernel has failed

    timed_out = isinstance(error, KernelTimeout)
    repeats = timed_out or not isinstance(error, KernelError)
    return Result(case, False, None, f"the kernel failed: {error}", _error_hint(str(error), case, timed_out),
                  repeats)


def add_unfinished_case(results: list, kernel: str, why: str, timed_out: bool, progress=None) -> None:
    """After `results` of `kernel`'s cases, when the process running them ended or stopped answering
    (`timed_out`) before the next one was done: that case fails with `why`, and the later ones count as
    not run."""
    planned = cases_of(kernel)
    if len(results) == len(planned):  # it ended after its last case
        return
    hint = _error_hint("", planned[len(results)], timed_out)
    results.append(Result(planned[len(results)], False, None, f"the kernel failed: {why}", hint, repeats=True))
    _stop(results, len(planned), True, progress)


def _stop(results: list, planned: int, stop_at_first_failure: bool, progress) -> bool:
    """After the last of `results` (of `planned` cases): report it, and whether to stop there (then
    saying so in its detail when later cases are left)."""
    last = results[-1]
    stop = not last.passed and (stop_at_first_failure or last.repeats)
    if stop and last.repeats and len(results) < planned:
        results[-1] = last = dataclasses.replace(
            last, detail=f"{last.detail} (the {planned - len(results)} later cases were not run: each would end "
                         "the same way)")
    if progress:
        progress(last)
    return stop


# ---- element-wise kernels -------------------------------------------------------------------------


def _op_inputs(op: str, rows: int, cols: int, dtype, rng) -> tuple[tuple, int]:
    """The arguments of element-wise kernel `op` (the output last, NaN-poisoned, and its position) and
    the number of terms each output element sums (for the tolerance)."""
    def matrix(low=-4.0, high=4.0):
        return rng.uniform(low, high, (rows, cols)).astype(dtype)

    out = np.full((rows, cols), np.nan, dtype)
    if op in ("bias_sigmoid", "bias_softmax"):
        # rows 1, 4, ... near +100 and rows 2, 5, ... near -100: exp of those overflows or underflows
        # float32, which a kernel that subtracts the row's maximum (or takes exp of -|z|) never does
        scores = matrix()
        scores[1::3] += 100
        scores[2::3] -= 100
        return (scores, rng.uniform(-1, 1, cols).astype(dtype), out), cols
    if op == "softmax_grad":
        probabilities = rng.dirichlet(np.ones(cols), rows).astype(dtype)
        return (probabilities, rng.integers(0, cols, rows).astype(np.int32), 1.0 / rows, out), 1
    if op == "sigmoid_backward":
        return (matrix(), matrix(0.0, 1.0), out), 1
    if op == "col_sum":
        return (matrix(), np.full(cols, np.nan, dtype)), rows
    if op == "sgd_update":
        return (matrix(), matrix(), 0.1, 1e-3), 1
    if op == "pgd_step":
        clean = matrix(0.0, 1.0)
        return (np.clip(clean + matrix(-0.05, 0.05), 0, 1), matrix(), clean, 0.01, 0.03, 0.97, out), 1
    raise ValueError(f"no check for kernel {op!r}")


def op_cases(op: str, shapes=None, dtypes=None) -> Iterator[Case]:
    """Every case of element-wise kernel `op` (on OP_SHAPES and DTYPES unless given), smallest first."""
    for shape in shapes or OP_SHAPES:
        for dtype in dtypes or DTYPES:
            yield Case(op, shape, dtype)


def check_op_case(backend, reference, op: str, case: Case, rng) -> Result:
    """Run element-wise kernel `op` on `backend` and on `reference` (NumPy in float64) and compare
    every element written."""
    rows, cols = case.shape
    args, terms = _op_inputs(op, rows, cols, np.dtype(case.dtype), rng)
    device_args = [backend.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    reference_args = [reference.to_device(a.astype(np.float64)) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                      else (reference.to_device(a) if isinstance(a, np.ndarray) else a) for a in args]
    written = 0 if op == "sgd_update" else len(args) - 1  # the array the kernel writes
    try:
        getattr(backend, op)(*device_args)
        got = backend.to_host(device_args[written])
    except Exception as error:
        return _did_not_run(case, error)
    getattr(reference, op)(*reference_args)
    expected = reference.to_host(reference_args[written])
    eps = np.finfo(case.dtype).eps
    bound = 16 * (terms + 4) * eps * np.maximum(np.abs(expected), 1.0)
    wrong = ~(np.abs(got - expected) <= bound)
    error = relative_error(expected, got, None)
    if not wrong.any():
        return Result(case, True, error)
    first = tuple(int(x) for x in np.argwhere(wrong)[0])
    detail = (f"{int(wrong.sum())} of {wrong.size} elements wrong; the first is out[{', '.join(map(str, first))}] = "
              f"{got[first]:.6g}, expected {expected[first]:.6g}")
    if np.isnan(got[wrong]).any():
        hint = "some elements were never written (still NaN): the grid or a bounds test skips the last rows or columns"
    else:
        hint = (f"every element was written, {int(wrong.sum())} with a wrong value: compute the first one by hand "
                "with the formula of the kernel's comment (a workspace's TASK plan) and compare")
    return Result(case, False, error, detail, hint)


def check_op(backend, op: str, stop_at_first_failure=False, shapes=None, dtypes=None,
             progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Every case of element-wise kernel `op` on `backend` (on OP_SHAPES and DTYPES unless given),
    smallest first."""
    reference = get_backend("numpy")
    rng = np.random.default_rng(0)
    results = []
    cases = list(op_cases(op, shapes, dtypes))
    for case in cases:
        results.append(check_op_case(backend, reference, op, case, rng))
        if _stop(results, len(cases), stop_at_first_failure, progress):
            break
    return results


def kernel_names() -> list[str]:
    """What `check` accepts: 'gemm <algo>' for each GEMM of the ladder, then each element-wise kernel."""
    return [f"gemm {algo}" for algo in kernel_info.KERNEL_GEMMS] + list(kernel_info.NN_OPS)


def cases_of(kernel: str) -> list[Case]:
    """The cases `check` runs of `kernel`, in order, when none fails in a way every later case would repeat."""
    if kernel.startswith("gemm "):
        return list(gemm_cases(kernel.split()[1]))
    return list(op_cases(kernel))


def check(backend, kernel: str, stop_at_first_failure=False, progress=None) -> list[Result]:
    """Every case of `kernel` ('gemm tiled', 'col_sum', ...) on `backend`."""
    if kernel.startswith("gemm "):
        return check_gemm(backend, kernel.split()[1], stop_at_first_failure, progress=progress)
    return check_op(backend, kernel, stop_at_first_failure, progress=progress)
