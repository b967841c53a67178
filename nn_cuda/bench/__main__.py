"""`python -m nn_cuda.bench BENCHMARK [options]`: dispatch to nn_cuda/bench/<BENCHMARK>.py.

The one-off studies behind the project's choices and its report (the learning-rate scans, float32
against float64, the roofline's measurements, the asynchronous adversarial pipeline's speedup, the
cost of one launch) and the acceptance run on a GPU are scripts of their own in scripts/, run as
`python scripts/NAME.py` from the repository.
"""

import importlib
import sys

from ..errors import USAGE
from ..interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting
from . import BENCHMARKS, MOVED

with ends_in_one_line_while_starting("nn_cuda.bench"):
    from .common import run_benchmark


@ends_in_one_line_when_interrupted("nn_cuda.bench")
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MOVED:
        print(f"python -m nn_cuda.bench: error: {argv[0]} is now a script: python {MOVED[argv[0]]} "
              "(the same options, from the repository's root)", file=sys.stderr)
        return USAGE
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print("usage: python -m nn_cuda.bench {" + ",".join(BENCHMARKS) + "} [options]\n")
        for name, (_, what) in BENCHMARKS.items():
            print(f"  {name:12s} {what}")
        print("\nstudies, run from the repository: " + ", ".join(f"python {path}" for path in MOVED.values()))
        known = not argv or argv[0] in ("-h", "--help")
        if not known:
            print(f"\nunknown benchmark {argv[0]!r}", file=sys.stderr)
        return 0 if known else USAGE
    with ends_in_one_line_while_starting("nn_cuda.bench"):  # the benchmark's imports (numpy & co.)
        module = importlib.import_module(BENCHMARKS[argv[0]][0])
    return run_benchmark(f"nn_cuda.bench {argv[0]}", module.main, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
