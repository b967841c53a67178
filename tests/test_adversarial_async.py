"""The asynchronous adversarial pipeline (nn_cuda.adversarial.async_pipeline) under real MPI jobs.

Each test starts `mpiexec -n P python -m nn_cuda.adversarial train --async` in a subprocess (MPICH
oversubscribes this 2-core machine), with a tiny network and 9 batches per epoch, and reads the
per-batch log rank 0 writes (--staleness-log). Checked for P = 2, 3, 4:
- the job ends on every rank with status 0 (within JOB_TIMEOUT: a hang fails the test);
- every batch of every epoch is consumed exactly once, each by the generator that owns it
  (b % (P - 1) == g - 1), and a generator's batches arrive in its own order;
- no batch is staler than the bound (--max-staleness, default 2 (P - 1); P - 1 is the tightest),
  and with one generator (P = 2) no batch is staler than 1: the generator starts each batch with
  the weights rank 0 held when it received the previous one.
The staleness itself depends on timing, so only the bounds are asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nn_cuda.adversarial.async_pipeline import most_overdue, owned_batches

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPIEXEC = BIN / "mpiexec"
JOB_TIMEOUT = 60
N_BATCHES, EPOCHS = 9, 2  # mnist-sample: 3,600 training images in batches of 400

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason=f"no mpiexec next to {sys.executable}")


def run_async(tmp_path, ranks, *extra):
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(NN_CUDA_OFFLINE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(REPO))
    log_path = tmp_path / f"staleness_{ranks}.json"
    args = [str(MPIEXEC), "-n", str(ranks), sys.executable, "-m", "nn_cuda.adversarial", "train", "--async",
            "--dataset", "mnist-sample", "--hidden", "8", "--batch", "400", "--epochs", str(EPOCHS),
            "--steps", "2", "--eps", "0.1", "--quiet", "--eval-limit", "20", "--eval-steps", "1",
            "--staleness-log", str(log_path), *extra]
    result = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT)
    return result, log_path


@pytest.mark.parametrize("ranks, max_staleness", [(2, None), (3, None), (4, None), (4, 3)])
def test_pipeline_consumes_every_batch_once_within_the_staleness_bound(tmp_path, ranks, max_staleness):
    extra = ["--check-interval", "1"] + ([] if max_staleness is None else ["--max-staleness", str(max_staleness)])
    result, log_path = run_async(tmp_path, ranks, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "staleness" in result.stdout and "robustness" in result.stdout
    report = json.loads(log_path.read_text())
    generators = ranks - 1
    bound = max_staleness or 2 * generators
    assert report["max_staleness"] == bound
    log = report["log"]
    assert len(log) == N_BATCHES * EPOCHS
    assert [r["update"] for r in log] == list(range(len(log)))
    for epoch in range(EPOCHS):
        consumed = sorted(r["batch"] for r in log if r["epoch"] == epoch)
        assert consumed == list(range(N_BATCHES)), f"epoch {epoch}: {consumed}"
    for g in range(1, ranks):
        mine = [(r["epoch"], r["batch"]) for r in log if r["generator"] == g]
        expected = [(e, b) for e in range(EPOCHS) for b in owned_batches(N_BATCHES, generators, g)]
        assert mine == expected, f"generator {g}"
        versions = [r["version"] for r in log if r["generator"] == g]
        assert versions == sorted(versions)  # a generator's weights only get newer
    stalenesses = [r["staleness"] for r in log]
    assert min(stalenesses) >= 0
    assert max(stalenesses) <= bound, stalenesses
    if ranks == 2:
        assert max(stalenesses) <= 1, stalenesses
    if max_staleness == generators:  # the tightest bound serves the generators in strict rotation
        order = [r["generator"] for r in log]
        windows = [order[i:i + generators] for i in range(len(order) - generators + 1)]
        assert all(sorted(w) == list(range(1, ranks)) for w in windows), order


def test_at_the_bound_a_generator_never_served_goes_before_one_served_at_update_0():
    last = {1: 0, 2: 0, 3: 0}  # generator 1 was served at update 0, 2 and 3 not yet
    assert most_overdue([1, 2, 3], last, never_served={2, 3}) == 2
    assert most_overdue([1, 3], last, never_served={3}) == 3
    last = {1: 1, 2: 0, 3: 2}
    assert most_overdue([1, 2, 3], last, never_served=set()) == 2  # the oldest previous batch


def test_a_bound_below_the_generator_count_is_refused_on_every_rank(tmp_path):
    result, _ = run_async(tmp_path, 3, "--max-staleness", "1")
    assert result.returncode != 0
    assert "--max-staleness 1" in result.stderr and "P - 1" in result.stderr


@pytest.mark.parametrize("command", ["eval", "train"])
def test_commands_of_one_rank_under_mpirun_say_so_once(tmp_path, command):
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(NN_CUDA_OFFLINE="1", PYTHONPATH=str(REPO))
    flags = ["--checkpoint", str(tmp_path / "m.npz")] if command == "eval" else []
    result = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, "-m", "nn_cuda.adversarial", command,
                             "--dataset", "mnist-sample", *flags], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=JOB_TIMEOUT)
    assert result.returncode != 0
    assert result.stderr.count("runs on one rank") == 1, result.stderr
