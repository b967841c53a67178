"""Three ways to sum a gradient buffer over the ranks (--comm host | cuda-aware | nccl).

Each reducer sums the slice flat[lo:hi] of one contiguous backend vector in place, either at once
(`reduce`) or started now and completed later (`start` returns a handle for `wait`), so that the
data-parallel step can reduce layer 2 while layer 1 is being computed (--overlap).

- HostAllreduce (default): MPI sums host memory. NumPy arrays are handed to MPI as they are;
  device arrays are staged through one pinned host buffer: download, Allreduce, upload.
- CudaAwareAllreduce: device arrays are handed to a CUDA-aware MPI directly (no staging copies).
- NcclAllreduce: NCCL through CuPy sums device memory on a CUDA stream, ordered with the kernels.

`check_comm_mode` tells, before anything is allocated, whether a mode can run here, and says what
is missing when it cannot.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from . import gpu
from .mpi import COMM_MODES, ParallelError, cuda_aware_mpi

# Set to 1 to use --comm cuda-aware with an MPI library that cannot report CUDA support.
ASSUME_CUDA_AWARE_VARIABLE = "NN_CUDA_ASSUME_CUDA_AWARE_MPI"


def check_comm_mode(mode: str, backend_name: str) -> None:
    """Raise ParallelError unless --comm `mode` can work with --backend `backend_name` here."""
    if mode not in COMM_MODES:
        raise ParallelError(f"unknown --comm {mode!r}; choose one of {', '.join(COMM_MODES)}")
    if mode == "host":
        return
    if backend_name not in ("cupy", "numba"):
        raise ParallelError(
            f"--comm {mode} hands GPU memory to the allreduce and needs a GPU backend (--backend "
            f"cupy or numba); with --backend {backend_name} use --comm host"
        )
    if mode == "cuda-aware":
        aware = cuda_aware_mpi()
        if aware is None and os.environ.get(ASSUME_CUDA_AWARE_VARIABLE, "") not in ("", "0"):
            return
        if not aware:
            answer = ("reports that it is not CUDA-aware" if aware is False
                      else "cannot say whether it is CUDA-aware (it has no MPIX_Query_cuda_support)")
            raise ParallelError(
                f"--comm cuda-aware: the MPI library {answer}; use --comm host (staging through pinned "
                f"host buffers) or --comm nccl, or run with a CUDA-aware MPI (Open MPI or MPICH built "
                f"with CUDA support)"
                + (f"; if it is CUDA-aware, set {ASSUME_CUDA_AWARE_VARIABLE}=1" if aware is None else "")
            )
    if mode == "nccl":
        _import_nccl()


def _import_nccl():
    """cupy.cuda.nccl with its library loaded, or a ParallelError naming what is missing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CuPy warns on import when libnccl is missing
            from cupy.cuda import nccl
    except ImportError as error:
        raise ParallelError(
            f"--comm nccl uses NCCL through CuPy, and CuPy cannot be imported ({error}); "
            "install it with pip install -e .[gpu], or use --comm host"
        ) from None
    if not getattr(nccl, "available", False):
        raise ParallelError(
            "--comm nccl: CuPy cannot load the NCCL library (libnccl.so.2); pip install -e '.[gpu]' installs it "
            "(nvidia-nccl-cu12), or use --comm host"
        )
    return nccl


def make_reducer(mode: str, comm, backend, size: int, dtype, student_allreduce=None):
    """The reducer of --comm `mode` for gradient buffers of `size` elements of `dtype`; with
    `student_allreduce` (the course's MPI task, --mpi-task), host memory is summed by it."""
    if mode == "host":
        return HostAllreduce(comm, backend, size, dtype, student_allreduce)
    if mode == "cuda-aware":
        return CudaAwareAllreduce(comm, backend)
    if mode == "nccl":
        return NcclAllreduce(comm, backend, dtype)
    raise ParallelError(f"unknown --comm {mode!r}; choose one of {', '.join(COMM_MODES)}")


class HostAllreduce:
    """MPI on host memory; device buffers staged through one pinned host vector."""

    def __init__(self, comm, backend, size: int, dtype, student_allreduce=None):
        self.comm, self.backend = comm, backend
        self.staging = gpu.pinned_empty(backend, size, dtype) if backend.on_device else None
        if student_allreduce is None:
            self._sum = comm.Allreduce
        else:  # the student's function gets the mpi4py communicator, as the course's task states
            self._sum = lambda host: student_allreduce(comm.comm, host)

    def reduce(self, flat, lo: int, hi: int) -> None:
        if self.staging is None:
            self._sum(flat[lo:hi])
            return
        host = self.staging[lo:hi]
        gpu.device_to_host(self.backend, flat[lo:hi], host)
        self._sum(host)
        gpu.host_to_device(self.backend, host, flat[lo:hi])

    def start(self, flat, lo: int, hi: int):
        if self.staging is None:
            return self.comm.Iallreduce(flat[lo:hi]), lo, hi
        host = self.staging[lo:hi]
        gpu.device_to_host(self.backend, flat[lo:hi], host)
        return self.comm.Iallreduce(host), lo, hi

    def wait(self, flat, handle) -> None:
        request, lo, hi = handle
        request.wait()
        if self.staging is not None:
            gpu.host_to_device(self.backend, self.staging[lo:hi], flat[lo:hi])


class CudaAwareAllreduce:
    """MPI on device memory. MPI knows nothing of CUDA streams: the device is synchronised first."""

    def __init__(self, comm, backend):
        self.comm, self.backend = comm, backend

    def reduce(self, flat, lo: int, hi: int) -> None:
        self.backend.synchronize()
        self.comm.Allreduce(flat[lo:hi])

    def start(self, flat, lo: int, hi: int):
        self.backend.synchronize()
        return self.comm.Iallreduce(flat[lo:hi])

    def wait(self, flat, handle) -> None:
        handle.wait()


class NcclAllreduce:
    """NCCL through CuPy, on CUDA streams: no host synchronisation at all.

    `reduce` runs on the current (compute) stream, so it is ordered after the kernels that wrote
    the gradients and before the update. `start` runs on a side stream that first waits for an
    event recorded on the compute stream; `wait` makes the compute stream wait for the side stream.
    Numba's kernels run on the legacy default stream, which is CuPy's null stream: the same ordering
    holds for the numba backend.
    """

    def __init__(self, comm, backend, dtype):
        import cupy

        nccl = _import_nccl()
        self.cupy, self.nccl, self.comm = cupy, nccl, comm
        unique_id = nccl.get_unique_id() if comm.rank == 0 else None
        unique_id = comm.bcast(unique_id)
        self.nccl_comm = nccl.NcclCommunicator(comm.size, unique_id, comm.rank)
        self.nccl_dtype = {np.dtype(np.float32): nccl.NCCL_FLOAT32,
                           np.dtype(np.float64): nccl.NCCL_FLOAT64}[np.dtype(dtype)]
        self.side_stream = cupy.cuda.Stream(non_blocking=True)

    def _allreduce(self, flat, lo: int, hi: int, stream) -> None:
        view = flat[lo:hi]
        pointer = gpu.device_pointer(view)
        self.nccl_comm.allReduce(pointer, pointer, hi - lo, self.nccl_dtype, self.nccl.NCCL_SUM, stream.ptr)
        self.comm.stats.record("allreduce", view.nbytes, 0.0)  # NCCL is asynchronous: no host time

    def reduce(self, flat, lo: int, hi: int) -> None:
        self._allreduce(flat, lo, hi, self.cupy.cuda.get_current_stream())

    def start(self, flat, lo: int, hi: int):
        self.side_stream.wait_event(self.cupy.cuda.get_current_stream().record())
        self._allreduce(flat, lo, hi, self.side_stream)
        return self.side_stream.record()

    def wait(self, flat, handle) -> None:
        self.cupy.cuda.get_current_stream().wait_event(handle)
