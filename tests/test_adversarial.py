"""Attacks (FGSM, PGD), their evaluation, and serial adversarial training (nn_cuda.adversarial).

- The input gradient dL/dX (model.input_gradient) matches central finite differences in float64.
  With h = 1e-6 the truncation error is O(h^2) ~ 1e-12 and the rounding error ~ 1e-16 / h ~ 1e-10 per
  entry; measured: relative error 3e-10 (norm of the difference over the norm), asserted < 1e-7.
- FGSM and PGD stay inside the eps ball around the clean images and inside [0, 1].
- PGD with k = 1, alpha = eps and no random start is FGSM, bit for bit.
- Adversarial training makes a model more robust than plain training on the bundled sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.adversarial.attacks import Attacker
from nn_cuda.adversarial.cli import main as adversarial_main
from nn_cuda.adversarial.evaluate import robustness
from nn_cuda.backends import get_backend
from nn_cuda.checkpoint import save_checkpoint


def random_model(backend, hidden, dtype, seed=0, scale=0.3, n_in=784):
    """Weights large enough that every pixel's gradient is far from zero (sign is well defined)."""
    rng = np.random.default_rng(seed)
    host = {
        "W1": scale * rng.standard_normal((hidden, n_in)),
        "b1": 0.1 * rng.standard_normal(hidden),
        "W2": scale * 10 * rng.standard_normal((10, hidden)),
        "b2": 0.1 * rng.standard_normal(10),
    }
    params = model.Parameters(backend, hidden, dtype, n_in=n_in)
    params.load(host)
    return params


def images(n, seed=1, dtype=np.float64, n_in=784):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, n_in))
    x[:, : n_in // 8] = 0.0  # black and white pixels, as in MNIST: the [0, 1] clip matters there
    x[:, n_in // 8 : n_in // 4] = 1.0
    return x.astype(dtype), rng.integers(0, 10, n).astype(np.int32)


def total_cross_entropy(backend, params, workspace, X, labels):
    Yhat = model.forward(backend, params, workspace, backend.to_device(X))
    return backend.cross_entropy_sum(Yhat, backend.to_device(labels))


@pytest.mark.parametrize("scale", (1.0, 0.25))
def test_input_gradient_matches_finite_differences(scale):
    backend = get_backend("numpy")
    n, hidden = 3, 5
    params = random_model(backend, hidden, np.float64, scale=0.05)
    workspace = model.Workspace(backend, n, hidden, np.float64)
    X, y = images(n)
    grad = np.full((n, 784), np.nan)
    model.forward(backend, params, workspace, X)
    model.input_gradient(backend, params, workspace, X, y, grad, scale=scale)

    h = 1e-6
    numeric = np.empty((n, 784))
    for i in range(n):
        for j in range(784):
            X[i, j] += h
            up = total_cross_entropy(backend, params, workspace, X, y)
            X[i, j] -= 2 * h
            down = total_cross_entropy(backend, params, workspace, X, y)
            X[i, j] += h
            numeric[i, j] = scale * (up - down) / (2 * h)
    error = np.linalg.norm(grad - numeric) / np.linalg.norm(numeric)
    assert error < 1e-7, error


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("eps", (0.05, 0.2))
def test_attacks_stay_in_the_ball_and_in_unit_range(dtype, eps):
    backend = get_backend("numpy")
    params = random_model(backend, 8, dtype)
    attacker = Attacker(backend, params, batch=6, seed=3)
    X, y = images(5, dtype=dtype)
    X_dev, y_dev = backend.to_device(X), backend.to_device(y)
    tol = 2 * np.finfo(dtype).eps  # one rounding of x + step and of x +- eps
    attacks = {
        "fgsm": attacker.fgsm(X_dev, y_dev, eps).copy(),
        "pgd": attacker.pgd(X_dev, y_dev, eps, alpha=eps / 3, steps=7).copy(),
        "pgd+random": attacker.pgd(X_dev, y_dev, eps, alpha=eps / 3, steps=7, random_start=True).copy(),
    }
    for name, adversaries in attacks.items():
        assert adversaries.shape == X.shape and adversaries.dtype == dtype, name
        assert np.all(np.abs(adversaries - X) <= eps + tol), name
        assert adversaries.min() >= 0 and adversaries.max() <= 1, name
        assert np.max(np.abs(adversaries - X)) > 0.9 * eps, name  # it did move, up to the edge of the ball
    # the attacks raise the loss above the clean loss
    workspace = model.Workspace(backend, 6, 8, dtype)
    clean_loss = total_cross_entropy(backend, params, workspace, X, y)
    for name, adversaries in attacks.items():
        assert total_cross_entropy(backend, params, workspace, adversaries, y) > clean_loss, name


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_one_pgd_step_of_size_eps_is_fgsm(dtype):
    backend = get_backend("numpy")
    params = random_model(backend, 8, dtype, seed=4)
    X, y = images(4, seed=5, dtype=dtype)
    eps = 0.1
    pgd = Attacker(backend, params, 4).pgd(X, y, eps, alpha=eps, steps=1, random_start=False).copy()
    fgsm = Attacker(backend, params, 4).fgsm(X, y, eps).copy()
    # FGSM from its definition: clip(x + eps * sign(dL/dx), 0, 1)
    workspace = model.Workspace(backend, 4, 8, dtype)
    grad = np.empty_like(X)
    model.forward(backend, params, workspace, X)
    model.input_gradient(backend, params, workspace, X, y, grad)
    by_definition = np.clip(X + dtype(eps) * np.sign(grad), 0, 1)
    np.testing.assert_array_equal(pgd, fgsm)
    np.testing.assert_array_equal(fgsm, by_definition)


@pytest.mark.parametrize("random_start", (False, True))
def test_an_attack_on_raw_pixels_is_the_same_attack_as_on_unit_pixels(random_start):
    """A network on raw pixels (W1 / 255) is the same function of 255 x as the unit-pixel network is of
    x, and the sign of the input gradient does not see the scale: with pixel_max 255 (eps and alpha
    scaled, clip to [0, 255]) the adversaries are 255 times the unit ones. float64: the two runs differ
    only in the rounding of the scaled products (measured: about 1e-16 relative), far from any sign."""
    backend = get_backend("numpy")
    unit = random_model(backend, 8, np.float64, seed=6)
    raw = model.Parameters(backend, 8, np.float64)
    host = unit.to_host()
    raw.load({**host, "W1": host["W1"] / model.RAW_PIXEL_MAX})
    X, y = images(5, seed=7)
    eps, alpha, steps = 0.1, 0.04, 4
    on_unit = Attacker(backend, unit, 5, seed=8).pgd(X, y, eps, alpha, steps, random_start).copy()
    on_raw = Attacker(backend, raw, 5, seed=8, pixel_max=model.RAW_PIXEL_MAX).pgd(
        X * model.RAW_PIXEL_MAX, y, eps, alpha, steps, random_start)
    assert np.max(np.abs(on_unit - X)) > 0.9 * eps  # it moved
    assert on_raw.min() >= 0 and on_raw.max() <= model.RAW_PIXEL_MAX
    error = np.linalg.norm(on_raw / model.RAW_PIXEL_MAX - on_unit) / np.linalg.norm(on_unit)
    assert error < 1e-13, error


def test_attacker_refuses_a_batch_larger_than_its_buffers():
    backend = get_backend("numpy")
    params = random_model(backend, 4, np.float32)
    X, y = images(3, dtype=np.float32)
    with pytest.raises(ValueError, match="up to 2 rows"):
        Attacker(backend, params, 2).fgsm(X, y, 0.1)


def test_numba_attack_agrees_with_numpy():
    """The same PGD through the Numba kernels (simulator without a GPU), tiny sizes. In float64 the
    two backends differ by rounding only (~1e-16), so the signs of the gradient - and with them
    every pixel - agree unless a gradient entry is within rounding of 0, which these weights avoid.
    20 inputs instead of 784 keep the simulator (one Python thread per CUDA thread) fast."""
    from numba import config as numba_config
    from numba import cuda

    if not numba_config.ENABLE_CUDASIM and not cuda.is_available():
        pytest.skip("Numba has neither its CUDA simulator nor a GPU")
    nb, npb = get_backend("numba"), get_backend("numpy")
    X, y = images(2, seed=9, n_in=20)
    results = []
    for backend in (nb, npb):
        params = random_model(backend, 3, np.float64, seed=8, n_in=20)
        adversaries = Attacker(backend, params, 2).pgd(backend.to_device(X), backend.to_device(y), 0.1,
                                                       alpha=0.05, steps=2)
        results.append(backend.to_host(adversaries))
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-12)


# ---- evaluation and serial adversarial training on the bundled sample ---------------------------


def test_eval_command_prints_clean_fgsm_and_pgd(tmp_path, capsys):
    backend = get_backend("numpy")
    params = random_model(backend, 8, np.float32, scale=0.01)
    checkpoint = save_checkpoint(tmp_path / "m.npz", params.to_host())
    code = adversarial_main(["eval", "--checkpoint", str(checkpoint), "--dataset", "mnist-sample",
                             "--eps", "0.05,0.1", "--steps", "3", "--limit", "50"])
    out = capsys.readouterr().out
    assert code == 0
    assert "clean" in out and "FGSM" in out and "PGD" in out
    assert " 0.050 " in out and " 0.100 " in out


def test_user_errors_end_with_one_clear_message(tmp_path, capsys):
    code = adversarial_main(["eval", "--checkpoint", str(tmp_path / "missing.npz"), "--dataset", "mnist-sample"])
    assert code == 1
    assert "no such checkpoint" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        adversarial_main(["train", "--comm", "nccl", "--dataset", "mnist-sample"])
    assert exit_info.value.code == 2
    assert "--comm nccl" in capsys.readouterr().err
    assert adversarial_main(["nonsense"]) == 2
    code = adversarial_main(["train", "--async", "--dataset", "mnist-sample", "--quiet"])
    assert code == 1 and "mpirun" in capsys.readouterr().err


def test_adversarial_training_is_more_robust_than_plain_training(tmp_path):
    """The defaults (raw pixels, lr 0.02, k = 3 PGD steps of training) at H = 300 and 20 epochs of the
    3,600 training images of mnist-sample; attacked with 20-step PGD at eps = 0.1 on 500 test images.
    Measured (numpy, float32, init seeds 0, 1, 2): plain 0.30-0.32, PGD-trained 0.49-0.51 robust
    accuracy; the smallest margin, 0.17, is asserted at 0.08."""
    from nn_cuda.adversarial.cli import parse_train_args, run_train_serial
    from nn_cuda.training import run as plain_run

    common = ["--dataset", "mnist-sample", "--hidden", "300", "--quiet"]
    plain_path, robust_path = tmp_path / "plain.npz", tmp_path / "robust.npz"
    from nn_cuda.config import parse_args

    plain_run(parse_args(common + ["--save", str(plain_path)]), log=lambda *a, **k: None)
    cfg, adversarial_args = parse_train_args(common + ["--eps", "0.1", "--eval-limit", "10",
                                                       "--eval-steps", "1", "--save", str(robust_path)])
    run_train_serial(cfg, adversarial_args, log=lambda *a, **k: None)

    backend = get_backend("numpy")
    from nn_cuda.checkpoint import load_checkpoint
    from nn_cuda.config import TrainConfig
    from nn_cuda.training import load_splits

    splits = load_splits(TrainConfig(dataset="mnist-sample"), log=lambda *a, **k: None)  # raw, as trained
    x, y = backend.to_device(splits.x_test[:500]), backend.to_device(splits.y_test[:500])
    robust = {}
    for name, path in (("plain", plain_path), ("robust", robust_path)):
        host, _ = load_checkpoint(path)
        params = model.Parameters(backend, 300, np.float32)
        params.load(host)
        (row,) = robustness(backend, params, x, y, [0.1], steps=20, pixel_max=model.RAW_PIXEL_MAX)
        robust[name] = row.pgd
        assert row.pgd <= row.clean
    assert robust["robust"] > robust["plain"] + 0.08, robust


def test_train_command_with_fgsm_saves_a_checkpoint_and_reports_robustness(tmp_path, capsys):
    checkpoint, report = tmp_path / "fgsm.npz", tmp_path / "fgsm.json"
    code = adversarial_main(["train", "--attack", "fgsm", "--eps", "0.1", "--dataset", "mnist-sample",
                             "--hidden", "8", "--epochs", "1", "--batch", "400", "--quiet",
                             "--eval-eps", "0.05,0.1", "--eval-steps", "2", "--eval-limit", "40",
                             "--save", str(checkpoint), "--json", str(report)])
    assert code == 0
    import json

    from nn_cuda.checkpoint import load_checkpoint

    host, metadata = load_checkpoint(checkpoint)
    assert host["W1"].shape == (8, 784) and metadata["attack"] == "fgsm"
    assert (metadata["steps"], metadata["alpha"]) == (1, 0.1)  # what FGSM did: one step of eps
    result = json.loads(report.read_text())
    assert result["updates"] == 9 and [r["eps"] for r in result["robustness"]] == [0.05, 0.1]
    assert result["machine"]["command"].startswith("python -m nn_cuda.adversarial train --attack fgsm --eps 0.1 ")
    assert result["machine"]["cores"] and result["machine"]["date"]
    assert "PGD" in capsys.readouterr().out


@pytest.mark.parametrize("flags, named", [
    (["--predictions", "p.txt"], "--predictions"),   # nn_cuda.train's outputs that this command lacks
    (["--history", "h.json"], "--history"),
    (["--attack", "fgsm", "--alpha", "0.02"], "--alpha"),  # PGD's settings: FGSM would ignore them
    (["--attack", "fgsm", "--steps", "5"], "--steps"),
    (["--attack", "fgsm", "--random-start"], "--random-start"),
    (["--async", "--overlap"], "--overlap"),  # --async splits the work its own way
    (["--async", "--comm", "nccl"], "--comm"),
    (["--async", "--parallel", "model"], "--parallel"),
    (["--staleness-log", "s.json"], "--staleness-log"),  # --async's own: a serial run wrote nothing, exit 0
    (["--max-staleness", "5"], "--max-staleness"),
    (["--check-interval", "5"], "--check-interval"),
])
def test_flags_that_would_be_ignored_are_refused(flags, named, capsys):
    with pytest.raises(SystemExit) as stop:
        adversarial_main(["train", "--dataset", "mnist-sample", *flags])
    assert stop.value.code == 2
    last_line = capsys.readouterr().err.strip().splitlines()[-1]
    assert last_line.startswith("python -m nn_cuda.adversarial train: error: ") and named in last_line


def test_an_output_that_cannot_be_written_stops_before_training(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = adversarial_main(["train", "--dataset", "mnist-sample", "-n", "8", "--max-steps", "2", "--quiet",
                             "--json", str(blocker / "r.json")])
    captured = capsys.readouterr()
    assert code == 1
    assert f"--json {blocker / 'r.json'}: {blocker} is a file, not a folder" in captured.err
    assert "training time" not in captured.out


def test_adversarial_training_takes_the_training_defaults_and_pixels_unit_its_own():
    # the attacks' eps is in [0, 1] units on either pixels, so adversarial training takes nn_cuda.train's
    # defaults (raw pixels, their lr and init) and, with --pixels unit, the unit pixels' defaults as it does
    from nn_cuda.adversarial.cli import parse_train_args
    from nn_cuda.config import UNIT_PIXELS_LR, TrainConfig, parse_args
    from nn_cuda.model import COURSE_INIT_SCALE

    cfg, _ = parse_train_args(["--dataset", "mnist-sample"])
    default = TrainConfig()
    assert (cfg.pixels, cfg.init_scale, cfg.lr) == ("raw", default.init_scale, default.lr)
    cfg, _ = parse_train_args(["--pixels", "unit"])
    assert (cfg.pixels, cfg.init_scale, cfg.lr) == ("unit", COURSE_INIT_SCALE, UNIT_PIXELS_LR)
    train_cfg = parse_args(["--pixels", "unit"])
    assert (train_cfg.lr, train_cfg.init_scale) == (cfg.lr, cfg.init_scale)
    cfg, _ = parse_train_args(["--pixels", "unit", "--init-scale", "0.003", "0.01", "--lr", "0.1"])  # as given
    assert (cfg.init_scale, cfg.lr) == ((0.003, 0.01), 0.1)


def test_eval_of_a_default_training_checkpoint_reads_its_raw_pixels(tmp_path, capsys):
    """nn_cuda.train's default input is raw 0-255 pixels: eval attacks a checkpoint on the pixels it
    records (eps in [0, 1] units), so the clean accuracy is the one training reported; one unit-pixel
    and one raw-pixel checkpoint of the same network give the same table."""
    from nn_cuda.train import main as train_main

    checkpoint = tmp_path / "raw.npz"
    assert train_main(["--dataset", "mnist-sample", "-n", "32", "-e", "2", "--quiet", "--save", str(checkpoint)]) == 0
    trained = capsys.readouterr().out
    test_accuracy = float(trained.split("test accuracy ")[1].split()[0])
    assert test_accuracy > 0.5  # far from the 0.1 of a raw-pixel model fed [0, 1] pixels
    rows = adversarial_main(["eval", "--checkpoint", str(checkpoint), "--dataset", "mnist-sample", "--eps", "0.1",
                             "--steps", "2"])
    assert rows == 0
    printed = capsys.readouterr().out
    assert "(raw pixels, as trained;" in printed
    clean = float(printed.split("0.100  ")[1].split()[0])
    assert clean == pytest.approx(test_accuracy, abs=0.002), printed  # float32 sums in other orders
    # the same network on [0, 1] pixels (W1 times 255, in float64 so that nothing rounds differently
    # enough to flip a sign): the same clean, FGSM and PGD accuracies
    from nn_cuda.checkpoint import load_checkpoint

    host, metadata = load_checkpoint(checkpoint)
    unit = tmp_path / "unit.npz"
    save_checkpoint(unit, {**host, "W1": host["W1"].astype(np.float64) * model.RAW_PIXEL_MAX},
                    **{**metadata, "pixels": "unit"})
    tables = []
    for path in (checkpoint, unit):
        assert adversarial_main(["eval", "--checkpoint", str(path), "--dataset", "mnist-sample", "--eps", "0.1",
                                 "--steps", "2", "--dtype", "float64"]) == 0
        tables.append(capsys.readouterr().out)
    assert "(raw pixels, as trained;" in tables[0] and "(unit pixels, as trained;" in tables[1]
    assert tables[0].split("   eps")[1] == tables[1].split("   eps")[1]
