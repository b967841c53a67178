"""`python -m nn_cuda`: the project's commands, one line each (each has its own --help)."""

import sys

from .bench import BENCHMARKS
from .interrupts import ends_in_one_line_when_interrupted

COMMANDS = (
    ("nn_cuda.course", "the course for a student: start DIR writes the tasks, check DIR checks them"),
    ("nn_cuda.train", "train the network; under mpirun -n P data or model parallel"),
    ("nn_cuda.grade", "the course's grading modes 1-4 (files under Outputs/), and --kernels DIR... for a class"),
    ("nn_cuda.bench", "benchmarks: " + ", ".join(BENCHMARKS) + " (./run.sh lists them with the studies of scripts/)"),
    ("nn_cuda.report", "the report and the result tables, from the benchmarks' records"),
    ("nn_cuda.adversarial", "FGSM and PGD: eval, and adversarial train (--async under mpirun)"),
    ("nn_cuda.data", "download the datasets, and say where each one is found"),
    ("nn_cuda.kernel_resources", "every kernel's registers, shared memory and occupancy, without a GPU"),
)


@ends_in_one_line_when_interrupted("nn_cuda")
def main() -> int:
    print("nn_cuda: the CME 213 two-layer MNIST network with hand-written GPU kernels and MPI. Commands:\n")
    for module, what in COMMANDS:
        print(f"  python -m {module:26s} {what}")
    print("\nThe quick start, the results and the documentation: README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
