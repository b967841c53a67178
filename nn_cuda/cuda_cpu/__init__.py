"""The CUDA C kernels of kernels/*.cu compiled by the host C++ compiler and run on the CPU.

- runtime.h   what a kernel sees: the CUDA built-ins (threadIdx, __shared__, __syncthreads), warps
- runtime.cpp   what runs a launch: fibers for threads, the block scheduler, the checking mode, faults
- shared_guard.cpp  what follows a kernel's per-thread __shared__ arrays: a write past them is seen
- device_functions.h  CUDA's device functions and types (vector types, min/max, intrinsics, assert)
- build.py    the compiler, the translation unit of one kernel file or code string, building and loading a library
- build_cache.py  the private cache of built libraries: what it loads is what was built
- runner.py   a launch with its arguments, and the checking mode (NN_CUDA_CPU_CHECK=1)
- raw_module.py   RawModule / RawKernel: any CUDA C source, as with CuPy's (arguments.py checks the arguments)
- shared_headers.py  the headers a code includes, rewritten as the code is when they declare shared memory

`from nn_cuda.cuda_cpu import RawModule, KernelError` imports them on first use: importing this
package does no work.
"""

__all__ = ["KernelError", "RawKernel", "RawModule"]


def __getattr__(name):
    if name in ("RawModule", "RawKernel"):
        from . import raw_module

        return getattr(raw_module, name)
    if name == "KernelError":
        from .runner import KernelError

        return KernelError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
