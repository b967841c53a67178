"""`python scripts/bench_adversarial.py`: the asynchronous adversary pipeline against serial training.

For each P in --ranks, with k = P - 1 PGD steps (the paper's choice: one updater keeps up with P - 1
generators when an update costs about one PGD step), it runs

    serial:  python -m nn_cuda.adversarial train --steps k ...          (one process)
    async:   mpiexec -n P python -m nn_cuda.adversarial train --async --steps k ...

as subprocesses with one BLAS thread per process, and reports the training time of each, the speedup
serial / async, the staleness histogram of the async run, and clean / FGSM / PGD accuracy at the
--eval-eps radii of both models (and of a plainly trained model, for reference). Every process
computes on the same backend; with more ranks than cores the ranks share cores, so the speedup is
bounded by the number of cores (machine_info records it).
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/bench_adversarial.py", running=__name__ == "__main__"):
    import argparse
    import json
    import os
    import sys
    import tempfile
    from pathlib import Path

    from tqdm import tqdm

    from nn_cuda.backends import BACKENDS
    from nn_cuda.arguments import comma_separated, int_at_least, pixel_radius, positive_float, positive_int
    from nn_cuda.bench.common import backend_or_usage_error, mpi_child_environment, run_child, run_script
    from nn_cuda.config import DEFAULT_LR, HelpFormatter
    from nn_cuda.data import DATASETS
    from nn_cuda.parallel.mpi import find_mpiexec
    from nn_cuda.records import machine_info, write_json
    from nn_cuda.report.markdown import adversarial_tables, printed

#: the repository, put first on the jobs' PYTHONPATH: they run the nn_cuda beside this script
REPO = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python scripts/bench_adversarial.py",
                                formatter_class=HelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=comma_separated(int_at_least(2)), default=[2, 3, 4],
                   help="values of P, comma-separated (k = P - 1 PGD steps; one updater and at least one "
                   "generator, so P >= 2)")
    p.add_argument("--dataset", choices=DATASETS, default="mnist-sample")
    p.add_argument("--hidden", type=positive_int, default=512)
    p.add_argument("--batch", type=positive_int, default=100)
    p.add_argument("--epochs", type=positive_int, default=3)
    p.add_argument("--lr", type=positive_float, default=DEFAULT_LR,
                   help="learning rate of every run (the training's default, for its raw pixels)")
    p.add_argument("--eps", type=pixel_radius, default=0.1, help="training radius")
    p.add_argument("--eval-eps", type=comma_separated(pixel_radius), default=[0.05, 0.1, 0.2],
                   help="radii of the robustness table, comma-separated")
    p.add_argument("--eval-steps", type=positive_int, default=20)
    p.add_argument("--eval-limit", type=positive_int, default=1000)
    p.add_argument("--backend", choices=BACKENDS, default="numpy")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS threads per process")
    p.add_argument("--repeats", type=positive_int, default=3,
                   help="runs of each configuration; the fastest training time is reported (the least "
                   "disturbed by other work on the machine), the accuracies are those of the first run")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def run(command: list[str], env: dict) -> None:
    job = run_child(command, env)
    if job.returncode != 0:
        raise SystemExit(f"scripts/bench_adversarial.py: error: {' '.join(command)} failed "
                         f"(status {job.returncode}):\n{job.stdout[-2000:]}{job.stderr[-2000:]}")


def _joined(values) -> str:
    return ",".join(map(str, values))


def common_flags(args) -> list[str]:
    return ["--dataset", args.dataset, "--hidden", str(args.hidden), "--batch", str(args.batch),
            "--epochs", str(args.epochs), "--lr", str(args.lr), "--backend", args.backend,
            "--dtype", args.dtype, "--quiet"]


def adversarial_flags(args, k: int, folder: Path, name: str) -> list[str]:
    return ["--attack", "pgd", "--eps", str(args.eps), "--steps", str(k), "--eval-eps", _joined(args.eval_eps),
            "--eval-steps", str(args.eval_steps), "--eval-limit", str(args.eval_limit),
            "--json", str(folder / f"{name}.json")]


def plain_baseline(args, folder: Path, env: dict) -> dict:
    checkpoint = folder / "plain.npz"
    run([sys.executable, "-m", "nn_cuda.train", *common_flags(args), "--save", str(checkpoint)], env)
    out = folder / "plain_eval.json"
    run([sys.executable, "-m", "nn_cuda.adversarial", "eval", "--checkpoint", str(checkpoint),
         "--dataset", args.dataset, "--eps", _joined(args.eval_eps), "--steps", str(args.eval_steps),
         "--limit", str(args.eval_limit), "--backend", args.backend, "--dtype", args.dtype,
         "--json", str(out)], env)
    return {"robustness": json.loads(out.read_text())}


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    backend_or_usage_error(parser, args.backend)  # before any subprocess starts
    env = mpi_child_environment(args.threads)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    mpiexec = find_mpiexec()
    info = machine_info()
    load_before = os.getloadavg()[0]
    rows = []
    runs = 1 + 2 * len(args.ranks) * args.repeats  # the plain baseline, then serial and async per P
    with tempfile.TemporaryDirectory() as tmp, \
            tqdm(total=runs, unit="run") as bar:
        folder = Path(tmp)
        bar.set_description("plain SGD baseline")
        plain = plain_baseline(args, folder, env)
        bar.update()
        for p in args.ranks:
            k = p - 1
            serial_runs, async_runs = [], []
            for r in range(args.repeats):
                bar.set_description(f"P={p}: serial run {r + 1}/{args.repeats}")
                run([sys.executable, "-m", "nn_cuda.adversarial", "train", *common_flags(args),
                     *adversarial_flags(args, k, folder, f"serial_{p}_{r}")], env)
                bar.update()
                bar.set_description(f"P={p}: async run {r + 1}/{args.repeats}")
                run([mpiexec, "-n", str(p), sys.executable, "-m", "nn_cuda.adversarial", "train", "--async",
                     *common_flags(args), *adversarial_flags(args, k, folder, f"async_{p}_{r}")], env)
                bar.update()
                serial_runs.append(json.loads((folder / f"serial_{p}_{r}.json").read_text()))
                async_runs.append(json.loads((folder / f"async_{p}_{r}.json").read_text()))
            serial_seconds = min(run_["train_seconds"] for run_ in serial_runs)
            async_seconds = min(run_["train_seconds"] for run_ in async_runs)
            rows.append({
                "ranks": p, "k": k,
                "serial_seconds": serial_seconds, "async_seconds": async_seconds,
                "serial_seconds_all": [run_["train_seconds"] for run_ in serial_runs],
                "async_seconds_all": [run_["train_seconds"] for run_ in async_runs],
                "speedup": serial_seconds / async_seconds,
                "staleness_histogram": async_runs[0]["staleness_histogram"],
                "serial_robustness": serial_runs[0]["robustness"],
                "async_robustness": async_runs[0]["robustness"],
            })
            tqdm.write(f"P={p} k={k}: serial {serial_seconds:.2f} s, async {async_seconds:.2f} s, "
                       f"speedup {rows[-1]['speedup']:.2f}")
    # Other work on the machine slows some runs more than others: the load average is part of the result.
    load = {"load_average_before": load_before, "load_average_after": os.getloadavg()[0]}
    payload = {"benchmark": "adversarial", "machine": {**info, **load}, "settings": vars(args), "plain": plain, "results": rows}
    if args.json:
        write_json(args.json, payload)  # before anything else can fail: the runs took minutes
        print(f"wrote {args.json}")
    printed("adversarial", payload, adversarial_tables)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/bench_adversarial.py", main))
