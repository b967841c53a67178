"""`python -m nn_cuda.bench train`: throughput of the training step.

Times the hot path of `nn_cuda.train` (forward, backward, update: the calls of `nn_cuda.model`) on
random pixels in [0, 1) for the default network (H = 1000, batch 800, float32), and in the same run:

- the GEMM floor: the same five GEMMs of one step timed alone through NumPy's BLAS (CPU backends),
  so "step / floor" says how much the non-GEMM work costs;
- the phase breakdown (nn_cuda.profiling): a second run of --phase-steps steps with every operation
  timed under its phase (forward GEMMs, backward GEMMs, element-wise, update, transfers), by CUDA
  events on a GPU and by the host clock after a synchronize on the CPU. Timing each call costs a
  little, so the phases are measured apart from the plain ms/step;
- an equivalent plain PyTorch loop (nn.Linear, sigmoid, cross-entropy, SGD with weight decay on the
  weights only), when torch is installed on the machine. torch is never a dependency.

The step, the PyTorch loop and the GEMM floor are timed in alternating rounds of a few steps each,
and every ratio is taken within a round: on a shared machine whose speed changes, a ratio of two
runs timed minutes apart measures the machine as much as the code.

A step does 2 * (784 H + H 10) FLOP per sample forward and twice that backward (no gradient for X is
needed), about 3196 H FLOP per sample: 2.56 GFLOP at H = 1000, B = 800.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from tqdm import tqdm

from .. import model
from ..arguments import non_negative_int, positive_int
from ..profiling import PhaseTimer, timed_step
from ..backends import BACKENDS
from ..config import TrainConfig
from ..records import machine_info, machine_line, write_json
from ..report.markdown import phase_notes, phases_table, printed, train_table
from ..report.numbers import phase_bars
from ..training import simulator_cost_note
from .common import backend_or_usage_error, host_seconds


def flop_per_step(batch: int, hidden: int, n_in: int = 784, n_out: int = 10) -> int:
    forward = 2 * batch * hidden * (n_in + n_out)
    backward = 2 * batch * hidden * n_out * 2 + 2 * batch * hidden * n_in  # dW2, dA1; dW1
    return forward + backward


def random_batches(batch: int, n_batches: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.random((batch * n_batches, 784)).astype(dtype)
    y = rng.integers(0, 10, batch * n_batches).astype(np.int32)
    return x, y


class BlockTimer:
    """Times blocks of training steps: a subclass supplies `_step()` and `_sync()` (wait for the device)."""

    def block(self, steps) -> list[float]:
        """Seconds of each of `steps` steps, after one untimed step (see interleaved_rounds)."""
        self._step()
        times = []
        for _ in range(steps):
            self._sync()
            start = time.perf_counter()
            self._step()
            self._sync()
            times.append(time.perf_counter() - start)
        return times


class StepTimer(BlockTimer):
    """Times blocks of nn_cuda training steps (forward + backward + update, the calls of
    `nn_cuda.model`) on one backend; the buffers are allocated once and kept between blocks."""

    def __init__(self, backend, hidden, batch, dtype, warmup, lr=0.1, reg=1e-4, n_batches=4):
        self.backend, self.batch, self.lr, self.reg, self.n_batches = backend, batch, lr, reg, n_batches
        x, y = random_batches(batch, n_batches, dtype)
        self.X, self.Y = backend.to_device(x), backend.to_device(y)
        self.params = model.Parameters(backend, hidden, dtype)
        self.params.load(model.init_parameters(hidden, 0))
        self.grads = model.Parameters(backend, hidden, dtype)
        self.workspace = model.Workspace(backend, batch, hidden, dtype)
        self.step_count = 0
        self.block(warmup)

    def _step(self):
        k, b = self.step_count % self.n_batches, self.batch
        self.step_count += 1
        Xb, Yb = self.X[k * b : (k + 1) * b], self.Y[k * b : (k + 1) * b]
        model.training_step(self.backend, self.params, self.grads, self.workspace, Xb, Yb, 1.0 / b, self.lr, self.reg)

    def _sync(self):
        self.backend.synchronize()

    def phases(self, steps) -> dict:
        """Milliseconds per step of each phase (nn_cuda.profiling) over `steps` more steps, every
        call timed: by CUDA events on a GPU, by the host clock after a synchronize on the CPU."""
        timer = PhaseTimer(self.backend)
        timed = timer.backend(self.backend)
        X, Y, b = self.X[: self.batch], self.Y[: self.batch], self.batch
        for _ in range(steps):
            timed_step(timer, model, timed, self.params, self.grads, self.workspace, X, Y, 1.0 / b, self.lr,
                       self.reg)
        summary = timer.summary()
        return {"clock": summary["clock"], "steps": steps, "ms_per_step": summary["ms_per_step"]}


class TorchStepTimer(BlockTimer):
    """The same blocks for the equivalent plain PyTorch loop (nn.Linear, sigmoid, cross-entropy, SGD
    with weight decay on the weights only). Construct it only when torch imports."""

    def __init__(self, torch, hidden, batch, dtype, warmup, device="cpu", lr=0.1, reg=1e-4, n_batches=4):
        self.torch, self.batch, self.n_batches = torch, batch, n_batches
        torch_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}[np.dtype(dtype)]
        net = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.Sigmoid(), torch.nn.Linear(hidden, 10))
        self.net = net.to(device=device, dtype=torch_dtype)
        weights, biases = [net[0].weight, net[2].weight], [net[0].bias, net[2].bias]
        self.opt = torch.optim.SGD([{"params": weights, "weight_decay": reg}, {"params": biases}], lr=lr)
        x, y = random_batches(batch, n_batches, dtype)
        self.X = torch.from_numpy(x).to(device)
        self.Y = torch.from_numpy(y).long().to(device)
        self._sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
        self.step_count = 0
        self.block(warmup)

    def _step(self):
        k, b = self.step_count % self.n_batches, self.batch
        self.step_count += 1
        self.opt.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.net(self.X[k * b : (k + 1) * b]),
                                                      self.Y[k * b : (k + 1) * b])
        loss.backward()
        self.opt.step()


def import_torch():
    """torch, or None when it is not installed (or broken): the comparison is then skipped, and said so."""
    try:
        import torch
    except Exception:
        return None
    return torch


class GemmFloor:
    """The step's five GEMMs through NumPy, each timed alone: `block(repeat)` is the sum of their
    median times. This is the time the step's FLOPs need at NumPy's own GEMM rate."""

    def __init__(self, hidden, batch, dtype):
        rng = np.random.default_rng(1)
        r = lambda *shape: rng.random(shape).astype(dtype)  # noqa: E731
        X, W1, A1, W2 = r(batch, 784), r(hidden, 784), r(batch, hidden), r(10, hidden)
        dZ2, dZ1 = r(batch, 10), r(batch, hidden)
        out = {k: np.empty(s, dtype) for k, s in
               {"Z1": (batch, hidden), "Z2": (batch, 10), "dW2": (10, hidden), "dA1": (batch, hidden),
                "dW1": (hidden, 784)}.items()}
        self.gemms = [
            lambda: np.matmul(X, W1.T, out=out["Z1"]),
            lambda: np.matmul(A1, W2.T, out=out["Z2"]),
            lambda: np.matmul(dZ2.T, A1, out=out["dW2"]),
            lambda: np.matmul(dZ2, W2, out=out["dA1"]),
            lambda: np.matmul(dZ1.T, X, out=out["dW1"]),
        ]

    def block(self, repeat) -> list[float]:
        total = 0.0
        for gemm in self.gemms:
            total += statistics.median(host_seconds(gemm, repeat))
        return [total]


def interleaved_rounds(timers: dict, rounds: int, steps: int, progress=None) -> dict:
    """{name: [median seconds per step of each round]}: every round times a block of `steps` steps
    of each timer, one timer after the other.

    A shared machine changes speed over seconds: on the 2-core VM of the README the same step took
    18 ms or 29 ms depending on the moment. Timing whole runs one after the other (all of NumPy, then
    all of PyTorch) lets such a change land between them and skew their ratio; alternating short
    blocks puts both sides of each ratio in the same few hundred milliseconds, and the ratios are
    then taken round by round. Each block starts with one untimed step, so that the threads of the
    previous timer (BLAS or OpenMP workers that spin for a while after their last call) are quiet.
    """
    per_round = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            per_round[name].append(statistics.median(timer.block(steps)))
        if progress is not None:
            progress.update(1)
    return per_round


def ratio_summary(numerators: list[float], denominators: list[float]) -> dict:
    """Median, min and max over rounds of numerator / denominator of the same round."""
    ratios = [n / d for n, d in zip(numerators, denominators)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def build_parser():
    p = argparse.ArgumentParser(prog="python -m nn_cuda.bench train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=BACKENDS, default="numpy")
    p.add_argument("--gemm", default=None, help="comma-separated GEMM algorithms (default: the backend's)")
    p.add_argument("--hidden", type=positive_int, default=1000)
    p.add_argument("--batch", type=positive_int, default=800)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--rounds", type=positive_int, default=10,
                   help="rounds; each times a block of every run in turn (default 10)")
    p.add_argument("--steps", type=positive_int, default=5,
                   help="measured steps per run and round (default 5)")
    p.add_argument("--warmup", type=non_negative_int, default=3)
    p.add_argument("--phase-steps", type=non_negative_int, default=10,
                   help="steps of the phase breakdown run (0: skip it)")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    dtype = np.dtype(args.dtype)
    info = machine_info(args.backend)
    flop = flop_per_step(args.batch, args.hidden)
    probe = backend_or_usage_error(parser, args.backend)
    algos = list(dict.fromkeys(args.gemm.split(","))) if args.gemm else [probe.gemm_algo]
    backends = {algo: backend_or_usage_error(parser, args.backend, algo) for algo in algos}
    for backend in backends.values():  # numba-sim at the default sizes: hours, said before they start
        note = simulator_cost_note(TrainConfig(batch=args.batch), backend, args.hidden,
                                   args.warmup + args.rounds * args.steps + args.phase_steps,
                                   smaller="--hidden 8 --batch 16 --rounds 1 --steps 1 --warmup 1 --phase-steps 1")
        if note:
            print(note, flush=True)
    shape = (args.hidden, args.batch, dtype)

    timers, rows = {}, []
    for algo, backend in backends.items():
        name = f"nn_cuda {backend.name}/{algo}"
        timers[name] = StepTimer(backend, *shape, warmup=args.warmup)
        rows.append({"name": name, "backend": backend.name, "gemm": algo})
    torch = None if args.no_torch else import_torch()
    if torch is not None:
        name = f"PyTorch {torch.__version__} loop"
        timers[name] = TorchStepTimer(torch, *shape, warmup=args.warmup,
                                      device="cuda" if probe.on_device else "cpu")
        rows.append({"name": name, "backend": "torch", "threads": torch.get_num_threads()})
    elif not args.no_torch:
        print("PyTorch does not import here: the comparison with it is skipped (pip install torch to have it)")
    if not probe.on_device:
        timers["GEMM floor"] = GemmFloor(*shape)

    with tqdm(total=args.rounds, desc="rounds", unit="round") as bar:
        per_round = interleaved_rounds(timers, args.rounds, args.steps, progress=bar)

    floor = per_round.pop("GEMM floor", None)
    torch_row = next((r for r in rows if r["backend"] == "torch"), None)
    baseline = {}
    if floor is not None:
        baseline["gemm_floor_ms"] = 1e3 * statistics.median(floor)
        baseline["numpy_gemm_gflops"] = flop / statistics.median(floor) / 1e9
        baseline["gemm_floor_ms_per_round"] = [1e3 * t for t in floor]
    for r in rows:
        seconds = per_round[r["name"]]
        t = statistics.median(seconds)
        r.update(ms_per_step=1e3 * t, samples_per_s=args.batch / t, gflops=flop / t / 1e9,
                 ms_per_step_per_round=[1e3 * x for x in seconds])
        if torch_row is not None:
            r["vs_torch"] = ratio_summary(per_round[torch_row["name"]], seconds)
            r["speedup_vs_torch"] = r["vs_torch"]["median"]
        if floor is not None:
            r["vs_floor"] = ratio_summary(seconds, floor)
            r["time_over_gemm_floor"] = r["vs_floor"]["median"]
    for r in rows:
        if r["backend"] != "torch" and args.phase_steps > 0:
            r["phases"] = timers[r["name"]].phases(args.phase_steps)

    payload = {"benchmark": "train", "machine": info, "config": vars(args), "flop_per_step": flop,
               "baseline": baseline, "results": rows}
    print(f"training step; machine: {machine_line(info)}")
    def draw(result) -> list[str]:
        bars = phase_bars([result], [])
        return train_table(result) + phases_table(bars) + phase_notes(bars)

    printed("train", payload, draw)
    if args.json:
        write_json(args.json, payload)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
