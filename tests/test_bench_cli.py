"""The benchmarks' command lines: `python -m nn_cuda.bench NAME` and the studies of scripts/
(`python scripts/bench_lr.py`...), the flags ./run.sh passes, and the two benchmarks with no test of
their own elsewhere (roofline, adversarial) on tiny settings.

A wrong value ends with argparse's one error line naming the flag (exit status 2) before any work is
done: a benchmark that ran with --ranks 0 or --repeat 0 used to print a table of NaN or a traceback.
"""

import argparse
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import kernel_resources
from nn_cuda.arguments import comma_separated, int_at_least, one_of, pixel_radius, positive_int
import bench_roofline as roofline
import gpu_check
from nn_cuda.bench import BENCHMARKS, MOVED
from nn_cuda.bench.__main__ import main as bench_main
from nn_cuda.bench.common import run_benchmark
from nn_cuda.report.numbers import intensity
from nn_cuda.config import build_parser as train_parser

REPO = Path(__file__).resolve().parent.parent
#: the studies of scripts/, by the name `python -m nn_cuda.bench` had for them
SCRIPTS = {name: Path(path).stem for name, path in MOVED.items()}


def prog_of(name: str) -> str:
    return f"python {MOVED[name]}" if name in MOVED else f"python -m nn_cuda.bench {name}"


def run_command(name: str, argv: list[str]) -> int:
    """`python -m nn_cuda.bench NAME ARGV`, or the script NAME became, in this process."""
    if name not in SCRIPTS:
        return bench_main([name, *argv])
    return run_benchmark(f"scripts/{SCRIPTS[name]}.py", importlib.import_module(SCRIPTS[name]).main, argv)


# ---- flag types -------------------------------------------------------------------------------


def test_comma_separated_converts_every_item_and_names_the_one_at_fault():
    parse = comma_separated(positive_int)
    assert parse("1, 2,3,") == [1, 2, 3]
    with pytest.raises(argparse.ArgumentTypeError, match=r"'0' in '1,0': must be a positive integer"):
        parse("1,0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"'x' in '1,x' is not a number"):
        parse("1,x")
    with pytest.raises(argparse.ArgumentTypeError, match="expected a comma-separated list"):
        parse("")
    assert comma_separated(positive_int, allow_empty=True)("") == []


def test_the_item_types_reject_what_they_must():
    assert int_at_least(2)("2") == 2
    with pytest.raises(argparse.ArgumentTypeError, match=">= 2, got 1"):
        int_at_least(2)("1")
    assert pixel_radius("0") == 0 and pixel_radius("1") == 1
    for text in ("-0.1", "1.5", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"in \[0, 1\]"):
            pixel_radius(text)
    assert one_of("data", "model")("model") == "model"
    with pytest.raises(argparse.ArgumentTypeError, match="choose among data, model, got hybrid"):
        one_of("data", "model")("hybrid")


# ---- python -m nn_cuda.bench ------------------------------------------------------------------


def test_the_dispatcher_lists_the_benchmarks_and_rejects_an_unknown_one(capsys):
    assert bench_main([]) == 0
    listed = capsys.readouterr().out
    assert all(f"  {name} " in listed for name in BENCHMARKS)
    assert bench_main(["bogus"]) == 2
    assert "unknown benchmark 'bogus'" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted([*BENCHMARKS, *MOVED]))
def test_every_listed_benchmark_has_a_parser_and_a_main(name):
    module = importlib.import_module(SCRIPTS[name] if name in SCRIPTS else BENCHMARKS[name][0])
    assert callable(module.main)
    assert module.build_parser().prog == prog_of(name)


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_benchmark_that_became_a_script_names_the_script(name, capsys):
    # the committed records of these studies name `python -m nn_cuda.bench NAME`
    assert bench_main([name, "--json", "x.json"]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"python -m nn_cuda.bench: error: {name} is now a script: python {MOVED[name]} "
                     "(the same options, from the repository's root)")
    assert (REPO / MOVED[name]).is_file()


BAD_FLAGS = [
    ("scaling", ["--ranks", "0"], "--ranks"),
    ("scaling", ["--ranks", "1,x"], "--ranks"),
    ("scaling", ["--parallel", "data,bogus"], "--parallel"),
    ("scaling", ["--hidden", "0"], "--hidden"),
    ("scaling", ["--epochs", "0"], "--epochs"),
    ("scaling", ["--warmup-steps", "-1"], "--warmup-steps"),
    ("roofline", ["--repeat", "0"], "--repeat"),
    ("roofline", ["--copy-mib", "0"], "--copy-mib"),
    ("roofline", ["--copy-mib", "1"], "--copy-mib must be at least 64"),  # it measured the cache
    ("roofline", ["--max-size", "100"], "--max-size"),
    ("adversarial", ["--ranks", "2,1"], "--ranks"),
    ("adversarial", ["--eval-eps", "0.1,2"], "--eval-eps"),
    ("adversarial", ["--repeats", "0"], "--repeats"),
    ("adversarial", ["--backend", "bogus"], "--backend"),
    ("diff", ["--modes", "4"], "--modes"),
    ("diff", ["--mode-epochs", "0"], "--mode-epochs"),
    ("diff", ["--base", "lr=x"], "--base"),
    ("diff", ["--base", "hidden=0"], "--base"),
    ("diff", ["--hidden", "10,0"], "--hidden"),
    ("lr", ["--lr", "0.1,-1"], "--lr"),
    ("lr", ["--seeds", "a"], "--seeds"),
    ("train", ["--rounds", "0"], "--rounds"),
    # backends and GEMM algorithms are checked before any work (scaling: before any mpiexec job)
    ("train", ["--gemm", "numpy,bogus"], "--gemm bogus"),
    ("diff", ["--backend", "numpy", "--gemm", "tiled"], "--gemm tiled"),
    ("scaling", ["--gemm", "bogus"], "--gemm bogus"),
    ("scaling", ["--backend", "tpu"], "--backend"),
    ("scaling", ["--parallel", "hybrid", "--model-ranks", "3", "--ranks", "1,2"], "--model-ranks 3"),
    # a job that would fail on every rank (the first jobs ran, then a traceback, no record)
    ("scaling", ["--ranks", "1,2,3", "--batch", "2"], "--ranks 3 with --parallel data"),
    ("scaling", ["--parallel", "model", "--ranks", "3", "--hidden", "2"], "--hidden 2"),
    ("scaling", ["--comm", "nccl"], "--comm nccl"),
]


@pytest.mark.parametrize("name, flags, flag", BAD_FLAGS, ids=[" ".join([n, *f]) for n, f, _ in BAD_FLAGS])
def test_a_wrong_value_ends_with_one_error_line_naming_the_flag(name, flags, flag, capsys):
    with pytest.raises(SystemExit) as stop:
        run_command(name, flags)
    assert stop.value.code == 2
    last_line = capsys.readouterr().err.strip().splitlines()[-1]
    assert last_line.startswith(f"{prog_of(name)}: error: ")
    assert flag in last_line


@pytest.mark.parametrize("name", [*BENCHMARKS, *(name for name in SCRIPTS if name != "gpu-check")])
def test_a_benchmark_writes_a_record_only_where_json_says(name):
    # `bench adversarial` used to write results/adversarial.json, a committed record, when run alone
    module = importlib.import_module(SCRIPTS[name] if name in SCRIPTS else BENCHMARKS[name][0])
    assert module.build_parser().parse_args([]).json is None

def test_lists_reach_the_benchmarks_as_lists():
    import bench_adversarial as adversarial
    import bench_diff as diff
    from nn_cuda.bench import scaling

    args = scaling.build_parser().parse_args(["--ranks", "1,2", "--parallel", "data,model"])
    assert args.ranks == [1, 2] and args.parallel == ["data", "model"]
    args = adversarial.build_parser().parse_args(["--ranks", "3", "--eval-eps", "0.05,0.1"])
    assert args.ranks == [3] and args.eval_eps == [0.05, 0.1]
    assert diff.build_parser().parse_args(["--modes", ""]).modes == []


# ---- ./run.sh ---------------------------------------------------------------------------------

# Stands in for `python`: answers run.sh's two probes (is there a GPU? is torch installed?) as told by
# FAKE_GPU / FAKE_TORCH, and records every other command line instead of running it.
FAKE_PYTHON = """\
import json, os, sys
args = sys.argv[1:]
if args[:1] == ["-"]:
    sys.stdin.read()
    sys.exit(0 if os.environ["FAKE_GPU"] == "1" else 1)
if args[:1] == ["-c"]:
    sys.exit(0 if os.environ["FAKE_TORCH"] == "1" else 1)
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
"""


def run_sh_commands(tmp_path, target, gpu, torch) -> list[list[str]]:
    return run_sh(tmp_path, target, gpu, torch)[0]


def run_sh(tmp_path, target, gpu, torch) -> tuple[list[list[str]], str]:
    """(the command lines ./run.sh TARGET gives python, its stderr), with python faked."""
    fake = tmp_path / "python"
    fake.write_text(f"#!{sys.executable}\n{FAKE_PYTHON}")
    fake.chmod(0o755)
    log = tmp_path / "commands.jsonl"
    env = {**os.environ, "PYTHON": str(fake), "FAKE_LOG": str(log), "FAKE_GPU": "1" if gpu else "0",
           "FAKE_TORCH": "1" if torch else "0", "NN_CUDA_BENCH_DIR": str(tmp_path / "results")}
    job = subprocess.run(["bash", str(REPO / "run.sh"), target], env=env, capture_output=True, text=True)
    assert job.returncode == 0, job.stderr
    return [json.loads(line) for line in log.read_text().splitlines()], job.stderr


@pytest.mark.parametrize("gpu, torch", [(False, False), (True, True)], ids=["cpu", "gpu+torch"])
def test_every_command_of_run_sh_all_parses_and_writes_into_the_results_folder(tmp_path, gpu, torch):
    commands = run_sh_commands(tmp_path, "all", gpu, torch)
    benchmarks_run = set()
    for command in commands:
        if command[0].startswith("scripts/"):
            command = ["-m", "nn_cuda.bench", next(n for n, path in MOVED.items() if path == command[0]),
                       *command[1:]]
        assert command[0] == "-m", command
        if command[1] == "nn_cuda.train":
            args = train_parser().parse_args(command[2:])
            assert args.history, command  # every training run of run.sh leaves its record
            outputs = [path for path in (args.history, args.profile) if path]
        elif command[1] == "nn_cuda.data":
            assert command[2] == "info", command  # run.sh asks whether Fashion-MNIST is there
            outputs = []
        elif command[1] == "nn_cuda.kernel_resources":
            outputs = [kernel_resources.build_parser().parse_args(command[2:]).json]
        else:
            assert command[1] == "nn_cuda.bench", command
            name = command[2]
            benchmarks_run.add(name)
            module = SCRIPTS[name] if name in SCRIPTS else BENCHMARKS[name][0]
            args = importlib.import_module(module).build_parser().parse_args(command[3:])
            outputs = [args.json]
        for path in outputs:
            assert Path(path).parent == tmp_path / "results", command
    assert benchmarks_run == {*BENCHMARKS, *MOVED} - {"gpu-check"}, "./run.sh all must run every benchmark"
    assert ["-m", "nn_cuda.kernel_resources", "--json", str(tmp_path / "results" / "resources.json")] in commands
    flat = [" ".join(c) for c in commands]
    assert any("--backend cupy" in c for c in flat) == gpu
    assert any("--torch" in c for c in flat) == torch


def test_run_sh_says_which_command_of_which_target_runs(tmp_path):
    # ./run.sh all runs for hours: before each command, one line with its target, its number and the
    # time so far.
    commands, stderr = run_sh(tmp_path, "all", gpu=False, torch=False)
    said = re.findall(r"^run\.sh ([\w-]+), command (\d+) \((\d+) s so far\): (.+)$", stderr, re.MULTILINE)
    assert [int(number) for _, number, _, _ in said] == list(range(1, len(said) + 1))
    targets = list(dict.fromkeys(target for target, _, _, _ in said))
    assert targets == ["roofline", "train", "scaling", "adversarial", "accuracy", "emulated", "gemm", "resources",
                       "diff", "curves", "lr"]
    # every benchmark and training command is announced (not the probes: GPU, torch, Fashion-MNIST)
    announced = [line for _, _, _, line in said]
    run = [command for command in commands if command[1:2] != ["nn_cuda.data"]]
    assert len(announced) <= len(run) and all(any(" ".join(c) in line for line in announced) for c in run)


def test_run_sh_gpu_check_writes_into_the_results_folder(tmp_path):
    [command] = run_sh_commands(tmp_path, "gpu-check", gpu=True, torch=False)
    assert command[:2] == ["scripts/gpu_check.py", "--out"]
    assert Path(gpu_check.build_parser().parse_args(command[1:]).out) == tmp_path / "results"


def test_gpu_check_refuses_to_run_without_a_gpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_check, "gpu_name", lambda: None)
    with pytest.raises(SystemExit) as stop:
        gpu_check.main(["--out", str(tmp_path)])
    assert stop.value.code == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_gpu_check_sums_up_each_step_from_its_own_output(tmp_path):
    (tmp_path / "history_cupy.json").write_text(json.dumps({"test_acc": 0.9731, "train_seconds": 4.123}))
    (tmp_path / "gemm_cupy_float32.json").write_text(json.dumps({"results": [
        {"algo": "regblock", "trans": "NN", "M": 800, "N": 1000, "K": 784, "percent_of_cublas": 41.26},
        {"algo": "regblock", "trans": "NT", "M": 800, "N": 1000, "K": 784, "percent_of_cublas": 30.0},
    ]}))
    (tmp_path / "gemm_numba_float32.json").write_text(json.dumps({"results": [
        {"algo": "regblock", "trans": "NN", "M": 800, "N": 1000, "K": 784, "gflops": 512.34},
    ]}))
    records = [
        {"name": "cupy tests", "passed": True, "returncode": 0, "seconds": 80.0,
         "output_tail": "523 passed, 12 skipped in 80.0s"},
        {"name": "bench gemm cupy", "passed": True, "returncode": 0, "seconds": 20.0},
        {"name": "default training cupy", "passed": False, "returncode": 1, "seconds": 9.0},
        {"name": "bench gemm numba", "passed": True, "returncode": 0, "seconds": 20.0},
    ]
    for record in records:
        record["numbers"] = gpu_check.measured_numbers(tmp_path, record)
    assert records[0]["numbers"] == {"passed": 523, "skipped": 12}
    assert records[1]["numbers"] == {"regblock 800x1000x784 % of cuBLAS": 41.3}
    assert records[2]["numbers"] == {"test accuracy": 0.9731, "training seconds": 4.12}
    assert records[3]["numbers"] == {"regblock 800x1000x784 GFLOP/s": 512.3}
    lines = gpu_check.summary_lines(records)
    assert lines[0].startswith("cupy tests") and "PASS" in lines[0] and "passed 523" in lines[0]
    assert "FAIL (exit 1)" in lines[2]
    markdown = gpu_check.summary_markdown({"cpu": "EPYC", "cores": 2, "date": "2026-11-23"}, records)
    assert "| default training cupy | FAIL (exit 1) | 9.0 | test accuracy 0.9731, training seconds 4.12 |" in markdown


def test_run_sh_rejects_an_unknown_target(tmp_path):
    job = subprocess.run(["bash", str(REPO / "run.sh"), "bogus"], capture_output=True, text=True,
                         env={**os.environ, "NN_CUDA_BENCH_DIR": str(tmp_path)})
    assert job.returncode == 2
    assert "usage: ./run.sh [--update] gemm|train|" in job.stderr


# ---- roofline and adversarial, tiny --------------------------------------------------------------


def test_arithmetic_intensity_by_hand():
    # 2x2x2: 16 FLOP; A, B read (4 + 4 elements), C read and written (8) -> 16 x 4 bytes
    assert intensity(2, 2, 2, 4) == pytest.approx(16 / 64)
    assert intensity(2, 2, 2, 4, beta_nonzero=False) == pytest.approx(16 / 48)


def test_roofline_measures_the_squares_and_the_course_sizes(tmp_path, capsys):
    out = tmp_path / "roofline.json"
    assert roofline.main(["--copy-mib", "64", "--max-size", "1023", "--repeat", "2", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    # the GPU through CuPy where there is one (as on a GPU machine), else the CPU
    assert data["benchmark"] == "roofline" and data["device"] == roofline._device().name
    assert [row["M"] for row in data["squares"]] == [512]  # 1024 is above --max-size
    assert [(r["M"], r["N"], r["K"]) for r in data["course_sizes"]] == roofline.COURSE_GEMM_SIZES
    rows = data["squares"] + data["course_sizes"]
    assert data["peak_gflops"] == max(row["gflops"] for row in rows) > 0
    assert data["bandwidth_bytes_per_s"] > 0
    for row in rows:
        assert row["intensity"] == intensity(row["M"], row["N"], row["K"], 4)
    assert "copy bandwidth" in capsys.readouterr().out


def test_adversarial_benchmark_runs_serial_and_async_and_reports_both(tmp_path):
    out = tmp_path / "adversarial.json"
    job = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_adversarial.py"), "--ranks", "2", "--hidden", "8", "--batch", "50",
         "--epochs", "1", "--repeats", "1", "--eval-limit", "20", "--eval-steps", "2", "--eval-eps", "0,0.1",
         "--json", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=280)
    assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-2000:]
    data = json.loads(out.read_text())
    (row,) = data["results"]
    assert (row["ranks"], row["k"]) == (2, 1)
    assert row["speedup"] == pytest.approx(row["serial_seconds"] / row["async_seconds"])
    # every training batch of the async run was consumed once: 3,600 training images / 50
    assert sum(row["staleness_histogram"].values()) == math.ceil(3600 / 50)
    for table in (data["plain"]["robustness"], row["serial_robustness"], row["async_robustness"]):
        assert [r["eps"] for r in table] == [0.0, 0.1]
        assert all(0 <= r[key] <= 1 for r in table for key in ("clean", "fgsm", "pgd"))
        assert table[0]["fgsm"] == table[0]["pgd"] == table[0]["clean"]  # eps 0 attacks nothing
    assert "| 2 | 1 |" in job.stdout


# ---- a user's runs never rewrite the repository ------------------------------------------------

#: the fake python of a scratch clone: records the command like FAKE_PYTHON, and writes a file at each
#: path its output flags name, as the benchmark would
WRITING_PYTHON = FAKE_PYTHON + """\
for flag in ("--json", "--history", "--profile", "--out"):
    if flag in args:
        path = args[args.index(flag) + 1]
        target = os.path.join(path, "gpu_check.json") if flag == "--out" else path
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        open(target, "w").write("{}")
"""


def scratch_clone(tmp_path) -> Path:
    """A git repository holding the tracked files of this checkout as they are now (edits included)."""
    clone = tmp_path / "clone"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "scratch"]):
        subprocess.run([*git, *command], cwd=clone, check=True, capture_output=True)
    fake = tmp_path / "python"
    fake.write_text(f"#!{sys.executable}\n{WRITING_PYTHON}")
    fake.chmod(0o755)
    return clone


def run_in(clone, tmp_path, *arguments) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": str(tmp_path / "python"), "FAKE_LOG": str(tmp_path / "log.jsonl"),
           "FAKE_GPU": "1", "FAKE_TORCH": "0"}
    env.pop("NN_CUDA_BENCH_DIR", None)
    return subprocess.run(["bash", str(clone / "run.sh"), *arguments], env=env, capture_output=True, text=True,
                          cwd=clone)


def git_status(clone) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True,
                          check=True).stdout


def test_the_documented_benchmarks_leave_the_repository_as_it_was(tmp_path):
    clone = scratch_clone(tmp_path)
    for target in ("all", "gpu-check"):
        job = run_in(clone, tmp_path, target)
        assert job.returncode == 0, job.stderr
    assert (clone / "runs" / "gemm_cupy_float32.json").is_file()  # the runs went to runs/
    # and the report of them to runs/report/ (from copies of the committed records, as real runs)
    for record in (REPO / "results").glob("*.json"):
        (clone / "runs" / record.name).write_bytes(record.read_bytes())
    report = subprocess.run([sys.executable, "-m", "nn_cuda.report", "--no-pdf"], cwd=clone, capture_output=True,
                            text=True, env={k: v for k, v in os.environ.items() if k != "NN_CUDA_BENCH_DIR"})
    assert report.returncode == 0, report.stderr
    assert (clone / "runs" / "report" / "REPORT.md").is_file()
    assert git_status(clone) == "", "a documented command without --update changed the repository"


def test_update_is_the_explicit_way_to_rewrite_the_committed_records(tmp_path):
    clone = scratch_clone(tmp_path)
    assert run_in(clone, tmp_path, "--update", "train").returncode == 0
    assert "results/train_numpy.json" in git_status(clone)


def test_run_sh_alone_prints_its_targets_and_runs_nothing(tmp_path):
    job = subprocess.run(["bash", str(REPO / "run.sh")], capture_output=True, text=True,
                         env={**os.environ, "PYTHON": "/nonexistent/python"})
    assert job.returncode == 0 and "./run.sh [--update] TARGET" in job.stdout
    for target in ("gemm", "accuracy", "gpu-check", "all"):
        assert f"./run.sh {target}" in job.stdout


def test_gpu_vs_cpu_counts_the_bits_two_saves_share(tmp_path, monkeypatch, capsys):
    # The script behind docs/kernels.md's comparison of the CPU runner with an H200: here two saves
    # of the NumPy backend, one of them with one element moved by its last bit.
    import gpu_vs_cpu

    monkeypatch.setattr(gpu_vs_cpu, "COURSE_GEMM_SIZES", [(8, 5, 7)])
    first, second = tmp_path / "first.npz", tmp_path / "second.npz"
    assert gpu_vs_cpu.main(["gemm", "--backend", "numpy", "--out", str(first)]) == 0
    saved = dict(np.load(first))
    moved = saved["numpy_8x5x7"].copy()
    moved.view(np.uint32)[0, 0] += 1
    np.savez(second, numpy_8x5x7=moved, settings=np.array("not a float"))
    capsys.readouterr()
    assert gpu_vs_cpu.main(["compare", str(first), str(second)]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("numpy_8x5x7")]
    difference, equal, first_error, second_error = row.split()[1:]
    assert 0 < float(difference) < 1e-6 and equal == f"{39 / 40:.1%}"
    assert float(first_error) < 1e-6 and float(second_error) < 1e-6


def test_gpu_vs_cpu_refuses_in_one_line_what_it_cannot_read_or_write(tmp_path, monkeypatch, capsys):
    # each of these was a traceback (or a misleading pickle message), one after all the products
    import gpu_vs_cpu

    monkeypatch.setattr(gpu_vs_cpu, "COURSE_GEMM_SIZES", [(4, 3, 2)])
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as stop:
        gpu_vs_cpu.main(["gemm", "--backend", "numpy", "--out", str(blocker / "g.npz")])
    assert stop.value.code == 2 and "--out" in capsys.readouterr().err
    (tmp_path / "record.json").write_text("{}")
    for missing_or_not_npz in (tmp_path / "nothere.npz", tmp_path / "record.json"):
        with pytest.raises(ValueError, match=f"{missing_or_not_npz}: no such file|{missing_or_not_npz} is not a .npz"):
            gpu_vs_cpu.main(["compare", str(missing_or_not_npz), str(missing_or_not_npz)])
    # a name without .npz is written under that very name, the one printed
    assert gpu_vs_cpu.main(["gemm", "--backend", "numpy", "--out", str(tmp_path / "plain")]) == 0
    assert (tmp_path / "plain").is_file() and f"wrote {tmp_path / 'plain'}" in capsys.readouterr().out


def test_gpu_check_times_numba_at_the_course_sizes_only(tmp_path):
    # at 8000 x 10000 x 7840 Numba's naive kernel took about 1 s a call on an H200: the check took minutes
    (numba,) = [step for step in gpu_check.steps(tmp_path) if step["name"] == "bench gemm numba"]
    assert numba["command"][numba["command"].index("--sizes") + 1] == "800x1000x784,800x10x1000,800x100x1000"
    (cupy,) = [step for step in gpu_check.steps(tmp_path) if step["name"] == "bench gemm cupy"]
    assert "--sizes" not in cupy["command"]  # cuBLAS's comparison keeps the large sizes


def test_a_benchmark_shows_its_progress_into_a_log_too(tmp_path):
    # `./run.sh gemm > log 2>&1` was silent until each table (the bars showed on a terminal only)
    result = subprocess.run([sys.executable, "-m", "nn_cuda.bench", "gemm", "--backend", "numpy", "--sizes",
                             "9x5x3,7x3x2", "--trans", "NN"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "2/2" in result.stderr and "case" in result.stderr, result.stderr
