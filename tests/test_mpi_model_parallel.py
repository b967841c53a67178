"""Model and hybrid parallelism (nn_cuda.parallel.model_parallel) and the cost model.

The first tests need no MPI: the cost model's numbers, and that the per-block forward/backward of the
model-parallel derivation reproduce the serial gradient. The rest start `mpiexec -n P` (P = 1..4)
once per P; each job trains several cases one after the other (to keep the suite fast on 2 cores)
and every rank writes its local block, the full parameters gathered on rank 0, and the payload bytes
and calls its communicators counted. Checks:

- the gathered parameters equal a serial run of the same steps: float64 1e-12 relative (only the
  order of the sums differs: the hidden-unit sum of the logits is split in P partial GEMMs plus an
  allreduce; measured at most 3.6e-16 over these cases); float32 1e-5 (2^-24 per operation; measured
  at most 9e-8);
- b2 (replicated) is bit-identical on all ranks, and the replicas of a block in the data groups of
  hybrid parallelism are bit-identical;
- the last loss (cross-entropy counted once, |W|^2 summed over the blocks) is the serial one;
- the counted payload bytes and calls equal nn_cuda.parallel.cost_model's epoch count exactly.
"""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.backends import get_backend
from nn_cuda.config import TrainConfig, parse_args
from nn_cuda.parallel import cost_model
from nn_cuda.parallel.mpi import rank_range
from test_mpi_data_parallel import (  # the shared MPI helpers (not tests: nothing is collected twice)
    TRAIN_FLAGS, assert_serial_train_saves_the_same, make_case, mpiexec, pytestmark_mpi, relative_error,
    serial_run,
)

# ---- the cost model, on paper ------------------------------------------------------------------


def test_the_statements_example_data_3_2_mb_against_model_32_kb():
    data = cost_model.step_cost("data", 1000, 800, 4, "float32")
    model_ = cost_model.step_cost("model", 1000, 800, 4, "float32")
    assert data.payload_bytes == 4 * (784 * 1000 + 10 * 1000 + 1000 + 10) == 3_180_040
    assert model_.payload_bytes == 4 * 800 * 10 == 32_000
    assert data.messages == model_.messages == 1
    assert data.wire_bytes == pytest.approx(1.5 * 3_180_040)  # ring: 2 (p-1)/p of the payload
    assert cost_model.step_cost("model", 1000, 800, 1, "float64").wire_bytes == 0  # one rank sends nothing


def test_overlap_sends_the_same_bytes_in_three_messages():
    plain = cost_model.step_cost("data", 1000, 800, 4, "float32")
    overlapped = cost_model.step_cost("data", 1000, 800, 4, "float32", overlap=True)
    assert overlapped.messages == 3
    assert overlapped.payload_bytes == plain.payload_bytes
    assert overlapped.wire_bytes == pytest.approx(plain.wire_bytes)


def test_hybrid_cost_is_the_logits_of_a_group_plus_the_gradient_of_a_block():
    # p = 4 as 2 data groups x 2 model ranks, H = 7 (blocks 4, 3), a batch of 5 (group rows 3, 2)
    cost = cost_model.step_cost("hybrid", 7, 5, 4, "float64", model_ranks=2, rank=3)  # group 1, block 1
    assert cost.messages == 2
    assert cost.payload_bytes == 8 * (2 * 10 + cost_model.gradient_elements(3))
    assert cost.wire_bytes == pytest.approx(8 * (2 * 10) + 8 * cost_model.gradient_elements(3))
    # one model rank per group is data parallelism on the gradient, plus a one-rank logits call
    assert cost_model.step_cost("hybrid", 7, 5, 2, "float32", model_ranks=1).messages == 2
    # a group with no rows of a short batch skips its logits allreduce, still joins the gradient's
    cost = cost_model.step_cost("hybrid", 7, 1, 4, "float32", model_ranks=2, rank=2)
    assert cost.messages == 1 and cost.payload_bytes == 4 * cost_model.gradient_elements(4)
    with pytest.raises(ValueError, match="must divide"):
        cost_model.step_cost("hybrid", 7, 5, 4, "float32", model_ranks=3)


def test_epoch_cost_adds_the_short_last_batch():
    cost = cost_model.epoch_cost("model", 6, 15, 7, 2, "float64")  # batches 7, 7, 1
    assert cost.messages == 3 and cost.payload_bytes == 8 * 10 * 15
    data = cost_model.epoch_cost("data", 6, 15, 7, 3, "float64")  # the whole gradient every step
    assert data.payload_bytes == 3 * 8 * cost_model.gradient_elements(6)


def test_the_blocks_forward_and_backward_give_the_serial_gradient():
    """The derivation of the module docstring, in one process: blocks of H = 7 over 3 'ranks'."""
    backend = get_backend("numpy")
    hidden, n_in, n = 7, 5, 6
    host = model.init_parameters(hidden, 3, n_in=n_in)
    host["b1"] = np.linspace(-1, 1, hidden)
    host["b2"] = np.linspace(-0.5, 0.5, 10)
    rng = np.random.default_rng(1)
    X, labels = rng.random((n, n_in)), rng.integers(0, 10, n).astype(np.int32)

    def parameters(h, values):
        params = model.Parameters(backend, h, np.float64, n_in=n_in)
        params.load(values)
        return params

    full = parameters(hidden, host)
    grads = model.Parameters(backend, hidden, np.float64, n_in=n_in)
    workspace = model.Workspace(backend, n, hidden, np.float64)
    Yhat_serial = model.forward(backend, full, workspace, X).copy()
    model.backward(backend, full, grads, workspace, X, labels, 1.0 / n)
    serial = grads.to_host()

    p, blocks, partial_logits = 3, [], []
    for r in range(p):  # the forward of each rank up to its partial logits
        lo, hi = rank_range(hidden, p, r)
        local = parameters(hi - lo, {"W1": host["W1"][lo:hi], "b1": host["b1"][lo:hi],
                                     "W2": host["W2"][:, lo:hi], "b2": host["b2"]})
        local_workspace = model.Workspace(backend, n, hi - lo, np.float64)
        model.forward(backend, local, local_workspace, X,
                      reduce_logits=lambda Z2: partial_logits.append(Z2.copy()))
        blocks.append((lo, hi, local, local_workspace))
    logits = sum(partial_logits)  # what the Allreduce computes
    for lo, hi, local, local_workspace in blocks:  # each rank: the full Yhat, then its block's gradient
        Yhat = model.forward(backend, local, local_workspace, X,
                             reduce_logits=lambda Z2: np.copyto(Z2, logits))
        np.testing.assert_allclose(Yhat, Yhat_serial, rtol=1e-14)
        local_grads = model.Parameters(backend, hi - lo, np.float64, n_in=n_in)
        local_grads.flat.fill(np.nan)
        model.backward(backend, local, local_grads, local_workspace, X, labels, 1.0 / n)
        g = local_grads.to_host()
        np.testing.assert_allclose(g["W1"], serial["W1"][lo:hi], rtol=1e-13, atol=1e-17)
        np.testing.assert_allclose(g["b1"], serial["b1"][lo:hi], rtol=1e-13, atol=1e-17)
        np.testing.assert_allclose(g["W2"], serial["W2"][:, lo:hi], rtol=1e-13, atol=1e-17)
        np.testing.assert_allclose(g["b2"], serial["b2"], rtol=1e-13, atol=1e-17)


def test_model_ranks_need_parallel_hybrid(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--model-ranks", "2"])
    assert "--model-ranks sets the grid of --parallel hybrid" in capsys.readouterr().err
    assert parse_args(["--parallel", "hybrid", "--model-ranks", "2"]).model_ranks == 2


def test_a_batch_too_small_for_the_data_groups_names_groups_and_ranks():
    from nn_cuda.parallel import ParallelError
    from nn_cuda.parallel.data_parallel import check_batch_fits

    check_batch_fits(2, 2, model_ranks=2)  # one row per data group is enough
    with pytest.raises(ParallelError, match=r"2 data groups \(4 ranks / --model-ranks 2\) cannot share "
                                            r"mini-batches of 1 samples.*mpirun -n 2 with --model-ranks 2"):
        check_batch_fits(1, 2, model_ranks=2)
    with pytest.raises(ParallelError, match="3 MPI ranks cannot share mini-batches of 2 samples"):
        check_batch_fits(2, 3)


def test_flags_model_parallelism_cannot_use_are_refused_before_mpi_starts():
    from nn_cuda.parallel import ParallelError
    from nn_cuda.parallel.model_parallel import ModelParallel

    with pytest.raises(ParallelError, match="drop --overlap"):
        ModelParallel.from_config(TrainConfig(parallel="model", overlap=True))
    with pytest.raises(ParallelError, match="needs --model-ranks"):
        ModelParallel.from_config(TrainConfig(parallel="hybrid"))


# ---- real MPI jobs --------------------------------------------------------------------------------

# Trains each case of the job in turn and writes, per case and rank: the local block, the gathered
# parameters (rank 0) and the counted communication.
WORKER = textwrap.dedent('''
    import json, sys
    import numpy as np
    from nn_cuda import model, parallel
    from nn_cuda.backends import get_backend
    from nn_cuda.config import TrainConfig
    from nn_cuda.training import train_loop

    with parallel.abort_on_error("worker"):
        for case in json.loads(sys.argv[1]):
            cfg = TrainConfig(**case["cfg"])
            strategy = parallel.create_strategy(cfg)
            backend = get_backend(cfg.backend)
            data = np.load(case["data"])
            host = model.init_parameters(cfg.hidden, cfg.seed, n_in=case["n_in"])
            params = strategy.local_parameters(backend, host, cfg.dtype)
            strategy.broadcast_parameters(params)
            batches = strategy.make_batches(backend, data["x"].astype(cfg.dtype), data["y"], cfg)
            for comm in strategy.communicators():
                comm.stats.reset()
            history = train_loop(backend, params, batches, cfg, strategy, progress=False)
            counted = {"loss": history.epochs[-1]["loss"],
                       "bytes": sum(c.stats.bytes["allreduce"] for c in strategy.communicators()),
                       "calls": sum(c.stats.calls["allreduce"] for c in strategy.communicators())}
            full = strategy.gather_parameters(params)
            out = f"{case['out']}/{case['name']}"
            np.savez(f"{out}.block{strategy.rank}.npz", **params.to_host())
            with open(f"{out}.comm{strategy.rank}.json", "w") as handle:
                json.dump(counted, handle)
            if strategy.rank == 0:
                np.savez(f"{out}.full.npz", **full)
''')

N, BATCH, N_IN = 15, 7, 20  # batches of 7, 7 and 1 rows: a short last batch


def cases_for(p: int) -> list[tuple[str, dict]]:
    """(name, options) of the cases run on p ranks."""
    cases = [
        ("model-h7", {"parallel": "model", "hidden": 7}),  # 7 hidden units: uneven for p = 2, 3, 4
        ("model-shuffle", {"parallel": "model", "hidden": 6, "shuffle": True}),
        ("model-f32", {"parallel": "model", "hidden": 9, "dtype": "float32"}),
    ]
    for m in range(1, p):
        if p % m == 0:  # every proper grid: 2 = 2x1; 3 = 3x1; 4 = 4x1, 2x2
            cases.append((f"hybrid-m{m}", {"parallel": "hybrid", "model_ranks": m, "hidden": 7}))
    return cases


@pytestmark_mpi
@pytest.mark.mpi
@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_ranks_end_with_the_serial_parameters_and_the_modelled_traffic(tmp_path, p):
    cases = {}
    for name, options in cases_for(p):
        folder = tmp_path / name
        folder.mkdir()
        case = make_case(folder, N, N_IN, batch=BATCH, dtype=options.pop("dtype", "float64"), **options)
        cases[name] = {**case, "name": name, "out": str(tmp_path)}
    result, _ = mpiexec(["-n", p, sys.executable, "-c", WORKER, json.dumps(list(cases.values()))])
    assert result.returncode == 0, result.stderr
    for name, case in cases.items():
        cfg = case["cfg"]
        full = dict(np.load(tmp_path / f"{name}.full.npz"))
        tolerance = 1e-12 if cfg["dtype"] == "float64" else 1e-5
        serial, serial_loss = serial_run(case)
        error = relative_error(full, serial)
        assert error <= tolerance, f"{name}, p={p}: relative error {error:.2e} > {tolerance:g}"
        model_ranks = cfg.get("model_ranks") or p
        blocks = [dict(np.load(tmp_path / f"{name}.block{r}.npz")) for r in range(p)]
        for r in range(p):
            np.testing.assert_array_equal(blocks[r]["b2"], blocks[0]["b2"])
            lo, hi = rank_range(cfg["hidden"], model_ranks, r % model_ranks)
            assert blocks[r]["W1"].shape == (hi - lo, N_IN)
            for name_ in model.PARAMETER_NAMES:  # the replica in data group 0
                np.testing.assert_array_equal(blocks[r][name_], blocks[r % model_ranks][name_])
            counted = json.loads((tmp_path / f"{name}.comm{r}.json").read_text())
            # the loss (CE once, |W|^2 summed over the blocks) is the serial one on every rank
            assert abs(counted.pop("loss") - serial_loss) <= tolerance * abs(serial_loss), f"{name} {r}"
            modelled = cost_model.epoch_cost(cfg["parallel"], cfg["hidden"], N, BATCH, p, cfg["dtype"],
                                             cfg.get("model_ranks"), rank=r, n_in=N_IN)
            assert counted == {"bytes": cfg["epochs"] * modelled.payload_bytes,
                               "calls": cfg["epochs"] * modelled.messages}, f"{name}, rank {r}"


@pytestmark_mpi
@pytest.mark.mpi
def test_numba_simulator_ranks_match_serial(tmp_path):
    """The staging path of GPU logits (a pinned host buffer, copies to and from device arrays), in the
    simulator: H = 3 over 2 ranks (blocks 2, 1), batches of 5 and 1 rows."""
    case = make_case(tmp_path, 6, 6, hidden=3, batch=5, epochs=1, dtype="float64", backend="numba-sim",
                     parallel="model")
    case = {**case, "name": "sim"}
    result, _ = mpiexec(["-n", 2, sys.executable, "-c", WORKER, json.dumps([case])])
    assert result.returncode == 0, result.stderr
    full = dict(np.load(tmp_path / "sim.full.npz"))
    serial, _ = serial_run({**case, "cfg": {**case["cfg"], "backend": "numpy"}})
    assert relative_error(full, serial) <= 1e-12


@pytestmark_mpi
@pytest.mark.mpi
def test_mpirun_train_parallel_model_saves_the_serial_result(tmp_path):
    """The command of the issue, on the sample data: H = 8 over 3 ranks (blocks 3, 3, 2), with -s."""
    result, _ = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", *TRAIN_FLAGS, "--parallel", "model",
                         "--shuffle", "-s", "--save", tmp_path / "mpi.npz"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("test accuracy") == 1, result.stdout  # printed by rank 0 only
    assert result.stdout.count("model parallel over 3 MPI ranks") == 1
    assert "FAIL" not in result.stdout and result.stdout.count("PASS") == 4, result.stdout
    assert_serial_train_saves_the_same(tmp_path / "mpi.npz", tmp_path / "serial.npz")


@pytestmark_mpi
@pytest.mark.mpi
def test_a_grid_that_does_not_fit_fails_once():
    result, seconds = mpiexec(["-n", 3, sys.executable, "-m", "nn_cuda.train", *TRAIN_FLAGS,
                               "--parallel", "hybrid", "--model-ranks", "2"])
    assert result.returncode != 0
    assert result.stderr.count("--model-ranks 2 does not divide the 3 MPI ranks") == 1, result.stderr
    assert seconds < 30


@pytestmark_mpi
@pytest.mark.mpi
def test_scaling_benchmark_counts_what_the_cost_model_says(tmp_path):
    import subprocess

    from test_mpi_data_parallel import JOB_TIMEOUT, REPO, mpi_env

    out = tmp_path / "scaling.json"
    result = subprocess.run(
        [sys.executable, "-m", "nn_cuda.bench.scaling", "--parallel", "data,model,hybrid", "--model-ranks", "2",
         "--ranks", "1,2", "--hidden", "8", "--batch", "16", "--samples", "40", "--warmup-steps", "1",
         "--json", out],
        cwd=REPO, env=mpi_env(), capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["results"]
    assert [(row["parallel"], row["ranks"]) for row in rows] == [("data", 1), ("data", 2), ("model", 1),
                                                                 ("model", 2), ("hybrid", 2)]
    for row in rows:
        assert row["payload_bytes_per_step"] == row["modelled_payload_bytes_per_step"] > 0
        assert row["allreduce_calls_per_step"] == row["modelled_calls_per_step"]
    assert rows[3]["payload_bytes_per_step"] == 4 * 10 * 40 / 3  # batches 16, 16, 8: the logits
