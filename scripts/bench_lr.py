"""`python scripts/bench_lr.py`: test accuracy of the default run as the learning rate and seed vary.

This is the scan behind the default learning rate (docs/training.md, "The default run"). For each lr
and init seed it trains `python -m nn_cuda.train` with the other flags at their defaults (or as
given) and records the validation and test accuracy; a run whose loss becomes NaN or Inf is recorded
as diverged. --pixels unit and --init-scale scan other inputs and initialisations (pixels in [0, 1]
and the course's 0.01 N(0, 1) weights learn slowly at first, which these scans show).

With --torch (when PyTorch is installed; it is never a dependency) every run is repeated by a plain
PyTorch loop written apart from nn_cuda: the same initial weights, the same batches in the same
order, loss = mean cross-entropy + 0.5 reg (|W1|^2 + |W2|^2) and torch.optim.SGD. Its accuracies
should follow nn_cuda's (both in float64 agree to rounding; in float32 large, unstable learning rates
amplify the rounding differences), which says the scan measures the network and its training, not
this implementation.
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/bench_lr.py", running=__name__ == "__main__"):
    import argparse
    import sys

    from tqdm import tqdm

    from nn_cuda import model
    from nn_cuda.arguments import comma_separated, non_negative_int, positive_float, positive_int
    from nn_cuda.config import DEFAULT_LR, TrainConfig
    from nn_cuda.model import DEFAULT_INIT_SCALE
    from nn_cuda.data import DATASETS, epoch_order
    from nn_cuda.training import Diverged, load_splits, run, silent
    from nn_cuda.bench.common import run_script
    from nn_cuda.records import machine_info, machine_line, write_json
    from nn_cuda.report.markdown import lr_table, printed


def build_parser():
    p = argparse.ArgumentParser(prog="python scripts/bench_lr.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lr", type=comma_separated(positive_float),
                   default=[DEFAULT_LR / 4, DEFAULT_LR / 2, DEFAULT_LR, DEFAULT_LR * 2.5, DEFAULT_LR * 5],
                   help="comma-separated learning rates (default: the default lr times 1/4, 1/2, 1, 2.5, 5)")
    p.add_argument("--seeds", type=comma_separated(non_negative_int), default=[0, 1, 2],
                   help="comma-separated init seeds")
    p.add_argument("--dataset", choices=DATASETS, default="mnist-sample")
    p.add_argument("--data-dir", metavar="DIR", help="folder with the four IDX files")
    p.add_argument("-n", "--hidden", type=positive_int, default=1000)
    p.add_argument("-e", "--epochs", type=positive_int, default=20)
    p.add_argument("-b", "--batch", type=positive_int, default=800)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--pixels", choices=("unit", "raw"), default=TrainConfig.pixels,
                   help="raw: 0-255 as the course fed them (the default run); unit: pixels / 255")
    p.add_argument("--init-scale", type=positive_float, nargs=2, default=DEFAULT_INIT_SCALE, metavar=("S1", "S2"),
                   help="initial weights W1 ~ S1 N(0, 1), W2 ~ S2 N(0, 1)")
    p.add_argument("--torch", action="store_true", help="repeat every run with a plain PyTorch loop")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def nn_cuda_run(cfg: TrainConfig, splits) -> dict:
    """Validation and test accuracy of `python -m nn_cuda.train` with `cfg` on the already loaded
    `splits` (None when diverged)."""
    try:
        result = run(cfg.replace(quiet=True), log=silent, splits=splits)
    except Diverged:
        return {"val_acc": None, "test_acc": None, "diverged": True}
    return {"val_acc": result["val_acc"], "test_acc": result["test_acc"], "diverged": False,
            "steps": result["steps"]}


def torch_run(torch, cfg: TrainConfig, splits) -> dict:
    """The same training in plain PyTorch: accuracies and the final host parameters {W1, b1, W2, b2}."""
    dtype = {"float32": torch.float32, "float64": torch.float64}[cfg.dtype]
    init = model.init_parameters(cfg.hidden, cfg.seed, scale=cfg.init_scale)
    W1, b1, W2, b2 = (torch.tensor(init[name], dtype=dtype, requires_grad=True)
                      for name in ("W1", "b1", "W2", "b2"))
    optimizer = torch.optim.SGD([{"params": [W1, W2], "weight_decay": cfg.reg}, {"params": [b1, b2]}],
                                lr=cfg.lr)
    # weight_decay adds reg W to the gradient of the weights: the gradient of 0.5 reg |W|^2.
    x_train, y_train = torch.from_numpy(splits.x_train), torch.from_numpy(splits.y_train).long()

    def logits(x):
        return torch.sigmoid(x @ W1.T + b1) @ W2.T + b2

    n = len(y_train)
    for epoch in range(cfg.epochs):
        order = torch.from_numpy(epoch_order(n, cfg.seed, epoch)).long() if cfg.shuffle else None
        for start in range(0, n, cfg.batch):
            rows = slice(start, min(start + cfg.batch, n))
            x = x_train[order[rows]] if order is not None else x_train[rows]
            y = y_train[order[rows]] if order is not None else y_train[rows]
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(logits(x), y)
            if not torch.isfinite(loss):
                return {"val_acc": None, "test_acc": None, "diverged": True, "params": None}
            loss.backward()
            optimizer.step()

    def accuracy(x, y):
        with torch.no_grad():
            return float((logits(torch.from_numpy(x)).argmax(1).numpy() == y).mean())

    params = {name: t.detach().numpy().copy() for name, t in zip(("W1", "b1", "W2", "b2"), (W1, b1, W2, b2))}
    return {"val_acc": accuracy(splits.x_val, splits.y_val), "test_acc": accuracy(splits.x_test, splits.y_test),
            "diverged": False, "params": params}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    torch = None
    if args.torch:
        try:
            import torch
        except Exception as error:  # an optional comparison: say why it cannot run, do not skip it silently
            raise SystemExit(f"scripts/bench_lr.py: error: --torch needs PyTorch ({error})") from None
    base = TrainConfig(dataset=args.dataset, data_dir=args.data_dir, hidden=args.hidden, epochs=args.epochs,
                       batch=args.batch, dtype=args.dtype, shuffle=args.shuffle,
                       pixels=args.pixels, init_scale=args.init_scale)
    info = machine_info()
    # Loaded once, here: every run trains on these arrays, and a fallback to the bundled sample
    # is said once (the runs themselves are silent).
    splits = load_splits(base, log=print)
    results = []
    runs = [(lr, seed) for lr in args.lr for seed in args.seeds]
    for lr, seed in tqdm(runs, desc="lr scan", unit="run"):
        cfg = base.replace(lr=lr, seed=seed)
        row = {"lr": lr, "seed": seed, **nn_cuda_run(cfg, splits)}
        if torch is not None:
            reference = torch_run(torch, cfg, splits)
            row["torch"] = {key: reference[key] for key in ("val_acc", "test_acc", "diverged")}
        results.append(row)

    payload = {"benchmark": "lr", "machine": info, "config": {**vars(args), "dataset": splits.dataset},
               "results": results}
    print(f"machine: {machine_line(info)}" + ("; in brackets: the PyTorch loop" if torch is not None else ""))
    printed("lr", payload, lr_table)
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/bench_lr.py", main))
