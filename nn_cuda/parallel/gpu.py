"""The few GPU operations the parallel strategies need beyond the backend interface.

Which GPU a rank uses, pinned host buffers for staging, and copies between a device array and a
host buffer that already exists (the backend's to_host/to_device allocate). One function per job,
each dispatching on the backend: "cupy" (CuPy arrays) or "numba" (Numba device arrays, on a GPU or
in the simulator). The NumPy backend needs none of this.

CuPy is imported only by the cupy backend and by --comm nccl; Numba only by the numba backend.
"""

from __future__ import annotations

import numpy as np

#: the Numba backend's names: on a GPU, and in the simulator (Backend.name says which)
NUMBA_BACKENDS = ("numba", "numba-sim")


def select_device(backend_name: str, local_rank: int, local_size: int, comm_mode: str = "host") -> int | None:
    """Make GPU `local_rank % n_gpus` current for this process, before the backend allocates.

    `local_rank` and `local_size` are this rank's index and the number of ranks on its node. Ranks
    may share a GPU with --comm host or cuda-aware (each has its own context, and MPI moves host or
    device memory between them); NCCL refuses two ranks of one communicator on one GPU, so with
    --comm nccl more ranks on a node than GPUs stop here with a ParallelError saying so.

    Returns the device index, or None where there is no GPU to choose (NumPy, the simulator, or no
    driver: the backend then reports that itself). With --comm nccl the numba backend also makes
    the device current for CuPy, through which NCCL is called.
    """
    device = None
    if backend_name == "cupy" or (backend_name == "numba" and comm_mode == "nccl"):
        device = _use_device(_cupy_device_count(), local_rank, local_size, comm_mode, _use_cupy_device)
    if backend_name == "numba":
        from numba import cuda

        if cuda.is_available():
            device = _use_device(len(cuda.gpus), local_rank, local_size, comm_mode, cuda.select_device)
    return device


def _use_device(count: int, local_rank: int, local_size: int, comm_mode: str, use) -> int | None:
    if count == 0:
        return None
    if comm_mode == "nccl" and local_size > count:
        from .mpi import ParallelError

        raise ParallelError(
            f"--comm nccl needs a GPU of its own for each rank, and {local_size} ranks share "
            f"{count} GPU{'s' if count > 1 else ''} on this node (NCCL refuses two ranks on one GPU); "
            f"start at most {count} rank{'s' if count > 1 else ''} per node, or use --comm host, with "
            "which ranks can share a GPU"
        )
    device = local_rank % count
    use(device)
    return device


def _cupy_device_count() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver: the backend's own check says what is missing
        return 0


def _use_cupy_device(device: int) -> None:
    import cupy

    cupy.cuda.Device(device).use()


def pinned_empty(backend, size: int, dtype) -> np.ndarray:
    """A NumPy vector in page-locked host memory (fast, DMA-able copies to and from the device)."""
    if backend.name == "cupy":
        import cupyx

        return cupyx.empty_pinned((size,), dtype=dtype)
    if backend.name in NUMBA_BACKENDS:
        from numba import cuda

        return cuda.pinned_array((size,), dtype=dtype)
    return np.empty(size, dtype=dtype)


def device_to_host(backend, device_array, host_array: np.ndarray) -> None:
    """host_array[...] = device_array, waiting for the kernels queued before it."""
    if backend.name == "cupy":
        device_array.get(out=host_array)
    elif backend.name in NUMBA_BACKENDS:
        device_array.copy_to_host(host_array)
    else:
        np.copyto(host_array, device_array)


def host_to_device(backend, host_array: np.ndarray, device_array) -> None:
    """device_array[...] = host_array."""
    if backend.name == "cupy":
        device_array.set(host_array)
    elif backend.name in NUMBA_BACKENDS:
        device_array.copy_to_device(host_array)
    else:
        np.copyto(device_array, host_array)


def device_pointer(device_array) -> int:
    """The address of a CuPy or Numba device array's first element (CUDA array interface)."""
    return device_array.__cuda_array_interface__["data"][0]
