"""Serial training as a parallel strategy with one rank: the batches of the whole training set, and
no communication. The training loop (nn_cuda.training) runs every strategy the same way."""

from __future__ import annotations

import numpy as np

from .. import model
from ..data import epoch_order


class SerialBatches:
    """The mini-batches of the whole training set, resident on the backend (uploaded once).

    `batches(epoch)` yields (X, labels, n_global): views of B consecutive rows (the last one shorter)
    and the number of samples the gradient averages over. With shuffle, the rows are permuted once
    per epoch on the backend with a permutation drawn from (seed, epoch).
    """

    def __init__(self, backend, x: np.ndarray, y: np.ndarray, batch: int, shuffle: bool = False,
                 seed: int = 0):
        self.backend, self.batch, self.shuffle, self.seed = backend, batch, shuffle, seed
        self.n = x.shape[0]
        self.x, self.y = backend.to_device(x), backend.to_device(y)
        if shuffle:
            self.x_epoch = backend.empty(x.shape, x.dtype)
            self.y_epoch = backend.empty(y.shape, y.dtype)

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.n // self.batch)

    def batches(self, epoch: int):
        x, y = self.x, self.y
        if self.shuffle:
            rows = self.backend.to_device(epoch_order(self.n, self.seed, epoch))
            self.backend.take_rows(self.x, rows, self.x_epoch)
            self.backend.take_rows(self.y, rows, self.y_epoch)
            x, y = self.x_epoch, self.y_epoch
        for start in range(0, self.n, self.batch):
            stop = min(start + self.batch, self.n)
            yield x[start:stop], y[start:stop], stop - start


class Serial:
    """The strategy of serial training: no communication (nn_cuda.parallel.strategy.Strategy)."""

    rank, size, is_root = 0, 1, True
    comm = None  # no communicator
    evaluates = True  # does this rank compute accuracies (all ranks of model parallelism must)
    reduce_logits = None  # called on the partial logits (model parallelism)
    after_layer2 = None  # called by model.backward once dW2, db2 are written (--overlap)

    def describe(self) -> str | None:
        return None  # nothing to say beyond the run's own line

    def local_parameters(self, backend, host: dict, dtype) -> model.Parameters:
        """This rank's Parameters, loaded from the full host parameters (model parallelism: a block)."""
        params = model.Parameters(backend, host["W1"].shape[0], dtype, n_in=host["W1"].shape[1],
                                  n_out=host["W2"].shape[0])
        params.load(host)
        return params

    def gather_parameters(self, params) -> dict | None:
        """The full host parameters on the root rank (None on the others)."""
        return params.to_host()

    def make_batches(self, backend, x, y, cfg):
        return SerialBatches(backend, x, y, cfg.batch, cfg.shuffle, cfg.seed)

    def broadcast_parameters(self, params) -> None:
        pass

    def allreduce_gradients(self, grads) -> None:
        pass

    def sum(self, value: float) -> float:
        """A per-sample quantity (the cross-entropy) summed over the ranks that hold different samples."""
        return value

    def sum_over_hidden(self, value: float) -> float:
        """A quantity of the parameters (|W|^2) summed over the ranks that hold different hidden units."""
        return value

    def finish(self, params, log=print) -> None:
        pass
