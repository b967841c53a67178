"""`python -m nn_cuda.course start DIR | check DIR [TASK] | tasks`: the course as a student takes it.

    start DIR        write a workspace: DIR/kernels/, the project's kernels with every task's body
                     replaced by its plan and a TODO (the GEMM ladder: naive, tiled, regblock; then
                     the element-wise kernels of the network), and DIR/data_parallel.py, the MPI
                     step (which rows of a batch a rank takes; the gradients' Allreduce)
    check DIR [TASK] run the checks of TASK (of every task, in order, without one) on DIR's kernels and
                     stop at the first failure, with the case, the first wrong element and a hint
    tasks            list the tasks in the course's order

The checks run on a GPU through CuPy when there is one, else on the CPU in the CPU runner's checking
mode (races, missing barriers and out-of-bounds accesses are reported); the MPI task under mpiexec.
A finished workspace trains with NN_CUDA_KERNEL_DIR=DIR/kernels python -m nn_cuda.train --backend
cuda-cpu --gemm tiled, and mpirun -n 4 python -m nn_cuda.train --mpi-task DIR/data_parallel.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import USAGE
from .interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.course"):
    from . import workspace
    from .backends import BackendUnavailable, get_backend


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nn_cuda.course", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = p.add_subparsers(dest="command")  # none given: the help, listing them (main)
    start = commands.add_parser("start", help="write a workspace of tasks into a new folder")
    start.add_argument("folder", type=Path)
    check = commands.add_parser("check", help="check a workspace's tasks, stopping at the first failure")
    check.add_argument("folder", type=Path)
    check.add_argument("task", nargs="?", help="one task (see: tasks); all of them in order without one")
    check.add_argument("--backend", choices=("auto", "cuda-cpu", "cupy"), default="auto",
                       help="where the kernels run: auto is cupy on a GPU, else cuda-cpu in its checking mode")
    commands.add_parser("tasks", help="list the tasks in the course's order")
    return p


def choose_backend(name: str) -> str:
    """`name`, or for auto cupy where it runs, else cuda-cpu. BackendUnavailable when `name` cannot run
    here (--backend cupy without CuPy or a GPU): a fault of the machine, not of a task."""
    if name != "auto":
        get_backend(name)
        return name
    try:
        get_backend("cupy")
    except (BackendUnavailable, ImportError, RuntimeError):
        return "cuda-cpu"
    return "cupy"


def run_check(folder: Path, task_name: str | None, backend_name: str) -> int:
    chosen = [workspace.task_named(task_name)] if task_name else workspace.tasks()
    workspace.kernel_folder(folder)  # WorkspaceError before anything is said of a folder that is none
    backend = choose_backend(backend_name)
    where = "the CPU, checking mode" if backend == "cuda-cpu" else "the GPU"
    print(f"checking {folder} (kernels on {where}, {backend}): "
          f"{', '.join(task.name for task in chosen)}")
    for task in chosen:
        report = workspace.check_task(folder, task, backend)
        print("\n".join(report.lines), flush=True)
        if not report.passed:
            return 1
    print(f"all {len(chosen)} task(s) pass" if len(chosen) > 1 else "", end="\n" if len(chosen) > 1 else "")
    return 0


@ends_in_one_line_when_interrupted("nn_cuda.course")
def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command == "tasks":
            for task in workspace.tasks():
                print(f"{task.name:18s} {task.file}")
            return 0
        if args.command == "start":
            written = workspace.start(args.folder)
            print(f"wrote {len(written)} files into {args.folder}; "
                  f"{len(workspace.tasks())} tasks to write, in this order:")
            for task in workspace.tasks():
                print(f"  {task.name:18s} {args.folder / task.file}")
            print(f"then: python -m nn_cuda.course check {args.folder}")
            return 0
        return run_check(args.folder, args.task, args.backend)
    except (workspace.WorkspaceError, ValueError, BackendUnavailable) as error:
        print(f"nn_cuda.course: error: {error}", file=sys.stderr)
        return USAGE


if __name__ == "__main__":
    sys.exit(main())
