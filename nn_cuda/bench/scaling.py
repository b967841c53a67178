"""`python -m nn_cuda.bench scaling`: parallel training time per epoch for p = 1..4 MPI ranks.

For each strategy of --parallel (data, model, hybrid; e.g. `--parallel data,model`) and each p,
starts `mpiexec -n p` on this module's worker with one BLAS thread per rank
(OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = --threads), and measures one epoch of
the parallel step of `nn_cuda.train` (forward with the logits allreduce of model parallelism,
backward, gradient allreduce, update: the calls of nn_cuda.model and nn_cuda.parallel) on random
pixels, after a few warm-up steps. Per strategy and p it reports

- seconds per epoch (the slowest rank) and samples per second, speedup and efficiency against p = 1
  (the same code on one rank: its allreduce is a no-op);
- the split of the epoch (mean over ranks): compute (forward, backward, update), allreduce (all
  communication: the gradient allreduce, the logits allreduce of model parallelism, staging copies,
  and the wait for the slowest rank, also shown alone: a barrier before the gradient allreduce
  separates it), other (the rest of the loop);
- per step and rank 0: MPI calls and payload bytes as counted by the communicators, next to the
  same numbers from the cost model (nn_cuda.parallel.cost_model), and the bytes a bandwidth-optimal
  (ring) allreduce sends on the wire, 2 (k - 1) / k * payload on k ranks.

With --overlap both, every p runs twice: the plain step and --overlap, to show whether overlap pays.
With --rounds R the sweep is repeated R times, interleaved, and each configuration keeps its fastest
job: on a shared or throttled machine, noise only ever slows a run down.
The pixels' values do not change the work, so random data of MNIST's size (54,000 rows) stands in.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
from tqdm import tqdm

from ..backends import BACKENDS
from ..config import TrainConfig
from ..arguments import comma_separated, non_negative_int, one_of, positive_int
from ..parallel.mpi import find_mpiexec
from ..records import command_line, machine_info, machine_line, write_json
from ..report.markdown import printed, scaling_table
from ..report.numbers import scaling_series
from .common import backend_or_usage_error, mpi_child_environment, run_child

MNIST_TRAIN_ROWS = 54_000
STRATEGIES = ("data", "model", "hybrid")


def build_parser():
    p = argparse.ArgumentParser(prog="python -m nn_cuda.bench scaling", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=comma_separated(positive_int), default=[1, 2, 3, 4],
                   help="comma-separated numbers of MPI ranks (default 1,2,3,4)")
    p.add_argument("--parallel", type=comma_separated(one_of(*STRATEGIES)), default=["data"],
                   help="comma-separated strategies: data, model, hybrid (e.g. data,model; default data)")
    p.add_argument("--model-ranks", type=positive_int, default=2,
                   help="--parallel hybrid: model ranks per data group (p it does not divide are skipped)")
    p.add_argument("--backend", choices=BACKENDS, default="numpy")
    p.add_argument("--gemm", default=None, help="GEMM algorithm (default: the backend's)")
    p.add_argument("--comm", default="host", choices=("host", "cuda-aware", "nccl"))
    p.add_argument("--overlap", default="off", choices=("off", "on", "both"),
                   help="the layer-2 allreduce overlapped with layer 1: off, on, or both (two runs per p)")
    p.add_argument("--hidden", type=positive_int, default=1000)
    p.add_argument("--batch", type=positive_int, default=800)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--samples", type=positive_int, default=MNIST_TRAIN_ROWS, help="rows per epoch (MNIST: 54000)")
    p.add_argument("--epochs", type=positive_int, default=1, help="measured epochs per job (the best is kept)")
    p.add_argument("--rounds", type=positive_int, default=1,
                   help="repeat the whole sweep, interleaved, and keep each configuration's best job "
                   "(for machines whose speed drifts)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=3)
    p.add_argument("--threads", type=positive_int, default=1, help="BLAS threads per rank")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    p.add_argument("--worker", metavar="RESULT.json", help=argparse.SUPPRESS)  # one mpiexec job
    return p


# ---- the parent: one mpiexec job per configuration ---------------------------------------------


def worker_flags(args, overlap: bool, strategy: str) -> list[str]:
    flags = ["--parallel", strategy, "--model-ranks", args.model_ranks,
             "--backend", args.backend, "--comm", args.comm, "--hidden", args.hidden, "--batch", args.batch,
             "--dtype", args.dtype, "--samples", args.samples, "--epochs", args.epochs,
             "--warmup-steps", args.warmup_steps, "--overlap", "on" if overlap else "off"]
    if args.gemm:
        flags += ["--gemm", args.gemm]
    return [str(f) for f in flags]


def run_job(args, ranks: int, overlap: bool, strategy: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        result_path = os.path.join(folder, "result.json")
        command = [find_mpiexec(), "-n", str(ranks), sys.executable, "-m", "nn_cuda.bench.scaling",
                   "--worker", result_path, *worker_flags(args, overlap, strategy)]
        job = run_child(command, mpi_child_environment(args.threads))
        if job.returncode != 0 or not os.path.exists(result_path):
            raise SystemExit(f"nn_cuda.bench scaling: the job with {ranks} ranks failed "
                             f"(exit status {job.returncode}):\n{job.stderr.strip()}")
        with open(result_path) as handle:
            return json.load(handle)


def configurations(args, ranks: list[int], overlaps: list[bool]) -> list[tuple[str, bool, int]]:
    """(strategy, overlap, p) of every job of one round; hybrid skips the p --model-ranks does not
    divide, and --overlap applies to data parallelism only."""
    jobs = []
    for strategy in args.parallel:
        for overlap in overlaps if strategy == "data" else [False]:
            jobs += [(strategy, overlap, p) for p in ranks
                     if strategy != "hybrid" or p % args.model_ranks == 0]
    return jobs


def job_refusal(args, configs) -> str | None:
    """What makes a job of `configs` fail on every rank before its first step, in the flags of this
    command (--comm with the backend, a rank or data group without a row of each batch, a model
    rank without a hidden unit), or None."""
    from ..parallel import ParallelError
    from ..parallel.allreduce import check_comm_mode

    try:
        check_comm_mode(args.comm, args.backend)
    except ParallelError as error:
        return str(error)
    for strategy, _, p in configs:
        model_ranks = {"data": 1, "model": p, "hybrid": args.model_ranks}[strategy]
        groups = p // model_ranks
        if groups > args.batch:
            return (f"--ranks {p} with --parallel {strategy}: {groups} data groups cannot share batches of "
                    f"--batch {args.batch} rows (each needs a row of every batch); raise --batch or leave {p} out")
        if model_ranks > args.hidden:
            return (f"--ranks {p} with --parallel {strategy}: {model_ranks} model ranks cannot share --hidden "
                    f"{args.hidden} units (each needs one); raise --hidden or leave {p} out")
    return None


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    backend_or_usage_error(parser, args.backend, args.gemm)  # here, not in every rank of every job
    overlaps = {"off": [False], "on": [True], "both": [False, True]}[args.overlap]
    configs = configurations(args, args.ranks, overlaps)
    if not configs:
        parser.error(f"--parallel hybrid with --model-ranks {args.model_ranks}: no P in --ranks "
                     f"{','.join(map(str, args.ranks))} is a multiple of it, so there is nothing to run")
    refusal = job_refusal(args, configs)  # before any job: one that fails would end the others' results
    if refusal:
        parser.exit(2, f"{parser.prog}: error: {refusal}\n")
    info = machine_info(args.backend)
    given = sys.argv[1:] if argv is None else list(argv)
    info["command"] = command_line(["python", "-m", "nn_cuda.bench", "scaling", *given], args.backend)
    print(f"parallel scaling ({','.join(args.parallel)}): H={args.hidden} batch={args.batch} {args.dtype} "
          f"backend={args.backend} --comm {args.comm}, {args.samples} samples per epoch, "
          f"{args.threads} BLAS thread(s) per rank")
    print(f"machine: {machine_line(info)}")
    jobs = {config: [] for config in configs}
    # One mpiexec job at a time; a sweep takes minutes, so a terminal shows which job runs.
    with tqdm(total=args.rounds * len(jobs), unit="job") as bar:
        for round_ in range(args.rounds):
            for strategy, overlap, p in jobs:
                bar.set_description(f"round {round_ + 1}/{args.rounds}: {strategy} p={p}"
                                    + (" overlap" if overlap else ""))
                jobs[strategy, overlap, p].append(run_job(args, p, overlap, strategy))
                bar.update()
    rows, base = [], {}
    for (strategy, overlap, p), runs in jobs.items():
        row = min(runs, key=lambda job: job["seconds_per_epoch"])
        row["seconds_per_epoch_all_rounds"] = [job["seconds_per_epoch"] for job in runs]
        if p == 1:
            base[strategy, overlap] = row
        if (strategy, overlap) in base:
            row["speedup"] = row["samples_per_second"] / base[strategy, overlap]["samples_per_second"]
            row["efficiency"] = row["speedup"] / p
        rows.append(row)
    config = {k: v for k, v in vars(args).items() if k != "worker"}
    payload = {"benchmark": "scaling", "machine": info, "config": config, "results": rows}
    printed("scaling", payload, lambda result: [line for series in scaling_series([result])
                                                for line in scaling_table(series)])
    print("compute, allreduce: seconds per epoch, mean over ranks; allreduce is all communication (the "
          "logits allreduce of model parallelism included) and includes the waiting for the slowest rank; "
          "messages and MB: allreduce calls and payload per step of rank 0, counted and from the cost model, "
          "averaged over the epoch (its last batch is short); ring wire = 2 (k-1)/k x payload on k ranks")
    if args.json:
        write_json(args.json, payload)
    return 0


# ---- the worker: one rank of one job -----------------------------------------------------------


class TimedStep:
    """model.training_step, timed in phases on this rank (seconds added to `totals`):

    compute    forward, backward and update (less the communication started inside backward);
    wait       a barrier before the allreduce: the time this rank waits for the slowest one;
    allreduce  the gradient communication itself (strategy.allreduce_seconds: staging copies, the
               layer-2 allreduce started by --overlap, MPI).
    The barrier separates load imbalance from transfer time; it costs one barrier per step.
    """

    def __init__(self, backend, model, params, grads, workspace, strategy, comm):
        self.backend, self.model, self.params = backend, model, params
        self.grads, self.workspace = grads, workspace
        self.strategy = _BarrierBeforeAllreduce(strategy, backend, comm)

    def __call__(self, X, labels, n_global, totals: dict) -> None:
        strategy = self.strategy
        started = time.perf_counter()
        communicated_before, waited_before = strategy.allreduce_seconds, strategy.waited
        self.model.training_step(self.backend, self.params, self.grads, self.workspace, X, labels, 1.0 / n_global,
                                 TrainConfig.lr, TrainConfig.reg, strategy)
        self.backend.synchronize()
        communicated = strategy.allreduce_seconds - communicated_before
        waited = strategy.waited - waited_before
        totals["wait"] += waited
        totals["allreduce"] += communicated
        totals["compute"] += time.perf_counter() - started - waited - communicated


class _BarrierBeforeAllreduce:
    """`strategy`, whose gradient allreduce first lets the device finish and waits at a barrier for
    every rank, adding that wait to `waited`."""

    def __init__(self, strategy, backend, comm):
        self._strategy, self._backend, self._comm = strategy, backend, comm
        self.waited = 0.0

    @property
    def reduce_logits(self):
        return self._strategy.reduce_logits

    @property
    def after_layer2(self):
        return self._strategy.after_layer2

    @property
    def allreduce_seconds(self) -> float:
        return self._strategy.allreduce_seconds

    def allreduce_gradients(self, grads) -> None:
        self._backend.synchronize()
        wait_started = time.perf_counter()
        self._comm.barrier()
        self.waited += time.perf_counter() - wait_started
        self._strategy.allreduce_gradients(grads)


def worker(args) -> int:
    from .. import model
    from ..backends import get_backend
    from ..parallel import abort_on_error
    from ..parallel import cost_model
    from ..parallel.data_parallel import DataParallel
    from ..parallel.model_parallel import ModelParallel
    from ..parallel.mpi import Communicator
    from ..parallel.watchdog import DEFAULT_TIMEOUT_SECONDS

    (parallel,) = args.parallel  # one strategy per job (worker_flags)
    with abort_on_error("nn_cuda.bench scaling"):
        comm = Communicator.world(DEFAULT_TIMEOUT_SECONDS)
        if parallel == "data":
            strategy = DataParallel(comm, args.backend, args.batch, args.comm, args.overlap == "on")
        else:
            model_ranks = args.model_ranks if parallel == "hybrid" else None
            strategy = ModelParallel(comm, args.backend, args.batch, model_ranks, args.comm, parallel)
        backend = get_backend(args.backend, args.gemm)
        dtype = np.dtype(args.dtype)
        cfg = TrainConfig(hidden=args.hidden, batch=args.batch, dtype=args.dtype)
        rng = np.random.default_rng(0)
        x = rng.random((args.samples, model.N_INPUTS), dtype=np.float32).astype(dtype, copy=False)
        y = rng.integers(0, model.N_CLASSES, args.samples).astype(np.int32)
        batches = strategy.make_batches(backend, x, y, cfg)
        del x, y  # each rank keeps only its shard
        params = strategy.local_parameters(backend, model.init_parameters(args.hidden, 0), dtype)
        strategy.broadcast_parameters(params)
        grads = model.Parameters(backend, params.hidden, dtype)
        workspace = model.Workspace(backend, args.batch, params.hidden, dtype)
        step = TimedStep(backend, model, params, grads, workspace, strategy, comm)

        scratch = {"compute": 0.0, "wait": 0.0, "allreduce": 0.0}
        for k, batch in enumerate(batches.batches(0)):
            if k >= args.warmup_steps:
                break
            step(*batch, scratch)
        epochs = [time_epoch(backend, comm, strategy.communicators(), batches, step, epoch)
                  for epoch in range(args.epochs)]
        best = min(epochs, key=lambda e: e["seconds"])
        per_rank = comm.allgather(best)
        if comm.rank == 0:
            p, steps = comm.size, best["steps"]
            modelled = cost_model.epoch_cost(parallel, args.hidden, args.samples, args.batch, p, dtype,
                                             args.model_ranks if parallel == "hybrid" else None,
                                             overlap=args.overlap == "on")
            result = {
                "parallel": parallel, "ranks": p, "overlap": args.overlap == "on", "backend": backend.name,
                "comm": args.comm,
                "steps_per_epoch": steps, "samples_per_epoch": args.samples,
                "seconds_per_epoch": max(r["seconds"] for r in per_rank),
                "split": {part: float(np.mean([r[part] for r in per_rank]))
                          for part in ("compute", "allreduce", "other")},
                "allreduce_wait": float(np.mean([r["wait"] for r in per_rank])),
                "split_per_rank": per_rank,
                "allreduce_calls_per_step": best["allreduce_calls"] / steps,
                "payload_bytes_per_step": best["allreduce_bytes"] / steps,
                "modelled_payload_bytes_per_step": modelled.payload_bytes / steps,
                "modelled_calls_per_step": modelled.messages / steps,
                "wire_bytes_per_step": modelled.wire_bytes / steps,
                "all_epochs_seconds": [e["seconds"] for e in epochs],
            }
            result["samples_per_second"] = args.samples / result["seconds_per_epoch"]
            write_json(args.worker, result)
    return 0


def time_epoch(backend, comm, communicators, batches, step, epoch) -> dict:
    """One epoch of timed steps. "allreduce" includes the wait for the slowest rank ("wait").
    Calls and bytes are those of the strategy's `communicators` (buffer allreduces only)."""
    comm.barrier()
    backend.synchronize()
    for counted in communicators:
        counted.stats.reset()
    totals = {"compute": 0.0, "wait": 0.0, "allreduce": 0.0}
    steps = 0
    started = time.perf_counter()
    for X, labels, n_global in batches.batches(epoch):
        step(X, labels, n_global, totals)
        steps += 1
    seconds = time.perf_counter() - started
    totals["allreduce"] += totals["wait"]
    return {"seconds": seconds, **totals, "other": seconds - totals["compute"] - totals["allreduce"],
            "steps": steps, "allreduce_calls": sum(c.stats.calls["allreduce"] for c in communicators),
            "allreduce_bytes": sum(c.stats.bytes["allreduce"] for c in communicators)}


if __name__ == "__main__":
    sys.exit(main())
