"""`python -m nn_cuda.train` end to end on the bundled sample (NumPy backend, a few steps each)."""

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn_cuda.checkpoint import load_checkpoint
from nn_cuda.config import DEFAULT_LR
from nn_cuda.train import main

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "mnist-sample"
SMALL = ["--dataset", "mnist-sample", "--quiet", "-n", "16"]


def test_train_save_init_round_trip(tmp_path, capsys):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert main([*SMALL, "-e", "1", "--dtype", "float64", "--save", str(a)]) == 0
    assert main(["--dataset", "mnist-sample", "--quiet", "-e", "1", "--dtype", "float64",
                 "--init", str(a), "--save", str(b)]) == 0
    pa, meta = load_checkpoint(a)
    pb, _ = load_checkpoint(b)
    assert meta["hidden"] == 16 and pb["W1"].shape == (16, 784) and pb["W1"].dtype == np.float64
    assert not np.array_equal(pa["W1"], pb["W1"])  # the second run trained on from the first
    out = capsys.readouterr().out
    assert "test accuracy" in out and "saved parameters" in out


def test_init_fixes_hidden_and_rejects_a_conflicting_one(tmp_path, capsys):
    a = tmp_path / "a.npz"
    assert main([*SMALL, "--max-steps", "1", "--save", str(a)]) == 0
    assert main(["--dataset", "mnist-sample", "--quiet", "-n", "32", "--init", str(a)]) == 1
    assert "disagrees with --init" in capsys.readouterr().err


def test_training_learns_on_the_sample(capsys):
    # 10 epochs (50 steps) at H = 64: far above chance (0.1); measured 0.526.
    assert main(["--dataset", "mnist-sample", "--quiet", "-n", "64", "-e", "10"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if "test accuracy" in ln][0]
    accuracy = float(line.split("test accuracy")[1].split()[0])
    assert accuracy > 0.3


def test_predictions_file_has_one_digit_per_test_image(tmp_path):
    path = tmp_path / "pred.txt"
    assert main([*SMALL, "--max-steps", "2", "--predictions", str(path)]) == 0
    text = path.read_text()
    assert len(text) == 1000 and set(text) <= set("0123456789")


def test_max_steps_stops_early(tmp_path):
    path = tmp_path / "m.npz"
    assert main([*SMALL, "--max-steps", "3", "--save", str(path)]) == 0
    assert load_checkpoint(path)[1]["steps"] == 3


def test_shuffle_changes_the_result_and_is_seeded(tmp_path):
    paths = [tmp_path / f"{i}.npz" for i in range(3)]
    main([*SMALL, "--max-steps", "4", "--save", str(paths[0])])
    main([*SMALL, "--max-steps", "4", "--shuffle", "--save", str(paths[1])])
    main([*SMALL, "--max-steps", "4", "--shuffle", "--save", str(paths[2])])
    w = [load_checkpoint(p)[0]["W2"] for p in paths]
    assert not np.array_equal(w[0], w[1]) and np.array_equal(w[1], w[2])


def test_divergence_stops_with_a_clear_message_and_saves_finite_weights(tmp_path, capsys):
    path = tmp_path / "last.npz"
    assert main([*SMALL, "--lr", "1e30", "-p", "1", "--save", str(path)]) == 1
    err = capsys.readouterr().err
    assert "diverged" in err and "--lr" in err
    params, _ = load_checkpoint(path)
    assert all(np.all(np.isfinite(v)) for v in params.values())


def test_truncated_idx_file_gives_one_line_error(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    images = data / "train-images-idx3-ubyte.gz"
    raw = gzip.decompress(images.read_bytes())
    images.write_bytes(gzip.compress(raw[: len(raw) // 2]))
    result = subprocess.run(
        [sys.executable, "-m", "nn_cuda.train", "--dataset", "mnist", "--data-dir", str(data), "--quiet"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "train-images-idx3-ubyte.gz" in lines[0], result.stderr


@pytest.mark.parametrize("flag", ["--save", "--predictions", "--history", "--profile"])
def test_an_output_that_cannot_be_written_stops_the_run_before_training(flag, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    flags = ["--dataset", "mnist-sample", "-n", "8", "--max-steps", "2", "--quiet"]
    assert main([*flags, flag, str(blocker / "out")]) == 1
    captured = capsys.readouterr()
    assert f"{flag} {blocker / 'out'}: {blocker} is a file, not a folder" in captured.err
    assert "validation accuracy" not in captured.out  # nothing was trained
    assert main([*flags, flag, str(tmp_path)]) == 1
    assert f"{flag} {tmp_path} is a folder" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["numba", "cupy"])
def test_a_gpu_backend_without_a_gpu_is_a_one_line_error(backend):
    """No GPU (or no CuPy): one line that names the backend and says what to use instead, no traceback.
    NUMBA_ENABLE_CUDASIM=0 makes Numba look for a real GPU, as outside the tests."""
    result = subprocess.run(
        [sys.executable, "-m", "nn_cuda.train", "--backend", backend, "--dataset", "mnist-sample",
         "--max-steps", "1", "-n", "8", "--quiet"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
    )
    if result.returncode == 0:
        pytest.skip(f"this machine has a GPU that backend {backend} can use")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nn_cuda.train: error: ") and f"'{backend}'" in lines[0]


@pytest.mark.parametrize("flags", [["-e", "0"], ["-b", "-5"], ["--lr", "nan"], ["--dtype", "float16"],
                                   ["-d"], ["--backend", "tpu"], ["--seed", "-1"]])
def test_invalid_flags_are_usage_errors(flags, capsys):
    with pytest.raises(SystemExit) as info:
        main(flags)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_profile_and_history_files(tmp_path):
    import json

    profile, history = tmp_path / "p.json", tmp_path / "h.json"
    assert main(["--dataset", "mnist-sample", "-e", "2", "-n", "16", "--quiet",
                 "--profile", str(profile), "--history", str(history)]) == 0
    p = json.loads(profile.read_text())
    assert p["benchmark"] == "profile" and p["profile"]["steps"] == 10  # 3600 / 800 -> 5 per epoch
    # per step: 2 GEMMs forward, 3 backward
    assert p["profile"]["calls"]["forward_gemm"] == 20 and p["profile"]["calls"]["backward_gemm"] == 30
    h = json.loads(history.read_text())
    assert [e["epoch"] for e in h["epochs"]] == [1, 2]
    assert all(0 <= e["test_acc"] <= 1 and 0 <= e["val_acc"] <= 1 for e in h["epochs"])
    assert h["machine"]["command"].startswith("python -m nn_cuda.train")


def test_help_shows_the_defaults_that_exist(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare word by word
    for shown in (f"(default: {DEFAULT_LR})", "(default: 800)", "(default: numpy)", "(default: float32)",
                  "(default: raw)", "hidden units H (default 1000, or the H of --init)"):
        assert shown in text, shown
    # an unset option or an off switch has no default worth printing
    assert "(default: None)" not in text and "(default: False)" not in text


def test_init_scale_draws_the_weights_and_is_refused_with_init(tmp_path, capsys):
    from nn_cuda.model import COURSE_INIT_SCALE, init_parameters

    saved = tmp_path / "w.npz"
    assert main(["--dataset", "mnist-sample", "-n", "4", "--max-steps", "1", "--lr", "1e-12", "--quiet",
                 "--init-scale", *map(str, COURSE_INIT_SCALE), "--save", str(saved)]) == 0
    weights, _ = load_checkpoint(saved)
    course = init_parameters(4, 0, scale=COURSE_INIT_SCALE)  # one step of lr 1e-12 moves nothing visible
    assert np.allclose(weights["W1"], course["W1"], rtol=1e-6, atol=0)
    with pytest.raises(SystemExit) as exit_info:
        main(["--init", str(saved), "--init-scale", "0.1", "0.1"])
    assert exit_info.value.code == 2 and "--init-scale" in capsys.readouterr().err


def test_pixels_unit_brings_the_learning_rate_and_initialisation_that_learn_on_them():
    # --pixels unit with the raw pixels' defaults (lr 0.02, a small W1) stays at 0.10 accuracy
    from nn_cuda.config import UNIT_PIXELS_LR, parse_args
    from nn_cuda.model import COURSE_INIT_SCALE, DEFAULT_INIT_SCALE

    raw = parse_args([])
    assert (raw.lr, raw.init_scale) == (DEFAULT_LR, DEFAULT_INIT_SCALE)
    unit = parse_args(["--pixels", "unit"])
    assert (unit.lr, unit.init_scale) == (UNIT_PIXELS_LR, COURSE_INIT_SCALE)
    assert parse_args(["--pixels", "unit", "--lr", "0.1"]).lr == 0.1  # given: kept
    given = parse_args(["--pixels", "unit", "--init-scale", "0.2", "0.3"])
    assert (given.lr, given.init_scale) == (UNIT_PIXELS_LR, (0.2, 0.3))
