"""`python -m nn_cuda.grade --mode 1|2|3|4`: the course's grading harness on the command line.

Modes 1-3 train the network twice from the same initial weights, with the course's settings (H = 100,
reg = 1e-4, batch 800, raw 0-255 pixels, and the learning rate and epochs of the mode): once with the
NumPy CPU reference and once with the backend under test (a GPU backend, or MPI ranks). They then
compare the parameters with the course's relative errors and write

    Outputs/NNErrors.txt     the final errors of W1, W2, b1, b2, PASS/FAIL, and both accuracies
    Outputs/CpuGpuDiff.txt   one row per saved iteration (every -p steps, and the last): the errors

Mode 4 is the course's GEMM test. The harness itself is nn_cuda.grading.

--kernels DIR [DIR ...] grades students' kernel folders (copies of kernels/) or course workspaces with
the checks the course's modes miss (nn_cuda.kernel_checks): every GEMM of the ladder and every
element-wise kernel, on sizes that are multiples of no tile, every transpose, both dtypes, beta = 0
with C poisoned; on the CPU in the checking mode (races, missing barriers, out-of-bounds accesses);
and a workspace's MPI step. It writes Outputs/kernels.csv and Outputs/kernels.md, one row per folder
(TODO where a task is not written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import USAGE, failed
from .interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.grade"):
    from . import parallel
    from .arguments import non_negative_int, positive_int
    from .backends import BACKENDS, BackendUnavailable
    from .config import TrainConfig, environment_help
    from .data import DATASETS
    from .grading import course_config, run_grade
    from .kernel_check_runs import make_backend
    from .kernel_grading import cu_files_folder, grade_folder, labels, write_tables
    from .training import USER_ERRORS as TRAINING_ERRORS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nn_cuda.grade", description=__doc__, epilog=environment_help(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", "-g", type=int, choices=(1, 2, 3, 4))
    p.add_argument("--kernels", nargs="+", type=Path, metavar="DIR",
                   help="grade these kernel folders (copies of kernels/) or course workspaces instead of a mode")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="the backend under test (default: numpy for the modes, cuda-cpu for --kernels)")
    p.add_argument("--gemm", default=None, help="GEMM algorithm of the backend under test")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--dataset", choices=DATASETS, default="mnist")
    p.add_argument("--data-dir", default=None)
    p.add_argument("-p", "--print-every", type=non_negative_int, default=0,
                   help="save an iteration into CpuGpuDiff.txt every this many steps (0: the last only)")
    p.add_argument("--outputs", default="Outputs", help="folder of NNErrors.txt and CpuGpuDiff.txt")
    p.add_argument("--seed", type=non_negative_int, default=0)
    small = p.add_argument_group("smaller runs (tests, smoke checks); not the course's settings")
    small.add_argument("--epochs", type=positive_int, default=None, help="override the mode's epochs")
    small.add_argument("--hidden", type=positive_int, default=None, help="override H = 100")
    small.add_argument("--max-steps", type=positive_int, default=None, help="stop after this many steps")
    small.add_argument("--limit-rows", type=positive_int, default=None,
                       help="use only the first N images of the training and validation sets")
    gemm = p.add_argument_group("mode 4 (GEMM)")
    gemm.add_argument("--scale", type=positive_int, default=1, help="multiply the course's GEMM sizes by this")
    return p


# The training errors, and any RuntimeError or ImportError of the backend under test (a missing GPU
# library, a kernel that fails): a grading run reports them as its verdict, in one line.
USER_ERRORS = (*TRAINING_ERRORS, ImportError, RuntimeError)


@ends_in_one_line_when_interrupted("nn_cuda.grade")
def main(argv=None) -> int:
    with parallel.output_on_root_only():
        parser = build_parser()
        args = parser.parse_args(argv)
        if (args.mode is None) == (args.kernels is None):
            parser.error("give either --mode 1|2|3|4 or --kernels DIR [DIR ...]")
    if args.kernels is not None:
        return grade_kernel_folders(args.kernels, args.backend or "cuda-cpu", Path(args.outputs))
    cfg = TrainConfig(backend=args.backend or "numpy", gemm=args.gemm, dtype=args.dtype, dataset=args.dataset,
                      data_dir=args.data_dir, print_every=args.print_every, seed=args.seed, quiet=True)
    if args.mode != 4:
        cfg = course_config(args.mode, cfg)
        cfg = cfg.replace(epochs=cfg.epochs if args.epochs is None else args.epochs,
                          hidden=cfg.hidden if args.hidden is None else args.hidden, max_steps=args.max_steps)
    try:
        with parallel.abort_on_error("nn_cuda.grade", USER_ERRORS):
            ok = run_grade(args.mode, cfg, Path(args.outputs), args.limit_rows, args.scale)
    except USER_ERRORS as exc:  # a kernel's fault fails the grade, in one line
        return failed("nn_cuda.grade", exc)
    return 0 if ok else 1


def grade_kernel_folders(folders: list, backend: str, outputs: Path) -> int:
    if backend not in ("cuda-cpu", "cupy"):
        print(f"nn_cuda.grade: error: --kernels runs the CUDA C files: use --backend cuda-cpu (the CPU, "
              f"checking mode) or cupy (a GPU), not {backend}", file=sys.stderr)
        return USAGE
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        print(f"nn_cuda.grade: error: not a folder: {', '.join(missing)}", file=sys.stderr)
        return USAGE
    for folder in folders:
        try:
            cu_files_folder(folder)
        except ValueError as error:
            print(f"nn_cuda.grade: error: {error}", file=sys.stderr)
            return USAGE
    try:
        make_backend(backend)  # a machine that cannot run it: one line before any folder, not a verdict each
    except BackendUnavailable as error:
        return failed("nn_cuda.grade", error)
    grades = []
    for folder, label in zip(folders, labels(folders)):
        grades.append(grade_folder(folder, backend, label=label))
        csv_path, markdown_path = write_tables(grades, outputs)  # after each folder: an interrupted class keeps its rows
    passed = sum(grade.passed for grade in grades)
    print(f"--kernels: {passed} of {len(grades)} folders pass every check on {backend}; "
          f"table in {csv_path} and {markdown_path}")
    return 0 if passed == len(grades) else 1


if __name__ == "__main__":
    sys.exit(main())
