"""The grading harness: the course's error measures, modes 1-4 and their output files."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nn_cuda import grade, grading, relative_errors
from nn_cuda.grade_gemm import course_inputs


def test_relative_errors_are_the_course_norms():
    ref = np.array([[1.0, -2.0], [3.0, 4.0]])
    other = ref + np.array([[0.0, 0.5], [0.0, 0.0]])
    # inf-norm: largest absolute row sum: |diff| = 0.5, |ref| = 7
    assert relative_errors.relative_error(ref, other, np.inf) == pytest.approx(0.5 / 7)
    # 2-norm of a matrix: the largest singular value
    assert relative_errors.relative_error(ref, other, 2) == pytest.approx(0.5 / np.linalg.svd(ref)[1][0])
    vector = np.array([3.0, -4.0])
    assert relative_errors.relative_error(vector, vector + [0, 1], 2) == pytest.approx(1 / 5)
    assert relative_errors.relative_error(vector, vector + [0, 1], np.inf) == pytest.approx(1 / 4)


def test_thresholds_decide_pass_and_nan_fails():
    errors = {"W1": (5e-5, 2e-5), "W2": (2e-4, 1e-6), "b1": (0.0, 0.0), "b2": (np.nan, 0.0)}
    verdict = relative_errors.passes(errors, "float32")
    assert verdict == {"W1": True, "W2": False, "b1": True, "b2": False}
    assert not relative_errors.passes({"W1": (2e-7, 0.0)}, "float64")["W1"]


def test_course_settings_of_each_mode():
    cfg = grading.course_config(1, grading.TrainConfig(dtype="float32"))
    assert (cfg.hidden, cfg.reg, cfg.batch, cfg.lr, cfg.epochs, cfg.pixels) == (100, 1e-4, 800, 0.0005, 40, "raw")
    assert grading.course_config(3, grading.TrainConfig(dtype="float64")).lr == 0.025


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_modes_1_to_3_write_the_course_files(mode, tmp_path, capsys):
    out = tmp_path / "Outputs"
    rc = grade.main(["--mode", str(mode), "--dataset", "mnist-sample", "--epochs", "1", "-p", "2",
                     "--outputs", str(out)])
    assert rc == 0
    errors = (out / "NNErrors.txt").read_text()
    assert errors.count("PASS") == 4 and "validation accuracy" in errors
    rows = (out / "CpuGpuDiff.txt").read_text().splitlines()
    assert rows[0].split("\t") == ["iteration", "W1_maxnorm", "W1_l2", "W2_maxnorm", "W2_l2",
                                   "b1_maxnorm", "b1_l2", "b2_maxnorm", "b2_l2"]
    # 3,600 training images / 800 = 5 steps: iterations 0, 2, 4 and the last, 5
    assert [int(r.split("\t")[0]) for r in rows[1:]] == [0, 2, 4, 5]
    assert all(len(r.split("\t")) == 9 for r in rows[1:])
    assert f"mode {mode}: PASS" in capsys.readouterr().out


@pytest.mark.parametrize("flags, named", [
    (["--mode", "1", "--epochs", "0"], "--epochs"),
    (["--mode", "1", "--max-steps", "-1"], "--max-steps"),
    (["--mode", "1", "--hidden", "0"], "--hidden"),
    (["--mode", "1", "--limit-rows", "0"], "--limit-rows"),
    (["--mode", "1", "-p", "-5"], "--print-every"),
    (["--mode", "4", "--scale", "0"], "--scale"),
])
def test_a_value_that_would_grade_nothing_is_refused(flags, named, tmp_path, capsys):
    """--epochs 0 used to fall back to the mode's epochs and --max-steps -1 to compare two untrained
    networks (a PASS that tests nothing); every such value now stops before any file is written."""
    with pytest.raises(SystemExit) as stop:
        grade.main([*flags, "--outputs", str(tmp_path / "Outputs")])
    assert stop.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "Outputs").exists()


def test_numba_simulator_matches_numpy_float64(tmp_path):
    # The tiny configuration of the issue: H = 8, 64 images, 2 steps, through the whole model. The naive
    # GEMM keeps it fast in the simulator (tests/test_numba_sim.py checks the other kernels one by one).
    # Its own process: on a machine with a GPU, Numba is already imported here without its simulator,
    # and the simulator can only be chosen before Numba is first imported.
    out = tmp_path / "Outputs"
    command = [sys.executable, "-m", "nn_cuda.grade", "--mode", "2", "--backend", "numba-sim", "--gemm", "naive",
               "--dtype", "float64", "--dataset", "mnist-sample", "--hidden", "8", "--limit-rows", "64",
               "--max-steps", "2", "-p", "1", "--outputs", str(out)]
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    last = (out / "CpuGpuDiff.txt").read_text().splitlines()[-1].split("\t")
    assert last[0] == "2" and max(float(v) for v in last[1:]) < 1e-12  # measured ~1e-16


def test_a_wrong_backend_fails_the_grade(tmp_path, monkeypatch, capsys):
    # A backend whose update is slightly off must FAIL: the harness can tell.
    from nn_cuda.backends.numpy_backend import NumpyBackend

    original = NumpyBackend.sgd_update

    def skewed(self, param, grad, lr, decay):
        original(self, param, grad, lr * 1.01, decay)

    import nn_cuda.grading as grading_module

    real_get_backend = grading_module.get_backend

    def get_backend(name, gemm=None):
        backend = real_get_backend("numpy" if name == "numba-sim" else name, gemm)
        if name == "numba-sim":
            backend.sgd_update = skewed.__get__(backend)
        return backend

    monkeypatch.setattr(grading_module, "get_backend", get_backend)
    rc = grade.main(["--mode", "3", "--backend", "numba-sim", "--dataset", "mnist-sample",
                     "--outputs", str(tmp_path)])
    assert rc == 1
    assert "FAIL" in (tmp_path / "NNErrors.txt").read_text()


def test_mode_4_course_inputs_and_numpy_run(capsys):
    A, B, C = course_inputs(4, 3, 2, np.float64)
    assert A[3, 1] == 3 * 1 / 4 and B[1, 2] == (1 * 2 + 1) / 3 and C[2, 2] == (2 * 2 + 2) / 3
    assert grade.main(["--mode", "4", "--backend", "numpy", "--dtype", "float64"]) == 0
    out = capsys.readouterr().out
    assert sum(line.endswith("PASS") for line in out.splitlines()) == 3 and "mode 4: PASS" in out


def test_train_seq_and_debug_compare_with_the_reference(tmp_path, monkeypatch, capsys):
    from nn_cuda.train import main as train_main

    monkeypatch.chdir(tmp_path)
    assert train_main(["--dataset", "mnist-sample", "--quiet", "-n", "16", "--max-steps", "4",
                       "-s", "-d", "-p", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") == 4
    rows = (tmp_path / "Outputs" / "CpuGpuDiff.txt").read_text().splitlines()
    assert [r.split("\t")[0] for r in rows[1:]] == ["0", "2", "4"]


def test_train_seq_that_fails_the_comparison_fails_the_run(tmp_path, monkeypatch, capsys):
    # -s printed FAIL on every row and exited 0 (found under mpirun: the model-parallel float64 run of
    # docs/mpi.md); a threshold no error can meet makes every row fail here
    from nn_cuda import relative_errors
    from nn_cuda.train import main as train_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(relative_errors.THRESHOLDS, "float32", -1.0)
    assert train_main(["--dataset", "mnist-sample", "--quiet", "-n", "16", "--max-steps", "2", "-s"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("FAIL") == 4
    assert captured.err == ("nn_cuda.train: error: -s: the parameters differ from the NumPy reference's by more "
                            "than -1 (the course's float32 threshold): the FAIL rows above\n")


def test_grade_under_mpiexec_compares_the_data_parallel_run(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "mpiexec").exists():
        pytest.skip(f"no mpiexec next to {sys.executable}")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               NN_CUDA_OFFLINE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    result = subprocess.run(
        [str(bin_dir / "mpiexec"), "-n", "2", sys.executable, "-m", "nn_cuda.grade", "--mode", "3",
         "--dtype", "float64", "--dataset", "mnist-sample", "--hidden", "20", "--outputs", str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("mode 3: PASS") == 1 and "on 2 MPI ranks" in result.stdout
    # data-parallel float64 against serial float64: rounding only (measured ~1e-16)
    last = (tmp_path / "CpuGpuDiff.txt").read_text().splitlines()[-1].split("\t")
    assert int(last[0]) == 5 and max(float(v) for v in last[1:]) < 1e-12
