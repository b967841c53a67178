"""The GPU timer: CUDA events on the stream a backend launches on, and a kernel that keeps the GPU busy.

One class per GPU library (CuPy for the CUDA C kernels, Numba for the Numba kernels), with the same
methods; `gpu_events(backend)` gives the one that times `backend`, or None where no GPU runs it (the
NumPy backend, the CPU runner of the CUDA C kernels, Numba's simulator).

One method times every GPU call of the project (the GEMM benchmark, grading mode 4, the roofline,
the phase profiler): host time must never land between two events. An event pair around a single
call while the GPU idles measures the host's ~0.1 ms of Python before the launch as well as a kernel
of a few microseconds. So `time_calls` first queues a busy kernel (`hold`) that keeps the GPU
occupied for longer than the host needs to queue the calls and their events, then queues them back
to back: the GPU meets each event right after the work before it. The hold is checked afterwards
(its own events against the host's queueing time) and the run repeated with a longer one when the
GPU could have caught up with the host. The profiler gives each step the same head start
(`head_start_ms`).
"""

from __future__ import annotations

import time

import numpy as np

from .records import gpu_name

#: what an unreadable L2 cache size is taken to be (bytes): larger than any current GPU's L2, so that
#: the copies meant to defeat the cache are never too few
L2_FALLBACK_BYTES = 128 * 2**20


#: the longest head start a hold gives (ms)
MAX_HOLD_MS = 1000.0
#: times `time_calls` doubles a hold that turned out too short before it gives up
HOLD_RETRIES = 3


class HostOutranGpuTimer(RuntimeError):
    """The host could not queue the timed calls within the longest head start: the events would
    hold host time."""


def head_start_ms(queue_seconds: float) -> float:
    """A hold long enough for work that takes the host `queue_seconds` to queue: twice that, plus
    a millisecond, at most MAX_HOLD_MS."""
    return min(MAX_HOLD_MS, 1.0 + 2e3 * queue_seconds)


def time_calls(timer, call, repeat: int, warmup: int = 3) -> list[float]:
    """Milliseconds of each of `repeat` calls `call(i)` (i = warmup + 1, ...), queued back to back
    behind a hold, each between two events; no host time is in them (the module's docstring).

    `call(i)` may use i to pick one of several copies of its inputs (to defeat the L2 cache).
    """
    for index in range(warmup):
        call(index)
    timer.hold(0.0)  # compiled now, not inside the timed queue
    timer.synchronize()
    started = time.perf_counter()
    call(warmup)  # the host's cost of queueing one call, to size the head start
    queue_seconds = time.perf_counter() - started
    timer.synchronize()
    hold_ms = head_start_ms(queue_seconds * repeat)
    for _ in range(HOLD_RETRIES):
        before_hold, events = timer.event(), [timer.event() for _ in range(repeat + 1)]
        timer.record(before_hold)
        queued_from = time.perf_counter()  # the GPU cannot start the hold before this
        timer.hold(hold_ms)
        timer.record(events[0])
        for index in range(repeat):
            call(warmup + 1 + index)
            timer.record(events[index + 1])
        queued_ms = 1e3 * (time.perf_counter() - queued_from)
        timer.synchronize()
        # The GPU was still in the hold when the host queued the last event: it never waited.
        if timer.elapsed_ms(before_hold, events[0]) >= queued_ms:
            return [timer.elapsed_ms(events[i], events[i + 1]) for i in range(repeat)]
        if hold_ms >= MAX_HOLD_MS:
            break
        hold_ms = min(MAX_HOLD_MS, 2 * max(hold_ms, queued_ms))
    raise HostOutranGpuTimer(
        f"the host needed {queued_ms:.1f} ms to queue {repeat} calls, longer than the GPU's head start "
        f"of {hold_ms:.1f} ms: time fewer calls (--repeat) or larger ones"
    )


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

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

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

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def hold(self, milliseconds: float) -> None:
        if self._hold is None:
            cuda = self.cuda

            @cuda.jit
            def hold_gpu(microseconds):
                # One thread sleeps in 1-microsecond naps: keeps the GPU busy while the host queues
                # the work to be timed, so that no launch waits for the host. PTX bounds a nap only
                # to 0-2x what is asked: time_calls checks the hold's length by its own events.
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
