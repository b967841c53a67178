"""The cuda-cpu backend: the CUDA C kernels of kernels/*.cu, unchanged, compiled and run on the CPU.

Arrays are NumPy arrays in the CPU runner's device memory (cuda_cpu.device_memory: each between two
inaccessible pages, so a kernel that writes past one is stopped, checking mode or not). Each kernel
file is a `nn_cuda.cuda_cpu.RawModule` made of exactly what the CuPy backend gives `cupy.RawModule`
(kernel_info.cupy_module_arguments), built once for the CPU by the host C++ compiler, and its
kernels are launched through the same launch table as on a GPU, so this backend runs exactly the
kernel code and launch code that the CuPy backend runs, only slower. With NN_CUDA_CPU_CHECK=1 in the
environment every launch runs in the checking mode of nn_cuda/cuda_cpu/runner.py (shuffled threads,
NaN-filled outputs and __shared__ memory, buffers with exact bounds). The read-backs (loss, argmax)
are NumPy's.
"""

from __future__ import annotations

import numpy as np

from .. import kernel_info, kernel_launch
from ..cuda_cpu import device_memory
from ..cuda_cpu.raw_module import RawModule
from ..cuda_cpu.runner import KernelError, check_mode_from_environment
from .cuda_kernels import CudaKernelBackend
from .numpy_backend import NumpyBackend


class CudaCpuBackend(CudaKernelBackend):
    name = "cuda-cpu"
    gemm_algos = kernel_info.KERNEL_GEMMS
    on_device = False
    emulated = True
    array_kind = "a NumPy array"
    array_type = np.ndarray

    def __init__(self, gemm=None, check: bool | None = None):
        super().__init__(gemm)
        self.check = check_mode_from_environment() if check is None else check
        self._modules: dict = {}  # kernel file -> its RawModule
        self._kernels: dict = {}  # name expression -> (its RawKernel, its parameters' names), signature checked
        self._host = NumpyBackend()  # copies and read-backs are plain NumPy's
        if not self.check:
            self.grading_note = ("NOTE: the CPU runner is not in its checking mode, so a kernel that reads or "
                                 "writes past an array is not caught and may still PASS: set NN_CUDA_CPU_CHECK=1, "
                                 "or run python -m nn_cuda.grade --kernels DIR")

    # ---- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        return device_memory.empty(shape, dtype)

    def fill(self, out, value):
        self._host.fill(out, value)

    def to_device(self, host_array):
        return device_memory.to_device(host_array)

    def to_host(self, array):
        return self._host.to_host(array)

    def copy(self, src, dst):
        self._host.copy(src, dst)

    def take_rows(self, src, rows, out):
        self._host.take_rows(src, rows, out)

    # ---- kernels -------------------------------------------------------------------------------
    def address(self, x) -> int:
        return x.__array_interface__["data"][0]  # ndarray.ctypes would build two Python objects

    def run_kernel(self, launch):
        found = self._kernels.get(launch.kernel)
        if found is None:
            found = self._kernel(launch)
        kernel, parameter_names = found
        kernel.run_launch(launch, parameter_names)

    def _kernel(self, launch) -> tuple:
        """(the kernel of a launch, its parameters' names), at its first launch: its arguments checked
        against the launch table's signature (as the CuPy backend does), and that signature against
        the compiled one."""
        kernel_launch.check_arguments(launch, self.is_array)
        filename, name = launch.file, launch.kernel
        module = self._modules.get(filename)
        if module is None:
            module = self._modules[filename] = kernel_module(filename, self.check)
        kernel = module.get_function(name)
        declared = kernel_launch.c_signature(name)
        if kernel.signature != declared:
            raise KernelError(
                f"kernels/{filename}: {name} takes ({', '.join(kernel.signature)}) but the launch table "
                f"declares ({', '.join(declared)}); update SIGNATURES in nn_cuda/kernel_launch.py"
            )
        found = self._kernels[name] = (kernel, kernel_launch.PARAMETER_NAMES[kernel_launch.template_of(name)])
        return found

    # ---- read-backs ----------------------------------------------------------------------------
    def cross_entropy_sum(self, P, labels):
        return self._host.cross_entropy_sum(P, labels)

    def sum_squares(self, X):
        return self._host.sum_squares(X)

    def argmax_rows(self, P):
        return self._host.argmax_rows(P)


def kernel_module(filename: str, check: bool) -> RawModule:
    """The RawModule of kernels/<filename> (or of $NN_CUDA_KERNEL_DIR's copy): what the CuPy backend
    gives cupy.RawModule, named by the file's path in the compiler's messages."""
    return RawModule(**kernel_info.cupy_module_arguments(filename), check=check,
                     name=str(kernel_info.kernel_path(filename)))
