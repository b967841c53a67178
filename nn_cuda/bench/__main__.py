"""`python -m nn_cuda.bench BENCHMARK [options]`: dispatch to nn_cuda/bench/<BENCHMARK>.py."""

import importlib
import sys

from ..errors import failed
from ..interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.bench"):
    from ..outputs import OutputError, check_output_paths
    from ..parallel import refuse_extra_ranks
    from ..training import USER_ERRORS

BENCHMARKS = {
    "gemm": ("nn_cuda.bench.gemm", "GEMM kernels against NumPy float64 and cuBLAS"),
    "launch": ("nn_cuda.bench.launch", "what one kernel launch costs the host: Python calls and time"),
    "train": ("nn_cuda.bench.train", "training step throughput (and a PyTorch loop when installed)"),
    "scaling": ("nn_cuda.bench.scaling", "data-parallel scaling over MPI ranks (mpiexec -n 1..4)"),
    "roofline": ("nn_cuda.bench.roofline", "the machine's copy bandwidth and vendor GEMM rate"),
    "lr": ("nn_cuda.bench.lr", "test accuracy as the learning rate and seed vary (the default lr's scan)"),
    "diff": ("nn_cuda.bench.diff", "float32 against the float64 reference as lr, epochs, H, batch vary"),
    "gpu-check": ("nn_cuda.bench.gpu_check", "the acceptance run on a GPU: CuPy tests, grading modes 1-4, "
                  "bench gemm, default training"),
    "adversarial": ("nn_cuda.bench.adversarial",
                    "asynchronous adversarial training vs serial (mpiexec -n 2..4, k = P - 1)"),
}


@ends_in_one_line_when_interrupted("nn_cuda.bench")
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print("usage: python -m nn_cuda.bench {" + ",".join(BENCHMARKS) + "} [options]\n")
        for name, (_, what) in BENCHMARKS.items():
            print(f"  {name:10s} {what}")
        known = not argv or argv[0] in ("-h", "--help")
        if not known:
            print(f"\nunknown benchmark {argv[0]!r}", file=sys.stderr)
        return 0 if known else 2
    if refuse_extra_ranks("nn_cuda.bench", f"bench {argv[0]}",
                          " (bench scaling and bench adversarial start their own mpiexec jobs)"):
        return 1
    try:
        check_output_paths({"--json": _flag_value(argv[1:], "--json")})  # before minutes of work
    except OutputError as error:
        print(f"nn_cuda.bench {argv[0]}: error: {error}", file=sys.stderr)
        return 2
    module = importlib.import_module(BENCHMARKS[argv[0]][0])
    try:
        return module.main(argv[1:]) or 0
    except USER_ERRORS as error:  # a missing dataset, a size a kernel cannot take, --json unwritable...
        return failed(f"nn_cuda.bench {argv[0]}", error)


def _flag_value(arguments: list, flag: str):
    """The value given to `flag` (as "FLAG VALUE" or "FLAG=VALUE"), or None."""
    for position, argument in enumerate(arguments):
        if argument == flag and position + 1 < len(arguments):
            return arguments[position + 1]
        if argument.startswith(flag + "="):
            return argument[len(flag) + 1:]
    return None


if __name__ == "__main__":
    sys.exit(main())
