"""Grading a class: students' kernel folders or workspaces with nn_cuda.kernel_checks
(`grade --kernels DIR...`).

Each folder is a copy of kernels/ (the student's .cu files) or a course workspace (`python -m
nn_cuda.course start`: its kernels/, and its MPI step data_parallel.py). Every kernel of the ladder and
every element-wise kernel runs its checks from that folder, on the CPU in the checking mode (or on the
backend asked for); a workspace's MPI tasks run as `course check` runs them. Each folder gives one row
of a table: per kernel or task, PASS with the number of cases, FAIL with the first failing case,
TODO where the task's body is still the workspace's TODO line, or MISSING where a workspace has no
data_parallel.py. Rows are named by the folders' paths
below their common parent, so that alice/kernels and bob/kernels stay apart. The table is written as
CSV and as Markdown, for an instructor to publish.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
from pathlib import Path

from . import kernel_check_runs, kernel_checks, kernel_info, workspace
from .outputs import write_text


@dataclasses.dataclass(frozen=True)
class Verdict:
    cell: str  # what the table shows: 'PASS 80/80', 'FAIL 32/80', 'TODO', 'MISSING', 'FAIL (did not run)'
    failure: str = ""  # the first failure, with its case; empty when it passed


@dataclasses.dataclass
class FolderGrade:
    label: str  # the folder's name in the table
    #: kernel ('gemm tiled', 'col_sum', ...) or MPI task ('mpi_rows') -> its verdict
    kernels: dict

    @property
    def passed(self) -> bool:
        return all(not verdict.failure for verdict in self.kernels.values())


def cu_files_folder(folder: Path) -> Path:
    """The folder of the .cu files: `folder` itself, or a workspace's kernels/. ValueError otherwise."""
    for candidate in (folder, folder / "kernels"):
        if any(candidate.glob("*.cu")):
            return candidate
    raise ValueError(f"{folder} holds no .cu files and no kernels/ folder with them: give a copy of kernels/ "
                     "or a workspace of python -m nn_cuda.course start")


def labels(folders: list[Path]) -> list[str]:
    """Each folder's path below the folders' common parent; where that leaves nothing (one folder),
    its name, with its parent's for a folder named kernels (alice/kernels)."""
    resolved = [folder.resolve() for folder in folders]
    parent = Path(os.path.commonpath(resolved)) if len(resolved) > 1 else None
    named = [str(path.relative_to(parent)) if parent else "." for path in resolved]
    alone = [f"{path.parent.name}/{path.name}" if path.name == "kernels" else path.name for path in resolved]
    return [own if name == "." else name for own, name in zip(alone, named)]


def one_line(text: str) -> str:
    """A table cell's text: the first line of `text`, and its first line that names an error when that is
    another (a compiler's diagnostics)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()] or [""]
    error = next((line for line in lines[1:] if "error" in line), None)
    return lines[0] + (f" ... {error}" if error else "")


def what_is_graded(backend) -> list[str]:
    """The lines a grade prints before it starts about the kernels it grades: their folder, and what
    the backend cannot catch."""
    lines = [kernel_info.describe_kernel_dir()] if backend.runs_kernel_files else []
    return lines + ([backend.grading_note] if backend.grading_note else [])


def grade_folder(folder: Path, backend_name: str = "cuda-cpu", kernels=None, log=print,
                 label: str | None = None) -> FolderGrade:
    """Every check of every kernel (or of `kernels`) with the .cu files of `folder` (a copy of kernels/,
    or a workspace: then its MPI tasks too, unless `kernels` are named)."""
    label = label or folder.name
    cu_folder = cu_files_folder(folder)
    tasks = {task.check: task for task in workspace.tasks()}
    grades = {}

    def record(name, verdict):
        grades[name] = verdict
        log(f"{label}: {name}: {verdict.cell}" + (f": {verdict.failure}" if verdict.failure else ""))

    names = kernels or kernel_checks.kernel_names()
    for kernel in names:
        task = tasks.get(kernel)
        todo = task and workspace.todo_line(cu_folder / Path(task.file).name, task)
        if todo:
            record(kernel, Verdict("TODO", f"{kernel}: not written yet: the TODO is at {todo}"))
    checked = [kernel for kernel in names if kernel not in grades]
    for kernel, results in kernel_check_runs.run_checks(backend_name, cu_folder, checked):
        if isinstance(results, Exception):  # the checks could not start
            record(kernel, Verdict("FAIL (did not run)", one_line(f"{kernel}: {results}")))
            continue
        failures = [r for r in results if not r.passed]
        # cases left after a failure every later one would repeat count as failed
        counted = f"{len(results) - len(failures)}/{len(kernel_checks.cases_of(kernel))}"
        record(kernel, Verdict(f"FAIL {counted}", one_line(f"{failures[0].case}: {failures[0].detail}"))
               if failures else Verdict(f"PASS {counted}"))
    grades.update({name: grades.pop(name) for name in names})  # the kernels in their order, TODO ones included
    if cu_folder != folder and kernels is None:  # a workspace: its MPI step too
        for task in workspace.tasks():
            if task.is_kernel:
                continue
            if not (folder / task.file).is_file():
                record(task.name, Verdict("MISSING", f"{task.name}: {folder / task.file} is missing (give the "
                                                     f"folder of the .cu files alone to grade the kernels alone)"))
                continue
            todo = workspace.todo_line(folder / task.file, task)
            if todo:
                record(task.name, Verdict("TODO", f"{task.name}: not written yet: the TODO is at {todo}"))
                continue
            report = workspace.check_task(folder, task, backend_name)
            record(task.name, Verdict("PASS") if report.passed
                   else Verdict("FAIL", one_line(report.lines[0].removeprefix("task "))))
    return FolderGrade(label, grades)


def table_rows(grades: list[FolderGrade]) -> tuple[list, list]:
    """The header and one row per folder: its label, one cell per kernel or task ('-' where it has
    none: the MPI tasks of a kernels folder), the first failure."""
    columns = list(dict.fromkeys(name for grade in grades for name in grade.kernels))
    header = ["folder", *columns, "first failure"]
    rows = []
    for grade in grades:
        first = next((verdict.failure for verdict in grade.kernels.values() if verdict.failure), "")
        cells = [grade.kernels[name].cell if name in grade.kernels else "-" for name in columns]
        rows.append([grade.label, *cells, first])
    return header, rows


def write_tables(grades: list[FolderGrade], outputs: Path) -> tuple[Path, Path]:
    """outputs/kernels.csv and outputs/kernels.md, one row per folder."""
    header, rows = table_rows(grades)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([header, *rows])
    csv_path, markdown_path = outputs / "kernels.csv", outputs / "kernels.md"
    write_text(csv_path, text.getvalue())

    def markdown_row(cells):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    lines = [markdown_row(header), markdown_row(["---"] * len(header)), *map(markdown_row, rows)]
    write_text(markdown_path, "\n".join(lines) + "\n")
    return csv_path, markdown_path
