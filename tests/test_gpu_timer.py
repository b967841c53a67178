"""nn_cuda.gpu_timer, the one GPU timer of the GEMM benchmark, grading mode 4 and the phase profiler.

No GPU is needed: a stand-in for CuPy's event API (a clock that the test advances) checks that each
user records its events around the work it times and reads the right pairs. On a GPU the same code
runs on CUDA events (tests/test_cuda_kernels.py and `./run.sh gpu-check` exercise it there).
"""

import sys
import types

import numpy as np
import pytest

from nn_cuda import gpu_timer, profiling
from nn_cuda.backends import get_backend
from nn_cuda.bench import gemm


class FakeClock:
    """CuPy's Event / get_elapsed_time on a clock in milliseconds that the test moves."""

    def __init__(self):
        self.now = 0.0
        self.log = []
        clock = self

        class Event:
            def __init__(self):
                self.at = None

            def record(self):
                self.at = clock.now
                clock.log.append(("record", clock.now))

            def synchronize(self):
                assert self.at is not None, "an event was read before it was recorded"

        self.Event = Event

    def elapsed(self, start, end):
        return end.at - start.at


@pytest.fixture
def fake_cupy(monkeypatch):
    clock = FakeClock()
    stream = types.SimpleNamespace(synchronize=lambda: None)
    cuda = types.SimpleNamespace(Event=clock.Event, get_elapsed_time=clock.elapsed,
                                 get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda, __version__="fake"))
    return clock


def test_cpu_backends_are_timed_by_the_host_clock():
    for name in ("numpy", "cuda-cpu"):
        backend = get_backend(name)
        assert gpu_timer.gpu_events(backend) is None
        assert isinstance(profiling._clock_for(backend), profiling._HostClock)


def test_the_simulator_is_never_timed_as_a_gpu(monkeypatch):
    assert gpu_timer.is_simulated("numba-sim")
    assert not gpu_timer.is_simulated("cupy") and not gpu_timer.is_simulated("numpy")
    from numba import config

    monkeypatch.setattr(config, "ENABLE_CUDASIM", 1)
    assert gpu_timer.is_simulated("numba")
    device_backend = types.SimpleNamespace(name="numba", on_device=True)
    assert gpu_timer.gpu_events(device_backend) is None


def test_a_cupy_backend_gets_cupy_events(fake_cupy):
    backend = types.SimpleNamespace(name="cupy", on_device=True)
    events = gpu_timer.gpu_events(backend)
    assert isinstance(events, gpu_timer.CupyEvents)
    start, end = events.event(), events.event()
    events.record(start)
    fake_cupy.now = 2.5
    events.record(end)
    assert events.elapsed_ms(start, end) == 2.5


def test_the_profiler_reads_each_phase_between_its_own_events(fake_cupy):
    clock = profiling._EventClock(gpu_timer.CupyEvents())
    assert clock.kind == "CUDA events (CuPy)"
    first = clock.start()
    fake_cupy.now = 1.0
    first = clock.stop(first)
    second = clock.start()
    fake_cupy.now = 4.0
    second = clock.stop(second)
    assert clock.seconds(first) == pytest.approx(1e-3)
    assert clock.seconds(second) == pytest.approx(3e-3)


def holding(clock, lengths=None):
    """A stand-in for the busy kernel: the GPU's clock moves by the hold's length (or by the next of
    `lengths`, to play a hold that ended early)."""
    lengths = iter(lengths) if lengths is not None else None

    def hold(milliseconds):
        clock.log.append(("hold", milliseconds))
        clock.now += milliseconds if lengths is None else next(lengths)

    return hold


def test_the_gemm_benchmark_times_each_call_between_consecutive_events(fake_cupy):
    """time_gemm queues a head start, then every call between two events; call i takes i + 1 ms."""
    events = gpu_timer.CupyEvents()
    events.hold = holding(fake_cupy)
    calls = []

    class Backend:
        def gemm(self, *args, **kwargs):
            calls.append(fake_cupy.now)
            fake_cupy.now += len(calls)

    problem = gemm.Problem(4, 3, 2, False, False, np.float32)
    copies = [(problem.A, problem.B, problem.C)]
    times = gemm.time_gemm(Backend(), events, "naive", problem, copies, repeat=3)
    first_timed = gemm.WARMUP + 1  # the warm-up calls and the one that sizes the head start
    assert times == [float(first_timed + 1), float(first_timed + 2), float(first_timed + 3)]
    kinds = [entry[0] for entry in fake_cupy.log]
    # the hold compiled during the warm-up; then the check's event, the hold, and one event per call
    assert kinds == ["hold", "record", "hold", "record", "record", "record", "record"]
    assert fake_cupy.log[2][1] >= 1.0  # a head start of at least a millisecond


def test_a_hold_that_ended_before_the_host_had_queued_the_calls_is_retried_longer(fake_cupy):
    # The first hold ends at once (a nanosleep may sleep 0 ns): the GPU could have waited for the host
    # inside the timed events, so the calls are timed again behind a longer hold.
    events = gpu_timer.CupyEvents()
    events.hold = holding(fake_cupy, lengths=[0.0, 0.0, 50.0])

    def call(index):
        fake_cupy.now += 2.0

    assert gpu_timer.time_calls(events, call, repeat=2, warmup=1) == [2.0, 2.0]
    holds = [entry[1] for entry in fake_cupy.log if entry[0] == "hold"]
    assert len(holds) == 3 and holds[2] > holds[1] > 0  # the warm-up hold, a short one, a longer one


def test_a_gpu_that_always_catches_up_with_the_host_is_an_error_not_a_timing(fake_cupy):
    events = gpu_timer.CupyEvents()
    events.hold = holding(fake_cupy, lengths=[0.0] * (1 + gpu_timer.HOLD_RETRIES))
    with pytest.raises(gpu_timer.HostOutranGpuTimer, match="head start"):
        gpu_timer.time_calls(events, lambda index: None, repeat=2, warmup=1)


def test_the_profiler_gives_the_gpu_a_head_start_wherever_it_may_have_run_dry(fake_cupy, monkeypatch):
    backend = types.SimpleNamespace(name="cupy", on_device=True, synchronize=lambda: None)
    timer = profiling.PhaseTimer(backend, nvtx=False)
    monkeypatch.setattr(timer.clock.events, "hold", holding(fake_cupy))
    with timer.step():
        with timer.phase("forward_gemm"):
            fake_cupy.now += 1.0
        with timer.phase("communication", host=True):  # synchronizes: the GPU runs dry
            pass
        with timer.phase("update"):
            fake_cupy.now += 1.0
    kinds = [entry[0] for entry in fake_cupy.log]
    assert kinds == ["hold", "record", "record", "hold", "record", "record"]
    assert timer.seconds()["forward_gemm"] == pytest.approx(1e-3)
    assert timer.seconds()["update"] == pytest.approx(1e-3)
