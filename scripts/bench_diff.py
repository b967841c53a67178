"""`python scripts/bench_diff.py`: how far float32 training drifts from the float64 reference.

Trains the network twice from the same initial weights and on the same batches: once in float64 with
the NumPy reference, once in float32 on the backend under test (CuPy on a GPU, else NumPy float32),
and compares the final W1, W2, b1, b2 with the course's relative errors (nn_cuda.relative_errors: max-norm
and l2). It varies one setting at a time around a base run:

    lr      the learning rate
    epochs  taken from one run of the longest length, compared after every epoch
    hidden  H
    batch   the mini-batch size

and adds the course's grading modes 1-3 at their float32 settings (raw 0-255 pixels, H = 100), to
show the float32 error against the course's threshold (1e-4). The default sweep runs in a few
minutes on two cores on the bundled --dataset mnist-sample.

Why the errors grow: a float32 dot product of length K is rounded once per term, in an order that
differs between implementations (blocked BLAS, GPU tiles), so each GEMM output is off by up to about
K u (u = 2^-24) of its magnitude. Every step adds such errors to the weights, and the next steps
feed them back through the gradients, so they accumulate with the number of steps; a larger learning
rate multiplies every perturbation of the gradient into the weights by more, and a chaotic (large lr)
run amplifies them.
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/bench_diff.py", running=__name__ == "__main__"):
    import argparse
    import math
    import sys

    from tqdm import tqdm

    from nn_cuda import relative_errors
    from nn_cuda.backends import BACKENDS
    from nn_cuda.arguments import comma_separated, non_negative_int, positive_float, positive_int
    from nn_cuda.config import TrainConfig
    from nn_cuda.data import DATASETS
    from nn_cuda.model import COURSE_INIT_SCALE
    from nn_cuda.records import machine_info, machine_line, write_json
    from nn_cuda.bench.common import backend_or_usage_error, default_backend, run_script

BASE = {"lr": 0.5, "epochs": 4, "hidden": 100, "batch": 800}
SWEEPS = {
    "lr": [0.05, 0.2, 0.5, 1.0, 2.0],
    "epochs": [1, 2, 5, 10, 20],
    "hidden": [25, 100, 400, 1000],
    "batch": [100, 400, 800, 3600],
}
MODES = (1, 2, 3)


def _training_mode(text: str) -> int:
    mode = int(text)
    if mode not in MODES:
        raise argparse.ArgumentTypeError(f"the grading modes that train are {', '.join(map(str, MODES))} "
                                         f"(mode 4 tests the GEMM alone), got {text}")
    return mode


def build_parser():
    p = argparse.ArgumentParser(prog="python scripts/bench_diff.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="the float32 backend under test (default: cupy on a GPU, else numpy)")
    p.add_argument("--gemm", default=None, help="its GEMM algorithm (default: the backend's)")
    p.add_argument("--dataset", choices=DATASETS, default="mnist-sample")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--lr", type=comma_separated(positive_float), default=SWEEPS["lr"],
                   help="learning rates (comma-separated)")
    p.add_argument("--epochs", type=comma_separated(positive_int), default=SWEEPS["epochs"],
                   help="epochs (one run, the longest)")
    p.add_argument("--hidden", type=comma_separated(positive_int), default=SWEEPS["hidden"],
                   help="hidden sizes H")
    p.add_argument("--batch", type=comma_separated(positive_int), default=SWEEPS["batch"],
                   help="mini-batch sizes")
    p.add_argument("--base", default=",".join(f"{k}={v}" for k, v in BASE.items()),
                   help="the run the sweeps vary, as lr=..,epochs=..,hidden=..,batch=..")
    p.add_argument("--modes", type=comma_separated(_training_mode, allow_empty=True), default=list(MODES),
                   help="course grading modes to measure at their float32 settings ('' for none)")
    p.add_argument("--mode-epochs", type=positive_int, default=None,
                   help="cap on the epochs of the grading modes (default: the course's)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def parse_base(text: str) -> dict:
    base = dict(BASE)
    for item in text.split(","):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in BASE or not value:
            raise argparse.ArgumentTypeError(
                f"--base {text!r}: expected lr=..,epochs=..,hidden=..,batch=.. (unknown {key!r})")
        try:
            base[key] = (positive_float if key == "lr" else positive_int)(value)
        except (ValueError, argparse.ArgumentTypeError) as error:
            detail = error if isinstance(error, argparse.ArgumentTypeError) else "not a number"
            raise argparse.ArgumentTypeError(f"--base {text!r}: {key} {detail}") from None
    return base


class Comparison:
    """Trains float64 NumPy and float32 `backend` from the same weights; caches the data splits."""

    def __init__(self, backend, gemm, dataset, data_dir, seed, progress):
        self.backend, self.gemm, self.seed = backend, gemm, seed
        self.progress = progress  # a tqdm bar, updated after each comparison
        # pixels in [0, 1] with the course's initialisation: the base run these sweeps were built around
        self.base_cfg = TrainConfig(dataset=dataset, data_dir=data_dir, seed=seed, quiet=True, pixels="unit",
                                    init_scale=COURSE_INIT_SCALE)
        self._splits = {}

    def splits(self, cfg):
        from nn_cuda.training import load_splits

        key = (cfg.dtype, cfg.pixels)
        if key not in self._splits:
            self._splits[key] = load_splits(cfg, log=lambda *a: None)
        return self._splits[key]

    def run(self, cfg: TrainConfig) -> list[dict]:
        """[{step, epoch, errors}] after every epoch of cfg (errors: {name: [max-norm, l2]})."""
        from nn_cuda import model
        from nn_cuda.training import train_with_snapshots
        from nn_cuda.training import Diverged

        init = model.init_parameters(cfg.hidden, cfg.seed, scale=cfg.init_scale)
        cfg64, cfg32 = cfg.replace(dtype="float64"), cfg.replace(dtype="float32")
        steps_per_epoch = -(-self.splits(cfg64).x_train.shape[0] // cfg.batch)
        cfg64 = cfg64.replace(print_every=steps_per_epoch)
        cfg32 = cfg32.replace(print_every=steps_per_epoch)
        try:
            reference = train_with_snapshots(cfg64, "numpy", None, self.splits(cfg64), init)
            tested = train_with_snapshots(cfg32, self.backend, self.gemm, self.splits(cfg32), init)
        except Diverged as error:
            return [{"diverged": str(error)}]
        finally:
            self.progress.update(1)
        points = []
        for (step, ref), (step_t, other) in zip(reference.snapshots, tested.snapshots):
            assert step == step_t, "the two runs saved different steps"
            if step == 0:
                continue
            errors = relative_errors.parameter_errors(ref, other)
            points.append({"step": step, "epoch": step / steps_per_epoch,
                           "errors": {name: list(pair) for name, pair in errors.items()},
                           "passes_float32": all(relative_errors.passes(errors, "float32").values())})
        points[-1].update(val_acc_float64=reference.val_acc, val_acc_float32=tested.val_acc)
        return points


def _config(comparison, base, **changes) -> TrainConfig:
    values = {**base, **changes}
    return comparison.base_cfg.replace(lr=values["lr"], epochs=values["epochs"], hidden=values["hidden"],
                                       batch=values["batch"])


def _worst(point) -> float:
    if "errors" not in point:
        return math.nan
    return max(max(pair) for pair in point["errors"].values())


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        base = parse_base(args.base)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    backend = args.backend or default_backend()
    backend_or_usage_error(parser, backend, args.gemm)  # before any training
    info = machine_info()
    print(f"float32 {backend} against float64 numpy, final weights, {args.dataset}; base {base}")
    print(f"machine: {machine_line(info)}")
    print(f"{'vary':7s} {'value':>8s} {'steps':>6s} " + " ".join(f"{n + ' l2':>10s}" for n in relative_errors.COLUMN_ORDER)
          + f" {'worst':>10s}")
    comparisons = len(args.lr) + 1 + len(args.hidden) + len(args.batch) + len(args.modes)
    # one bar over the comparisons (each trains twice: float64 NumPy, float32 under test)
    with tqdm(total=comparisons, desc="diff", unit="comparison") as bar:
        comparison = Comparison(backend, args.gemm, args.dataset, args.data_dir, args.seed, bar)
        rows = []

        def record(axis, value, cfg, point):
            row = {"vary": axis, "value": value, "lr": cfg.lr, "epochs": cfg.epochs if axis != "epochs" else value,
                   "hidden": cfg.hidden, "batch": cfg.batch, "pixels": cfg.pixels, **point}
            rows.append(row)
            if "errors" in point:
                tqdm.write(f"{axis:7s} {value:8g} {point['step']:6d} "
                           + " ".join(f"{point['errors'][n][1]:10.2e}" for n in relative_errors.COLUMN_ORDER)
                           + f" {_worst(point):10.2e}")
            else:
                tqdm.write(f"{axis:7s} {value:8g} diverged")

        for lr in args.lr:
            cfg = _config(comparison, base, lr=lr)
            record("lr", lr, cfg, comparison.run(cfg)[-1])
        cfg = _config(comparison, base, epochs=max(args.epochs))
        per_epoch = comparison.run(cfg)
        for epochs in args.epochs:
            found = [p for p in per_epoch if p.get("epoch") == epochs] or per_epoch[-1:]
            record("epochs", epochs, cfg, found[0])
        for hidden in args.hidden:
            cfg = _config(comparison, base, hidden=hidden)
            record("hidden", hidden, cfg, comparison.run(cfg)[-1])
        for batch in args.batch:
            cfg = _config(comparison, base, batch=batch)
            record("batch", batch, cfg, comparison.run(cfg)[-1])

        modes = []
        if args.modes:
            from nn_cuda.grading import COURSE_MODES, course_config

            tqdm.write(f"course grading modes, float32 settings (raw pixels, H=100), threshold "
                       f"{relative_errors.THRESHOLDS['float32']:g}")
            for mode in args.modes:
                cfg = course_config(mode, comparison.base_cfg.replace(dtype="float32"))
                if args.mode_epochs is not None:
                    cfg = cfg.replace(epochs=min(cfg.epochs, args.mode_epochs))
                point = comparison.run(cfg)[-1]
                lr64, epochs64 = COURSE_MODES[mode]["float64"]
                modes.append({"mode": mode, "lr": cfg.lr, "epochs": cfg.epochs, "hidden": cfg.hidden,
                              "batch": cfg.batch, "pixels": cfg.pixels, "course_float64_lr": lr64,
                              "course_float64_epochs": epochs64, **point})
                tqdm.write(f"mode {mode}: lr {cfg.lr:g}, {cfg.epochs} epochs: worst relative error "
                           f"{_worst(point):.2e} ({'PASS' if point.get('passes_float32') else 'FAIL'})")
    if args.json:
        write_json(args.json, {"benchmark": "diff", "machine": info,
                               "config": {"backend": backend, "gemm": args.gemm, "dataset": args.dataset,
                                          "base": base, "seed": args.seed,
                                          "thresholds": relative_errors.THRESHOLDS,
                                          "reference": "numpy float64", "tested": f"{backend} float32"},
                               "results": rows, "modes": modes})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/bench_diff.py", main))
