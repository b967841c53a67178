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

A step does 2 * (784 H + H 10) FLOP per sample forward and twice that backward (no gradient for X is
needed), about 3196 H FLOP per sample: 2.56 GFLOP at H = 1000, B = 800.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .. import model
from ..profiling import PHASES, PhaseTimer, timed_step
from ..backends import BACKENDS, get_backend
from .common import machine_info, machine_line, write_json


def flop_per_step(batch: int, hidden: int, n_in: int = 784, n_out: int = 10) -> int:
    forward = 2 * batch * hidden * (n_in + n_out)
    backward = 2 * batch * hidden * n_out * 2 + 2 * batch * hidden * n_in  # dW2, dA1; dW1
    return forward + backward


def random_batches(batch: int, n_batches: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.random((batch * n_batches, 784)).astype(dtype)
    y = rng.integers(0, 10, batch * n_batches).astype(np.int32)
    return x, y


def time_steps(be, hidden, batch, dtype, steps, warmup, lr=0.1, reg=1e-4) -> list[float]:
    """Seconds per step of forward + backward + update, one sample per measured step."""
    n_batches = 4
    x, y = random_batches(batch, n_batches, dtype)
    X, Y = be.to_device(x), be.to_device(y)
    params = model.Parameters(be, hidden, dtype)
    params.load(model.init_parameters(hidden, 0))
    grads = model.Parameters(be, hidden, dtype)
    ws = model.Workspace(be, batch, hidden, dtype)
    times = []
    for step in range(warmup + steps):
        k = step % n_batches
        Xb, Yb = X[k * batch : (k + 1) * batch], Y[k * batch : (k + 1) * batch]
        be.synchronize()
        start = time.perf_counter()
        model.forward(be, params, ws, Xb)
        model.backward(be, params, grads, ws, Xb, Yb, 1.0 / batch)
        model.sgd_update(be, params, grads, lr, reg)
        be.synchronize()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return times


def phase_breakdown(be, hidden, batch, dtype, steps, warmup, lr=0.1, reg=1e-4) -> dict:
    """Milliseconds per step of each phase (nn_cuda.profiling), over `steps` steps after warm-up."""
    x, y = random_batches(batch, 1, dtype)
    X, Y = be.to_device(x), be.to_device(y)
    params = model.Parameters(be, hidden, dtype)
    params.load(model.init_parameters(hidden, 0))
    grads = model.Parameters(be, hidden, dtype)
    ws = model.Workspace(be, batch, hidden, dtype)
    for _ in range(warmup):
        timed_step(PhaseTimer(be, nvtx=False), model, be, params, grads, ws, X, Y, 1.0 / batch, lr, reg)
    timer = PhaseTimer(be)
    timed = timer.backend(be)
    for _ in range(steps):
        timed_step(timer, model, timed, params, grads, ws, X, Y, 1.0 / batch, lr, reg)
    summary = timer.summary()
    return {"clock": summary["clock"], "steps": steps, "ms_per_step": summary["ms_per_step"]}


def gemm_floor_seconds(hidden, batch, dtype, repeat=10) -> float:
    """Median time of the step's five GEMMs through NumPy, each timed alone, summed."""
    rng = np.random.default_rng(1)
    r = lambda *shape: rng.random(shape).astype(dtype)  # noqa: E731
    X, W1, A1, W2 = r(batch, 784), r(hidden, 784), r(batch, hidden), r(10, hidden)
    dZ2, dZ1 = r(batch, 10), r(batch, hidden)
    out = {k: np.empty(s, dtype) for k, s in
           {"Z1": (batch, hidden), "Z2": (batch, 10), "dW2": (10, hidden), "dA1": (batch, hidden),
            "dW1": (hidden, 784)}.items()}
    gemms = [
        lambda: np.matmul(X, W1.T, out=out["Z1"]),
        lambda: np.matmul(A1, W2.T, out=out["Z2"]),
        lambda: np.matmul(dZ2.T, A1, out=out["dW2"]),
        lambda: np.matmul(dZ2, W2, out=out["dA1"]),
        lambda: np.matmul(dZ1.T, X, out=out["dW1"]),
    ]
    total = 0.0
    for gemm in gemms:
        gemm()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            gemm()
            samples.append(time.perf_counter() - start)
        total += statistics.median(samples)
    return total


def torch_step_seconds(hidden, batch, dtype, steps, warmup, device="cpu", lr=0.1, reg=1e-4):
    """Seconds per step of the equivalent plain PyTorch loop, or None without torch."""
    try:
        import torch
    except Exception:  # not installed, or a broken install: the comparison is skipped and said so
        return None
    torch_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}[np.dtype(dtype)]
    net = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.Sigmoid(), torch.nn.Linear(hidden, 10))
    net = net.to(device=device, dtype=torch_dtype)
    weights = [net[0].weight, net[2].weight]
    biases = [net[0].bias, net[2].bias]
    opt = torch.optim.SGD([{"params": weights, "weight_decay": reg}, {"params": biases}], lr=lr)
    x, y = random_batches(batch, 4, dtype)
    X = torch.from_numpy(x).to(device)
    Y = torch.from_numpy(y).long().to(device)
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    times = []
    for step in range(warmup + steps):
        k = step % 4
        Xb, Yb = X[k * batch : (k + 1) * batch], Y[k * batch : (k + 1) * batch]
        sync()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(Xb), Yb)
        loss.backward()
        opt.step()
        sync()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    return times


def build_parser():
    p = argparse.ArgumentParser(prog="python -m nn_cuda.bench train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=BACKENDS, default="numpy")
    p.add_argument("--gemm", default=None, help="comma-separated GEMM algorithms (default: the backend's)")
    p.add_argument("--hidden", type=int, default=1000)
    p.add_argument("--batch", type=int, default=800)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--steps", type=int, default=30, help="measured steps (median reported)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--phase-steps", type=int, default=10,
                   help="steps of the phase breakdown run (0: skip it)")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    dtype = np.dtype(args.dtype)
    info = machine_info()
    flop = flop_per_step(args.batch, args.hidden)
    probe = get_backend(args.backend)
    algos = args.gemm.split(",") if args.gemm else [probe.gemm_algo]
    rows = []
    for algo in algos:
        be = get_backend(args.backend, algo)
        t = statistics.median(time_steps(be, args.hidden, args.batch, dtype, args.steps, args.warmup))
        row = {"name": f"nn_cuda {be.name}/{algo}", "backend": be.name, "gemm": algo,
               "ms_per_step": 1e3 * t, "samples_per_s": args.batch / t, "gflops": flop / t / 1e9}
        if args.phase_steps > 0:
            row["phases"] = phase_breakdown(be, args.hidden, args.batch, dtype, args.phase_steps,
                                            args.warmup)
        rows.append(row)
    baseline = {}
    if not probe.on_device:
        floor = gemm_floor_seconds(args.hidden, args.batch, dtype)
        baseline["gemm_floor_ms"] = 1e3 * floor
        baseline["numpy_gemm_gflops"] = flop / floor / 1e9
    if not args.no_torch:
        torch_times = torch_step_seconds(args.hidden, args.batch, dtype, args.steps, args.warmup,
                                         device="cuda" if probe.on_device else "cpu")
        if torch_times is not None:
            t = statistics.median(torch_times)
            import torch

            rows.append({"name": f"PyTorch {torch.__version__} loop", "backend": "torch",
                         "threads": torch.get_num_threads(), "ms_per_step": 1e3 * t,
                         "samples_per_s": args.batch / t, "gflops": flop / t / 1e9})
    torch_row = next((r for r in rows if r["backend"] == "torch"), None)
    print(f"training step, H={args.hidden} batch={args.batch} {args.dtype}, median of {args.steps} steps")
    print(f"machine: {machine_line(info)}")
    print(f"{'':34s} {'ms/step':>9s} {'samples/s':>11s} {'GFLOP/s':>8s} {'vs torch':>9s} {'vs floor':>9s}")
    for r in rows:
        vs_torch = torch_row["ms_per_step"] / r["ms_per_step"] if torch_row else float("nan")
        vs_floor = r["ms_per_step"] / baseline["gemm_floor_ms"] if baseline else float("nan")
        r["speedup_vs_torch"], r["time_over_gemm_floor"] = vs_torch, vs_floor
        print(f"{r['name']:34s} {r['ms_per_step']:9.2f} {r['samples_per_s']:11,.0f} {r['gflops']:8.1f} "
              f"{vs_torch:8.2f}x {vs_floor:8.2f}x")
    phased = [r for r in rows if "phases" in r]
    if phased:
        print(f"phases, ms/step ({phased[0]['phases']['clock']}, {args.phase_steps} steps, timed apart):")
        print(f"{'':34s} " + " ".join(f"{phase[:13]:>13s}" for phase in PHASES))
        for r in phased:
            ms = r["phases"]["ms_per_step"]
            print(f"{r['name']:34s} " + " ".join(f"{ms[phase]:13.3f}" for phase in PHASES))
    if baseline:
        print(f"GEMM floor (the step's 5 GEMMs alone through NumPy): {baseline['gemm_floor_ms']:.2f} ms "
              f"= {baseline['numpy_gemm_gflops']:.1f} GFLOP/s")
    if args.json:
        write_json(args.json, {"benchmark": "train", "machine": info, "config": vars(args),
                               "flop_per_step": flop, "baseline": baseline, "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
