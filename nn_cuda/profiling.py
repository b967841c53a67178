"""Per-phase timings of the training step, and NVTX ranges for Nsight Systems.

A `PhaseTimer` splits the time of the steps it watches into the phases of PHASES:

    forward_gemm    the two GEMMs of the forward pass
    backward_gemm   the three GEMMs of the backward pass
    elementwise     bias + sigmoid, bias + softmax, softmax gradient, sigmoid backward, column sums
    update          the SGD update of the weights and of the biases
    communication   the gradient allreduce of data-parallel training (and its staging copies), the
                    logits allreduce of model parallelism
    transfers       host <-> device copies (none in a step: the data is uploaded once)

Nothing in nn_cuda.model changes: `timer.backend(backend)` returns a stand-in for the backend whose
operations are timed under their phase (the GEMMs under forward_gemm or backward_gemm, after
`timer.stage("forward")` or `timer.stage("backward")`), and `timer.strategy(strategy)` one whose
allreduces are timed as communication. A run without a timer uses the backend itself: no cost.

How a phase is timed depends on where the arrays live:
- CPU backends (numpy, the Numba simulator): the host clock, after `synchronize()` on both sides;
- CuPy, and Numba on a GPU: a pair of CUDA events (nn_cuda.gpu_timer) around each call, read
  when the timer is summarised. Wherever the GPU may have run dry (a step's start, the end of a
  host-clock phase) a busy kernel first gives it a head start longer than the host needs to queue
  what follows (twice the host time the last step took to queue its work,
  its waits in host-clock phases left out), so that the events time the kernels and no
  host time (nn_cuda.gpu_timer's method). Host-side work (MPI on the host) is timed with the host
  clock after a synchronize.
With CuPy present, every phase and every step is also an NVTX range (cupy.cuda.nvtx), so that
`nsys profile --trace=cuda,nvtx` shows them on the timeline.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

from .gpu_timer import gpu_events, head_start_ms

PHASES = ("forward_gemm", "backward_gemm", "elementwise", "update", "communication", "transfers")

#: backend operations -> phase ("gemm" is resolved by the stage: forward or backward)
OPERATION_PHASES = {
    "gemm": "gemm",
    "bias_sigmoid": "elementwise",
    "bias_softmax": "elementwise",
    "softmax_grad": "elementwise",
    "sigmoid_backward": "elementwise",
    "col_sum": "elementwise",
    "sgd_update": "update",
    "to_device": "transfers",
    "to_host": "transfers",
}


def _nvtx():
    """cupy.cuda.nvtx, or None without CuPy (ranges are then skipped)."""
    try:
        from cupy.cuda import nvtx

        return nvtx
    except Exception:  # CuPy absent or without a CUDA driver: no timeline to annotate
        return None


class _HostClock:
    """Seconds of a phase by the host clock, with the backend synchronized before and after."""

    kind = "host clock + synchronize"

    def __init__(self, backend):
        self.backend = backend

    def head_start(self, queue_seconds: float) -> None:
        """Nothing to do: the host clock waits for the work it times."""

    def start(self):
        self.backend.synchronize()
        return time.perf_counter()

    def stop(self, started):
        self.backend.synchronize()
        return time.perf_counter() - started  # seconds, already known

    def seconds(self, token) -> float:
        return token


class _EventClock:
    """A CUDA event pair per phase call (nn_cuda.gpu_timer), read at summary time: timing a phase
    never waits for the GPU."""

    def __init__(self, events):
        self.events = events
        self.kind = events.kind

    def head_start(self, queue_seconds: float) -> None:
        """Hold the GPU while the host queues up to `queue_seconds` of work."""
        self.events.hold(head_start_ms(queue_seconds))

    def start(self):
        started = self.events.event()
        self.events.record(started)
        return started

    def stop(self, started):
        end = self.events.event()
        self.events.record(end)
        return (started, end)

    def seconds(self, token) -> float:
        started, end = token
        return self.events.elapsed_ms(started, end) / 1e3


def _clock_for(backend):
    events = gpu_events(backend)
    return _HostClock(backend) if events is None else _EventClock(events)


class PhaseTimer:
    """Adds the time of each phase over the steps it watches; `summary()` gives the totals."""

    def __init__(self, backend, nvtx: bool = True):
        self._backend = backend
        self.clock = _clock_for(backend)
        self.host_clock = _HostClock(backend)
        self.nvtx = _nvtx() if nvtx else None
        self._stage = "forward"
        self._pending = {phase: [] for phase in PHASES}  # tokens of the device clock
        self._seconds = {phase: 0.0 for phase in PHASES}  # resolved, and host-clock phases
        self._calls = {phase: 0 for phase in PHASES}
        self.steps = 0
        self._step_started = None
        # The host time the last step took to queue its device work: it sizes the GPU's head start.
        # Time in host-clock phases is left out: a synchronize there waits for the head start
        # itself, and counting that wait made every hold twice the last (up to MAX_HOLD_MS a step).
        self._step_seconds = 0.0
        self._host_phase_seconds = 0.0  # this step's time in host-clock phases, their synchronizes included

    # ---- marking the step -----------------------------------------------------------------------
    def stage(self, name: str) -> None:
        """The pass the next GEMMs belong to: "forward" or "backward"."""
        if name not in ("forward", "backward"):
            raise ValueError(f"stage must be forward or backward, not {name!r}")
        self._stage = name

    def begin_step(self) -> None:
        """A training step starts: its NVTX range opens, GEMMs count as forward, and the GPU gets its
        head start."""
        self._push("step")
        self._stage = "forward"
        self._step_started = time.perf_counter()
        self._host_phase_seconds = 0.0
        self.clock.head_start(self._step_seconds)

    def end_step(self) -> None:
        """The step ends: its NVTX range closes; it counts in the per-step averages."""
        self._pop()
        self.steps += 1
        if self._step_started is not None:
            self._step_seconds = time.perf_counter() - self._step_started - self._host_phase_seconds

    @contextmanager
    def step(self):
        """One training step, as a `with` block (begin_step and end_step)."""
        self.begin_step()
        try:
            yield
        finally:
            self.end_step()

    @contextmanager
    def phase(self, name: str, host: bool = False):
        """Time the enclosed calls under `name`; host=True: host clock (MPI, host copies)."""
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}; phases are {', '.join(PHASES)}")
        clock = self.host_clock if host else self.clock
        self._push(name)
        entered = time.perf_counter()  # before the host clock's synchronize, whose wait is no queueing
        started = clock.start()
        try:
            yield
        finally:
            token = clock.stop(started)
            self._pop()
            self._calls[name] += 1
            if clock is self.host_clock:
                self._seconds[name] += token
                self._host_phase_seconds += time.perf_counter() - entered
                self.clock.head_start(self._step_seconds)  # the synchronize let the GPU run dry
            else:
                self._pending[name].append(token)

    def _push(self, name):
        if self.nvtx is not None:
            self.nvtx.RangePush(name)

    def _pop(self):
        if self.nvtx is not None:
            self.nvtx.RangePop()

    # ---- stand-ins for the backend and the strategy ---------------------------------------------
    def backend(self, backend):
        """`backend` with its operations timed under their phase (see OPERATION_PHASES)."""
        return _TimedBackend(backend, self)

    def strategy(self, strategy):
        """`strategy` with its allreduces (gradients, logits) timed as communication (host clock)."""
        return _TimedStrategy(strategy, self)

    # ---- results --------------------------------------------------------------------------------
    def seconds(self) -> dict:
        """{phase: total seconds} (reads the pending CUDA events)."""
        for phase, tokens in self._pending.items():
            self._seconds[phase] += sum(self.clock.seconds(token) for token in tokens)
            tokens.clear()
        return dict(self._seconds)

    def summary(self) -> dict:
        """JSON-ready totals: seconds, milliseconds per step and number of calls of each phase."""
        seconds = self.seconds()
        steps = max(self.steps, 1)
        return {
            "clock": self.clock.kind,
            "backend": self._backend.name,
            "gemm": getattr(self._backend, "gemm_algo", None),
            "steps": self.steps,
            "phases": PHASES,
            "seconds": seconds,
            "ms_per_step": {phase: 1e3 * seconds[phase] / steps for phase in PHASES},
            "calls": dict(self._calls),
        }

    def write_json(self, path, extra: dict | None = None) -> None:
        from .records import write_json

        write_json(path, {**(extra or {}), "profile": self.summary()})


class _TimedBackend:
    """Delegates everything to the backend; the operations of OPERATION_PHASES are timed."""

    def __init__(self, backend, timer: PhaseTimer):
        self._backend, self._timer = backend, timer

    def __getattr__(self, name):
        attribute = getattr(self._backend, name)
        phase = OPERATION_PHASES.get(name)
        if phase is None or not callable(attribute):
            return attribute
        timer = self._timer

        def timed(*args, **kwargs):
            resolved = f"{timer._stage}_gemm" if phase == "gemm" else phase
            with timer.phase(resolved, host=(phase == "transfers")):
                return attribute(*args, **kwargs)

        return timed


class _TimedStrategy:
    """Delegates everything to the strategy; its communication is timed as such: the gradient
    allreduce, the logits allreduce of model parallelism (reduce_logits) and the start of the
    layer-2 allreduce of --overlap (after_layer2)."""

    def __init__(self, strategy, timer: PhaseTimer):
        self._strategy, self._timer = strategy, timer

    def __getattr__(self, name):
        return getattr(self._strategy, name)

    def allreduce_gradients(self, grads) -> None:
        if self._strategy.comm is None:  # serial: nothing to communicate, so no synchronize either
            self._strategy.allreduce_gradients(grads)
            return
        with self._timer.phase("communication", host=True):
            self._strategy.allreduce_gradients(grads)

    @property
    def reduce_logits(self):
        return self._timed_hook(self._strategy.reduce_logits)

    @property
    def after_layer2(self):
        return self._timed_hook(self._strategy.after_layer2)

    def _timed_hook(self, hook):
        if hook is None:  # the strategy has no such step (serial, data parallel without --overlap)
            return None
        timer = self._timer

        def timed(*args):
            with timer.phase("communication", host=True):
                return hook(*args)

        return timed


def timed_step(timer: PhaseTimer, model, backend, params, grads, workspace, X, labels, scale, lr, reg,
               strategy=None):
    """`model.training_step` with its phases timed; returns its Yhat.

    `backend` is the timer's stand-in (timer.backend(...)); `strategy` its stand-in or None.
    """
    with timer.step():
        return model.training_step(backend, params, grads, workspace, X, labels, scale, lr, reg, strategy,
                                   stage=timer.stage)
