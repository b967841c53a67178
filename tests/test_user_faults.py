"""What a new user and a fault hit first: each mistake ends with one line naming it and the fix.

- An emulated backend (Numba's simulator, cuda-cpu: `Backend.emulated`) runs the cheapest GEMM and
  evaluates a few images unless told otherwise, and says so; --limit-rows and --eval-limit cut the data.
- Divergence (nn_cuda.divergence): NaN, exploding weights, or a loss stuck far above a uniform guess
  stop the run with the likely flag named; the climb of a first run at the default lr does not.
- Sizes beyond the machine's memory are refused before anything is allocated.
- A GPU backend without a GPU names the backends that run on the CPU; the adversarial command refuses
  in one line and lists in --help only what it accepts; one-process work refuses mpirun -n 2 in one
  line; grading says what it compared with what.
"""

from __future__ import annotations

import os
import re
import subprocess
import signal
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import grade, train, training
from nn_cuda.adversarial.cli import main as adversarial_main
from nn_cuda.backends.numpy_backend import NumpyBackend
from nn_cuda.checkpoint import load_checkpoint
from nn_cuda.config import DEFAULT_LR, EMULATED_EVAL_LIMIT
from nn_cuda.divergence import STUCK_STEPS, DivergenceWatch
from nn_cuda.parallel.data_parallel import DataParallel

SAMPLE = ["--dataset", "mnist-sample", "--quiet"]
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def error_lines(captured) -> list[str]:
    return captured.err.strip().splitlines()


# ---- emulated backends ----------------------------------------------------------------------------


class EmulatedNumpy(NumpyBackend):
    """The NumPy backend flagged as emulated: the commands' side of Backend.emulated, at NumPy's speed."""

    name, emulated = "emulated-numpy", True


def test_an_emulated_backend_evaluates_a_few_images_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(training, "get_backend", lambda name, gemm=None: EmulatedNumpy(gemm))
    assert train.main([*SAMPLE, "-n", "8", "--max-steps", "1"]) == 0
    out = capsys.readouterr().out
    assert f"(3600 train / {EMULATED_EVAL_LIMIT} val / {EMULATED_EVAL_LIMIT} test)" in out
    (note,) = [line for line in out.splitlines() if line.startswith("NOTE: backend emulated-numpy")]
    assert "--gemm" in note and "--eval-limit" in note
    n = EMULATED_EVAL_LIMIT
    assert f"(on the first {n} of 400 validation and {n} of 1000 test images)" in out


def test_an_explicit_eval_limit_overrides_the_emulated_default(monkeypatch, capsys):
    monkeypatch.setattr(training, "get_backend", lambda name, gemm=None: EmulatedNumpy(gemm))
    assert train.main([*SAMPLE, "-n", "8", "--max-steps", "1", "--eval-limit", "400"]) == 0
    out = capsys.readouterr().out
    assert "(3600 train / 400 val / 400 test)" in out and "--eval-limit N to change" not in out


def test_the_simulator_is_labelled_and_runs_the_cheapest_gemm():
    from numba import config

    if not config.ENABLE_CUDASIM:
        pytest.skip("Numba runs on a GPU here, not in its simulator")
    from nn_cuda.backends.numba_backend import NumbaBackend

    backend = NumbaBackend()
    assert (backend.name, backend.emulated, backend.gemm_algo) == ("numba-sim", True, "naive")
    assert NumbaBackend("regblock").gemm_algo == "regblock"  # --gemm still chooses


def test_limit_rows_and_eval_limit_cut_the_data_and_say_so(tmp_path, capsys):
    predictions = tmp_path / "p.txt"
    assert train.main([*SAMPLE, "-n", "8", "--max-steps", "1", "--limit-rows", "50", "--eval-limit", "30",
                       "--predictions", str(predictions)]) == 0
    out = capsys.readouterr().out
    assert "(50 train / 30 val / 1000 test)" in out  # --predictions covers every test image
    assert "(on the first 30 of 400 validation images)" in out
    assert len(predictions.read_text()) == 1000


# ---- divergence ----------------------------------------------------------------------------------


@pytest.mark.parametrize("flags, blamed", [
    (["-l", "1000", "-e", "1"], "--lr"),  # finite throughout: ended with exit 0 and accuracy 0.1
    (["-l", "1e6", "-e", "3"], "--lr"),  # weights up to 1e33, still finite after 15 steps
    (["-r", "1e10", "-e", "1"], "-r/--reg"),  # lr x reg = 5e9: the weight decay, not the learning rate
])
def test_a_diverging_run_stops_with_one_line_naming_the_flag(flags, blamed, capsys):
    assert train.main([*SAMPLE, *flags]) == 1
    (line,) = error_lines(capsys.readouterr())
    assert line.startswith("nn_cuda.train: error: training diverged") and blamed in line


def test_a_diverging_run_saves_the_last_parameters_before_it(tmp_path, capsys):
    path = tmp_path / "last.npz"
    assert train.main([*SAMPLE, "-l", "1e6", "-e", "3", "--save", str(path)]) == 1
    assert "saved the last parameters before the divergence" in capsys.readouterr().out
    params, _ = load_checkpoint(path)
    assert max(float(np.sqrt(np.mean(params[w] ** 2))) for w in ("W1", "W2")) < 0.1  # not the exploded ones


# Losses read back at every step on mnist-sample (float32, batch 800, lr 0.5): the default run (H = 1000),
# measured, and the shape of the longest swing measured, H = 8000 (15 steps above 23, peak 66).
FIRST_RUN = [2.31, 3.35, 11.9, 18.4, 21.7, 23.5, 22.0, 16.4, 9.51, 7.78, 6.98, 6.15, 4.54, 4.3, 3.6, 2.81]
H8000 = [2.3, 9.0, 20.0, 30.0] + [66.2] * 15 + [15.0, 8.0, 4.0]


@pytest.mark.parametrize("losses", [FIRST_RUN, H8000], ids=["first-run", "H8000"])
def test_the_swing_of_a_first_run_is_not_divergence(losses):
    watch = DivergenceWatch(lr=0.5, reg=1e-4)
    verdicts = [watch.check(step, loss, weights_rms=0.02) for step, loss in enumerate(losses, 1)]
    assert verdicts == [None] * len(losses)


def test_a_loss_stuck_far_above_a_uniform_guess_is_divergence():
    """-l 1000 -r 0 saturates: the float32 cross-entropy stays near 78 while the weights stay finite."""
    watch = DivergenceWatch(lr=1000, reg=0)
    verdicts = [watch.check(step, 78.0, weights_rms=5.0) for step in range(1, 2 * STUCK_STEPS)]
    first = next(step for step, verdict in enumerate(verdicts, 1) if verdict)
    assert first == 1 + STUCK_STEPS and f"--lr {DEFAULT_LR:g} (the default)" in verdicts[first - 1]
    watch = DivergenceWatch(lr=1000, reg=0)  # a read-back back to normal starts the count again
    losses = [78.0] * 30 + [2.0] + [78.0] * STUCK_STEPS
    assert not any(watch.check(step, loss, 5.0) for step, loss in enumerate(losses, 1))


def test_absurd_initial_weights_are_blamed_not_the_learning_rate(tmp_path, capsys):
    # --init with finite weights of 1e30 was blamed on the learning rate.
    from nn_cuda.checkpoint import save_checkpoint

    rng = np.random.default_rng(0)
    path = save_checkpoint(tmp_path / "absurd.npz", {"W1": 1e30 * rng.normal(size=(8, 784)), "b1": np.zeros(8),
                                                     "W2": 1e30 * rng.normal(size=(10, 8)), "b2": np.zeros(10)})
    assert train.main([*SAMPLE, "--init", str(path), "-p", "1", "--max-steps", "2"]) == 1
    line = [line for line in capsys.readouterr().err.splitlines() if "diverged" in line][0]
    assert "the initial weights" in line and "--init" in line and "learning rate" not in line


def test_a_kernel_backend_that_diverges_names_the_kernels_as_a_suspect(tmp_path, monkeypatch):
    # the check of every kernel the run launches, in the folder it launches them from (a student's too)
    verdict = DivergenceWatch(DEFAULT_LR, 1e-4, backend="cuda-cpu").check(3, float("nan"), weights_rms=0.01)
    assert f"--lr {DEFAULT_LR / 10:g}" in verdict
    kernels = Path(__file__).resolve().parent.parent / "kernels"
    assert f"python -m nn_cuda.grade --kernels {kernels} --backend cuda-cpu" in verdict, verdict
    (tmp_path / "gemm1_naive.cu").write_text("// a student's copy\n")
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(tmp_path))
    verdict = DivergenceWatch(DEFAULT_LR, 1e-4, backend="cupy").check(3, float("nan"), weights_rms=0.01)
    assert f"python -m nn_cuda.grade --kernels {tmp_path} --backend cupy" in verdict, verdict
    verdict = DivergenceWatch(DEFAULT_LR, 1e-4, backend="numba").check(3, float("nan"), weights_rms=0.01)
    assert "python -m nn_cuda.grade --mode 4 --backend numba" in verdict


def test_a_diverged_run_on_unit_pixels_is_pointed_at_their_default_learning_rate(capsys):
    from nn_cuda.config import UNIT_PIXELS_LR

    assert train.main([*SAMPLE, "--pixels", "unit", "--lr", "40", "-p", "1", "--max-steps", "60"]) == 1
    line = [line for line in capsys.readouterr().err.splitlines() if "diverged" in line][0]
    assert f"the learning rate 40 (-l/--lr); lower it, e.g. --lr {UNIT_PIXELS_LR:g} (the default)" in line, line


def test_exploding_weights_and_nan_are_divergence_at_once():
    assert "root mean square is 170" in DivergenceWatch(1000, 1e-4).check(2, 23.4, weights_rms=170.0)
    assert "the loss is nan" in DivergenceWatch(0.5, 1e-4).check(7, float("nan"), weights_rms=0.01)
    assert "a parameter is NaN" in DivergenceWatch(0.5, 1e-4).check(7, 2.0, weights_rms=0.01, finite=False)


# ---- memory ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags, fix", [(["-n", "100000000"], "use a smaller -n/--hidden"),
                                        (["-b", "1000000000"], "use a smaller -b/--batch")])
def test_sizes_beyond_the_memory_are_refused_before_allocating(flags, fix, capsys):
    assert train.main([*SAMPLE, *flags]) == 1
    (line,) = error_lines(capsys.readouterr())
    assert "of memory" in line and "available" in line and fix in line


def test_grade_refuses_a_scale_beyond_the_memory(capsys):
    assert grade.main(["--mode", "4", "--scale", "1000"]) == 1  # errors.FAILED: the train command says the same for its sizes
    (line,) = error_lines(capsys.readouterr())
    assert "mode 4 at --scale 1000 needs about" in line and "or less" in line


# ---- messages -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["cupy", "numba"])
def test_a_gpu_backend_without_a_gpu_names_the_backends_that_run_on_the_cpu(backend):
    """NUMBA_ENABLE_CUDASIM=0 makes Numba look for a real GPU, as outside the tests."""
    result = subprocess.run(
        [sys.executable, "-m", "nn_cuda.train", "--backend", backend, *SAMPLE, "--max-steps", "1", "-n", "8"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
    )
    if result.returncode == 0:
        pytest.skip(f"this machine has a GPU that backend {backend} can use")
    (line,) = result.stderr.strip().splitlines()
    assert all(name in line for name in ("cuda-cpu", "numba-sim", "numpy")), line


def test_adversarial_refusals_are_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        adversarial_main(["train", "--dataset", "mnist-sample", "--history", "h.json", "--overlap"])
    assert stop.value.code == 2
    (line,) = error_lines(capsys.readouterr())
    assert "--history h.json" in line and "--overlap" in line and line.endswith("drop them")


def test_a_command_of_subcommands_given_none_lists_them(capsys):
    # python -m nn_cuda.course / nn_cuda.data alone said only "the following arguments are required"
    from nn_cuda import course, data

    for main, subcommands in ((course.main, ("start", "check", "tasks")), (data.main, ("fetch", "info"))):
        assert main([]) == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: ") and all(f"    {name}" in err for name in subcommands), err


def test_adversarial_train_help_lists_only_the_flags_it_accepts(capsys):
    with pytest.raises(SystemExit) as stop:
        adversarial_main(["train", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    for refused in ("--history", "--predictions", "--profile", "--grade", "--seq", "--debug",
                    "--parallel", "--model-ranks", "--comm", "--overlap"):
        assert refused not in out
    for accepted in ("--attack", "--eps", "--save", "--lr", "--pixels", "--eval-limit", "--limit-rows", "--async"):
        assert accepted in out


def test_adversarial_training_that_diverges_says_nothing_was_saved(tmp_path, capsys):
    path = tmp_path / "robust.npz"
    assert adversarial_main(["train", *SAMPLE, "-n", "8", "-l", "1000", "-e", "1", "--save", str(path)]) == 1
    (line,) = error_lines(capsys.readouterr())
    assert "training diverged" in line and f"nothing was written to --save {path}" in line
    assert not path.exists()


@pytest.mark.skipif(not MPIEXEC.exists(), reason=f"no mpiexec next to {sys.executable}")
@pytest.mark.parametrize("command, what", [
    (["nn_cuda.adversarial", "eval", "--checkpoint", "m.npz"], "eval runs on one rank"),
    (["nn_cuda.adversarial", "train", "--dataset", "mnist-sample"], "serial adversarial training runs on one rank"),
    (["nn_cuda.bench", "gemm", "--backend", "numpy", "--sizes", "2x2x2"], "bench gemm runs on one rank"),
])
def test_one_process_work_under_mpirun_is_one_line(command, what, tmp_path):
    env = {**os.environ, "PATH": f"{MPIEXEC.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", *command], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=90)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert what in line and "not on 2 MPI ranks; run it without mpirun" in line
    assert result.stdout == ""


def test_grade_says_what_it_compared(tmp_path, capsys):
    assert grade.main(["--mode", "3", "--dataset", "mnist-sample", "--hidden", "8", "--max-steps", "1",
                       "--outputs", str(tmp_path)]) == 0
    (summary,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("mode 3: PASS")]
    assert "numpy float32 against the NumPy reference" in summary and "NumPy against itself" in summary


class OneRank:
    """A communicator of one rank, enough for DataParallel's set-up."""

    rank, size = 0, 1

    def node_placement(self) -> tuple[int, int]:
        return 0, 1


def test_one_rank_is_one_mpi_rank():
    assert "data parallel over 1 MPI rank (" in DataParallel(OneRank(), "numpy", 8).describe()


# ---- memory: estimated before it is spent, against the limits that apply ---------------------------


def test_bench_gemm_refuses_a_size_beyond_memory_in_one_line(capsys):
    # --sizes 2147483648x1x1 took all of the machine's memory before the OOM killer ended it.
    from nn_cuda.bench import gemm

    with pytest.raises(SystemExit) as stop:
        gemm.main(["--backend", "numpy", "--sizes", "2147483648x1x1"])
    assert stop.value.code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line]
    assert "bench gemm at 2147483648x1x1 needs about" in line and "use smaller --sizes" in line


def test_bench_gemm_refuses_a_size_beyond_the_kernels_32_bit_indices_in_one_line(capsys):
    # On an H200, whose memory holds these matrices, the kernels' own check ended in a traceback.
    from nn_cuda.bench import gemm

    with pytest.raises(SystemExit) as stop:
        gemm.main(["--backend", "cuda-cpu", "--sizes", "64x16x4,2147483648x1x1"])
    assert stop.value.code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line]
    assert "--sizes 2147483648x1x1: the kernels of backend cuda-cpu take M, N and K as 32-bit ints" in line


def test_grade_modes_1_to_3_refuse_a_hidden_layer_beyond_memory(tmp_path, capsys):
    assert grade.main(["--mode", "1", "--hidden", "10000000", *SAMPLE[:2], "--outputs", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "needs about" in err and "use a smaller -n/--hidden" in err


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_the_control_groups_limit_counts(tmp_path, version):
    from nn_cuda import memory

    membership = tmp_path / "cgroup"
    if version == "v2":
        membership.write_text("0::/user.slice/run.scope\n")
        folder = tmp_path / "sys" / "user.slice" / "run.scope"
        folder.mkdir(parents=True)
        (folder / "memory.max").write_text("3000000000\n")
        (folder / "memory.current").write_text("1000000000\n")
    else:
        membership.write_text("4:cpu,cpuacct:/job\n7:memory:/job\n")
        folder = tmp_path / "sys" / "memory" / "job"
        folder.mkdir(parents=True)
        (folder / "memory.limit_in_bytes").write_text("3000000000\n")
        (folder / "memory.usage_in_bytes").write_text("1000000000\n")
    assert memory._cgroup_available(tmp_path / "sys", membership) == 2_000_000_000
    (folder / ("memory.max" if version == "v2" else "memory.limit_in_bytes")).write_text(
        "max\n" if version == "v2" else f"{2**63 - 4096}\n")
    assert memory._cgroup_available(tmp_path / "sys", membership) is None  # no limit


def test_ulimit_v_counts():
    limit = 3 * 2**30
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (%d, resource.RLIM_INFINITY)); "
            "from nn_cuda import memory; print(memory.available_bytes())" % limit)
    available = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   check=True).stdout)
    assert 0 < available < limit


@pytest.mark.slow
def test_the_training_estimate_is_honest():
    # At H = 200,000 the estimate said 4.48 GB and the run used 6.98 GB. Now the peak RSS of a run
    # must be within 10 % of what check_memory compares with the memory available.
    hidden = 50_000
    code = ("import resource, sys; from nn_cuda import train; "
            f"rc = train.main(['--dataset', 'mnist-sample', '-n', '{hidden}', '--max-steps', '1', '--quiet']); "
            "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NN_CUDA_OFFLINE": "1"})
    rss = int(result.stdout.rsplit("RSS", 1)[1])
    cfg = training.TrainConfig(dataset="mnist-sample", hidden=hidden)
    splits = training.load_splits(cfg, log=lambda *args: None, progress=False)
    estimate = sum(training.memory_parts(cfg, hidden, splits).values())
    assert 0.9 * estimate <= rss <= 1.1 * estimate, (rss, estimate)


# ---- ordinary mistakes end in one line (the fault probe's list) -------------------------------------


def one_error_line(status, err: str, *phrases) -> str:
    assert status not in (0, None), err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error" in line]
    assert len(lines) == 1, err
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def run_bench(argv, capsys):
    """`python -m nn_cuda.bench ARGV`, or `python scripts/bench_NAME.py` for the studies there."""
    import importlib

    from nn_cuda.bench import MOVED
    from nn_cuda.bench.__main__ import main as bench_main
    from nn_cuda.bench.common import run_benchmark

    try:
        if argv[0] in MOVED:
            script = MOVED[argv[0]]
            status = run_benchmark(script, importlib.import_module(Path(script).stem).main, argv[1:])
        else:
            status = bench_main(argv)
    except SystemExit as stop:
        status = stop.code
    return status, capsys.readouterr().err


def test_bench_lr_with_a_missing_data_folder(capsys):
    one_error_line(*run_bench(["lr", "--data-dir", "/nonexistent"], capsys), "/nonexistent", "--data-dir")


def test_bench_diff_without_its_dataset(tmp_path, capsys):
    one_error_line(*run_bench(["diff", "--dataset", "fashion-mnist", "--data-dir", str(tmp_path)], capsys),
                   "Fashion-MNIST is not in --data-dir")


def test_bench_gemm_on_the_cpu_runner_beyond_the_grid_limit(capsys):
    one_error_line(*run_bench(["gemm", "--backend", "cuda-cpu", "--sizes", "4194304x1x1"], capsys),
                   "the grid's y limit")


def test_bench_json_is_checked_before_the_work(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    line = one_error_line(*run_bench(["lr", "--json", str(tmp_path / "file" / "lr.json")], capsys), "--json")
    assert "scripts/bench_lr.py" in line


def test_data_info_with_a_300_character_folder_name(capsys):
    from nn_cuda import data

    status = data.main(["info", "--data-dir", "/tmp/" + "a" * 300])
    one_error_line(status, capsys.readouterr().err, "cannot be used", "--data-dir")


def test_a_kernel_folder_without_nn_ops(tmp_path, monkeypatch, capsys):
    from nn_cuda import kernel_info

    for path in kernel_info.kernel_dir().iterdir():
        if path.name != "nn_ops.cu":
            (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(tmp_path))
    status = train.main([*SAMPLE, "--backend", "cuda-cpu", "-n", "8", "--max-steps", "1"])
    one_error_line(status, capsys.readouterr().err, "NN_CUDA_KERNEL_DIR=", "has no nn_ops.cu")


def test_a_seed_of_the_checking_mode_that_is_not_a_number(monkeypatch, capsys):
    monkeypatch.setenv("NN_CUDA_CPU_SEED", "abc")
    status = train.main([*SAMPLE, "--backend", "cuda-cpu", "-n", "8", "--max-steps", "1"])
    one_error_line(status, capsys.readouterr().err, "NN_CUDA_CPU_SEED='abc'")


def test_an_empty_save_path_is_refused_before_training(capsys):
    status = train.main([*SAMPLE, "-n", "8", "--max-steps", "1", "--save", ""])
    one_error_line(status, capsys.readouterr().err, "--save", "empty")


def test_nn_cuda_data_pointing_at_the_files_themselves_is_named(tmp_path, monkeypatch):
    # NN_CUDA_DATA names a folder of datasets (NN_CUDA_DATA/mnist/...): files put in it directly were
    # passed over for the bundled sample without a word about the variable.
    from nn_cuda import data

    for path in data.find_dataset_dir("mnist-sample").iterdir():
        if path.name.endswith(".gz"):
            (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv("NN_CUDA_DATA", str(tmp_path))
    with pytest.raises(data.DataError) as raised:
        data.load_dataset("mnist", fallback=False)
    assert f"NN_CUDA_DATA={tmp_path} holds the four files itself" in str(raised.value)
    assert str(tmp_path / "mnist") in str(raised.value)


def test_a_failed_save_still_writes_the_history_and_the_predictions(tmp_path, monkeypatch, capsys):
    from nn_cuda.outputs import OutputError

    def full_disk(*args, **kwargs):
        raise OutputError(f"{tmp_path / 'w.npz'}: cannot write it (No space left on device); write elsewhere")

    monkeypatch.setattr(training, "save_checkpoint", full_disk)
    history, predictions = tmp_path / "h.json", tmp_path / "p.txt"
    status = train.main([*SAMPLE, "-n", "8", "--max-steps", "1", "--save", str(tmp_path / "w.npz"),
                         "--history", str(history), "--predictions", str(predictions)])
    assert status == 1 and "No space left on device" in capsys.readouterr().err
    assert history.is_file() and predictions.is_file()


def test_a_simulator_run_of_hours_says_so_before_it_starts():
    # numba-sim at the default sizes would run for days without a word.
    simulator = types.SimpleNamespace(name="numba-sim", gemm_algo="naive")
    default = training.TrainConfig(backend="numba-sim")
    note = training.simulator_cost_note(default, simulator, hidden=1000, steps=100)
    assert note and "hours" in note and "-n 8 -b 32 --max-steps 2" in note
    assert training.simulator_cost_note(default.replace(batch=32), simulator, hidden=8, steps=2) is None
    assert training.simulator_cost_note(default, types.SimpleNamespace(name="numpy"), 1000, 100) is None
    # the estimate counts the launches: naive GEMM threads are padded to whole 8 x 32 tiles
    assert training.simulated_threads_per_step("naive", 64, 8) == 2048 * 3 + 512 + 6400 + 3 * 64 * 8 + (795 * 8 + 10)


def test_ctrl_c_after_a_commands_imports_and_before_its_main_ends_in_one_line():
    # A module that is a command as __main__ (python -m nn_cuda.data) defines its classes after the
    # guarded imports: Ctrl-C there printed a traceback of a dataclass's creation (seen in CI).
    code = ("import os, signal, time\n"
            "from nn_cuda.interrupts import ends_in_one_line_while_starting\n"
            "with ends_in_one_line_while_starting('prog'):\n"
            "    import json\n"
            "os.kill(os.getpid(), signal.SIGINT)\n"
            "time.sleep(30)\n")
    job = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (job.returncode, job.stderr) == (130, "prog: interrupted (SIGINT)\n")


def _import_machinery(frame: str) -> bool:
    """Whether a traceback's frame is CPython's import machinery, pip's editable finder or the standard
    library they call, not a line of the project."""
    return (frame.startswith("<frozen ") or Path(frame).name.startswith("__editable__")
            or Path(frame).parent == Path(os.__file__).parent)


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["nn_cuda.train", "--dataset", "mnist-sample", "-e", "200", "--quiet"],
    ["nn_cuda.grade", "--mode", "1", "--dataset", "mnist-sample"],
    ["nn_cuda.bench", "train", "--rounds", "50"],
    ["nn_cuda.data", "info"],
    ["scripts/bench_lr.py", "--lr", "0.1", "--seeds", "0", "-e", "50"],
], ids=["train", "grade", "bench", "data", "script"])
def test_ctrl_c_in_the_first_second_ends_in_one_line(command, tmp_path):
    # Ctrl-C while a command was still importing numpy & co. printed the traceback of an import.
    # A signal before the interpreter's own start-up is done is CPython's to report ("Fatal Python
    # error: init_import_site"), before any line of the project runs. It takes about 0.04 s on an
    # idle machine and grows with the load: the delays grow by as much as it took longer here, and
    # a signal that still lands in that start-up (the load changes from one second to the next) is
    # passed over. At least one delay must reach the project's code, or the test has checked nothing.
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    slower = max(0.0, time.perf_counter() - started - 0.05)
    reached_the_project = 0
    for delay in (slower + base for base in (0.1, 0.2, 0.3, 0.5, 0.8)):  # the imports take about 0.3 s
        # a study of scripts/ by its path, a command of the package with -m
        start = [str(Path(__file__).resolve().parent.parent / command[0])] if command[0].endswith(".py") else \
            ["-m", command[0]]
        job = subprocess.Popen([sys.executable, *start, *command[1:]], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "NN_CUDA_OFFLINE": "1"})
        time.sleep(delay)
        job.send_signal(signal.SIGINT)
        out, err = job.communicate(timeout=60)
        if err.startswith("Fatal Python error: init_import_site"):
            continue  # CPython's own start-up (site-packages' .pth files) had not finished
        frames = re.findall(r'^\s*File "([^"]*)"', err, re.M)
        if "KeyboardInterrupt" in err and frames and all(_import_machinery(frame) for frame in frames):
            # runpy still finding or compiling the command's module (a fresh clone has no .pyc yet: seen
            # in CI under load; or in the editable install's finder and the pathlib it calls, seen under
            # load on 2026-11-28), before any line of it runs: CPython's too
            continue
        reached_the_project += 1
        assert "Traceback" not in err, f"SIGINT after {delay} s:\n{err}"
        if job.returncode == 0:
            continue  # the command (data info) had finished before the signal
        # 130 after the one line; or, rarely, killed by SIGINT itself (CPython ends so when the
        # KeyboardInterrupt was raised inside a library's C code), which a shell shows as 130 too
        assert job.returncode in (130, -signal.SIGINT), (delay, job.returncode, err)
        assert job.returncode != 130 or "interrupted (SIGINT)" in err, (delay, err)
    assert reached_the_project, "every signal landed in CPython's start-up: the delays are too short for this load"
