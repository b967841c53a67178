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

import numpy as np

from . import compare, model
from .backends import BACKENDS, get_backend
from .config import TrainConfig
from .data import DATASETS, DataError

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
                       pixels="raw", shuffle=False, init=None, grade=mode)


@dataclass
class Run:
    params: dict  # final host parameters
    snapshots: list  # [(step, host parameters)]
    val_acc: float
    seconds: float


def fit(cfg: TrainConfig, backend_name: str, gemm, splits, init: dict, snapshot_every: int) -> Run:
    """Train from `init` on one backend, keeping snapshots (a helper of the comparisons)."""
    from .train import SerialBatches, accuracy, train_loop

    be = get_backend(backend_name, gemm)
    params = model.Parameters(be, init["W1"].shape[0], cfg.dtype)
    params.load(init)
    batches = SerialBatches(be, splits.x_train, splits.y_train, cfg.batch, cfg.shuffle, cfg.seed)
    history = train_loop(be, params, batches, cfg, snapshot_every=snapshot_every or 10**12, progress=False)
    if not history.snapshots or history.snapshots[-1][0] != history.steps:
        history.snapshots.append((history.steps, params.to_host()))
    ws = model.Workspace(be, cfg.batch, params.hidden, cfg.dtype)
    val_acc = accuracy(be, params, ws, be.to_device(splits.x_val), splits.y_val)
    return Run(params.to_host(), history.snapshots, val_acc, history.train_seconds)


def compare_with_reference(cfg: TrainConfig, outputs: Path | None, log=print, limit_rows=None) -> bool:
    """Train cfg's backend and the NumPy reference from the same weights, report, write files.

    Returns True when every error is within the course's threshold for cfg.dtype.
    """
    from .train import initial_parameters, load_splits

    hidden, init = initial_parameters(cfg)
    splits = load_splits(cfg, log=log)
    if limit_rows:
        splits.x_train, splits.y_train = splits.x_train[:limit_rows], splits.y_train[:limit_rows]
        splits.x_val, splits.y_val = splits.x_val[:limit_rows], splits.y_val[:limit_rows]
    log(f"reference: numpy {cfg.dtype}; under test: {cfg.backend}"
        f"{'/' + cfg.gemm if cfg.gemm else ''} {cfg.dtype}; H={hidden} lr={cfg.lr:g} "
        f"epochs={cfg.epochs} batch={cfg.batch} pixels={cfg.pixels} ({splits.dataset})")
    every = cfg.print_every
    tested = fit(cfg, cfg.backend, cfg.gemm, splits, init, every)
    reference = fit(cfg, "numpy", None, splits, init, every)
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
        outputs.mkdir(parents=True, exist_ok=True)
        (outputs / "NNErrors.txt").write_text("\n".join(lines) + "\n")
        rows = [compare.diff_header()]
        for (step, ref_p), (step_t, test_p) in zip(reference.snapshots, tested.snapshots):
            assert step == step_t, "the two runs saved different iterations"
            rows.append(compare.diff_row(step, compare.parameter_errors(ref_p, test_p)))
        (outputs / "CpuGpuDiff.txt").write_text("\n".join(rows) + "\n")
        log(f"wrote {outputs / 'NNErrors.txt'} and {outputs / 'CpuGpuDiff.txt'}")
    return all(verdict.values())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nn_cuda.grade", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", "-g", type=int, choices=(1, 2, 3, 4), required=True)
    p.add_argument("--backend", choices=BACKENDS, default="numpy", help="the backend under test")
    p.add_argument("--gemm", default=None, help="GEMM algorithm of the backend under test")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--dataset", choices=DATASETS, default="mnist")
    p.add_argument("--data-dir", default=None)
    p.add_argument("-p", "--print-every", type=int, default=0,
                   help="save an iteration into CpuGpuDiff.txt every this many steps (0: the last only)")
    p.add_argument("--outputs", default="Outputs", help="folder of NNErrors.txt and CpuGpuDiff.txt")
    p.add_argument("--seed", type=int, default=0)
    small = p.add_argument_group("smaller runs (tests, smoke checks); not the course's settings")
    small.add_argument("--epochs", type=int, default=None, help="override the mode's epochs")
    small.add_argument("--hidden", type=int, default=None, help="override H = 100")
    small.add_argument("--max-steps", type=int, default=None)
    small.add_argument("--limit-rows", type=int, default=None,
                       help="use only the first N images of the training and validation sets")
    gemm = p.add_argument_group("mode 4 (GEMM)")
    gemm.add_argument("--scale", type=int, default=1, help="multiply the course's GEMM sizes by this")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.mode == 4:
        from .grade_gemm import run_gemm_grade

        try:
            return 0 if run_gemm_grade(args.backend, args.gemm, args.dtype, args.scale) else 1
        except (ImportError, RuntimeError, ValueError) as exc:
            print(f"nn_cuda.grade: error: {exc}", file=sys.stderr)
            return 2
    cfg = course_config(args.mode, TrainConfig(
        backend=args.backend, gemm=args.gemm, dtype=args.dtype, dataset=args.dataset,
        data_dir=args.data_dir, print_every=args.print_every, seed=args.seed, quiet=True))
    cfg = cfg.replace(epochs=args.epochs or cfg.epochs, hidden=args.hidden or cfg.hidden,
                      max_steps=args.max_steps)
    started = time.perf_counter()
    try:
        ok = compare_with_reference(cfg, Path(args.outputs), limit_rows=args.limit_rows)
    except (DataError, ValueError) as exc:
        print(f"nn_cuda.grade: error: {exc}", file=sys.stderr)
        return 2
    print(f"mode {args.mode}: {'PASS' if ok else 'FAIL'} ({time.perf_counter() - started:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
