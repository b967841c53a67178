"""The GPU timer: CUDA events on the stream a backend launches on, and a kernel that keeps the GPU busy.

One class per GPU library (CuPy for the CUDA C kernels, Numba for the Numba kernels), with the same
methods; `gpu_events(backend)` gives the one that times `backend`, or None where no GPU runs it (the
NumPy backend, the CPU runner of the CUDA C kernels, Numba's simulator). Used by the GEMM benchmark
and grading mode 4 (a kernel's time between two events) and by nn_cuda.profiling (a phase's time).
"""

from __future__ import annotations

import numpy as np

from .records import gpu_name

#: what an unreadable L2 cache size is taken to be (bytes): larger than any current GPU's L2, so that
#: the copies meant to defeat the cache are never too few
L2_FALLBACK_BYTES = 128 * 2**20


def is_simulated(backend_name: str) -> bool:
    """True for Numba's CUDA simulator (`numba-sim`, or `numba` under NUMBA_ENABLE_CUDASIM=1)."""
    if backend_name == "numba-sim":
        return True
    if backend_name == "numba":
        from numba import config  # optional dependency: only the Numba backends need it

        return bool(config.ENABLE_CUDASIM)
    return False


def gpu_events(backend):
    """CupyEvents or NumbaEvents for a backend that runs on a GPU, else None."""
    if not backend.on_device or is_simulated(backend.name):
        return None
    if backend.name == "cupy":
        return CupyEvents()
    if backend.name == "numba":
        return NumbaEvents()
    return None


class CupyEvents:
    """CUDA events and a busy kernel on CuPy's current stream."""

    kind = "CUDA events (CuPy)"

    _HOLD_SOURCE = r"""
    extern "C" __global__ void hold_gpu(unsigned long long nanoseconds)
    {
        // One thread spins on the global nanosecond timer: keeps the GPU busy while the host
        // queues the work to backend timed, so that no launch waits for the host.
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        } while (now - start < nanoseconds);
    }
    """

    def __init__(self):
        import cupy  # optional dependency: only the CuPy backend needs it

        self.cupy = cupy
        self._hold = None  # compiled on first use

    def event(self):
        return self.cupy.cuda.Event()

    def record(self, event) -> None:
        """Record `event` on the current stream: it completes when the work queued before it has."""
        event.record()

    def elapsed_ms(self, start, end) -> float:
        end.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, end)

    def hold(self, milliseconds: float) -> None:
        if self._hold is None:
            self._hold = self.cupy.RawKernel(self._HOLD_SOURCE, "hold_gpu")
        self._hold((1,), (1,), (np.uint64(milliseconds * 1e6),))

    def l2_bytes(self) -> int:
        try:
            return int(self.cupy.cuda.Device().attributes["L2CacheSize"])
        except Exception:
            return L2_FALLBACK_BYTES

    def arch(self) -> str:
        return f"sm_{self.cupy.cuda.Device().compute_capability}"

    def describe(self) -> dict:
        return {
            "gpu": gpu_name(),
            "arch": self.arch(),
            "l2_bytes": self.l2_bytes(),
            "cupy": self.cupy.__version__,
            "cuda_runtime": self.cupy.cuda.runtime.runtimeGetVersion(),
            "cuda_driver": self.cupy.cuda.runtime.driverGetVersion(),
        }


class NumbaEvents:
    """CUDA events and a busy kernel on Numba's default stream."""

    kind = "CUDA events (Numba)"

    def __init__(self):
        from numba import cuda  # optional dependency: only the Numba backends need it

        self.cuda = cuda
        self._hold = None  # compiled on first use

    def event(self):
        return self.cuda.event(timing=True)

    def record(self, event) -> None:
        """Record `event` on the default stream: it completes when the work queued before it has."""
        event.record()

    def elapsed_ms(self, start, end) -> float:
        end.synchronize()
        return self.cuda.event_elapsed_time(start, end)

    def hold(self, milliseconds: float) -> None:
        if self._hold is None:
            cuda = self.cuda

            @cuda.jit
            def hold_gpu(microseconds):
                # One thread sleeps in 1-microsecond naps: keeps the GPU busy while the host queues
                # the work to backend timed, so that no launch waits for the host.
                for _ in range(microseconds):
                    cuda.nanosleep(1000)

            self._hold = hold_gpu
        self._hold[1, 1](int(milliseconds * 1000))

    def l2_bytes(self) -> int:
        try:
            return int(self.cuda.get_current_device().L2_CACHE_SIZE)
        except Exception:
            return L2_FALLBACK_BYTES

    def arch(self) -> str:
        major, minor = self.cuda.get_current_device().compute_capability
        return f"sm_{major}{minor}"

    def describe(self) -> dict:
        import numba

        name = self.cuda.get_current_device().name
        return {
            "gpu": name.decode() if isinstance(name, bytes) else str(name),
            "arch": self.arch(),
            "l2_bytes": self.l2_bytes(),
            "numba": numba.__version__,
        }
