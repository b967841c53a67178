"""Model parallelism (--parallel model) and its 2-D grid with data parallelism (--parallel hybrid).

Model parallelism splits the hidden layer. Rank r of p owns a contiguous block h_r of the H hidden
units (|h_r| = H // p + (r < H % p), the course's split; uneven H is fine): the rows h_r of W1 and
b1 and the columns h_r of W2. b2 (10 numbers) is replicated. Every rank holds every input sample.

Forward, for a batch X (N x 784):

    Z1[:, h_r] = X W1[h_r]^T + b1[h_r]        A1[:, h_r] = sigmoid(Z1[:, h_r])     no communication
    S_r        = A1[:, h_r] W2[:, h_r]^T      (N x 10, this rank's partial logits)
    Z2         = sum_r S_r + b2               ONE Allreduce of N x 10 numbers, then b2 once
    P          = softmax(Z2)                  identical on every rank

since A1 W2^T = sum_r A1[:, h_r] W2[:, h_r]^T (a matrix product split along its inner dimension).

Backward: every rank holds the full P, so

    dZ2        = (P - Y) / N                  computed redundantly, identical everywhere
    db2        = column sums of dZ2           redundant, identical: b2 stays replicated
    dW2[:, h_r] = dZ2^T A1[:, h_r]            this rank's columns of dW2
    dA1[:, h_r] = dZ2 W2[:, h_r]              needs only this rank's columns of W2
    dZ1[:, h_r] = dA1[:, h_r] * A1[:, h_r] * (1 - A1[:, h_r])
    dW1[h_r]   = dZ1[:, h_r]^T X              db1[h_r] = column sums of dZ1[:, h_r]

none of which communicates: each rank's local Parameters (hidden = |h_r|) are exactly the serial
ones restricted to its block, and model.forward/backward run on them unchanged. The one message per
step is the Allreduce of the partial logits, inside model.forward's `reduce_logits` hook: 10 N
numbers (32 KB for N = 800 in float32) against data parallelism's 795 H + 10 (3.2 MB for H = 1000).
The weight decay term needs the sum over ranks of |W1[h_r]|^2 + |W2[:, h_r]|^2 (`sum_over_hidden`);
the cross-entropy, computed from the same P everywhere, is not summed.

Hybrid parallelism (--parallel hybrid --model-ranks M) arranges the p ranks as D = p / M data groups
of M model ranks: world rank w is model rank m = w % M of data group g = w // M. Each data group
runs the model-parallel step above on its share of every batch (the data-parallel split over D), and
the ranks owning the same block in different groups then sum their block's gradient with one
Allreduce (the data-parallel argument: each group's gradient is scaled by 1 / the full batch). Two
sub-communicators carry this: `model_comm` (the M ranks of a data group: logits) and `data_comm`
(the D ranks owning one block: gradients). --parallel model is the grid with D = 1 (no gradient
allreduce at all); M = 1 would be data parallelism with an extra no-op logits call.

Results equal the serial run's up to the order of the sums (tests: 1e-12 relative in float64).
Evaluation (validation and test accuracy) runs on every rank, since each prediction needs every
model rank's partial logits; every data group evaluates all rows. --save, -s and grading gather the
full parameters on rank 0 (`gather_parameters`).
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from .. import model
from .allreduce import check_comm_mode, make_reducer
from .cost_model import grid_shape
from .data_parallel import DataParallelBatches, check_batch_fits
from .gpu import select_device
from .mpi import Communicator, ParallelError, rank_range, ranks


def check_grid(size: int, model_ranks: int) -> tuple[int, int]:
    """(D, M) for `size` ranks and --model-ranks, or a ParallelError saying what to change."""
    try:
        return grid_shape(size, model_ranks)
    except ValueError:
        raise ParallelError(
            f"--model-ranks {model_ranks} does not divide the {size} MPI ranks; choose a divisor of "
            f"{size} (e.g. --model-ranks {size}) or start a multiple of {model_ranks} ranks"
        ) from None


def check_hidden_fits(hidden: int, model_ranks: int) -> None:
    """Every model rank needs at least one hidden unit: M <= H."""
    if model_ranks > hidden:
        raise ParallelError(
            f"{model_ranks} model ranks cannot share {hidden} hidden units (every rank needs at least "
            f"one); use --hidden {model_ranks} or more, or fewer model ranks"
        )


class ModelParallel:
    """The model-parallel (D = 1) or hybrid strategy for train.train_loop (see the module docstring).

    Implements the interface of train.Serial, plus the hooks for the full parameters:
    `local_parameters` (this rank's block from the full host dict) and `gather_parameters`.
    """

    def __init__(self, comm: Communicator, backend_name: str, batch: int, model_ranks: int | None = None,
                 comm_mode: str = "host", name: str = "model"):
        self.name = name
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        self.is_root = self.rank == 0
        self.evaluates = True  # every rank: predictions need every model rank's partial logits
        self.groups, self.model_ranks = check_grid(self.size, model_ranks or self.size)
        self.group, self.model_rank = divmod(self.rank, self.model_ranks)
        check_batch_fits(batch, self.groups, self.model_ranks)
        check_comm_mode(comm_mode, backend_name)
        self.backend_name, self.comm_mode = backend_name, comm_mode
        self.model_comm = comm.split(self.group, self.model_rank)  # one data group: partial logits
        self.data_comm = comm.split(self.model_rank, self.group)  # one block: its gradient
        self.device = select_device(backend_name, *comm.node_placement(), comm_mode)
        self.after_layer2 = None
        self.backend = self.block = None  # set by local_parameters
        self._logits_reducer = self._gradient_reducer = None
        self._logits_capacity = 0
        #: seconds spent in communication (logits and gradients, staging included), for the benchmarks
        self.allreduce_seconds = 0.0

    @classmethod
    def from_config(cls, cfg) -> "ModelParallel":
        model_ranks = cfg.model_ranks if cfg.parallel == "hybrid" else None
        if cfg.parallel == "hybrid" and not model_ranks:
            raise ParallelError("--parallel hybrid needs --model-ranks M (a divisor of the number of ranks)")
        if cfg.overlap:
            raise ParallelError(f"--overlap overlaps the layer-2 gradient allreduce of --parallel data; "
                                f"--parallel {cfg.parallel} does not split its step that way: drop --overlap")
        return cls(Communicator.world(cfg.mpi_timeout), cfg.backend, cfg.batch, model_ranks, cfg.comm, cfg.parallel)

    def describe(self) -> str:
        where = f", GPU {self.device} of rank 0" if self.device is not None else ""
        block = f"hidden units {self.block[0]}..{self.block[1] - 1} on rank 0, " if self.block else ""
        if self.groups == 1:
            return f"model parallel over {ranks(self.size)} ({block}--comm {self.comm_mode}{where})"
        model_ranks = f"{self.model_ranks} model rank{'' if self.model_ranks == 1 else 's'}"
        return (f"hybrid parallel over {ranks(self.size)}: {self.groups} data groups x "
                f"{model_ranks} ({block}--comm {self.comm_mode}{where})")

    def communicators(self) -> list:
        """The communicators whose counters hold this strategy's traffic (for the benchmarks)."""
        return [self.model_comm, self.data_comm]

    # ---- the parameters ----
    def hidden_block(self, hidden: int) -> tuple[int, int]:
        """(start, stop) of this rank's hidden units."""
        check_hidden_fits(hidden, self.model_ranks)
        self.block = rank_range(hidden, self.model_ranks, self.model_rank)
        return self.block

    def local_parameters(self, backend, host: dict, dtype) -> model.Parameters:
        """This rank's Parameters: rows `block` of W1 and b1, those columns of W2, all of b2."""
        hidden, n_in = host["W1"].shape
        lo, hi = self.hidden_block(hidden)
        params = model.Parameters(backend, hi - lo, dtype, n_in=n_in, n_out=host["W2"].shape[0])
        params.load({"W1": host["W1"][lo:hi], "b1": host["b1"][lo:hi], "W2": host["W2"][:, lo:hi],
                     "b2": host["b2"]})
        self.hidden, self.backend = hidden, backend
        return params

    def gather_parameters(self, params) -> dict | None:
        """The full host parameters on rank 0 (None elsewhere): data group 0 gathers its blocks."""
        if self.group != 0:
            return None
        blocks = self.model_comm.gather(params.to_host(), root=0)
        if blocks is None:
            return None
        return {
            "W1": np.concatenate([b["W1"] for b in blocks], axis=0),
            "b1": np.concatenate([b["b1"] for b in blocks]),
            "W2": np.concatenate([b["W2"] for b in blocks], axis=1),
            "b2": blocks[0]["b2"],
        }

    def broadcast_parameters(self, params) -> None:
        """The replicas of a block (one per data group) start from data group 0's."""
        if self.groups == 1:
            return  # every rank loaded its block from the same host dict
        backend = params.backend
        host = np.ascontiguousarray(backend.to_host(params.flat))
        self.data_comm.Bcast(host, root=0)
        backend.copy(backend.to_device(host), params.flat)

    # ---- before training ----
    def make_batches(self, backend, x, y, cfg) -> DataParallelBatches:
        """This data group's rows of every batch (all rows when D = 1); the same on its M ranks."""
        return DataParallelBatches(backend, x, y, cfg.batch, self.group, self.groups, cfg.shuffle, cfg.seed)

    # ---- every step ----
    def reduce_logits(self, Z2) -> None:
        """Z2 <- the sum over the model ranks of their partial logits (n x 10, in place)."""
        started = time.perf_counter()
        flat = Z2.reshape(-1)
        if self._logits_reducer is None or flat.shape[0] > self._logits_capacity:
            # sized by the first (largest) batch; host staging of GPU logits is allocated here once
            self._logits_capacity = flat.shape[0]
            self._logits_reducer = make_reducer(self.comm_mode, self.model_comm, self.backend,
                                                self._logits_capacity, Z2.dtype)
        self._logits_reducer.reduce(flat, 0, flat.shape[0])
        self.allreduce_seconds += time.perf_counter() - started

    def allreduce_gradients(self, grads) -> None:
        """Hybrid: sum each block's gradient over the data groups. Model parallel: nothing to do."""
        if self.groups == 1:
            return
        started = time.perf_counter()
        if self._gradient_reducer is None:
            self._gradient_reducer = make_reducer(self.comm_mode, self.data_comm, grads.backend, grads.size,
                                                  grads.dtype)
        self._gradient_reducer.reduce(grads.flat, 0, grads.size)
        self.allreduce_seconds += time.perf_counter() - started

    def sum(self, value: float) -> float:
        """A per-sample quantity (the cross-entropy) summed over the data groups."""
        return self.data_comm.sum(value) if self.groups > 1 else value

    def sum_over_hidden(self, value: float) -> float:
        """A quantity of this rank's block (|W|^2) summed over the model ranks."""
        return self.model_comm.sum(value)

    # ---- after training ----
    def finish(self, params, log=print) -> None:
        """Check that the replicas of each block agree (hybrid); if not, adopt data group 0's."""
        if self.groups == 1:
            return
        host = params.backend.to_host(params.flat)
        digests = self.data_comm.allgather(hashlib.blake2b(host.tobytes(), digest_size=16).hexdigest())
        if len(set(digests)) > 1:
            self.broadcast_parameters(params)
            log("note: the data groups' parameters differed after training; all now hold group 0's")

