"""The pencil-and-paper communication cost of one training step: data, model and hybrid parallelism.

Notation: H hidden units, 784 inputs, 10 classes, a batch of B samples, p ranks, s bytes per element
(4 for float32, 8 for float64). The gradient (and parameter) buffer holds

    G(H) = 784 H + 10 H + H + 10 = 795 H + 10 elements.

Per step and rank, counting what each rank hands to MPI (the "payload", what nn_cuda.parallel's
Communicator counts) and, beside it, what a bandwidth-optimal (ring) allreduce sends over the wire,
2 (k - 1) / k x payload for a communicator of k ranks:

    data    one Allreduce of the whole gradient         payload G(H) s       wire 2 (p-1)/p G(H) s
            (--overlap: three, W2 started early, then W1 and the biases: the same payload and wire)
    model   one Allreduce of the partial logits         payload 10 B s       wire 2 (p-1)/p 10 B s
    hybrid  D = p / M data groups of M model ranks:
            one Allreduce of the group's logits (M)     payload 10 (B/D) s   wire 2 (M-1)/M 10 (B/D) s
            one Allreduce of the block's gradient (D)   payload G(H/M) s     wire 2 (D-1)/D G(H/M) s

For H = 1000, B = 800, float32: data 4 x 795,010 = 3.18 MB per step, model 4 x 8,000 = 32 KB: model
parallelism sends ~100 x less because 10 B << 795 H here. The cross-over is at B ~ 79.5 H: for the
course's H = 100 and B = 800 (10 B = 8,000 against G = 79,510) model parallelism still sends ~10 x
less, but each rank's GEMMs shrink to H/p columns, which small H cannot afford.

Conventions of this code, which the benchmark's counts follow exactly:
- a strategy calls its main collective even on one rank (data: the gradient allreduce; model and
  hybrid: the logits allreduce), so p = 1 shows the payload with zero wire bytes;
- hybrid calls the gradient allreduce only when there is more than one data group (D > 1);
- ranks split rows and hidden units as the course does (nn_cuda.parallel.mpi.rank_range): rank r of k
  gets n // k + (r < n % k); a data group with no rows of a short last batch skips its logits
  allreduce (its whole model group agrees: they hold the same rows), while a data-parallel rank
  with no rows still joins the gradient allreduce.
Everything here is a pure function of the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mpi import rank_range, ring_allreduce_bytes

N_INPUTS, N_CLASSES = 784, 10
STRATEGIES = ("data", "model", "hybrid")


def gradient_elements(hidden: int, n_in: int = N_INPUTS, n_out: int = N_CLASSES) -> int:
    """Elements of the buffer [W1 | W2 | b1 | b2] for `hidden` hidden units."""
    return hidden * n_in + n_out * hidden + hidden + n_out


@dataclass(frozen=True)
class Cost:
    """Communication of one rank: collective calls, payload bytes handed to MPI, ring wire bytes."""

    messages: int = 0
    payload_bytes: int = 0
    wire_bytes: float = 0.0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.messages + other.messages, self.payload_bytes + other.payload_bytes,
                    self.wire_bytes + other.wire_bytes)


def _allreduce(elements: int, itemsize: int, ranks: int) -> Cost:
    payload = elements * itemsize
    return Cost(1, payload, ring_allreduce_bytes(payload, ranks))


def grid_shape(p: int, model_ranks: int) -> tuple[int, int]:
    """(D data groups, M model ranks) of p ranks; M must divide p."""
    if model_ranks < 1 or p % model_ranks:
        raise ValueError(f"--model-ranks {model_ranks} must divide the number of ranks {p}")
    return p // model_ranks, model_ranks


def strategy_grid(strategy: str, p: int, model_ranks: int | None = None) -> tuple[int, int]:
    """(D, M) of a strategy: data = (p, 1) apart from its always-called allreduce, model = (1, p)."""
    if strategy == "data":
        return p, 1
    if strategy == "model":
        return 1, p
    if strategy == "hybrid":
        return grid_shape(p, model_ranks or 1)
    raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")


def step_cost(strategy: str, hidden: int, batch: int, p: int, dtype, model_ranks: int | None = None,
              rank: int = 0, n_in: int = N_INPUTS, n_out: int = N_CLASSES, overlap: bool = False) -> Cost:
    """Communication of world rank `rank` in one step on a batch of `batch` samples (`overlap`: data
    parallelism's --overlap)."""
    itemsize = np.dtype(dtype).itemsize
    if strategy == "data" and overlap:
        parts = (n_out * hidden, n_in * hidden, hidden + n_out)  # W2 early, then W1, then b1 and b2
        return sum((_allreduce(elements, itemsize, p) for elements in parts), Cost())
    if strategy == "data":
        return _allreduce(gradient_elements(hidden, n_in, n_out), itemsize, p)
    groups, m_ranks = strategy_grid(strategy, p, model_ranks)
    group, model_rank = divmod(rank, m_ranks)
    lo, hi = rank_range(batch, groups, group)
    cost = _allreduce((hi - lo) * n_out, itemsize, m_ranks) if hi > lo else Cost()
    if groups > 1:
        h_lo, h_hi = rank_range(hidden, m_ranks, model_rank)
        cost = cost + _allreduce(gradient_elements(h_hi - h_lo, n_in, n_out), itemsize, groups)
    return cost


def epoch_cost(strategy: str, hidden: int, samples: int, batch: int, p: int, dtype,
               model_ranks: int | None = None, rank: int = 0, n_in: int = N_INPUTS,
               n_out: int = N_CLASSES, overlap: bool = False) -> Cost:
    """The sum of step_cost over the batches of an epoch of `samples` rows (the last one shorter)."""
    total = Cost()
    for start in range(0, samples, batch):
        total = total + step_cost(strategy, hidden, min(batch, samples - start), p, dtype, model_ranks,
                                  rank, n_in, n_out, overlap)
    return total
