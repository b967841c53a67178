"""The cuda-cpu backend: the CUDA C kernels of kernels/*.cu, unchanged, compiled and run on the CPU.

Arrays are NumPy arrays. Each kernel file is built once for the CPU by the host C++ compiler (see
nn_cuda/cuda_cpu/) and its kernels are launched through the same launch table as on a GPU, so this
backend runs exactly the kernel code and launch code that the CuPy backend runs, only slower. With
NN_CUDA_CPU_CHECK=1 in the environment every launch runs in the checking mode of
nn_cuda/cuda_cpu/runner.py (shuffled threads, NaN-filled outputs and __shared__ memory, guarded
buffers). The read-backs (loss, argmax) are NumPy's.
"""

from __future__ import annotations

import numpy as np

from .. import kernel_info
from ..cuda_cpu.runner import KernelLibrary, check_mode_from_environment
from .cuda_kernels import CudaKernelBackend
from .numpy_backend import NumpyBackend


class CudaCpuBackend(CudaKernelBackend):
    name = "cuda-cpu"
    gemm_algos = ("naive", "tiled", "regblock")
    on_device = False
    emulated = True
    array_kind = "a NumPy array"

    def __init__(self, gemm=None, check: bool | None = None):
        super().__init__(gemm)
        self.check = check_mode_from_environment() if check is None else check
        self._libraries: dict = {}
        self._host = NumpyBackend()  # memory and read-backs are plain NumPy

    # ---- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        return self._host.empty(shape, dtype)

    def fill(self, out, value):
        self._host.fill(out, value)

    def to_device(self, host_array):
        return self._host.to_device(host_array)

    def to_host(self, array):
        return self._host.to_host(array)

    def copy(self, src, dst):
        self._host.copy(src, dst)

    def take_rows(self, src, rows, out):
        self._host.take_rows(src, rows, out)

    # ---- kernels -------------------------------------------------------------------------------
    def is_array(self, x) -> bool:
        return isinstance(x, np.ndarray)

    def address(self, x) -> int:
        return x.ctypes.data

    def run_kernel(self, launch):
        library = self._libraries.get(launch.file)
        if library is None:
            library = KernelLibrary(launch.file, kernel_info.name_expressions(launch.file), self.check)
            self._libraries[launch.file] = library
        library.run(launch)

    # ---- read-backs ----------------------------------------------------------------------------
    def cross_entropy_sum(self, P, labels):
        return self._host.cross_entropy_sum(P, labels)

    def sum_squares(self, X):
        return self._host.sum_squares(X)

    def argmax_rows(self, P):
        return self._host.argmax_rows(P)
