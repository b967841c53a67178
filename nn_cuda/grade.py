"""`python -m nn_cuda.grade --mode 1|2|3|4`: the course's grading harness.

Modes 1-3 train the network twice from the same initial weights, with the course's settings (H = 100,
reg = 1e-4, batch 800, raw 0-255 pixels, and the learning rate and epochs of the mode): once with the
NumPy CPU reference and once with the backend under test (a GPU backend, or MPI ranks). They then
compare the parameters with the course's relative errors (nn_cuda.compare) and write

    Outputs/NNErrors.txt     the final errors of W1, W2, b1, b2, PASS/FAIL, and both accuracies
    Outputs/CpuGpuDiff.txt   one row per saved iteration (every -p steps, and the last): the errors

Mode 4 is the course's GEMM test (see nn_cuda.grade_gemm).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import compare, memory, model, parallel
from .backends import BACKENDS, get_backend
from .config import TrainConfig, non_negative_int, positive_int
from .data import DATASETS, DataError
from .interrupts import ends_in_one_line_when_interrupted
from .outputs import OutputError, check_writable, write_text
from .train import TrainingError

#: mode -> dtype -> (learning rate, epochs), the course's settings for raw 0-255 pixels
COURSE_MODES = {
    1: {"float32": (0.0005, 40), "float64": (0.001, 40)},
    2: {"float32": (0.001, 10), "float64": (0.01, 10)},
    3: {"float32": (0.002, 1), "float64": (0.025, 1)},
}
COURSE_HIDDEN = 100
COURSE_REG = 1e-4
COURSE_BATCH = 800
OUTPUT_FILES = ("NNErrors.txt", "CpuGpuDiff.txt")


def course_config(mode: int, cfg: TrainConfig) -> TrainConfig:
    """cfg with the course's hyperparameters of `mode` (backend, dtype and data are kept)."""
    lr, epochs = COURSE_MODES[mode][cfg.dtype]
    return cfg.replace(hidden=COURSE_HIDDEN, reg=COURSE_REG, batch=COURSE_BATCH, lr=lr, epochs=epochs,
                       pixels="raw", shuffle=False, init=None, grade=mode)


@dataclass
class Run:
    params: dict  # final host parameters
    snapshots: list  # [(step, host parameters)]: step 0, every -p steps, and the last
    val_acc: float
    seconds: float

    @classmethod
    def of(cls, final: dict, history, val_acc: float) -> "Run":
        """The Run of a finished train_loop, from its final host parameters (its snapshots completed
        with the last step)."""
        snapshots = list(history.snapshots)
        if not snapshots or snapshots[-1][0] != history.steps:
            snapshots.append((history.steps, final))
        return cls(final, snapshots, val_acc, history.train_seconds)


def check_outputs(outputs: Path) -> None:
    """OutputError, before any training, when a file of `outputs` cannot be written."""
    for name in OUTPUT_FILES:
        check_writable(outputs / name)


def snapshot_interval(cfg: TrainConfig, steps_per_epoch: int) -> int:
    """Steps between snapshots: -p, or (with -p 0) a whole run, so that step 0 and the last are kept."""
    return cfg.print_every or cfg.epochs * steps_per_epoch


def fit(cfg: TrainConfig, backend_name: str, gemm, splits, init: dict, strategy=None) -> Run:
    """Train from `init` on one backend (under `strategy`: serial by default), keeping snapshots.

    Snapshots are taken at step 0, every cfg.print_every steps and at the last step. On the ranks
    other than the root of a parallel run, the validation accuracy is NaN and the parameters
    are None (the root reports).
    """
    from .train import Serial, accuracy, train_loop

    strategy = strategy or Serial()
    be = get_backend(backend_name, gemm)
    params = strategy.local_parameters(be, init, cfg.dtype)
    strategy.broadcast_parameters(params)
    batches = strategy.make_batches(be, splits.x_train, splits.y_train, cfg)
    every = snapshot_interval(cfg, batches.steps_per_epoch)
    history = train_loop(be, params, batches, cfg, strategy, snapshot_every=every, progress=False)
    val_acc = float("nan")
    if strategy.evaluates:  # rank 0 of data parallelism; every rank of model parallelism
        ws = model.Workspace(be, cfg.batch, params.hidden, cfg.dtype)
        val_acc = accuracy(be, params, ws, be.to_device(splits.x_val), splits.y_val, strategy.reduce_logits)
    final = strategy.gather_parameters(params)
    if not strategy.is_root:
        val_acc = float("nan")
    return Run.of(final, history, val_acc)


def report(cfg: TrainConfig, tested: Run, reference: Run, outputs: Path | None, log=print) -> bool:
    """Print the course's comparison of `tested` with `reference`; write the Outputs/ files.

    Returns True when every error is within the course's threshold for cfg.dtype.
    """
    errors = compare.parameter_errors(reference.params, tested.params)
    verdict = compare.passes(errors, cfg.dtype)
    limit = compare.THRESHOLDS[cfg.dtype]
    lines = [f"{'':4s}{'max-norm rel. error':>22s}{'l2 rel. error':>16s}   (fail above {limit:g})"]
    for name in compare.COLUMN_ORDER:
        inf_err, l2_err = errors[name]
        lines.append(f"{name:4s}{inf_err:22.3e}{l2_err:16.3e}   {'PASS' if verdict[name] else 'FAIL'}")
    lines.append(f"validation accuracy: reference {reference.val_acc:.4f}, "
                 f"{cfg.backend} {tested.val_acc:.4f}")
    for line in lines:
        log(line)
    if outputs is not None:
        rows = [compare.diff_header()]
        for (step, ref_p), (step_t, test_p) in zip(reference.snapshots, tested.snapshots):
            assert step == step_t, "the two runs saved different iterations"
            rows.append(compare.diff_row(step, compare.parameter_errors(ref_p, test_p)))
        write_text(outputs / "NNErrors.txt", "\n".join(lines) + "\n")
        write_text(outputs / "CpuGpuDiff.txt", "\n".join(rows) + "\n")
        log(f"wrote {outputs / 'NNErrors.txt'} and {outputs / 'CpuGpuDiff.txt'}")
    return all(verdict.values())


def compare_with_reference(cfg: TrainConfig, outputs: Path | None, log=print, limit_rows=None) -> bool:
    """Train cfg's backend (on every MPI rank under mpirun) and, on the root, the serial NumPy
    reference from the same weights; the root reports and writes the files.

    Returns True when every error is within the course's threshold (always True off the root).
    """
    from .train import check_ranks_share_the_data, initial_parameters, load_splits, make_strategy

    strategy = make_strategy(cfg)
    log = log if strategy.is_root else (lambda *args: None)
    if strategy.is_root and outputs is not None:
        check_outputs(outputs)
    hidden, init = initial_parameters(cfg)
    splits = load_splits(cfg, log=log, progress=strategy.is_root)
    check_ranks_share_the_data(getattr(strategy, "comm", None), splits)
    if limit_rows is not None:
        splits.x_train, splits.y_train = splits.x_train[:limit_rows], splits.y_train[:limit_rows]
        splits.x_val, splits.y_val = splits.x_val[:limit_rows], splits.y_val[:limit_rows]
    ranks = f" on {parallel.ranks(strategy.size)}" if strategy.size > 1 else ""
    log(f"reference: numpy {cfg.dtype}; under test: {cfg.backend}"
        f"{'/' + cfg.gemm if cfg.gemm else ''} {cfg.dtype}{ranks}; H={hidden} lr={cfg.lr:g} "
        f"epochs={cfg.epochs} batch={cfg.batch} pixels={cfg.pixels} ({splits.dataset})")
    tested = fit(cfg, cfg.backend, cfg.gemm, splits, init, strategy)
    if not strategy.is_root:
        return True
    reference = fit(cfg, "numpy", None, splits, init)
    return report(cfg, tested, reference, outputs, log)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nn_cuda.grade", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", "-g", type=int, choices=(1, 2, 3, 4), required=True)
    p.add_argument("--backend", choices=BACKENDS, default="numpy", help="the backend under test")
    p.add_argument("--gemm", default=None, help="GEMM algorithm of the backend under test")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--dataset", choices=DATASETS, default="mnist")
    p.add_argument("--data-dir", default=None)
    p.add_argument("-p", "--print-every", type=non_negative_int, default=0,
                   help="save an iteration into CpuGpuDiff.txt every this many steps (0: the last only)")
    p.add_argument("--outputs", default="Outputs", help="folder of NNErrors.txt and CpuGpuDiff.txt")
    p.add_argument("--seed", type=non_negative_int, default=0)
    small = p.add_argument_group("smaller runs (tests, smoke checks); not the course's settings")
    small.add_argument("--epochs", type=positive_int, default=None, help="override the mode's epochs")
    small.add_argument("--hidden", type=positive_int, default=None, help="override H = 100")
    small.add_argument("--max-steps", type=positive_int, default=None, help="stop after this many steps")
    small.add_argument("--limit-rows", type=positive_int, default=None,
                       help="use only the first N images of the training and validation sets")
    gemm = p.add_argument_group("mode 4 (GEMM)")
    gemm.add_argument("--scale", type=positive_int, default=1, help="multiply the course's GEMM sizes by this")
    return p


USER_ERRORS = (DataError, ValueError, ImportError, RuntimeError, parallel.ParallelError, TrainingError,
               OutputError)


def what_is_compared(mode: int, cfg: TrainConfig) -> str:
    """The backend under test and its reference, for the summary line; says so when NumPy is compared
    with itself (the default backend, on a machine without a GPU)."""
    world = parallel.world_from_environment()
    on_ranks = f" on {parallel.ranks(world.size)}" if mode != 4 and world and world.size > 1 else ""
    tested = f"{cfg.backend}{'/' + cfg.gemm if cfg.gemm else ''} {cfg.dtype}{on_ranks}"
    reference = "cuBLAS" if mode == 4 and cfg.backend == "cupy" else "the NumPy reference"
    if cfg.backend == "numpy" and not on_ranks:
        return (f"{tested} against {reference}, that is NumPy against itself: no kernel was graded "
                "(--backend cuda-cpu or numba-sim grades the kernels on a CPU, cupy or numba on a GPU)")
    return f"{tested} against {reference}"


def check_gemm_memory(dtype: str, scale: int) -> None:
    """NotEnoughMemory before mode 4 allocates its matrices at --scale: A, B and C of each course size
    (built in float64, then cast), a copy for the backend under test and one for the reference."""
    import numpy as np

    from .grade_gemm import COURSE_GEMM_SIZES

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


@ends_in_one_line_when_interrupted("nn_cuda.grade")
def main(argv=None) -> int:
    with parallel.output_on_root_only():
        args = build_parser().parse_args(argv)
    cfg = TrainConfig(backend=args.backend, gemm=args.gemm, dtype=args.dtype, dataset=args.dataset,
                      data_dir=args.data_dir, print_every=args.print_every, seed=args.seed, quiet=True)
    if args.mode != 4:
        cfg = course_config(args.mode, cfg)
        cfg = cfg.replace(epochs=cfg.epochs if args.epochs is None else args.epochs,
                          hidden=cfg.hidden if args.hidden is None else args.hidden, max_steps=args.max_steps)
    try:
        with parallel.abort_on_error("nn_cuda.grade", USER_ERRORS):
            ok = run_grade(args.mode, cfg, Path(args.outputs), args.limit_rows, args.scale)
    except USER_ERRORS as exc:
        print(f"nn_cuda.grade: error: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
