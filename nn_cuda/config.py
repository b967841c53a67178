"""Hyperparameters and the command line of `python -m nn_cuda.train` (the course's flags, long names too).

Course defaults: H = 1000, reg = 1e-4, 20 epochs, batch 800, the course's raw 0-255 pixels. The
initialisation (model.DEFAULT_INIT_SCALE) and the learning rate (DEFAULT_LR) are the pair that learns
well on both the MNIST sample and Fashion-MNIST, chosen by measurement (docs/training.md, "The
default run"). The grading modes (`-g`) reproduce the course's initialisation and learning rates;
`--pixels unit` (pixels / 255) takes UNIT_PIXELS_LR and the course's initialisation where not given.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields

from .arguments import non_negative_float, non_negative_int, positive_float, positive_int
from .backends import BACKENDS
from .kernel_info import KERNEL_GEMMS
from .data import DATASETS
from .model import COURSE_INIT_SCALE, DEFAULT_INIT_SCALE
from .parallel import COMM_MODES, PARALLEL_STRATEGIES
from .parallel.watchdog import DEFAULT_TIMEOUT_SECONDS

DEFAULT_LR = 0.02
#: the learning rate for pixels in [0, 1] with the course's initialisation (--pixels unit)
UNIT_PIXELS_LR = 0.5
#: validation and test images evaluated by default on an emulated backend (Backend.emulated: the
#: simulator runs one Python thread per CUDA thread, so 100 images take seconds, 1,400 take minutes)
EMULATED_EVAL_LIMIT = 100

#: the environment variables the project reads, for --help (a test checks that every NN_CUDA_* name
#: in the package is here)
ENVIRONMENT = (
    ("NN_CUDA_KERNEL_DIR=DIR", "a copy of kernels/ to compile and run instead (cupy, cuda-cpu)"),
    ("NN_CUDA_CPU_CHECK=1", "cuda-cpu: the checking mode (races, out-of-bounds accesses, poisoned memory)"),
    ("NN_CUDA_CPU_RACECHECK=1", "cuda-cpu: the checking mode, and every load and store looked at for races "
     "(GCC; slower)"),
    ("NN_CUDA_CPU_SEED=N", "cuda-cpu: the seed of the checking mode's thread and block orders"),
    ("NN_CUDA_CPU_THREADS=N", "cuda-cpu: host threads that run a launch's blocks (default: the cores; 1: in order)"),
    ("NN_CUDA_CPU_FMA=1", "cuda-cpu: fuse a * b + c into FMA as NVRTC does (the GPU's float32 bits; slower)"),
    ("NN_CUDA_CPU_WATCHDOG=SECONDS", "cuda-cpu: stop a launch running longer (default 60, 0: never)"),
    ("NN_CUDA_CACHE_DIR=DIR", "where downloads and compiled kernels are cached"),
    ("NN_CUDA_DATA=DIR", "a folder holding mnist/ and fashion-mnist/"),
    ("NN_CUDA_OFFLINE=1", "never download: use the bundled sample when MNIST is absent"),
    ("NN_CUDA_ASSUME_CUDA_AWARE_MPI=1", "the cuda-aware gradient allreduce: trust MPI to be CUDA-aware, unasked"),
    ("NN_CUDA_BENCH_DIR=DIR", "where ./run.sh and python -m nn_cuda.report keep the benchmarks' records "
     "(default runs/)"),
    ("NUMBA_ENABLE_CUDASIM=1", "Numba's CPU simulator (what --backend numba-sim sets)"),
)


@dataclass
class TrainConfig:
    hidden: int | None = None  # None: 1000, or the H of --init
    reg: float = 1e-4
    lr: float = DEFAULT_LR
    epochs: int = 20
    batch: int = 800
    grade: int = 0
    print_every: int = 0
    seq: bool = False
    debug: bool = False
    dataset: str = "mnist"
    data_dir: str | None = None
    backend: str = "numpy"
    gemm: str | None = None
    dtype: str = "float32"
    seed: int = 0
    shuffle: bool = False
    pixels: str = "raw"
    init_scale: tuple = DEFAULT_INIT_SCALE  # (s1, s2): W1 ~ s1 N(0, 1), W2 ~ s2 N(0, 1)
    init: str | None = None
    save: str | None = None
    predictions: str | None = None
    max_steps: int | None = None
    limit_rows: int | None = None  # train on the first N training images only
    eval_limit: int | None = None  # validation and test accuracy on the first N images of each
    quiet: bool = False
    profile: str | None = None  # JSON file of per-phase timings (nn_cuda.profiling)
    history: str | None = None  # JSON file of the per-epoch loss and accuracies
    parallel: str = "data"  # under mpirun: how the work is split over the ranks
    model_ranks: int | None = None  # --parallel hybrid: model ranks per data group
    comm: str = "host"  # how gradients are summed: host (staged), cuda-aware MPI, nccl
    overlap: bool = False  # start the layer-2 allreduce while layer 1 is computed
    mpi_task: str | None = None  # a student's data_parallel.py (the course's MPI task) to train with
    mpi_timeout: float = DEFAULT_TIMEOUT_SECONDS  # a collective waiting longer ends the job

    def __post_init__(self):
        self.init_scale = tuple(self.init_scale)  # argparse gives a list

    def replace(self, **changes) -> "TrainConfig":
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return TrainConfig(**values)


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each flag's default, except where there is none to show: an unset option (None)
    or an off switch (False); the description and the list of environment variables keep their lines."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def reword_help(parser: argparse.ArgumentParser, helps: dict) -> None:
    """Replace the --help text of flags: {option string: text, or argparse.SUPPRESS to leave the flag
    out of --help}. A left-out flag still parses, so that a command built on build_parser can refuse
    it with its reason instead of an "unrecognized arguments" usage error."""
    for flag, text in helps.items():
        parser._option_string_actions[flag].help = text


def environment_help() -> str:
    """The environment variables, for the end of a command's --help."""
    return "environment variables:\n" + "\n".join(f"  {name:33s} {what}" for name, what in ENVIRONMENT)


def build_parser(prog: str = "python -m nn_cuda.train") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Train the CME 213 two-layer network (784 -> H sigmoid -> 10 softmax) on MNIST.",
        epilog=environment_help(),
        formatter_class=HelpFormatter,
    )
    d = TrainConfig()
    _course_scale = " ".join(f"{scale:g}" for scale in COURSE_INIT_SCALE)
    course = p.add_argument_group("the course's flags")
    course.add_argument("-n", "--hidden", type=positive_int, default=None,
                        help="hidden units H (default 1000, or the H of --init)")
    course.add_argument("-r", "--reg", type=non_negative_float, default=d.reg, help="L2 regularisation")
    course.add_argument("-l", "--lr", type=positive_float, default=d.lr,
                        help=f"learning rate ({UNIT_PIXELS_LR:g} with --pixels unit; the course's 0.001 went with "
                        f"its initialisation, --init-scale {_course_scale})")
    course.add_argument("-e", "--epochs", type=positive_int, default=d.epochs, help="epochs")
    course.add_argument("-b", "--batch", type=positive_int, default=d.batch, help="mini-batch size")
    course.add_argument("-g", "--grade", type=int, choices=(0, 1, 2, 3, 4), default=d.grade,
                        help="grading mode 1-4 (see python -m nn_cuda.grade); 0 = normal training")
    course.add_argument("-p", "--print-every", type=non_negative_int, default=d.print_every,
                        help="steps between loss read-backs and --debug snapshots (0: ~10 per epoch)")
    course.add_argument("-s", "--seq", action="store_true",
                        help="also train the NumPy reference from the same weights and compare")
    course.add_argument("-d", "--debug", action="store_true",
                        help="with --seq: write Outputs/CpuGpuDiff.txt every --print-every steps")
    more = p.add_argument_group("data, backend and run control")
    more.add_argument("--dataset", choices=DATASETS, default=d.dataset,
                      help="mnist falls back to the bundled mnist-sample when absent and offline")
    more.add_argument("--data-dir", default=d.data_dir, help="folder holding the four IDX files")
    more.add_argument("--backend", choices=BACKENDS, default=d.backend,
                      help="numpy: the CPU reference; cupy: the CUDA C kernels of kernels/ on a GPU; cuda-cpu: "
                      "the same kernels on the CPU; numba: the Numba kernels on a GPU; numba-sim: the Numba "
                      "kernels in Numba's CPU simulator")
    more.add_argument("--gemm", default=d.gemm,
                      help=f"GEMM algorithm of the kernel backends: {'|'.join(KERNEL_GEMMS)}, or cublas with cupy "
                      "(default: regblock on a GPU; naive, the cheapest to emulate, on cuda-cpu and numba-sim)")
    more.add_argument("--dtype", choices=("float32", "float64"), default=d.dtype,
                      help="floating-point type of the parameters, activations and data")
    more.add_argument("--seed", type=non_negative_int, default=d.seed,
                      help="seed of the weight init and --shuffle")
    more.add_argument("--shuffle", action="store_true", help="new sample order every epoch")
    more.add_argument("--pixels", choices=("unit", "raw"), default=d.pixels,
                      help="raw: 0-255 as the course fed them; unit: pixels / 255 in [0, 1] (--lr and "
                      f"--init-scale then default to {UNIT_PIXELS_LR:g} and {_course_scale})")
    more.add_argument("--init-scale", type=positive_float, nargs=2, default=d.init_scale, metavar=("S1", "S2"),
                      help=f"initial weights W1 ~ S1 N(0, 1), W2 ~ S2 N(0, 1) (the course's, and --pixels unit's: "
                      f"{_course_scale})")
    more.add_argument("--init", metavar="PATH.npz", help="start from these weights (fixes H)")
    more.add_argument("--save", metavar="PATH.npz", help="write the trained weights here")
    more.add_argument("--predictions", metavar="PATH",
                      help="write the test-set predictions (one digit per image, no separator)")
    more.add_argument("--max-steps", type=positive_int, default=None,
                      help="stop after this many optimizer steps (smoke runs, tests)")
    more.add_argument("--limit-rows", type=positive_int, default=None, metavar="N",
                      help="train on the first N training images only (smoke runs)")
    more.add_argument("--eval-limit", type=positive_int, default=None, metavar="N",
                      help="validation and test accuracy on the first N images of each (default: all, "
                      f"{EMULATED_EVAL_LIMIT} on an emulated backend: numba-sim, cuda-cpu); "
                      "--predictions still covers every test image")
    more.add_argument("--quiet", action="store_true", help="no progress bar; results only")
    more.add_argument("--profile", metavar="PATH.json",
                      help="write per-phase timings of the steps here (forward/backward GEMMs, "
                      "element-wise, update, communication; NVTX ranges with CuPy)")
    more.add_argument("--history", metavar="PATH.json",
                      help="write the loss, validation and test accuracy of every epoch here")
    mpi = p.add_argument_group("MPI (under mpirun -n P; ignored in serial runs)")
    mpi.add_argument("--parallel", choices=PARALLEL_STRATEGIES, default=d.parallel,
                     help="data: every rank computes on its share of each batch, one allreduce of the "
                     "gradient per step; model: every rank owns a block of hidden units, one allreduce of "
                     "the partial logits per step; hybrid: a grid of data groups x --model-ranks")
    mpi.add_argument("--model-ranks", type=positive_int, default=d.model_ranks, metavar="M",
                     help="--parallel hybrid: ranks per data group splitting the hidden units (divides P)")
    mpi.add_argument("--comm", choices=COMM_MODES, default=d.comm,
                     help="gradient allreduce: host (GPU data staged through pinned host buffers), "
                     "cuda-aware (device buffers to a CUDA-aware MPI), nccl (NCCL through CuPy)")
    mpi.add_argument("--overlap", action="store_true",
                     help="start the allreduce of the layer-2 gradients while layer 1's are computed")
    mpi.add_argument("--mpi-task", metavar="FILE.py",
                     help="--parallel data with a student's rows_of_rank and allreduce_gradients (the course's "
                     "MPI task, written by python -m nn_cuda.course start) in place of the project's")
    mpi.add_argument("--mpi-timeout", type=positive_float, default=d.mpi_timeout, metavar="SECONDS",
                     help=f"a collective that waits longer than this ends the job, naming the ranks that did "
                     f"not answer (default {d.mpi_timeout:g})")
    return p


def parse_args(argv=None) -> TrainConfig:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug and not args.seq:
        parser.error("-d/--debug compares against the reference run: add -s/--seq")
    if args.init and tuple(args.init_scale) != DEFAULT_INIT_SCALE:
        parser.error("--init-scale sets how new weights are drawn and --init loads them instead: drop one")
    if args.mpi_task and (args.parallel != "data" or args.overlap or args.comm != "host"):
        parser.error("--mpi-task replaces the split and the allreduce of --parallel data with --comm host "
                     "and no --overlap: drop the other MPI options")
    if args.model_ranks is not None and args.parallel != "hybrid":
        parser.error("--model-ranks sets the grid of --parallel hybrid: add --parallel hybrid or drop it")
    take_pixel_defaults(args, argv, build_parser)
    return TrainConfig(**vars(args))


def take_pixel_defaults(args, argv, make_parser) -> None:
    """With --pixels unit, the lr and initialisation that learn on [0, 1] pixels where `argv` gives
    none (`make_parser()` builds the parser that parsed `args`)."""
    if args.pixels != "unit":
        return
    given = _given(argv, ("lr", "init_scale"), make_parser)
    args.lr = args.lr if "lr" in given else default_lr("unit")
    args.init_scale = args.init_scale if "init_scale" in given or args.init else COURSE_INIT_SCALE


def default_lr(pixels: str) -> float:
    """The learning rate that learns on `pixels` ("raw" or "unit") with their default initialisation."""
    return UNIT_PIXELS_LR if pixels == "unit" else DEFAULT_LR


def _given(argv, dests, make_parser) -> set:
    """Which of the options `dests` the command line `argv` sets (a second parse without defaults)."""
    probe = make_parser()
    probe.set_defaults(**{dest: None for dest in dests})
    probed = probe.parse_args(argv)
    return {dest for dest in dests if getattr(probed, dest) is not None}
