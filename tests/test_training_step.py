"""One training step, `model.training_step`, is what every caller runs: training, the profiler, the
training-step and scaling benchmarks, and the asynchronous adversarial pipeline. A change to it
shows in each of them, and no module writes the step again."""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.backends.numpy_backend import NumpyBackend

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def counted_steps(monkeypatch):
    """model.training_step, counting its calls (the list grows by one per step)."""
    calls = []
    original = model.training_step

    def counting(*args, **kwargs):
        calls.append(args[4].shape[0])  # the batch's rows
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "training_step", counting)
    return calls


def test_the_step_is_forward_backward_update():
    # The step's result is the maths written out: the same parameters to rounding, in float64.
    backend, rng = NumpyBackend(), np.random.default_rng(0)
    X, labels = rng.random((6, model.N_INPUTS)), rng.integers(0, 10, 6).astype(np.int32)
    host = model.init_parameters(5, 1)
    initial, stepped, by_hand = (model.Parameters(backend, 5, np.float64) for _ in range(3))
    for params in (initial, stepped, by_hand):
        params.load(host)
    grads = model.Parameters(backend, 5, np.float64)
    workspace = model.Workspace(backend, 6, 5, np.float64)
    stages = []
    model.training_step(backend, stepped, grads, workspace, X, labels, 1 / 6, 0.3, 1e-3, stage=stages.append)
    model.forward(backend, by_hand, workspace, X)
    model.backward(backend, by_hand, grads, workspace, X, labels, 1 / 6)
    model.sgd_update(backend, by_hand, grads, 0.3, 1e-3)
    assert np.array_equal(stepped.flat, by_hand.flat) and not np.array_equal(stepped.flat, initial.flat)
    assert stages == ["forward", "backward"]


def test_the_step_runs_inside_one_launch_scope_of_its_backend():
    # The Numba backend attaches its CUDA context there once per step instead of once per launch.
    class Scoped(NumpyBackend):
        def __init__(self):
            super().__init__()
            self.events = []

        def launch_scope(self):
            import contextlib

            @contextlib.contextmanager
            def scope():
                self.events.append("enter")
                yield
                self.events.append("exit")
            return scope()

        def gemm(self, *args, **kwargs):
            self.events.append("gemm")
            return super().gemm(*args, **kwargs)

    backend, rng = Scoped(), np.random.default_rng(0)
    X, labels = rng.random((6, model.N_INPUTS)), rng.integers(0, 10, 6).astype(np.int32)
    params, grads = model.Parameters(backend, 5, np.float64), model.Parameters(backend, 5, np.float64)
    params.load(model.init_parameters(5, 1))
    model.training_step(backend, params, grads, model.Workspace(backend, 6, 5, np.float64), X, labels, 1 / 6, 0.3, 0.0)
    assert backend.events[0] == "enter" and backend.events[-1] == "exit"
    assert backend.events.count("enter") == 1 and backend.events.count("gemm") >= 4


def test_training_runs_the_step(counted_steps):
    from nn_cuda import training
    from nn_cuda.config import TrainConfig

    cfg = TrainConfig(dataset="mnist-sample", hidden=8, max_steps=3, limit_rows=1600, quiet=True)
    training.run(cfg, log=lambda *a, **k: None)
    assert counted_steps == [800, 800, 800]


def test_the_profiled_step_is_the_step(counted_steps, tmp_path):
    from nn_cuda import training
    from nn_cuda.config import TrainConfig

    cfg = TrainConfig(dataset="mnist-sample", hidden=8, max_steps=2, limit_rows=1600, quiet=True,
                      profile=str(tmp_path / "profile.json"))
    training.run(cfg, log=lambda *a, **k: None)
    assert counted_steps == [800, 800]


def test_the_training_step_benchmark_runs_the_step(counted_steps):
    from nn_cuda.bench.train import main

    assert main(["--backend", "numpy", "--hidden", "8", "--batch", "50", "--steps", "2", "--rounds", "1",
                 "--warmup", "0", "--phase-steps", "0", "--no-torch"]) == 0
    assert counted_steps and set(counted_steps) == {50}


def test_the_scaling_benchmarks_step_runs_the_step(counted_steps):
    from nn_cuda.bench.scaling import TimedStep
    from nn_cuda.parallel.serial import Serial

    class Barrier:
        calls = 0

        def barrier(self):
            Barrier.calls += 1

    class CountedSerial(Serial):
        allreduce_seconds = 0.0  # what the MPI strategies count

    backend = NumpyBackend()
    params, grads = model.Parameters(backend, 4, np.float32), model.Parameters(backend, 4, np.float32)
    params.load(model.init_parameters(4, 0))
    step = TimedStep(backend, model, params, grads, model.Workspace(backend, 3, 4, np.float32), CountedSerial(),
                    Barrier())
    totals = {"wait": 0.0, "allreduce": 0.0, "compute": 0.0}
    X = np.ones((3, model.N_INPUTS), np.float32)
    step(X, np.zeros(3, np.int32), 3, totals)
    assert counted_steps == [3] and Barrier.calls == 1 and totals["compute"] > 0


@pytest.mark.slow
def test_the_asynchronous_adversarial_pipeline_runs_the_step(tmp_path):
    # Rank 0 of `--async` updates the weights: under mpiexec, with the step counted on that rank.
    from nn_cuda.bench.common import mpi_child_environment
    from nn_cuda.parallel.mpi import find_mpiexec

    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        "from nn_cuda import model\n"
        "from nn_cuda.adversarial.cli import main\n"
        "calls = []\n"
        "original = model.training_step\n"
        "def counting(*args, **kwargs):\n"
        "    calls.append(1)\n"
        "    return original(*args, **kwargs)\n"
        "model.training_step = counting\n"
        "status = main(sys.argv[1:])\n"
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 0:\n"
        "    print('steps on rank 0:', len(calls))\n"
        "sys.exit(status)\n")
    command = [find_mpiexec(), "-n", "2", sys.executable, str(driver), "train", "--async", "--quiet",
               "--dataset", "mnist-sample", "-n", "8", "-b", "100", "-e", "1", "--limit-rows", "300",
               "--eval-limit", "50", "--steps", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**mpi_child_environment(1), "NN_CUDA_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "steps on rank 0: 3" in result.stdout, result.stdout[-2000:]


def test_no_module_writes_the_step_again():
    # Outside model.py, backward and the SGD update are called only through model.training_step.
    written_again = []
    for path in sorted((ROOT / "nn_cuda").rglob("*.py")):
        if path.name == "model.py" and path.parent.name == "nn_cuda":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("backward", "sgd_update")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "model"):
                written_again.append(f"{path.relative_to(ROOT)}:{node.lineno} model.{node.func.attr}")
    assert not written_again, written_again
