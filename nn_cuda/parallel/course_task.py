"""The course's MPI task: the two things a data-parallel step needs from MPI, as the project does them.

    rows_of_rank         which rows of each mini-batch a rank computes on (the scatter of the batch)
    allreduce_gradients  the sum of the ranks' gradient buffers, on every rank (one Allreduce)

Every rank then runs the same forward and backward pass on its rows, with the gradient scaled by
1 / (rows of the whole batch), so that the sum over the ranks is the serial gradient
(nn_cuda/parallel/data_parallel.py says why this is exact).

`python -m nn_cuda.course start DIR` hands this file to a student as DIR/data_parallel.py with the
bodies between the TASK and END TASK markers replaced by TODOs, and
`mpirun -n 4 python -m nn_cuda.train --mpi-task DIR/data_parallel.py` trains with the student's
functions in place of these.
"""

from __future__ import annotations


def rows_of_rank(batch_rows: int, ranks: int, rank: int) -> tuple[int, int]:
    """(first, stop) of the rows of a batch of `batch_rows` rows that rank `rank` of `ranks` takes."""
    # TASK mpi_rows: the course's split: contiguous shares in rank order; every rank gets
    #   batch_rows // ranks rows and the first batch_rows % ranks ranks one more (a rank may get
    #   none of a short last batch). About 3 lines.
    first = rank * (batch_rows // ranks) + min(rank, batch_rows % ranks)
    return first, first + batch_rows // ranks + (rank < batch_rows % ranks)
    # END TASK


def allreduce_gradients(comm, gradients) -> None:
    """Sum the NumPy array `gradients` (this rank's gradient buffer [W1 | W2 | b1 | b2]) over every rank
    of the mpi4py communicator `comm`, in place: afterwards every rank holds the same sum."""
    # TASK mpi_allreduce: one collective call of mpi4py that sums a buffer over all ranks and leaves
    #   the result on every rank, in place (MPI.IN_PLACE). About 2 lines.
    from mpi4py import MPI

    comm.Allreduce(MPI.IN_PLACE, gradients, op=MPI.SUM)
    # END TASK
