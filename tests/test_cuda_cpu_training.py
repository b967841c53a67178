"""Training and grading with the CUDA C kernels run on the CPU (`--backend cuda-cpu`).

Tolerances. In float64 the kernels and NumPy differ only in the order of their sums, about
(K + 3) u_64 ~ 1e-13 per product; over the 10 steps below that stays near 1e-13 (measured 3.8e-13
at H = 1000, 2 epochs), so 1e-10 leaves room without hiding a wrong term. In float32 the difference
is float32 rounding carried through training, which depends on the run; the fair yardstick is how
far NumPy's own float32 run ends from the float64 one: the kernels' float32 run must end no farther
than 4 times that (measured: 0.6-1.8 times at H = 100; 0.07 times at H = 1000, where NumPy float32
drifts to 1e-3 in W2 during the first epochs' large logits).
"""

import pytest

from nn_cuda import grade, relative_errors
from nn_cuda.training import train_with_snapshots
from nn_cuda.config import TrainConfig
from nn_cuda.training import initial_parameters, load_splits

# pixels in [0, 1] with the course's init at lr 0.5: the setting the drift bounds below were measured in
SETTINGS = dict(dataset="mnist-sample", hidden=100, epochs=2, lr=0.5, pixels="unit", init_scale=(0.01, 0.01),
                quiet=True)


def train(backend, dtype, gemm=None):
    cfg = TrainConfig(backend=backend, dtype=dtype, gemm=gemm, **SETTINGS)
    _, init = initial_parameters(cfg)
    splits = load_splits(cfg, log=lambda *args: None, progress=False)
    return train_with_snapshots(cfg, backend, gemm, splits, init)


@pytest.fixture(scope="module")
def numpy_runs():
    return {dtype: train("numpy", dtype) for dtype in ("float32", "float64")}


def max_norm_errors(run, reference) -> dict:
    return {name: errors[0] for name, errors in relative_errors.parameter_errors(reference.params, run.params).items()}


@pytest.mark.slow
@pytest.mark.parametrize("gemm", ["naive", "tiled", "regblock"])
def test_float64_training_matches_numpy(numpy_runs, gemm):
    errors = max_norm_errors(train("cuda-cpu", "float64", gemm), numpy_runs["float64"])
    assert max(errors.values()) <= 1e-10, errors


@pytest.mark.slow
def test_float32_training_is_as_close_to_float64_as_numpy_float32(numpy_runs):
    kernels = max_norm_errors(train("cuda-cpu", "float32"), numpy_runs["float64"])
    numpy32 = max_norm_errors(numpy_runs["float32"], numpy_runs["float64"])
    for name in kernels:
        assert kernels[name] <= 4 * numpy32[name], (name, kernels[name], numpy32[name])


@pytest.mark.slow
@pytest.mark.parametrize("mode", [1, 2, 3])
def test_grade_modes_1_to_3_pass_on_the_cpu_build(mode, tmp_path, capsys):
    out = tmp_path / "Outputs"
    rc = grade.main(["--mode", str(mode), "--backend", "cuda-cpu", "--dataset", "mnist-sample",
                     "--epochs", "1", "--outputs", str(out)])
    assert rc == 0
    assert (out / "NNErrors.txt").read_text().count("PASS") == 4
    assert "under test: cuda-cpu" in capsys.readouterr().out


@pytest.mark.slow
def test_grade_mode_4_compares_the_cpu_build_with_numpy(capsys):
    assert grade.main(["--mode", "4", "--backend", "cuda-cpu", "--gemm", "naive"]) == 0
    out = capsys.readouterr().out
    assert "cuda-cpu/naive against NumPy" in out and "run on the CPU here" in out
    assert sum(line.endswith("PASS") for line in out.splitlines()) == 3


def test_the_step_kernels_are_loaded_before_the_clock_and_the_parameters_are_left_alone():
    """load_step_kernels, which training runs before its clock starts, loads every kernel a real step
    launches (so the first epoch's time holds no compilation) and does not touch the parameters."""
    import numpy as np

    from nn_cuda import model
    from nn_cuda.backends import get_backend
    from nn_cuda.model import load_step_kernels

    assert load_step_kernels(get_backend("numpy"), None) == 0.0  # nothing to compile: nothing run
    rng = np.random.default_rng(0)
    backend = get_backend("cuda-cpu", "tiled")
    params = model.Parameters(backend, 24, np.float32)
    host = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in params.shapes.items()}
    params.load(host)
    assert not backend._kernels and load_step_kernels(backend, params) > 0
    loaded = set(backend._kernels)
    assert any("gemm_tiled" in name for name in loaded), loaded
    assert all(np.array_equal(params.to_host()[name], host[name]) for name in host)
    batch = 8
    X = backend.to_device(rng.random((batch, model.N_INPUTS), dtype=np.float32))
    labels = backend.to_device(rng.integers(0, 10, batch).astype(np.int32))
    grads = model.Parameters(backend, 24, np.float32)
    model.training_step(backend, params, grads, model.Workspace(backend, batch, 24, np.float32), X, labels,
                        1 / batch, 0.1, 1e-4)
    assert set(backend._kernels) == loaded  # the real step launched nothing that was not loaded
