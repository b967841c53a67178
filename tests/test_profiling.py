"""nn_cuda.profiling: the phase timer's bookkeeping (no timed assertions: only counts and signs)."""

import json

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.backends import get_backend
from nn_cuda.profiling import PHASES, PhaseTimer, timed_step


def _setup(backend, hidden=7, batch=5, seed=0):
    rng = np.random.default_rng(seed)
    X = backend.to_device(rng.random((batch, 784)))
    y = backend.to_device(rng.integers(0, 10, batch).astype(np.int32))
    params = model.Parameters(backend, hidden, np.float64)
    params.load(model.init_parameters(hidden, seed))
    grads = model.Parameters(backend, hidden, np.float64)
    workspace = model.Workspace(backend, batch, hidden, np.float64)
    return X, y, params, grads, workspace


class CountingStrategy:
    """A strategy with a communicator (as under MPI) that counts its allreduce calls."""

    comm = "a communicator"
    reduce_logits = None
    after_layer2 = None

    def __init__(self):
        self.allreduces = 0

    def allreduce_gradients(self, grads):
        self.allreduces += 1


def timed_steps(strategy, steps: int) -> PhaseTimer:
    """`steps` training steps on the NumPy backend, timed, with `strategy` (through its timed stand-in)."""
    backend = get_backend("numpy")
    X, y, params, grads, workspace = _setup(backend)
    timer = PhaseTimer(backend, nvtx=False)
    timed_backend, timed_strategy = timer.backend(backend), timer.strategy(strategy)
    for _ in range(steps):
        timed_step(timer, model, timed_backend, params, grads, workspace, X, y, 1 / 5, 0.1, 1e-4,
                   timed_strategy)
    return timer


def test_every_operation_lands_in_its_phase():
    strategy = CountingStrategy()
    steps = 3
    timer = timed_steps(strategy, steps)
    summary = timer.summary()
    assert summary["steps"] == steps and strategy.allreduces == steps
    per_step = {"forward_gemm": 2, "backward_gemm": 3, "update": 2, "communication": 1, "transfers": 0,
                # bias_sigmoid, bias_softmax, softmax_grad, sigmoid_backward, 2 col_sum
                "elementwise": 6}
    assert summary["calls"] == {phase: steps * n for phase, n in per_step.items()}
    assert set(summary["seconds"]) == set(PHASES)
    assert all(seconds >= 0 for seconds in summary["seconds"].values())
    assert summary["seconds"]["forward_gemm"] > 0
    assert summary["clock"].startswith("host clock")


class ModelParallelLike(CountingStrategy):
    """Counts its logits allreduce (model parallelism) and its --overlap hook as well."""

    def __init__(self):
        super().__init__()
        self.logit_reductions = self.layer2_starts = 0
        self.reduce_logits = self._reduce_logits
        self.after_layer2 = self._after_layer2

    def _reduce_logits(self, Z):
        self.logit_reductions += 1

    def _after_layer2(self, grads):
        self.layer2_starts += 1


def test_the_logits_allreduce_and_the_overlap_hook_count_as_communication():
    strategy = ModelParallelLike()
    steps = 2
    timer = timed_steps(strategy, steps)
    assert strategy.logit_reductions == strategy.layer2_starts == strategy.allreduces == steps
    # per step: the gradient allreduce, the logits allreduce and the layer-2 start
    assert timer.summary()["calls"]["communication"] == 3 * steps
    # a strategy without these steps keeps None (model.forward and backward then skip them)
    assert timer.strategy(CountingStrategy()).reduce_logits is None
    assert timer.strategy(CountingStrategy()).after_layer2 is None


def test_a_serial_run_has_no_communication_to_time():
    """Serial's allreduce does nothing; timing it would synchronize the GPU once a step for nothing."""
    from nn_cuda.parallel.serial import Serial

    timer = timed_steps(Serial(), 2)
    assert timer.summary()["calls"]["communication"] == 0


class SimulatedGpu:
    """A GPU queue on a simulated clock, for PhaseTimer's CUDA-event clock: `hold(ms)` queues a busy
    kernel of that length behind what is queued; a synchronize moves the clock to the end of the
    queue. Each operation the step queues costs the host `queue_ms` of the clock."""

    kind = "simulated events"

    def __init__(self, queue_ms: float):
        self.now_ms = self.queue_end_ms = 0.0
        self.queue_ms = queue_ms
        self.holds = []

    def perf_counter(self) -> float:
        return self.now_ms / 1e3

    def queue(self, gpu_ms: float) -> None:
        self.now_ms += self.queue_ms
        self.queue_end_ms = max(self.queue_end_ms, self.now_ms) + gpu_ms

    def hold(self, milliseconds: float) -> None:
        self.holds.append(milliseconds)
        self.queue(milliseconds)

    def synchronize(self) -> None:
        self.now_ms = max(self.now_ms, self.queue_end_ms)

    def event(self):
        return None

    def record(self, event) -> None:
        pass


def test_a_synchronize_inside_the_step_does_not_feed_the_next_head_start(monkeypatch):
    """The head start is sized by the host time of queueing a step. A host-clock phase inside the
    step (an MPI allreduce) waits for the GPU, hold included: counted as step time, each hold was
    twice the last, and a 10-ms step took a second (seen on an H200 with `train --profile`)."""
    from nn_cuda import profiling

    gpu = SimulatedGpu(queue_ms=0.5)
    monkeypatch.setattr(profiling.time, "perf_counter", gpu.perf_counter)

    class Backend:
        name, on_device = "simulated", False  # a host clock at first; the simulated events replace it

        def synchronize(self):
            gpu.synchronize()

    timer = PhaseTimer(Backend(), nvtx=False)
    timer.clock = profiling._EventClock(gpu)
    for _ in range(30):
        with timer.step():
            for _ in range(10):
                gpu.queue(gpu_ms=1.0)  # a kernel: 0.5 ms of the host, 1 ms of the GPU
            with timer.phase("communication", host=True):
                gpu.now_ms += 2.0  # the allreduce itself, after the synchronize
    # each step queues 10 kernels and 2 holds in 6 ms of the host: its head start is 1 + 2 * 6 ms
    # (it grew to the 1000-ms cap when the waits counted)
    assert max(gpu.holds) <= 1 + 2 * 6 + 1e-9, gpu.holds


def test_timing_does_not_change_the_maths():
    backend = get_backend("numpy")
    X, y, plain, grads, workspace = _setup(backend)
    _, _, timed, grads2, workspace2 = _setup(backend)
    timer = PhaseTimer(backend, nvtx=False)
    for _ in range(2):
        model.forward(backend, plain, workspace, X)
        model.backward(backend, plain, grads, workspace, X, y, 1 / 5)
        model.sgd_update(backend, plain, grads, 0.1, 1e-4)
        timed_step(timer, model, timer.backend(backend), timed, grads2, workspace2, X, y, 1 / 5, 0.1, 1e-4)
    assert np.array_equal(backend.to_host(plain.flat), backend.to_host(timed.flat))  # bit for bit


def test_transfers_and_attributes_pass_through():
    backend = get_backend("numpy")
    timer = PhaseTimer(backend, nvtx=False)
    timed = timer.backend(backend)
    assert timed.name == backend.name and timed.on_device == backend.on_device
    host = np.arange(6.0)
    assert np.array_equal(timed.to_host(timed.to_device(host)), host)
    assert timer.summary()["calls"]["transfers"] == 2


def test_nvtx_ranges_are_balanced():
    class FakeNvtx:
        def __init__(self):
            self.stack, self.seen = [], []

        def RangePush(self, name):
            self.stack.append(name)
            self.seen.append(name)

        def RangePop(self):
            self.stack.pop()

    backend = get_backend("numpy")
    X, y, params, grads, workspace = _setup(backend)
    timer = PhaseTimer(backend, nvtx=False)
    timer.nvtx = FakeNvtx()
    timed_step(timer, model, timer.backend(backend), params, grads, workspace, X, y, 1 / 5, 0.1, 1e-4)
    assert timer.nvtx.stack == []
    assert timer.nvtx.seen[0] == "step"
    assert {"forward_gemm", "backward_gemm", "elementwise", "update"} <= set(timer.nvtx.seen)


def test_unknown_phase_and_stage_are_refused():
    timer = PhaseTimer(get_backend("numpy"), nvtx=False)
    with pytest.raises(ValueError, match="unknown phase"):
        with timer.phase("gemm"):
            pass
    with pytest.raises(ValueError, match="forward or backward"):
        timer.stage("sideways")


def test_write_json(tmp_path):
    backend = get_backend("numpy")
    X, y, params, grads, workspace = _setup(backend)
    timer = PhaseTimer(backend, nvtx=False)
    timed_step(timer, model, timer.backend(backend), params, grads, workspace, X, y, 1 / 5, 0.1, 1e-4)
    path = tmp_path / "sub" / "profile.json"
    timer.write_json(path, {"benchmark": "profile"})
    data = json.loads(path.read_text())
    assert data["benchmark"] == "profile"
    assert data["profile"]["steps"] == 1 and set(data["profile"]["ms_per_step"]) == set(PHASES)
