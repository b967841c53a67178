"""Training on several MPI ranks: `mpirun -n 4 python -m nn_cuda.train`.

A strategy wraps the same model step (nn_cuda.model) and adds communication; training.train_loop
calls it through the interface of strategy.Strategy, which serial.Serial (one rank, no
communication) implements too.

- strategy.py       the interface every strategy implements
- serial.py         one rank: the whole training set's batches, no communication
- mpi.py            world detection, the course's split, a counting communicator, abort on error
- data_parallel.py  --parallel data: each rank computes on its rows of every batch, one allreduce
- model_parallel.py --parallel model | hybrid: each rank owns a block of hidden units, one allreduce
                    of the partial logits per step (hybrid: a data x model grid of ranks)
- cost_model.py     bytes and messages per step of each strategy, on paper
- allreduce.py      --comm host | cuda-aware | nccl: how the gradient buffer is summed
- gpu.py            the GPU of each rank, pinned staging buffers

Importing this package does not import mpi4py: serial runs work without it.
"""

from .mpi import (
    COMM_MODES,
    PARALLEL_STRATEGIES,
    ParallelError,
    abort_on_error,
    launched_by_mpi,
    output_on_root_only,
    rank_range,
    ranks,
    refuse_extra_ranks,
    share_cores_between_ranks,
    split_offsets,
    split_sizes,
    world_from_environment,
)


def create_strategy(cfg):
    """The --parallel strategy of `cfg` for this rank. Call it only under an MPI launcher, and before
    the backend is created: it initialises MPI and picks this rank's GPU."""
    if cfg.parallel == "data":
        from .data_parallel import DataParallel

        return DataParallel.from_config(cfg)
    if cfg.parallel in ("model", "hybrid"):
        from .model_parallel import ModelParallel

        return ModelParallel.from_config(cfg)
    raise ParallelError(
        f"unknown --parallel {cfg.parallel!r}; choose one of {', '.join(PARALLEL_STRATEGIES)}"
    )


__all__ = [
    "COMM_MODES", "PARALLEL_STRATEGIES", "ParallelError", "abort_on_error", "create_strategy",
    "launched_by_mpi", "output_on_root_only", "rank_range", "ranks", "refuse_extra_ranks",
    "share_cores_between_ranks", "split_offsets",
    "split_sizes", "world_from_environment",
]
