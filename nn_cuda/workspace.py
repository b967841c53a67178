"""The student's workspace of the course: the kernels and the MPI step to write, generated from the
project's own code.

Each task is a body between two markers in kernels/*.cu (or, for the MPI task, in
nn_cuda/parallel/course_task.py with # comments), the first followed by the plan:

    {
        // TASK tiled: declare two TILE x (TILE + 1) __shared__ tiles. For each step of TILE ...
        //   ... About 30 lines.
        ...the reference body...
        // END TASK
    }

`start` copies kernels/ (and course_task.py as data_parallel.py) with every task's body replaced by
its plan and a TODO, so the header comments, the constants, the launch lines and the signatures stay,
and the exercise can never drift from the code it comes from. `check` runs a task's checks
(nn_cuda.kernel_checks for a kernel; for the MPI task the split in a process of its own and an
Allreduce under mpiexec, each stopped after PROBE_SECONDS) on the student's files, in the course's
order, and stops at the first failure.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from . import kernel_check_runs, kernel_info
from .parallel import course_task
from .parallel.mpi import ParallelError, find_mpiexec

_TASK = re.compile(r"^(?P<indent>\s*)(?P<comment>//|#) TASK (?P<name>\w+): ")
_PLAN = re.compile(r"^\s*(//|#)   ")
_END = re.compile(r"^\s*(//|#) END TASK$")
#: the text that stands for a task's body in the workspace; `check` looks for it
TODO = kernel_info.TASK_TODO
#: the lines that stand for a task's body, by comment syntax (a Python body must still be a statement)
_TODO_LINES = {
    "//": ["// " + TODO + ": replace this line with the kernel's body, following the plan above"],
    "#": ["# " + TODO + ": replace these two lines with the function's body, following the plan above",
          'raise NotImplementedError("task {name} is not written yet")'],
}
#: the MPI task's file in the workspace (from nn_cuda/parallel/course_task.py)
MPI_TASK_FILE = "data_parallel.py"


@dataclasses.dataclass(frozen=True)
class Task:
    name: str  # 'tiled', 'col_sum', 'mpi_rows'
    file: str  # its file in the workspace: 'kernels/gemm2_tiled.cu', 'data_parallel.py'
    source: Path  # the project's file it comes from
    line: int  # the line of its TASK marker there

    @property
    def is_kernel(self) -> bool:
        return self.file.startswith("kernels/")

    @property
    def check(self) -> str:
        """Its name in nn_cuda.kernel_checks ('gemm tiled', 'col_sum')."""
        return f"gemm {self.name}" if self.name in kernel_info.KERNEL_GEMMS else self.name


def _task_files() -> list[tuple[str, Path]]:
    """(file in the workspace, the project's file) in the course's order: the ladder, the element-wise
    kernels, the MPI step."""
    kernels = kernel_info.project_kernel_dir()
    files = [gemm.file for gemm in kernel_info.GEMM_LADDER] + [kernel_info.NN_OPS_FILE]
    return [(f"kernels/{name}", kernels / name) for name in files] + [(MPI_TASK_FILE, Path(course_task.__file__))]


def tasks() -> list[Task]:
    """Every task, in the course's order."""
    found = []
    for file, source in _task_files():
        lines = source.read_text().splitlines()
        found += [Task(m.group("name"), file, source, number) for number, line in enumerate(lines, 1)
                  if (m := _TASK.match(line))]
    return found


def task_named(name: str) -> Task:
    for task in tasks():
        if task.name == name:
            return task
    raise ValueError(f"no task {name!r}; the tasks are: {', '.join(t.name for t in tasks())}")


def _blocks(lines: list[str]) -> list[tuple[int, int, int]]:
    """(TASK line, first line of the body, END line) of every task in a file's lines."""
    blocks = []
    for start, line in enumerate(lines):
        if _TASK.match(line):
            body = start + 1
            while body < len(lines) and _PLAN.match(lines[body]):
                body += 1
            end = next(i for i in range(body, len(lines)) if _END.match(lines[i]))
            blocks.append((start, body, end))
    return blocks


def skeleton(source: str) -> str:
    """`source` with every task's body (and its END marker) replaced by the TODO line."""
    lines = source.splitlines()
    for start, body, end in reversed(_blocks(lines)):
        match = _TASK.match(lines[start])
        todo = _TODO_LINES[match.group("comment")]
        lines[body:end + 1] = [match.group("indent") + line.format(name=match.group("name")) for line in todo]
    return "\n".join(lines) + "\n"


def reference_body(task: Task) -> list[str]:
    """The reference lines of a task's body (what a finished task holds in place of the TODO line)."""
    lines = task.source.read_text().splitlines()
    start, body, end = next(block for block in _blocks(lines) if block[0] == task.line - 1)
    return lines[body:end]


class WorkspaceError(ValueError):
    """The workspace folder cannot be made or read (the message says why and what to do)."""


def start(folder: Path) -> list[Path]:
    """Write the workspace into `folder` (new, or empty): kernels/ and data_parallel.py with the tasks
    to fill in."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise WorkspaceError(f"{folder} already exists and is not an empty folder: the course writes a new "
                             "workspace and never overwrites one; choose another name")
    kernels = folder / "kernels"
    kernels.mkdir(parents=True)
    written = []
    for path in sorted(kernel_info.project_kernel_dir().iterdir()):
        if path.suffix not in (".cu", ".cuh"):
            continue
        target = kernels / path.name
        source = path.read_text()
        if any(_TASK.match(line) for line in source.splitlines()):
            target.write_text(skeleton(source))
        else:
            shutil.copyfile(path, target)
        written.append(target)
    target = folder / MPI_TASK_FILE
    target.write_text(skeleton(Path(course_task.__file__).read_text()))
    return [*written, target]


def kernel_folder(folder: Path) -> Path:
    kernels = Path(folder) / "kernels"
    if not kernels.is_dir():
        raise WorkspaceError(f"{folder} has no kernels/ folder: make a workspace with "
                             f"python -m nn_cuda.course start {folder}")
    return kernels


def unfinished(folder: Path, task: Task) -> str | None:
    """Where the task's TODO line still stands ('kernels/gemm2_tiled.cu:34'), or None."""
    kernel_folder(folder)
    path = Path(folder) / task.file
    if not path.is_file():
        raise WorkspaceError(f"{path} is missing: copy it from a new workspace (python -m nn_cuda.course start)")
    return todo_line(path, task)


def todo_line(path: Path, task: Task) -> str | None:
    """'PATH:LINE' of the task's TODO line in the file `path`, or None (written, or no such file)."""
    return next((f"{path}:{number}" for number, name in kernel_info.todo_lines(path) if name == task.name), None)


@dataclasses.dataclass
class TaskReport:
    task: Task
    passed: bool
    lines: list  # what to print: the failing case with its hint, or the summary


def check_task(folder: Path, task: Task, backend_name: str, progress=None) -> TaskReport:
    """A task's checks on the workspace's files (its kernels on `backend_name`), stopping at the first
    failure."""
    where = unfinished(folder, task)
    if where:
        return TaskReport(task, False, [f"task {task.name}: not written yet: the TODO is at {where} (a task "
                                        "counts as written once its TODO line is gone)"])
    if not task.is_kernel:
        return _check_mpi_task(Path(folder) / task.file, task)
    [(_, results)] = kernel_check_runs.run_checks(backend_name, kernel_folder(folder).resolve(), [task.check],
                                                  stop_at_first_failure=True, progress=progress)
    if isinstance(results, Exception):  # the checks could not start: one clear verdict
        return TaskReport(task, False, [f"task {task.name}: FAIL: {results}"])
    failed = [result for result in results if not result.passed]
    if failed:
        return TaskReport(task, False, [f"task {task.name}: " + failed[0].line()])
    worst = max(result.error for result in results)
    return TaskReport(task, True, [f"task {task.name}: PASS ({len(results)} cases, relative error at most "
                                   f"{worst:.1e})"])


# ---- the MPI task ---------------------------------------------------------------------------------

#: (batch rows, ranks) the split is checked on: batches that divide, that do not, that are short
_SPLITS = [(rows, ranks) for ranks in (1, 2, 3, 4, 7) for rows in (0, 1, 2, 5, 10, 64, 99, 800)]
#: ranks the Allreduce is checked on
ALLREDUCE_RANKS = 3
#: seconds a probe of the MPI task may take (a few, when the task is right)
PROBE_SECONDS = 120


def _load(path: Path):
    spec = importlib.util.spec_from_file_location("nn_cuda_student_task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raised(task_name: str, error: BaseException, path: Path, call: str) -> str:
    """The FAIL line of the student's code raising `error` in `call`: the exception and the line of
    the student's file it came from."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename) == path]
    where = f" at {path}:{lines[-1]}" if lines else ""
    return f"task {task_name}: FAIL  {type(error).__name__}: {error}, in {call}{where}"


def _check_mpi_task(path: Path, task: Task) -> TaskReport:
    """The split in a process of its own, the Allreduce on ALLREDUCE_RANKS ranks under mpiexec: each
    stopped after PROBE_SECONDS, so a loop that never ends or a rank left waiting is a verdict."""
    with tempfile.TemporaryDirectory(prefix="nn_cuda_task_") as folder:
        verdict = Path(folder) / "verdict.txt"  # where a rank that ends the job writes its line too
        probe = "rows_probe" if task.name == "mpi_rows" else "allreduce_probe"
        given = f"{str(path)!r}" if task.name == "mpi_rows" else f"{str(path)!r}, {str(verdict)!r}"
        command = [sys.executable, "-c", f"import sys; from nn_cuda.workspace import {probe}; "
                                         f"sys.exit({probe}({given}))"]
        hang = "a loop that never ends?"
        if task.name == "mpi_allreduce":
            try:
                command = [find_mpiexec(), "-n", str(ALLREDUCE_RANKS), *command]
            except ParallelError as error:
                return TaskReport(task, False, [f"task {task.name}: cannot run: {error}"])
            hang = "does every rank call the collective, once?"
        job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        try:
            stdout, stderr = job.communicate(timeout=PROBE_SECONDS)
        except subprocess.TimeoutExpired:
            return TaskReport(task, False, [f"task {task.name}: FAIL  not finished in {PROBE_SECONDS} s: {hang}"])
        finally:  # a timeout, or ctrl-C, which the session of its own does not receive
            _end(job)
        written = verdict.read_text() if verdict.exists() else ""
    output = stdout.splitlines() or written.splitlines()
    lines = list(dict.fromkeys(next((output[i:] for i, line in enumerate(output) if line.startswith("task ")), [])))
    if job.returncode == 0 and lines:
        return TaskReport(task, True, lines[:1])
    detail = lines or [f"task {task.name}: FAIL  the check ended with status {job.returncode}: "
                           + (stderr.strip().splitlines() or ["no output"])[-1]]
    return TaskReport(task, False, detail)


def _end(job: subprocess.Popen) -> None:
    """Ends a check's processes. mpiexec puts each of its proxies and ranks in a session of its own;
    on SIGTERM it ends them and then itself. What is left in the job's own session is then killed."""
    if job.poll() is None:
        job.terminate()
        try:
            job.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except ProcessLookupError:  # all of them had ended
        pass
    job.communicate()


def rows_probe(path: str) -> int:
    """The student's rows_of_rank on every split of _SPLITS and every rank against the project's;
    prints the verdict."""
    path = Path(path)
    call = f"loading {path}"
    try:
        student = _load(path)
        for rows, ranks in _SPLITS:
            for rank in range(ranks):
                call = f"rows_of_rank({rows}, {ranks}, {rank})"
                got = tuple(student.rows_of_rank(rows, ranks, rank))
                expected = course_task.rows_of_rank(rows, ranks, rank)
                if got != expected:
                    print(f"task mpi_rows: FAIL  {call} = {got}, expected {expected}")
                    print("      hint: contiguous shares in rank order, every rank batch_rows // ranks rows "
                          "and the first batch_rows % ranks ranks one more")
                    return 1
    except BaseException as error:  # the student's code raised (exit included): its verdict, in one line
        print(_raised("mpi_rows", error, path, call))
        return 1
    print(f"task mpi_rows: PASS ({len(_SPLITS)} splits, every rank)")
    return 0


def allreduce_probe(path: str, verdict: str | None = None) -> int:
    """On each rank under mpiexec: rank r's buffer holds (r + 1) (1, 2, ..., 7); after the student's
    allreduce_gradients every rank must hold the sum over the ranks. Rank 0 prints the verdict; a rank
    whose call raises prints it, writes it to the file `verdict` too (MPI_Abort may end mpiexec before
    it has passed the printed line on: "the check ended with status 1: no output", seen once in CI),
    and ends the job (the others would wait for it)."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    buffer = (rank + 1) * np.arange(1, 8, dtype=np.float64)
    path = Path(path)
    try:
        _load(path).allreduce_gradients(comm, buffer)
    except BaseException as error:
        line = _raised("mpi_allreduce", error, path, "allreduce_gradients(comm, gradients)")
        print(line, flush=True)
        if verdict:
            with open(verdict, "a") as written:
                written.write(line + "\n")
        comm.Abort(1)
    expected = size * (size + 1) / 2 * np.arange(1, 8, dtype=np.float64)
    wrong = comm.gather(None if np.array_equal(buffer, expected) else (rank, buffer.tolist()), root=0)
    if rank != 0:
        return 0
    bad = [entry for entry in wrong if entry is not None]
    if not bad:
        print(f"task mpi_allreduce: PASS (every one of {size} ranks holds the sum)")
        return 0
    first_rank, values = bad[0]
    print(f"task mpi_allreduce: FAIL  rank {first_rank} holds {values}, expected {expected.tolist()}")
    print("      hint: every rank must end with the sum over all ranks, in the same buffer "
          "(Allreduce with MPI.IN_PLACE and MPI.SUM)")
    return 1
