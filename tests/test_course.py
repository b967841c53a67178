"""The course as a student takes it (python -m nn_cuda.course): a workspace generated from the project's
own kernels and MPI step, every task failing clearly until written, and passing once written."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import course, kernel_checks, kernel_info, workspace

ROOT = Path(__file__).resolve().parent.parent
SMALL_SIZES = ((1, 1, 1), (17, 31, 33), (40, 70, 45))
TASKS = ["naive", "tiled", "regblock", "bias_sigmoid", "bias_softmax", "softmax_grad", "sigmoid_backward",
         "col_sum", "sgd_update", "mpi_rows", "mpi_allreduce"]


def fill(folder: Path, name: str, edit=None) -> None:
    """Write task `name` of the workspace with the reference body (edited by `edit` if given)."""
    task = workspace.task_named(name)
    path = folder / task.file
    lines = path.read_text().splitlines()
    todo = next(i for i, line in enumerate(lines) if workspace.TODO.format(name=name) in line)
    stand_in = 2 if task.file.endswith(".py") else 1  # the TODO comment (and the Python raise)
    body = "\n".join(workspace.reference_body(task))
    lines[todo:todo + stand_in] = (edit(body) if edit else body).splitlines()
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def small_checks(monkeypatch):
    monkeypatch.setattr(kernel_checks, "GEMM_SIZES", SMALL_SIZES)


def test_the_tasks_are_the_ladder_the_element_wise_kernels_and_the_mpi_step():
    assert [task.name for task in workspace.tasks()] == TASKS
    assert workspace.task_named("tiled").file == "kernels/gemm2_tiled.cu"
    with pytest.raises(ValueError, match="no task 'tild'; the tasks are: naive, tiled"):
        workspace.task_named("tild")


def test_the_workspace_is_the_reference_without_its_bodies():
    """Filling every skeleton with the reference bodies gives the reference back (less the END
    markers): the exercise cannot drift from the code it comes from."""
    for file, source in workspace._task_files():
        reference = source.read_text()
        refilled = workspace.skeleton(reference).splitlines()
        for task in reversed([t for t in workspace.tasks() if t.file == file]):
            at = next(i for i, line in enumerate(refilled) if workspace.TODO.format(name=task.name) in line)
            refilled[at:at + (2 if file.endswith(".py") else 1)] = workspace.reference_body(task)
        assert refilled == [line for line in reference.splitlines() if not workspace._END.match(line)], file


def test_start_writes_a_workspace_and_never_overwrites_one(tmp_path, capsys):
    folder = tmp_path / "me"
    assert course.main(["start", str(folder)]) == 0
    names = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    assert names == ["data_parallel.py", *sorted(f"kernels/{p.name}" for p in kernel_info.project_kernel_dir().iterdir()
                                                 if p.suffix in (".cu", ".cuh"))]
    tiled = (folder / "kernels" / "gemm2_tiled.cu").read_text()
    code = [line for line in tiled.split("gemm_tiled(")[1].splitlines() if not line.lstrip().startswith("//")]
    assert "__syncthreads" not in "".join(code) and "a_tile" not in "".join(code)  # the body is gone
    assert "// TASK tiled: declare two TILE x (TILE + 1) __shared__ tiles" in tiled
    assert "// launch: block (TILE, TILE), C tile (TILE, TILE)" in tiled
    assert f"then: python -m nn_cuda.course check {folder}" in capsys.readouterr().out
    assert course.main(["start", str(folder)]) == 2
    assert "already exists and is not an empty folder" in capsys.readouterr().err


def test_a_fresh_workspace_fails_every_task_clearly_and_a_filled_one_passes(tmp_path, capsys, small_checks):
    folder = tmp_path / "me"
    workspace.start(folder)
    for task in workspace.tasks():
        report = workspace.check_task(folder, task, "cuda-cpu")
        assert not report.passed
        assert re.fullmatch(rf"task {task.name}: not written yet: the TODO is at {re.escape(str(folder / task.file))}:\d+"
                            r" \(a task counts as written once its TODO line is gone\)", report.lines[0])
    assert course.main(["check", str(folder)]) == 1
    assert "task naive: not written yet" in capsys.readouterr().out
    for name in TASKS:
        fill(folder, name)
    assert course.main(["check", str(folder), "--backend", "cuda-cpu"]) == 0
    out = capsys.readouterr().out
    assert all(f"task {name}: PASS" in out for name in TASKS) and "all 11 task(s) pass" in out


def test_a_wrong_task_fails_with_the_case_the_element_and_a_hint(tmp_path, capsys, small_checks):
    folder = tmp_path / "me"
    workspace.start(folder)
    fill(folder, "naive")  # the later tasks still hold their TODOs: the files compile as they are
    fill(folder, "tiled", lambda body: body.replace("if (i < M && j < N) {", "if (i < M && j < N - 1) {"))
    assert course.main(["check", str(folder), "tiled"]) == 1
    out = capsys.readouterr().out
    # the smallest case shows it first: C is 1 x 1, a single partial tile whose last column is skipped
    assert "task tiled: FAIL  gemm tiled: 1 x 1 x 1 NN, alpha 1.5, beta 0.5, float32" in out
    assert "1 of 1 elements wrong; the first is C[0, 0]" in out and "hint: every element is wrong" in out
    fill(folder, "mpi_rows", lambda body: body.replace("min(rank, batch_rows % ranks)", "0"))
    assert course.main(["check", str(folder), "mpi_rows"]) == 1
    assert "rows_of_rank(1, 2, 1) = (0, 0), expected (1, 1)" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", ["comm.Reduce(MPI.IN_PLACE if comm.rank == 0 else gradients, gradients, op=MPI.SUM)",
                                   "comm.Allreduce(MPI.IN_PLACE, gradients, op=MPI.MAX)"])
def test_a_wrong_allreduce_fails_naming_a_rank(tmp_path, capsys, wrong):
    folder = tmp_path / "me"
    workspace.start(folder)
    fill(folder, "mpi_allreduce", lambda body: body.replace("comm.Allreduce(MPI.IN_PLACE, gradients, op=MPI.SUM)",
                                                            wrong))
    assert course.main(["check", str(folder), "mpi_allreduce"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"task mpi_allreduce: FAIL  rank \d holds \[", out) and "hint: every rank must end" in out


@pytest.mark.parametrize("task, body, expected", [
    ("mpi_rows", "    return batch_rows, ranks + rnk", r"task mpi_rows: FAIL  NameError: name 'rnk' is not defined, in "
                                                 r"rows_of_rank\(0, 1, 0\) at .*data_parallel.py:\d+$"),
    ("mpi_rows", "    while True:\n        pass", r"task mpi_rows: FAIL  not finished in 4 s: a loop that never ends\?$"),
    ("mpi_allreduce", "    comm.Allreduce(gradients)", r"task mpi_allreduce: FAIL  TypeError: .*, in "
                                                         r"allreduce_gradients\(comm, gradients\) at .*data_parallel.py:\d+$"),
    # rank 0 alone calls the collective: the others end, it waits for ever
    ("mpi_allreduce", "    if comm.rank == 0:\n        comm.Allreduce(MPI.IN_PLACE, gradients, op=MPI.SUM)",
     r"task mpi_allreduce: FAIL  not finished in 4 s: does every rank call the collective, once\?$"),
])
def test_an_mpi_task_that_raises_or_never_ends_is_a_verdict_naming_it(tmp_path, monkeypatch, task, body, expected):
    folder = tmp_path / "me"
    workspace.start(folder)
    fill(folder, task, lambda reference: "\n".join(
        line for line in reference.splitlines() if line.strip().startswith("from ")) + "\n" + body)
    monkeypatch.setattr(workspace, "PROBE_SECONDS", 4)
    report = workspace.check_task(folder, workspace.task_named(task), "cuda-cpu")
    assert not report.passed and re.match(expected, report.lines[0]), report.lines
    # nothing the check started is left running (mpiexec's proxies and the ranks included), once the
    # ones it ended have had a moment to go
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", str(folder)], capture_output=True).stdout and time.monotonic() < deadline:
        time.sleep(0.1)
    assert subprocess.run(["pgrep", "-f", str(folder)], capture_output=True).stdout == b""




def test_training_with_the_students_mpi_task_equals_the_projects(tmp_path):
    folder = tmp_path / "me"
    workspace.start(folder)
    fill(folder, "mpi_rows")
    fill(folder, "mpi_allreduce")
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    saved = []
    for extra in ([], ["--mpi-task", str(folder / "data_parallel.py")]):
        out = tmp_path / f"run{len(saved)}.npz"
        run = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "nn_cuda.train", "--dataset", "mnist-sample",
                              "-n", "16", "-b", "100", "--max-steps", "4", "--dtype", "float64", "--quiet",
                              "--save", str(out), *extra],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path, env=os.environ)
        assert run.returncode == 0, run.stderr
        saved.append(np.load(out))
    for name in ("W1", "W2", "b1", "b2"):
        assert np.array_equal(saved[0][name], saved[1][name]), name


@pytest.mark.parametrize("written", [[], ["mpi_rows"]])
def test_training_with_an_unwritten_mpi_task_ends_in_one_line_naming_it(tmp_path, written):
    folder = tmp_path / "me"
    workspace.start(folder)
    for name in written:
        fill(folder, name)
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    run = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "nn_cuda.train", "--dataset", "mnist-sample",
                          "-n", "16", "--max-steps", "1", "--quiet", "--mpi-task", str(folder / "data_parallel.py")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=os.environ)
    unwritten = "mpi_allreduce" if written else "mpi_rows"
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr
    assert (f"nn_cuda.train: error: --mpi-task {folder / 'data_parallel.py'}: task {unwritten} is not written yet; "
            f"write it, then python -m nn_cuda.course check {folder} checks it") in run.stderr


@pytest.mark.parametrize("task, body, expected", [
    # every rank takes the whole batch: the gradient counted twice, and a run that ended as if right
    ("mpi_rows", "    return 0, batch_rows", r"rows_of_rank\(100, 2, r\) for r = 0..1 gives \[\(0, 100\), \(0, 100\)\]: "
     r"the shares must cover rows 0..99 once"),
    # the remainder dropped: the last batch (3600 = 36 x 100 exactly, so -b 7: 3600 % 7 = 2 rows) loses rows
    ("mpi_rows", "    share = batch_rows // ranks\n    return rank * share, (rank + 1) * share",
     r"rows_of_rank\(7, 2, r\) for r = 0..1 gives \[\(0, 3\), \(3, 6\)\]"),
    # an allreduce left out: every rank trains on its own share alone
    ("mpi_allreduce", "    pass", r"the ranks' parameters differ after training \(2 versions\): allreduce_gradients must "
     r"leave every rank with the sum over all ranks; python -m nn_cuda.course check .* mpi_allreduce checks it"),
])
def test_training_with_a_wrong_mpi_task_ends_in_one_line_naming_it(tmp_path, task, body, expected):
    folder = tmp_path / "me"
    workspace.start(folder)
    fill(folder, task, lambda reference: body)
    fill(folder, "mpi_allreduce" if task == "mpi_rows" else "mpi_rows")
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    batch = "7" if "share" in body else "100"
    run = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "nn_cuda.train", "--dataset", "mnist-sample",
                          "-n", "16", "-b", batch, "--max-steps", "3", "--quiet", "--mpi-task",
                          str(folder / "data_parallel.py")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=os.environ)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert re.search(f"nn_cuda.train: error: --mpi-task {re.escape(str(folder / 'data_parallel.py'))}: {expected}",
                     run.stderr), run.stderr


def test_training_on_a_workspace_with_unwritten_kernels_refuses_naming_the_first(tmp_path, monkeypatch, capsys):
    from nn_cuda.train import main as train_main

    folder = tmp_path / "me"
    workspace.start(folder)
    for name in ("naive", "bias_sigmoid"):
        fill(folder, name)
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(folder / "kernels"))
    argv = ["--backend", "cuda-cpu", "--dataset", "mnist-sample", "-n", "8", "--max-steps", "1", "--quiet"]
    assert train_main(argv) != 0
    error = capsys.readouterr().err
    first = workspace.unfinished(folder, workspace.task_named("bias_softmax"))
    assert f"nn_cuda.train: error: {first} (task bias_softmax) is not written yet (and 4 more): " in error, error
    assert f"python -m nn_cuda.course check {folder}" in error
    assert train_main([*argv, "--gemm", "tiled"]) != 0  # the GEMM it launches is a TODO too
    assert "gemm2_tiled.cu:" in capsys.readouterr().err


def test_grading_a_workspace_with_unwritten_kernels_says_which(tmp_path, monkeypatch, capsys):
    # modes 1-3 train: one line naming the first TODO (it was a diverged run, advising a lower lr);
    # mode 4 grades the GEMM alone: FAIL, and the line that says why
    from nn_cuda import grade

    folder = tmp_path / "me"
    workspace.start(folder)
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(folder / "kernels"))
    common = ["--backend", "cuda-cpu", "--dataset", "mnist-sample", "--outputs", str(tmp_path / "Outputs")]
    assert grade.main(["--mode", "1", *common, "--max-steps", "1"]) == 1
    first = workspace.unfinished(folder, workspace.task_named("naive"))
    assert f"nn_cuda.grade: error: {first} (task naive) is not written yet (and " in capsys.readouterr().err
    monkeypatch.setattr("nn_cuda.grade_gemm.COURSE_GEMM_SIZES", ((3, 5, 7),))
    assert grade.main(["--mode", "4", *common]) == 1
    printed = capsys.readouterr().out
    assert f"the kernel is not written yet: {first} (task naive); write it, and check it with python -m " \
           f"nn_cuda.course check {folder}" in printed and "mode 4: FAIL" in printed


def test_mpi_task_is_refused_with_other_mpi_options(capsys):
    from nn_cuda.config import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--mpi-task", "x.py", "--overlap"])
    assert "--mpi-task replaces the split and the allreduce" in capsys.readouterr().err


def test_mpi_task_without_mpirun_is_refused_in_one_line(capsys, monkeypatch):
    # one process would train alone and never call the task: refused, saying how to launch it
    from nn_cuda import parallel
    from nn_cuda.train import main as train_main

    monkeypatch.setattr(parallel, "launched_by_mpi", lambda: False)  # even if pytest itself runs under one
    assert train_main(["--mpi-task", "mine.py", "--dataset", "mnist-sample", "--max-steps", "1", "--quiet"]) != 0
    error = capsys.readouterr().err
    assert "nn_cuda.train: error: --mpi-task mine.py runs under an MPI launcher" in error
    assert "mpirun -n 4 python -m nn_cuda.train --mpi-task mine.py" in error and "Traceback" not in error


def test_grade_kernels_takes_workspaces_and_kernel_folders_naming_rows_by_their_paths(tmp_path, small_checks):
    from nn_cuda import grade

    alice, bob = tmp_path / "class" / "alice", tmp_path / "class" / "bob"
    workspace.start(alice)
    for task in TASKS[:-1]:  # all but the Allreduce
        fill(alice, task)
    workspace.start(tmp_path / "new")
    bob.mkdir()
    (tmp_path / "new" / "kernels").rename(bob / "kernels")  # a kernels folder alone: every task a TODO
    out = tmp_path / "out"
    assert grade.main(["--kernels", str(alice), str(bob / "kernels"), "--outputs", str(out)]) == 1
    header, alice_row, bob_row = [line.split(",") for line in (out / "kernels.csv").read_text().splitlines()[:3]]
    assert header[:2] == ["folder", "gemm naive"] and header[-3:] == ["mpi_rows", "mpi_allreduce", "first failure"]
    cells = dict(zip(header, alice_row))
    assert alice_row[0] == "alice" and cells["mpi_rows"] == "PASS" and cells["mpi_allreduce"] == "TODO"
    assert all(cells[name].startswith("PASS ") for name in header[1:-3]), alice_row
    assert cells["first failure"].startswith("mpi_allreduce: not written yet: the TODO is at ")
    cells = dict(zip(header, bob_row))
    assert bob_row[0] == "bob/kernels" and cells["mpi_rows"] == cells["mpi_allreduce"] == "-"
    assert [cells[f"gemm {name}"] for name in TASKS[:3]] == ["TODO"] * 3 and cells["pgd_step"] == "PASS 8/8"


def test_grade_kernels_refuses_a_folder_without_kernels_in_one_line(tmp_path, capsys):
    from nn_cuda import grade

    (tmp_path / "empty").mkdir()
    assert grade.main(["--kernels", str(tmp_path / "empty")]) == 2
    assert "holds no .cu files and no kernels/ folder with them" in capsys.readouterr().err


def test_checking_a_folder_that_is_no_workspace_says_only_that(tmp_path, capsys):
    assert course.main(["check", str(tmp_path / "nowhere")]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == (f"nn_cuda.course: error: {tmp_path / 'nowhere'} has no kernels/ "
                                                 f"folder: make a workspace with python -m nn_cuda.course start "
                                                 f"{tmp_path / 'nowhere'}\n")


def test_a_backend_this_machine_cannot_run_is_one_error_not_a_failed_task(tmp_path, monkeypatch, capsys):
    from nn_cuda import grade, kernel_check_runs
    from nn_cuda.backends import BackendUnavailable

    def no_gpu(name, gemm=None):
        raise BackendUnavailable(f"the {name!r} backend needs a GPU here")

    monkeypatch.setattr(course, "get_backend", no_gpu)
    monkeypatch.setattr(kernel_check_runs, "get_backend", no_gpu)
    workspace.start(tmp_path / "me")
    assert course.main(["check", str(tmp_path / "me"), "naive", "--backend", "cupy"]) == 2
    printed = capsys.readouterr()
    assert "task naive" not in printed.out + printed.err
    assert printed.err == "nn_cuda.course: error: the 'cupy' backend needs a GPU here\n"
    assert grade.main(["--kernels", str(tmp_path / "me"), "--backend", "cupy", "--outputs", str(tmp_path / "out")]) == 1
    printed = capsys.readouterr()
    assert printed.err.strip() == "nn_cuda.grade: error: the 'cupy' backend needs a GPU here" and printed.out == ""
    assert not (tmp_path / "out").exists()


def test_the_verdict_of_a_rank_that_raises_is_also_written_where_the_check_reads_it(tmp_path):
    # MPI_Abort may end mpiexec before it passes the rank's printed line on: the check then said only
    # "the check ended with status 1: no output" (seen once in CI); the line goes to a file too
    student = tmp_path / "data_parallel.py"
    student.write_text("def allreduce_gradients(comm, gradients):\n    comm.Allreduce(gradients)\n")
    verdict = tmp_path / "verdict.txt"
    subprocess.run([sys.executable, "-c", f"from nn_cuda.workspace import allreduce_probe; "
                                          f"allreduce_probe({str(student)!r}, {str(verdict)!r})"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    assert re.match(r"task mpi_allreduce: FAIL  TypeError: .*, in allreduce_gradients\(comm, gradients\) at "
                    r".*data_parallel\.py:2$", verdict.read_text().strip())
