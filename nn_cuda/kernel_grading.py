"""Grading one or many students' kernel folders with nn_cuda.kernel_checks (`grade --kernels DIR...`).

Each folder is a copy of kernels/ (the student's .cu files). Every kernel of the ladder and every
element-wise kernel runs its checks from that folder, on the CPU in the checking mode (or on the
backend asked for), and each folder gives one row of a table: per kernel, PASS with the number of
cases, or FAIL with the first failing case. The table is written as CSV and as Markdown, for an
instructor to publish.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import os
from pathlib import Path

from . import kernel_checks, kernel_info
from .backends import get_backend
from .outputs import write_text


@dataclasses.dataclass
class FolderGrade:
    folder: Path
    #: kernel ('gemm tiled', 'col_sum', ...) -> (passed cases, cases run, the first failure or '')
    kernels: dict

    @property
    def passed(self) -> bool:
        return all(not failure for _, _, failure in self.kernels.values())


@contextlib.contextmanager
def kernels_from(folder: Path):
    """NN_CUDA_KERNEL_DIR pointed at `folder` for the duration (every backend reads it)."""
    previous = os.environ.get(kernel_info.KERNEL_DIR_VARIABLE)
    os.environ[kernel_info.KERNEL_DIR_VARIABLE] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(kernel_info.KERNEL_DIR_VARIABLE, None)
        else:
            os.environ[kernel_info.KERNEL_DIR_VARIABLE] = previous


def what_is_graded(backend) -> list[str]:
    """The lines a grade prints before it starts about the kernels it grades: their folder, and what
    the backend cannot catch."""
    lines = [kernel_info.describe_kernel_dir()] if backend.runs_kernel_files else []
    return lines + ([backend.grading_note] if backend.grading_note else [])


def make_backend(backend_name: str):
    """The backend the checks run on: the CPU runner in its checking mode for cuda-cpu."""
    if backend_name == "cuda-cpu":
        from .backends.cuda_cpu_backend import CudaCpuBackend

        return CudaCpuBackend(check=True)
    return get_backend(backend_name)


def grade_folder(folder: Path, backend_name: str = "cuda-cpu", kernels=None, log=print) -> FolderGrade:
    """Every check of every kernel (or of `kernels`) with the .cu files of `folder`."""
    grades = {}
    with kernels_from(folder):
        backend = make_backend(backend_name)
        for kernel in kernels or kernel_checks.kernel_names():
            try:
                results = kernel_checks.check(backend, kernel)
            except Exception as error:  # does not compile, a missing file: the kernel's verdict
                grades[kernel] = (0, 0, f"{kernel}: {error}".splitlines()[0])
                log(f"{folder.name}: {kernel}: FAIL: {grades[kernel][2]}")
                continue
            failures = [r for r in results if not r.passed]
            first = f"{failures[0].case}: {failures[0].detail}" if failures else ""
            grades[kernel] = (len(results) - len(failures), len(results), first)
            log(f"{folder.name}: {kernel}: {'FAIL' if failures else 'PASS'} "
                f"({len(results) - len(failures)}/{len(results)} cases)" + (f": {first}" if first else ""))
    return FolderGrade(folder, grades)


def _cell(passed: int, run: int, failure: str) -> str:
    if not failure:
        return f"PASS {passed}/{run}"
    return f"FAIL {passed}/{run}" if run else "FAIL (did not run)"


def table_rows(grades: list[FolderGrade]) -> tuple[list, list]:
    """The header and one row per folder: folder, one cell per kernel, the first failure."""
    kernels = list(grades[0].kernels) if grades else []
    header = ["folder", *kernels, "first failure"]
    rows = []
    for grade in grades:
        first = next((failure for _, _, failure in grade.kernels.values() if failure), "")
        rows.append([grade.folder.name, *(_cell(*grade.kernels[k]) for k in kernels), first])
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
