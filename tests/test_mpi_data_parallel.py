"""Data-parallel training (nn_cuda.parallel): the split, the exact step, and real MPI jobs.

The first tests need no MPI: they check the course's split, which rows each rank trains on, and that
the per-rank gradients (scaled by 1 / the full batch) sum to the serial gradient. The rest start
`mpiexec -n P` in subprocesses (MPICH oversubscribes this 2-core machine) and compare the final
parameters of every rank with a serial run of the same steps in this process:

- float64: 1e-12 relative (norm of the difference over the norm, per parameter). Only the order of
  the sums differs from the serial run (p partial GEMMs plus the allreduce instead of one GEMM),
  an error of a few ulps per step; measured: at most 7e-16 over these cases.
- float32: 1e-5 relative, the same argument at 2^-24 ~ 6e-8 per operation; measured: at most 6e-7.

All ranks must hold bit-identical parameters, and a failing rank must end the job, non-zero,
within 30 s.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.backends import get_backend
from nn_cuda.config import TrainConfig
from nn_cuda.data import epoch_order
from nn_cuda.parallel import ParallelError, abort_on_error, rank_range, split_offsets, split_sizes
from nn_cuda.parallel.allreduce import check_comm_mode
from nn_cuda.parallel.data_parallel import DataParallelBatches
from nn_cuda.parallel.mpi import world_from_environment
from nn_cuda.parallel.serial import Serial, SerialBatches
from nn_cuda.training import train_loop

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPIEXEC = BIN / "mpiexec"
JOB_TIMEOUT = 90  # a hung job fails the test instead of hanging the suite


# ---- the split and the rows of each rank (no MPI) -----------------------------------------------


@pytest.mark.parametrize("n, p", [(7, 3), (800, 3), (1, 4), (10, 1), (5, 5), (2, 3)])
def test_split_follows_the_course(n, p):
    sizes = split_sizes(n, p)
    assert sizes == [n // p + (r < n % p) for r in range(p)]
    assert sum(sizes) == n
    offsets = split_offsets(n, p)
    for r in range(p):
        assert rank_range(n, p, r) == (offsets[r], offsets[r] + sizes[r])


def shard_rows(n, batch, p, shuffle=False, seed=3, epoch=0):
    """For each rank, the list of per-step global row indices DataParallelBatches gives it."""
    x = np.arange(n, dtype=np.float64).reshape(n, 1)  # row i holds the value i
    y = np.arange(n, dtype=np.int32)
    backend = get_backend("numpy")
    per_rank = []
    for r in range(p):
        batches = DataParallelBatches(backend, x, y, batch, r, p, shuffle=shuffle, seed=seed)
        steps = [(X[:, 0].astype(int).tolist(), labels.tolist(), m) for X, labels, m in batches.batches(epoch)]
        per_rank.append(steps)
    return per_rank


@pytest.mark.parametrize("n, batch, p, shuffle", [(15, 7, 3, False), (15, 7, 3, True), (1700, 800, 3, False),
                                                  (10, 4, 4, True), (9, 9, 2, False)])
def test_ranks_cover_each_serial_batch_in_order(n, batch, p, shuffle):
    x = np.arange(n, dtype=np.float64).reshape(n, 1)
    serial = SerialBatches(get_backend("numpy"), x, np.arange(n, dtype=np.int32), batch, shuffle, seed=3)
    expected = [(X[:, 0].astype(int).tolist(), m) for X, _, m in serial.batches(1)]
    per_rank = shard_rows(n, batch, p, shuffle=shuffle, epoch=1)
    for k, (rows, m) in enumerate(expected):
        assert [per_rank[r][k][2] for r in range(p)] == [m] * p  # every rank knows the batch size
        assert [len(per_rank[r][k][0]) for r in range(p)] == split_sizes(m, p)
        assert sum((per_rank[r][k][0] for r in range(p)), []) == rows
        for r in range(p):
            assert per_rank[r][k][1] == per_rank[r][k][0]  # labels travel with their rows


def test_short_last_batch_leaves_ranks_without_rows():
    per_rank = shard_rows(15, 7, 3)  # batches of 7, 7, 1
    assert [len(per_rank[r][2][0]) for r in range(3)] == [1, 0, 0]


def test_shuffled_shard_is_gathered_into_one_buffer_every_epoch():
    n, batch, p, rank = 40, 8, 3, 1
    x = np.arange(n, dtype=np.float64).reshape(n, 1)
    batches = DataParallelBatches(get_backend("numpy"), x, np.arange(n, dtype=np.int32), batch, rank, p,
                                  shuffle=True, seed=5)
    first = [(X.copy(), X) for X, _, _ in batches.batches(0)]
    second = [(X.copy(), X) for X, _, _ in batches.batches(1)]
    assert all(np.shares_memory(a[1], b[1]) for a, b in zip(first, second))  # no new buffer per epoch
    rows0 = np.concatenate([copy[:, 0] for copy, _ in first])
    rows1 = np.concatenate([copy[:, 0] for copy, _ in second])
    assert not np.array_equal(rows0, rows1)  # a new order each epoch
    for epoch, rows in ((0, rows0), (1, rows1)):
        assert rows.tolist() == epoch_order(n, 5, epoch)[batches.positions].tolist()


def test_more_ranks_than_batch_rows_is_a_clear_error():
    with pytest.raises(ParallelError, match=r"4 MPI ranks .* batch of at least 4 \(-b 4\)"):
        DataParallelBatches(get_backend("numpy"), np.zeros((10, 2)), np.zeros(10, np.int32), 3, 0, 4)


def test_rank_gradients_sum_to_the_serial_gradient():
    """The heart of the exact step: backward with scale 1/N on each rank's rows, summed."""
    backend = get_backend("numpy")
    hidden, n_in, n = 5, 12, 7
    rng = np.random.default_rng(0)
    params = model.Parameters(backend, hidden, np.float64, n_in=n_in)
    params.load({k: v + 0.5 * rng.standard_normal(v.shape)
                 for k, v in model.init_parameters(hidden, 1, n_in=n_in).items()})
    X, labels = rng.random((n, n_in)), rng.integers(0, 10, n).astype(np.int32)

    def gradient(rows):
        grads = model.Parameters(backend, hidden, np.float64, n_in=n_in)
        grads.flat.fill(np.nan)  # an element backward does not write fails the comparison
        workspace = model.Workspace(backend, n, hidden, np.float64)
        model.forward(backend, params, workspace, X[rows])
        model.backward(backend, params, grads, workspace, X[rows], labels[rows], 1.0 / n)
        return grads.flat.copy()

    serial = gradient(slice(0, n))
    for p in (2, 3, 4, 7, 9):  # with 9 ranks, two have no rows
        total = sum(gradient(slice(*rank_range(n, p, r))) for r in range(p))
        assert np.linalg.norm(total - serial) <= 1e-14 * np.linalg.norm(serial)


def tiny_network():
    """NumPy backend, H = 3 on 4 inputs, float64: parameters, a NaN-poisoned gradient, a workspace of 5 rows."""
    backend = get_backend("numpy")
    params = model.Parameters(backend, 3, np.float64, n_in=4)
    params.load(model.init_parameters(3, 0, n_in=4))
    grads = model.Parameters(backend, 3, np.float64, n_in=4)
    grads.flat.fill(np.nan)
    workspace = model.Workspace(backend, 5, 3, np.float64)
    return backend, params, grads, workspace


def test_no_rows_gives_a_zero_gradient_and_still_calls_the_hook():
    backend, params, grads, workspace = tiny_network()
    X, labels = np.zeros((0, 4)), np.zeros(0, np.int32)
    calls = []
    model.forward(backend, params, workspace, X)
    model.backward(backend, params, grads, workspace, X, labels, 1.0, after_layer2=calls.append)
    assert calls == [grads]
    assert np.all(grads.flat == 0)


def test_the_layer2_hook_sees_finished_layer2_gradients_only():
    backend, params, grads, workspace = tiny_network()
    X, labels = np.random.default_rng(0).random((5, 4)), np.arange(5, dtype=np.int32)
    seen = {}
    model.forward(backend, params, workspace, X)
    model.backward(backend, params, grads, workspace, X, labels, 0.2,
                   after_layer2=lambda g: seen.update(W2=g.W2.copy(), b2=g.b2.copy(), W1=g.W1.copy()))
    np.testing.assert_array_equal(seen["W2"], grads.W2)
    np.testing.assert_array_equal(seen["b2"], grads.b2)
    assert np.all(np.isnan(seen["W1"]))  # layer 1 is computed after the hook


# ---- launcher detection, errors without MPI -----------------------------------------------------


def test_world_is_read_from_the_launchers_variables():
    assert world_from_environment({}) is None
    world = world_from_environment({"PMI_RANK": "2", "PMI_SIZE": "4"})  # MPICH's hydra
    assert (world.rank, world.size) == (2, 4)
    world = world_from_environment({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3"})
    assert (world.rank, world.size) == (1, 3)


def test_abort_on_error_does_nothing_without_a_launcher():
    assert world_from_environment() is None  # the suite does not run under mpirun
    with pytest.raises(KeyError):
        with abort_on_error("test", (ValueError,)):
            raise KeyError("propagates as usual")


SHARE_CORES = ("import os, sys\n"
               "from nn_cuda.parallel.mpi import share_cores_between_ranks\n"
               "threads = share_cores_between_ranks()\n"
               "cores = len(os.sched_getaffinity(0))\n"
               "print(threads, os.environ.get('OPENBLAS_NUM_THREADS'), cores)\n")


@pytest.mark.parametrize("local_ranks", [1, 2, 4, 64])
def test_ranks_share_the_cores_between_their_blas_threads(local_ranks):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                            "MKL_NUM_THREADS")}
    env.update(PMI_RANK="0", PMI_SIZE=str(local_ranks), MPI_LOCALNRANKS=str(local_ranks))
    out = subprocess.run([sys.executable, "-c", SHARE_CORES], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    threads, variable, cores = int(out[0]), out[1], int(out[2])
    assert threads == max(1, cores // local_ranks) and variable == str(threads)


def test_blas_threads_the_user_chose_are_kept():
    env = {**os.environ, "PMI_RANK": "0", "PMI_SIZE": "4", "OMP_NUM_THREADS": "3"}
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", SHARE_CORES], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["None", "None"]


@pytest.mark.parametrize("mode", ["cuda-aware", "nccl"])
def test_gpu_comm_modes_need_a_gpu_backend(mode):
    with pytest.raises(ParallelError, match="needs a GPU backend.*--comm host"):
        check_comm_mode(mode, "numpy")
    with pytest.raises(ParallelError, match="--comm host"):
        check_comm_mode(mode, "numba-sim")


@pytest.fixture
def cupy_gpus(monkeypatch):
    """Pretend CuPy sees `count` GPUs; returns the list of devices made current."""
    from nn_cuda.parallel import gpu

    used = []

    def pretend(count):
        monkeypatch.setattr(gpu, "_cupy_device_count", lambda: count)
        monkeypatch.setattr(gpu, "_use_cupy_device", used.append)
        return used

    return pretend


def test_ranks_take_the_gpus_of_their_node_in_turn(cupy_gpus):
    from nn_cuda.parallel.gpu import select_device

    used = cupy_gpus(2)
    assert [select_device("cupy", rank, 4, "host") for rank in range(4)] == [0, 1, 0, 1]
    assert [select_device("cupy", rank, 2, "nccl") for rank in range(2)] == [0, 1]
    assert used == [0, 1, 0, 1, 0, 1]
    assert select_device("numpy", 3, 4, "host") is None


def test_nccl_with_more_ranks_than_gpus_on_a_node_stops_saying_why(cupy_gpus):
    # NCCL refuses two ranks on one GPU ("Duplicate GPU detected"): 4 ranks on a one-GPU machine
    # must stop before NCCL is started, in one line that names the way out.
    from nn_cuda.parallel.gpu import select_device

    used = cupy_gpus(1)
    with pytest.raises(ParallelError) as raised:
        select_device("cupy", 0, 4, "nccl")
    message = str(raised.value)
    assert "4 ranks share 1 GPU on this node" in message and "--comm host" in message and "\n" not in message
    assert used == []  # no device was touched
    assert select_device("cupy", 3, 4, "host") == 0  # sharing one GPU is fine with --comm host


def test_missing_nccl_is_reported_clearly():
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
        if nccl.available:
            pytest.skip("NCCL is installed here")
    except ImportError:
        pass  # no CuPy: the message names CuPy
    with pytest.raises(ParallelError, match=r"--comm nccl: .*|--comm nccl uses NCCL through CuPy"):
        check_comm_mode("nccl", "cupy")


# ---- real MPI jobs --------------------------------------------------------------------------------


def mpi_env(**extra) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(NN_CUDA_OFFLINE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(REPO), NUMBA_ENABLE_CUDASIM="1")
    env.update(extra)
    return env


def mpiexec(args, timeout=JOB_TIMEOUT, **env) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    result = subprocess.run([str(MPIEXEC), *map(str, args)], cwd=REPO, env=mpi_env(**env),
                            capture_output=True, text=True, timeout=timeout)
    return result, time.perf_counter() - started


pytestmark_mpi = pytest.mark.skipif(not MPIEXEC.exists(), reason=f"no mpiexec next to {sys.executable}")

# Trains on the data file of the case with the parallel strategy of the case, and saves every
# rank's final parameters. Optionally one rank raises in the middle of training.
WORKER = textwrap.dedent('''
    import json, sys
    import numpy as np
    from nn_cuda import model, parallel
    from nn_cuda.backends import get_backend
    from nn_cuda.config import TrainConfig
    from nn_cuda.training import train_loop

    case = json.loads(sys.argv[1])
    cfg = TrainConfig(**case["cfg"])
    with parallel.abort_on_error("worker"):
        strategy = parallel.create_strategy(cfg)
        backend = get_backend(cfg.backend)
        data = np.load(case["data"])
        params = model.Parameters(backend, cfg.hidden, cfg.dtype, n_in=case["n_in"])
        params.load(model.init_parameters(cfg.hidden, cfg.seed, n_in=case["n_in"]))
        strategy.broadcast_parameters(params)
        batches = strategy.make_batches(backend, data["x"].astype(cfg.dtype), data["y"], cfg)
        if strategy.rank == case.get("fail_rank"):
            steps = [0]
            reduce = strategy.allreduce_gradients
            def failing_allreduce(grads):
                steps[0] += 1
                if steps[0] == case["fail_step"]:
                    raise RuntimeError(f"injected failure at step {steps[0]}")
                reduce(grads)
            strategy.allreduce_gradients = failing_allreduce
        train_loop(backend, params, batches, cfg, strategy, progress=False)
        np.savez(f"{case['out']}/rank{strategy.rank}.npz", **params.to_host())
''')


def make_case(tmp_path, n, n_in, **cfg) -> dict:
    rng = np.random.default_rng(7)
    np.savez(tmp_path / "data.npz", x=rng.random((n, n_in)), y=rng.integers(0, 10, n).astype(np.int32))
    cfg = {"hidden": 6, "lr": 0.5, "reg": 1e-3, "epochs": 2, "quiet": True, **cfg}
    return {"cfg": cfg, "data": str(tmp_path / "data.npz"), "n_in": n_in, "out": str(tmp_path)}


def serial_run(case) -> tuple[dict, float]:
    """The final parameters and the last loss of the case's steps in this process, serially."""
    cfg = TrainConfig(**case["cfg"])
    backend = get_backend(cfg.backend)
    data = np.load(case["data"])
    params = model.Parameters(backend, cfg.hidden, cfg.dtype, n_in=case["n_in"])
    params.load(model.init_parameters(cfg.hidden, cfg.seed, n_in=case["n_in"]))
    batches = SerialBatches(backend, data["x"].astype(cfg.dtype), data["y"], cfg.batch, cfg.shuffle, cfg.seed)
    history = train_loop(backend, params, batches, cfg, Serial(), progress=False)
    return params.to_host(), history.epochs[-1]["loss"]


def relative_error(a: dict, b: dict) -> float:
    return max(np.linalg.norm(a[k] - b[k]) / np.linalg.norm(b[k]) for k in model.PARAMETER_NAMES)


@pytestmark_mpi
@pytest.mark.mpi
@pytest.mark.parametrize(
    "p, n, batch, dtype, options",
    [
        (1, 15, 7, "float64", {}),
        (2, 15, 7, "float64", {"overlap": True}),
        (3, 15, 7, "float64", {}),  # batches 7, 7, 1: ranks 1 and 2 have no rows of the last
        (3, 15, 7, "float64", {"shuffle": True, "overlap": True}),
        (4, 15, 7, "float32", {"shuffle": True}),
        (3, 1700, 800, "float64", {"epochs": 1}),  # 800, 800, 100 rows: 267/267/266, ..., 34/33/33
        (2, 1700, 800, "float32", {"epochs": 1, "overlap": True}),
    ],
)
def test_ranks_end_with_the_serial_parameters(tmp_path, p, n, batch, dtype, options):
    n_in = 784 if batch == 800 else 20
    case = make_case(tmp_path, n, n_in, batch=batch, dtype=dtype, **options)
    result, _ = mpiexec(["-n", p, sys.executable, "-c", WORKER, json.dumps(case)])
    assert result.returncode == 0, result.stderr
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(p)]
    for r in range(1, p):
        for name in model.PARAMETER_NAMES:
            np.testing.assert_array_equal(ranks[r][name], ranks[0][name], err_msg=f"rank {r} {name}")
    tolerance = 1e-12 if dtype == "float64" else 1e-5
    error = relative_error(ranks[0], serial_run(case)[0])
    assert error <= tolerance, f"p={p}: relative error {error:.2e} > {tolerance:g}"


@pytestmark_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("backend", ["numba-sim", "cuda-cpu"])
def test_emulated_gpu_backend_ranks_match_serial(tmp_path, backend):
    """Two ranks on a GPU backend run on the CPU: the Numba kernels in the simulator (the staging
    path: pinned host buffers, copies to and from device arrays), the CUDA C kernels of kernels/.

    Batches of 5 and 1 rows: rank 1 has no rows of the second, as on a GPU with a short last batch.
    """
    case = make_case(tmp_path, 6, 6, hidden=3, batch=5, epochs=1, dtype="float64", backend=backend,
                     overlap=True)
    result, _ = mpiexec(["-n", 2, sys.executable, "-c", WORKER, json.dumps(case)])
    assert result.returncode == 0, result.stderr
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(2)]
    for name in model.PARAMETER_NAMES:
        np.testing.assert_array_equal(ranks[1][name], ranks[0][name])
    serial_case = {**case, "cfg": {**case["cfg"], "backend": "numpy"}}
    assert relative_error(ranks[0], serial_run(serial_case)[0]) <= 1e-12


TRAIN_FLAGS = ["--dataset", "mnist-sample", "-n", "8", "-b", "64", "--max-steps", "6", "--dtype", "float64",
               "--quiet"]


def assert_serial_train_saves_the_same(mpi_checkpoint, serial_checkpoint):
    """`python -m nn_cuda.train` in this process with TRAIN_FLAGS --shuffle saves the parameters
    of the MPI run (float64: 1e-12 relative, only the summation order differs)."""
    from nn_cuda.checkpoint import load_checkpoint
    from nn_cuda.train import main

    assert main([*TRAIN_FLAGS, "--shuffle", "--save", str(serial_checkpoint)]) == 0
    mpi, _ = load_checkpoint(mpi_checkpoint)
    serial, _ = load_checkpoint(serial_checkpoint)
    assert relative_error(mpi, serial) <= 1e-12


@pytestmark_mpi
@pytest.mark.mpi
def test_mpirun_train_prints_once_and_saves_the_serial_result(tmp_path):
    result, _ = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", *TRAIN_FLAGS, "--shuffle",
                         "--save", tmp_path / "mpi.npz"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("validation accuracy") == 1, result.stdout
    assert result.stdout.count("data parallel over 3 MPI ranks") == 1
    assert result.stdout.count("saved parameters to") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["mpi.npz"]  # no other rank wrote anything
    assert_serial_train_saves_the_same(tmp_path / "mpi.npz", tmp_path / "serial.npz")


@pytestmark_mpi
@pytest.mark.mpi
def test_more_ranks_than_batch_rows_fails_once(tmp_path):
    result, seconds = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", "--dataset", "mnist-sample",
                               "-b", "2", "--quiet"])
    assert result.returncode != 0
    assert result.stderr.count("3 MPI ranks cannot share mini-batches of 2 samples") == 1, result.stderr
    assert seconds < 30


@pytestmark_mpi
@pytest.mark.mpi
def test_a_usage_error_is_printed_once():
    result, _ = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", "--comm", "carrier-pigeon"])
    assert result.returncode == 2
    assert result.stderr.count("invalid choice: 'carrier-pigeon'") == 1, result.stderr


@pytestmark_mpi
@pytest.mark.mpi
def test_an_error_found_before_mpi_starts_is_printed_once():
    """--parallel hybrid without --model-ranks is refused before MPI starts on every rank; rank 0 can
    only abort the job once the others have started MPI too, and they must not print meanwhile."""
    result, seconds = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", *TRAIN_FLAGS,
                               "--parallel", "hybrid"])
    assert result.returncode != 0
    assert result.stderr.count("needs --model-ranks") == 1, result.stderr
    assert "[rank 0/3]" in result.stderr
    assert seconds < 30


@pytestmark_mpi
@pytest.mark.mpi
def test_bad_data_path_on_one_rank_ends_the_job(tmp_path):
    flags = [sys.executable, "-m", "nn_cuda.train", *TRAIN_FLAGS]
    result, seconds = mpiexec(["-n", 1, *flags, "--data-dir", REPO / "data", ":",
                               "-n", 1, *flags, "--data-dir", tmp_path / "missing"])
    assert result.returncode != 0
    assert seconds < 30
    assert result.stderr.count("does not exist") == 1, result.stderr
    assert "[rank 1/2] nn_cuda.train: error: data directory" in result.stderr


DATA_USING_COMMANDS = {
    "train": ["nn_cuda.train", *TRAIN_FLAGS],
    "grade": ["nn_cuda.grade", "--mode", "1", "--max-steps", "2", "--hidden", "8", "--dataset", "mnist-sample"],
    "adversarial": ["nn_cuda.adversarial", "train", "--async", "-n", "8", "--batch", "400", "-e", "1",
                    "--quiet", "--dataset", "mnist-sample"],
}


@pytestmark_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("command", sorted(DATA_USING_COMMANDS))
def test_ranks_that_found_different_data_stop_before_training(tmp_path, command):
    """Each rank loads the data itself: one that finds other files (here: the sample's files, served as
    "mnist" from another folder, against the bundled sample) must not train on other rows."""
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "data" / "mnist-sample", copy)
    flags = [sys.executable, "-m", *DATA_USING_COMMANDS[command]]
    if command == "grade":
        flags += ["--outputs", tmp_path / "Outputs"]
    result, seconds = mpiexec(["-n", 1, *flags, "--dataset", "mnist", "--data-dir", copy, ":",
                               "-n", 1, *flags])
    assert result.returncode != 0
    assert seconds < 30
    assert result.stderr.count("the ranks did not load the same data") == 1, result.stderr
    assert f"rank 0: mnist from {copy} (3600 train" in result.stderr
    assert f"rank 1: mnist-sample from {REPO / 'data' / 'mnist-sample'} (3600 train" in result.stderr


@pytestmark_mpi
@pytest.mark.mpi
def test_ranks_whose_files_differ_in_one_pixel_are_told_apart_by_their_contents(tmp_path):
    # the same name and sizes on both ranks: the message said the same thing of each
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "data" / "mnist-sample", copy)
    images = copy / "t10k-images-idx3-ubyte.gz"
    with gzip.open(images) as stream:
        data = bytearray(stream.read())
    data[-1] ^= 0xFF  # the last pixel of the last test image
    with gzip.open(images, "wb") as stream:
        stream.write(bytes(data))
    flags = [sys.executable, "-m", *DATA_USING_COMMANDS["train"]]
    result, _ = mpiexec(["-n", 1, *flags, ":", "-n", 1, *flags, "--data-dir", copy])
    assert result.returncode != 0
    descriptions = re.findall(r"rank \d: mnist-sample from \S+ \(3600 train / \d+ val / \d+ test, contents (\w+)\)",
                              result.stderr)
    assert len(descriptions) == 2 and descriptions[0] != descriptions[1], result.stderr
    assert "validation accuracy" not in result.stdout


@pytestmark_mpi
@pytest.mark.mpi
def test_a_rank_failing_during_training_ends_the_job(tmp_path):
    case = make_case(tmp_path, 40, 10, batch=6)
    case["fail_rank"], case["fail_step"] = 2, 3  # the others are then waiting in the allreduce
    result, seconds = mpiexec(["-n", 3, sys.executable, "-c", WORKER, json.dumps(case)])
    assert result.returncode != 0
    assert seconds < 30
    assert "[rank 2/3] RuntimeError: injected failure at step 3" in result.stderr, result.stderr
    assert not list(tmp_path.glob("rank*.npz"))


@pytestmark_mpi
@pytest.mark.mpi
def test_this_mpich_is_reported_as_not_cuda_aware():
    code = ("from nn_cuda.parallel.allreduce import check_comm_mode\n"
            "check_comm_mode('cuda-aware', 'cupy')\n")
    result, _ = mpiexec(["-n", 1, sys.executable, "-c", code])
    assert result.returncode != 0
    assert "--comm cuda-aware: the MPI library" in result.stderr and "--comm host" in result.stderr


@pytestmark_mpi
@pytest.mark.mpi
def test_scaling_benchmark_writes_its_json(tmp_path):
    out = tmp_path / "scaling.json"
    result = subprocess.run(
        [sys.executable, "-m", "nn_cuda.bench.scaling", "--ranks", "1,2", "--hidden", "8", "--batch", "16",
         "--samples", "64", "--epochs", "1", "--warmup-steps", "1", "--overlap", "both", "--json", out],
        cwd=REPO, env=mpi_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    rows = report["results"]
    assert [(row["ranks"], row["overlap"]) for row in rows] == [(1, False), (2, False), (1, True), (2, True)]
    for row in rows:
        assert row["seconds_per_epoch"] > 0 and row["samples_per_second"] > 0
        assert set(row["split"]) == {"compute", "allreduce", "other"}
        # --overlap: W2 early, then W1 and the biases; the cost model counts the same
        assert row["allreduce_calls_per_step"] == row["modelled_calls_per_step"] == (3 if row["overlap"] else 1)
        assert row["payload_bytes_per_step"] == row["modelled_payload_bytes_per_step"]
        assert row["payload_bytes_per_step"] == 4 * (8 * 784 + 10 * 8 + 8 + 10)  # float32 gradient


def test_ranks_whose_images_differ_in_a_few_rows_hold_different_data():
    # A sample of every 101st image missed rows 410-499: ranks with other images there trained on.
    from nn_cuda.training import Splits, data_fingerprint

    rng = np.random.default_rng(0)
    images, labels = rng.random((1000, 784)).astype(np.float32), rng.integers(0, 10, 1000).astype(np.int32)

    def splits(x_train):
        return Splits("mnist", "here", x_train, labels[:800], images[800:900], labels[800:900],
                      images[900:], labels[900:])

    other = images[:800].copy()
    other[410:500] = rng.random((90, 784))
    assert data_fingerprint(splits(images[:800])) != data_fingerprint(splits(other))
    assert data_fingerprint(splits(images[:800])) == data_fingerprint(splits(images[:800].copy()))


NO_MPI4PY = "import sys; sys.modules['mpi4py'] = None; from nn_cuda.train import main; sys.exit(main(sys.argv[1:]))"


def test_mpirun_without_mpi4py_says_so_once(tmp_path):
    # every rank printed the same line (4 lines under mpirun -n 4); rank 0 says it, the others end quietly
    runs = {}
    for rank in (0, 1):
        env = {**os.environ, "PMI_RANK": str(rank), "PMI_SIZE": "2"}
        runs[rank] = subprocess.run([sys.executable, "-c", NO_MPI4PY, *TRAIN_FLAGS], capture_output=True, text=True,
                                    timeout=120, cwd=tmp_path, env=env)
    assert runs[0].returncode == runs[1].returncode == 1
    assert "mpi4py cannot be imported" in runs[0].stderr and "pip install -e .[mpi]" in runs[0].stderr
    assert runs[1].stderr == "", runs[1].stderr
