"""The course's grading harness (`python -m nn_cuda.grade --mode 1|2|3|4`, grade.py, is its command line).

Modes 1-3 train the network twice from the same initial weights, with the course's settings (H = 100,
reg = 1e-4, batch 800, raw 0-255 pixels, and the learning rate and epochs of the mode): once with the
NumPy CPU reference and once with the backend under test (a GPU backend, or MPI ranks). They then
compare the parameters with the course's relative errors (nn_cuda.relative_errors) and write

    Outputs/NNErrors.txt     the final errors of W1, W2, b1, b2, PASS/FAIL, and both accuracies
    Outputs/CpuGpuDiff.txt   one row per saved iteration (every -p steps, and the last): the errors

Mode 4 is the course's GEMM test (see nn_cuda.grade_gemm).
"""

from __future__ import annotations

import time
from pathlib import Path

from . import memory, model, parallel, relative_errors
from .backends import get_backend
from .kernel_grading import what_is_graded
from .course_gemm import COURSE_GEMM_SIZES
from .config import TrainConfig
from .training import (check_kernels_written, check_memory, check_ranks_share_the_data, initial_parameters,
                       load_splits, make_strategy, train_with_snapshots)

#: mode -> dtype -> (learning rate, epochs), the course's settings for raw 0-255 pixels
COURSE_MODES = {
    1: {"float32": (0.0005, 40), "float64": (0.001, 40)},
    2: {"float32": (0.001, 10), "float64": (0.01, 10)},
    3: {"float32": (0.002, 1), "float64": (0.025, 1)},
}
COURSE_HIDDEN = 100
COURSE_REG = 1e-4
COURSE_BATCH = 800


def course_config(mode: int, cfg: TrainConfig) -> TrainConfig:
    """cfg with the course's hyperparameters of `mode` (backend, dtype and data are kept)."""
    lr, epochs = COURSE_MODES[mode][cfg.dtype]
    return cfg.replace(hidden=COURSE_HIDDEN, reg=COURSE_REG, batch=COURSE_BATCH, lr=lr, epochs=epochs,
                       pixels="raw", init_scale=model.COURSE_INIT_SCALE, shuffle=False, init=None,
                       grade=mode)


def compare_with_reference(cfg: TrainConfig, outputs: Path | None, log=print, limit_rows=None) -> bool:
    """Train cfg's backend (on every MPI rank under mpirun) and, on the root, the serial NumPy
    reference from the same weights; the root reports and writes the files.

    Returns True when every error is within the course's threshold (always True off the root).
    """
    strategy = make_strategy(cfg)
    log = log if strategy.is_root else (lambda *args: None)
    if strategy.is_root and outputs is not None:
        relative_errors.check_outputs(outputs)
    under_test = get_backend(cfg.backend, cfg.gemm)
    check_kernels_written(under_test)  # a workspace's TODO: one line naming it, not a diverged run
    splits = load_splits(cfg, log=log, progress=strategy.is_root)
    hidden, init = initial_parameters(cfg, check_fits=lambda h: check_memory(cfg, h, splits, runs=2), log=log)
    check_ranks_share_the_data(strategy.comm, splits)
    if limit_rows is not None:
        splits.x_train, splits.y_train = splits.x_train[:limit_rows], splits.y_train[:limit_rows]
        splits.x_val, splits.y_val = splits.x_val[:limit_rows], splits.y_val[:limit_rows]
    ranks = f" on {parallel.ranks(strategy.size)}" if strategy.size > 1 else ""
    log(f"reference: numpy {cfg.dtype}; under test: {cfg.backend}/{under_test.gemm_algo} {cfg.dtype}{ranks}; "
        f"H={hidden} lr={cfg.lr:g} epochs={cfg.epochs} batch={cfg.batch} pixels={cfg.pixels} ({splits.dataset})")
    for line in what_is_graded(under_test):
        log(line)
    tested = train_with_snapshots(cfg, under_test, None, splits, init, strategy, progress="under test")
    if not strategy.is_root:
        return True
    reference = train_with_snapshots(cfg, "numpy", None, splits, init, progress="reference")
    return relative_errors.report_comparison(cfg, tested, reference, outputs, log)


def what_is_compared(mode: int, cfg: TrainConfig) -> str:
    """The backend under test and its reference, for the summary line; says so when NumPy is compared
    with itself (the default backend, on a machine without a GPU)."""
    world = parallel.world_from_environment()
    on_ranks = f" on {parallel.ranks(world.size)}" if mode != 4 and world and world.size > 1 else ""
    gemm = "" if cfg.backend == "numpy" else "/" + (cfg.gemm or get_backend(cfg.backend).gemm_algo)
    tested = f"{cfg.backend}{gemm} {cfg.dtype}{on_ranks}"
    reference = "cuBLAS" if mode == 4 and cfg.backend == "cupy" else "the NumPy reference"
    if cfg.backend == "numpy" and not on_ranks:
        return (f"{tested} against {reference}, that is NumPy against itself: no kernel was graded "
                "(--backend cuda-cpu or numba-sim grades the kernels on a CPU, cupy or numba on a GPU)")
    return f"{tested} against {reference}"


def check_gemm_memory(dtype: str, scale: int) -> None:
    """NotEnoughMemory before mode 4 allocates its matrices at --scale: A, B and C of each course size
    (built in float64, then cast), a copy for the backend under test and one for the reference."""
    import numpy as np


    per_element = 2 * 8 + 3 * np.dtype(dtype).itemsize
    at_scale_1 = sum(M * K + K * N + M * N for M, N, K in COURSE_GEMM_SIZES) * per_element
    available = memory.available_bytes()
    largest = int((available / at_scale_1) ** 0.5) if available else None
    fix = f"use --scale {largest} or less" if largest else "use a machine with more memory"
    memory.require({"matrices": at_scale_1 * scale**2}, fix,
                   what=f"mode 4 at --scale {scale}")


def run_grade(mode: int, cfg: TrainConfig, outputs: Path, limit_rows=None, scale: int = 1) -> bool:
    """Grading mode 1-4. For modes 1-3, `cfg` is a course_config(mode, ...)."""
    world = parallel.world_from_environment()
    started = time.perf_counter()
    if mode == 4:
        from .grade_gemm import run_gemm_grade

        if world is not None and world.rank != 0:
            return True  # the GEMM test is one process's work: rank 0 runs it
        check_gemm_memory(cfg.dtype, scale)
        ok = run_gemm_grade(cfg.backend, cfg.gemm, cfg.dtype, scale)
    else:
        ok = compare_with_reference(cfg, outputs, limit_rows=limit_rows)
    if world is None or world.rank == 0:
        print(f"mode {mode}: {'PASS' if ok else 'FAIL'} ({time.perf_counter() - started:.1f} s): "
              f"{what_is_compared(mode, cfg)}")
    return ok
