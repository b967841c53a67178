"""`python scripts/bench_launch.py`: what one kernel launch costs the host, per network operation.

For each operation at its smallest size (one element: the launch is all there is), the Python calls
from the operation to the compiled kernel, and the median time of a launch on the backend, against
the same operation on the NumPy backend in the same run (nn_cuda.launch_cost).
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/bench_launch.py", running=__name__ == "__main__"):
    import argparse
    import statistics
    import sys

    from tqdm import tqdm

    from nn_cuda.arguments import positive_int
    from nn_cuda.backends import get_backend
    from nn_cuda.bench.common import host_seconds, run_script
    from nn_cuda.launch_cost import operations, python_calls
    from nn_cuda.records import machine_info, machine_line, write_json
    from nn_cuda.report.markdown import launch_table, printed


def median_microseconds(call, repeat: int) -> float:
    return 1e6 * statistics.median(host_seconds(call, repeat))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python scripts/bench_launch.py", description=__doc__)
    p.add_argument("--backend", choices=("cuda-cpu", "cupy"), default="cuda-cpu")
    p.add_argument("--repeat", type=positive_int, default=2000, help="launches timed per operation")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    backend, numpy = get_backend(args.backend), get_backend("numpy")
    ops, baseline = operations(backend), operations(numpy)
    info = machine_info(args.backend)
    print(f"one launch of each operation at its smallest size on {args.backend} ({args.repeat} launches, "
          f"median); machine: {machine_line(info)}")
    rows = [{"operation": name, "python_calls": python_calls(call),
             "launch_us": median_microseconds(call, args.repeat),
             "numpy_us": median_microseconds(baseline[name], args.repeat)}
            for name, call in tqdm(ops.items(), unit="operation")]
    payload = {"benchmark": "launch", "machine": info, "backend": args.backend, "config": vars(args),
               "results": rows}
    printed("launch", payload, launch_table)
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/bench_launch.py", main))
