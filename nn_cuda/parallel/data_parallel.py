"""Data parallelism: every rank runs the same model step on its share of each mini-batch.

How the step is made exact. For a batch of N samples split over p ranks, rank r holds N_r rows
(N_r = N // p + (r < N % p), the course's split) and computes the data terms of the gradient with
the scale 1 / N, not 1 / N_r:

    g_r = (1/N) sum_{i in rank r} grad CE(x_i)         (model.backward writes exactly this)

so sum_r g_r = (1/N) sum_i grad CE(x_i), the serial data gradient, and one Allreduce(SUM) of the
one contiguous gradient buffer [W1 | W2 | b1 | b2] gives every rank that gradient. The L2 term is
not in the buffer: the update adds it, W <- W - lr (dW + reg W), after the allreduce, from the
parameters every rank holds identically. (Putting reg W into every rank's buffer would add it p
times; the usual fix, reg / p, is exact only in exact arithmetic.) A rank with no rows of a short
last batch writes zeros and still joins the allreduce. Only the summation order differs from the
serial run, so results agree to rounding (tests: 1e-12 relative in float64, 1e-5 in float32).

The data is distributed once: each rank keeps only its rows of every batch resident (on the device
for GPU backends), and nothing is scattered during training.
"""

from __future__ import annotations

import functools
import hashlib
import time
from pathlib import Path

import numpy as np

from ..data import epoch_order
from .allreduce import check_comm_mode, make_reducer
from .gpu import select_device
from .mpi import Communicator, ParallelError, rank_range, ranks


def check_batch_fits(batch: int, size: int, model_ranks: int = 1) -> None:
    """Every rank (hybrid: every data group of `model_ranks` ranks) needs at least one row of every
    full batch: `size` <= B."""
    if size <= batch:
        return
    if model_ranks == 1:
        raise ParallelError(
            f"{size} MPI ranks cannot share mini-batches of {batch} samples (every rank needs at "
            f"least one row of each batch); use a batch of at least {size} (-b {size}) or at most "
            f"{batch} ranks (mpirun -n {batch})"
        )
    raise ParallelError(
        f"{size} data groups ({size * model_ranks} ranks / --model-ranks {model_ranks}) cannot share "
        f"mini-batches of {batch} samples (every data group needs at least one row of each batch); use a "
        f"batch of at least {size} (-b {size}) or at most {batch} data groups "
        f"(mpirun -n {batch * model_ranks} with --model-ranks {model_ranks})"
    )


#: the functions of the course's MPI task (nn_cuda.parallel.course_task)
MPI_TASK_FUNCTIONS = ("rows_of_rank", "allreduce_gradients")


def load_mpi_task(path: str):
    """A student's data_parallel.py (the course's MPI task) as a module, its two functions checked."""
    import importlib.util

    file = Path(path)
    if not file.is_file():
        raise ParallelError(f"--mpi-task {path}: no such file (python -m nn_cuda.course start DIR writes "
                            "DIR/data_parallel.py)")
    spec = importlib.util.spec_from_file_location("nn_cuda_student_mpi_task", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = [name for name in MPI_TASK_FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        raise ParallelError(f"--mpi-task {path} defines no {' and no '.join(missing)}")
    for name in MPI_TASK_FUNCTIONS:
        setattr(module, name, _not_written_is_one_line(getattr(module, name), path))
    return module


def _not_written_is_one_line(function, path: str):
    """`function` of a student's MPI task, whose NotImplementedError (a new workspace's stand-in for
    the body) ends the run in one line that says which task to write, not with a traceback."""
    @functools.wraps(function)
    def student_function(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except NotImplementedError as error:
            raise ParallelError(f"--mpi-task {path}: {error}; write it, then python -m nn_cuda.course check "
                                f"{Path(path).parent} checks it") from None
    return student_function


def check_task_split(rows_of_rank, rows: int, batch: int, size: int, path: str) -> None:
    """ParallelError, on every rank alike and before training, when a student's rows_of_rank does not
    split each batch of this run (`batch` rows, and the last one's `rows % batch`) into contiguous
    shares that cover it once, in rank order: a run on such a split would train on rows dropped or
    counted twice, and end as if nothing were wrong."""
    for m in sorted({min(batch, rows), rows % batch} - {0}, reverse=True):
        shares = [tuple(rows_of_rank(m, size, r)) for r in range(size)]
        starts, stops = [share[0] for share in shares], [share[-1] for share in shares]
        if starts[0] != 0 or stops[-1] != m or starts[1:] != stops[:-1] or any(lo > hi for lo, hi in shares):
            raise ParallelError(
                f"--mpi-task {path}: rows_of_rank({m}, {size}, r) for r = 0..{size - 1} gives {shares}: the shares "
                f"must cover rows 0..{m - 1} once, one after the other in rank order; python -m nn_cuda.course "
                f"check {Path(path).parent} mpi_rows checks it")


class DataParallelBatches:
    """This rank's rows of every mini-batch, with the interface of train.SerialBatches.

    Batch k holds the rows [k B, min((k + 1) B, n)) of the epoch's order; of its m rows, rank r
    takes the m // p + (r < m % p) that follow the shares of ranks 0..r-1 (a rank may get none of a
    short last batch). `batches(epoch)` yields (X, labels, m) for this rank: its rows and the size m
    of the whole batch, which the gradient is averaged over.

    Without shuffle the rows are the same every epoch: they are gathered once into one contiguous
    shard and uploaded once. With shuffle, epoch e reads positions of the serial run's permutation
    drawn from (seed, e), which every rank computes for itself: no communication. The training set
    is then uploaded once, as in the serial run, and each epoch this rank's rows are gathered on the
    backend (take_rows) into one shard buffer allocated once: nothing but the row indices crosses to
    the device after the start.
    """

    def __init__(self, backend, x: np.ndarray, y: np.ndarray, batch: int, rank: int, size: int,
                 shuffle: bool = False, seed: int = 0, rows_of_rank=rank_range):
        check_batch_fits(batch, size)
        self.backend, self.batch, self.rank, self.size = backend, batch, rank, size
        self.shuffle, self.seed = shuffle, seed
        self.n = x.shape[0]
        positions, self.steps, local = [], [], 0
        for start in range(0, self.n, batch):
            m = min(batch, self.n - start)
            lo, hi = rows_of_rank(m, size, rank)
            positions.append(np.arange(start + lo, start + hi))
            self.steps.append((local, local + hi - lo, m))  # (first local row, stop, batch size)
            local += hi - lo
        #: this rank's positions in the epoch's order, batch after batch
        self.positions = np.concatenate(positions) if positions else np.empty(0, dtype=np.int64)
        if shuffle:
            self.x_all, self.y_all = backend.to_device(x), backend.to_device(y)
            self.x = backend.empty((len(self.positions),) + x.shape[1:], x.dtype)
            self.y = backend.empty((len(self.positions),) + y.shape[1:], y.dtype)
        else:
            self.x, self.y = backend.to_device(x[self.positions]), backend.to_device(y[self.positions])

    @property
    def steps_per_epoch(self) -> int:
        return len(self.steps)

    @property
    def rows_per_epoch(self) -> int:
        """How many rows this rank computes on per epoch (its share of the training set)."""
        return len(self.positions)

    def batches(self, epoch: int):
        if self.shuffle and len(self.positions):
            rows = self.backend.to_device(epoch_order(self.n, self.seed, epoch)[self.positions])
            self.backend.take_rows(self.x_all, rows, self.x)
            self.backend.take_rows(self.y_all, rows, self.y)
        for lo, hi, m in self.steps:
            yield self.x[lo:hi], self.y[lo:hi], m


class DataParallel:
    """The data-parallel strategy for train.train_loop (the interface of train.Serial).

    Per step: model.backward writes this rank's share of the data gradient (scale 1 / N), then
    `allreduce_gradients` sums the gradient buffer over the ranks with one Allreduce. With overlap,
    `after_layer2` (called by model.backward once dW2 and db2 are written) starts a nonblocking
    allreduce of dW2 while dW1 is being computed; `allreduce_gradients` then reduces W1 and the
    biases and waits for it (three messages instead of one).
    """

    name = "data"

    def __init__(self, comm: Communicator, backend_name: str, batch: int, comm_mode: str = "host",
                 overlap: bool = False, task=None):
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        self.is_root = self.rank == 0
        self.evaluates = self.is_root  # every rank holds the whole network: rank 0 evaluates alone
        self.backend_name, self.comm_mode, self.overlap = backend_name, comm_mode, overlap
        check_batch_fits(batch, self.size)
        check_comm_mode(comm_mode, backend_name)
        self.device = select_device(backend_name, *comm.node_placement(), comm_mode)
        self.reduce_logits = None  # the whole network lives on every rank: logits are complete
        self.after_layer2 = self._start_layer2_allreduce if overlap else None
        self._reducer, self._reducer_key, self._pending = None, None, None
        #: a student's MPI task (nn_cuda.parallel.course_task's functions), or None for the project's
        self.task = task
        #: seconds spent in gradient communication (staging copies included), for the benchmarks
        self.allreduce_seconds = 0.0

    @classmethod
    def from_config(cls, cfg) -> "DataParallel":
        task = load_mpi_task(cfg.mpi_task) if cfg.mpi_task else None
        return cls(Communicator.world(cfg.mpi_timeout), cfg.backend, cfg.batch, cfg.comm, cfg.overlap, task)

    def describe(self) -> str:
        where = f", GPU {self.device} of rank 0" if self.device is not None else ""
        task = f", the MPI task of {self.task.__file__}" if self.task else ""
        return (f"data parallel over {ranks(self.size)} (--comm {self.comm_mode}, "
                f"overlap {'on' if self.overlap else 'off'}{where}{task})")

    def communicators(self) -> list:
        """The communicators whose counters hold this strategy's traffic (for the benchmarks)."""
        return [self.comm]

    # ---- the parameters: replicated ----
    def local_parameters(self, backend, host: dict, dtype):
        """The whole network, as in a serial run."""
        from ..model import Parameters

        params = Parameters(backend, host["W1"].shape[0], dtype, n_in=host["W1"].shape[1],
                            n_out=host["W2"].shape[0])
        params.load(host)
        return params

    def gather_parameters(self, params) -> dict:
        """Every rank holds the full parameters: its own host copy."""
        return params.to_host()

    # ---- before training ----
    def make_batches(self, backend, x, y, cfg) -> DataParallelBatches:
        rows_of_rank = self.task.rows_of_rank if self.task else rank_range
        if self.task:
            check_task_split(rows_of_rank, x.shape[0], cfg.batch, self.size, self.task.__file__)
        return DataParallelBatches(backend, x, y, cfg.batch, self.rank, self.size, cfg.shuffle, cfg.seed,
                                   rows_of_rank)

    def broadcast_parameters(self, params) -> None:
        """Every rank starts from rank 0's parameters."""
        backend = params.backend
        host = np.ascontiguousarray(backend.to_host(params.flat))
        self.comm.Bcast(host, root=0)
        backend.copy(backend.to_device(host), params.flat)

    # ---- every step ----
    def _reducer_for(self, grads):
        key = (grads.size, grads.dtype)
        if self._reducer_key != key:
            self._reducer = make_reducer(self.comm_mode, self.comm, grads.backend, grads.size, grads.dtype,
                                         self.task.allreduce_gradients if self.task else None)
            self._reducer_key = key
        return self._reducer

    def _start_layer2_allreduce(self, grads) -> None:
        started = time.perf_counter()
        lo, hi = grads.offsets["W2"]
        self._pending = self._reducer_for(grads).start(grads.flat, lo, hi)
        self.allreduce_seconds += time.perf_counter() - started

    def allreduce_gradients(self, grads) -> None:
        started = time.perf_counter()
        reducer = self._reducer_for(grads)
        if self._pending is None:
            reducer.reduce(grads.flat, 0, grads.size)
        else:
            # [W1 | W2 | b1 | b2]: W2 is in flight; W1 and the biases are the two other runs.
            reducer.reduce(grads.flat, *grads.offsets["W1"])
            reducer.reduce(grads.flat, grads.n_weights, grads.size)
            reducer.wait(grads.flat, self._pending)
            self._pending = None
        self.allreduce_seconds += time.perf_counter() - started

    def sum(self, value: float) -> float:
        """A per-sample quantity (the cross-entropy) summed over the ranks."""
        return self.comm.sum(value)

    def sum_over_hidden(self, value: float) -> float:
        """A quantity of the parameters (|W|^2): every rank holds them all, nothing to sum."""
        return value

    # ---- after training ----
    def finish(self, params, log=print) -> None:
        """Check that every rank holds the same parameters; if not, adopt rank 0's and say so.

        Allreduce gives every rank the same sum with MPICH and Open MPI, so this never fires in
        practice; it guards the saved results against an MPI whose reductions are not reproducible
        across ranks.
        """
        host = params.backend.to_host(params.flat)
        digests = self.comm.allgather(hashlib.blake2b(host.tobytes(), digest_size=16).hexdigest())
        if len(set(digests)) > 1 and self.task:  # with the student's allreduce, the likely cause
            path = self.task.__file__
            raise ParallelError(f"--mpi-task {path}: the ranks' parameters differ after training "
                                f"({len(set(digests))} versions): allreduce_gradients must leave every rank with "
                                f"the sum over all ranks; python -m nn_cuda.course check {Path(path).parent} "
                                "mpi_allreduce checks it")
        if len(set(digests)) > 1:
            self.broadcast_parameters(params)
            log(f"note: the ranks' parameters differed after training ({len(set(digests))} versions); "
                "all ranks now hold rank 0's")
