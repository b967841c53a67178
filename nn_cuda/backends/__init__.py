"""Backends: where the network's operations run. `get_backend(name)` is the one way to get one.

- numpy      the CPU reference (float64 is the reference everything else is compared with)
- cupy       the CUDA C kernels of kernels/*.cu through CuPy, plus cuBLAS as the anchor
- numba      the same kernels written with Numba CUDA, on a GPU
- cuda-cpu   the same kernels/*.cu compiled for the CPU and run there (no GPU needed; slower)
- numba-sim  the Numba kernels on Numba's CPU simulator (tiny sizes only: one Python thread per thread)
"""

from __future__ import annotations

import os
import sys

from ..errors import KernelFailure
from .base import WITHOUT_A_GPU, Backend, BackendUnavailable

__all__ = ["BACKENDS", "WITHOUT_A_GPU", "Backend", "BackendUnavailable", "KernelFailure", "get_backend"]

BACKENDS = ("numpy", "cupy", "cuda-cpu", "numba", "numba-sim")


def _enable_numba_simulator() -> None:
    """Numba reads NUMBA_ENABLE_CUDASIM when it is first imported: set it before that, or refuse."""
    if "numba" in sys.modules:
        from numba import config

        if not config.ENABLE_CUDASIM:
            raise BackendUnavailable(
                "backend 'numba-sim' needs Numba's CUDA simulator, but Numba was already imported "
                "without it; set NUMBA_ENABLE_CUDASIM=1 in the environment before starting Python"
            )
        return
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def get_backend(name: str, gemm: str | None = None) -> Backend:
    """The backend called `name`, using GEMM algorithm `gemm` (its first algorithm by default)."""
    if name == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend(gemm)
    if name == "cupy":
        try:
            from .cupy_backend import CupyBackend
        except ImportError as error:  # CuPy is not installed, or cannot load its CUDA runtime
            raise BackendUnavailable(f"{error}; {WITHOUT_A_GPU}") from error

        return CupyBackend(gemm)
    if name == "cuda-cpu":
        from .cuda_cpu_backend import CudaCpuBackend

        return CudaCpuBackend(gemm)
    if name in ("numba", "numba-sim"):
        if name == "numba-sim":
            _enable_numba_simulator()
        from .numba_backend import NumbaBackend

        return NumbaBackend(gemm)
    raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
