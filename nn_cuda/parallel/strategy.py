"""What a parallel strategy is: the interface the training loop calls, and nothing else.

Serial (serial.py), DataParallel (data_parallel.py) and ModelParallel (model_parallel.py, also the
hybrid data x model grid) implement it; nn_cuda.training never asks which one it has.
"""

from __future__ import annotations

from typing import Callable, Protocol


class Strategy(Protocol):
    rank: int
    size: int
    is_root: bool  # prints, writes files, holds the gathered parameters
    comm: object | None  # the MPI communicator, None when serial
    evaluates: bool  # computes accuracies (every rank of model parallelism must)
    reduce_logits: Callable | None  # sums the partial logits over the model ranks
    after_layer2: Callable | None  # called once dW2, db2 are written (--overlap)

    def describe(self) -> str | None:
        """One line on how the work is split, or None."""

    def local_parameters(self, backend, host: dict, dtype):
        """This rank's Parameters, loaded from the full host parameters."""

    def gather_parameters(self, params) -> dict | None:
        """The full host parameters on the root rank (None on the others)."""

    def make_batches(self, backend, x, y, cfg):
        """This rank's batches of the training set."""

    def broadcast_parameters(self, params) -> None:
        """Every rank starts from the root's parameters."""

    def allreduce_gradients(self, grads) -> None:
        """Sum the gradient buffer over the ranks that hold different samples."""

    def sum(self, value: float) -> float:
        """A per-sample quantity summed over the ranks that hold different samples."""

    def sum_over_hidden(self, value: float) -> float:
        """A quantity of the parameters summed over the ranks that hold different hidden units."""

    def finish(self, params, log=print) -> None:
        """Whatever the strategy reports at the end (e.g. its communication counts)."""
