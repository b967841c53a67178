"""Which rank of which MPI job this process is, from the variables its launcher set: no MPI needed,
so that a message can be printed once (on rank 0) before MPI starts, or without it. A leaf module:
nn_cuda.interrupts reads it as well as nn_cuda.parallel."""

from __future__ import annotations

import os
from dataclasses import dataclass

# (rank variable, size variable) that MPI launchers set in every process they start.
LAUNCHER_VARIABLES = (
    ("PMI_RANK", "PMI_SIZE"),  # MPICH and Intel MPI (mpiexec.hydra), srun --mpi=pmi2
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),  # MVAPICH
    ("PMIX_RANK", "SLURM_STEP_NUM_TASKS"),  # srun --mpi=pmix
)


@dataclass(frozen=True)
class World:
    rank: int
    size: int


def world_from_environment(environ=None) -> World | None:
    """The rank and size an MPI launcher gave this process, or None when no launcher started it."""
    environ = os.environ if environ is None else environ
    for rank_variable, size_variable in LAUNCHER_VARIABLES:
        if rank_variable in environ and size_variable in environ:
            try:
                return World(int(environ[rank_variable]), int(environ[size_variable]))
            except ValueError:
                continue
    return None
