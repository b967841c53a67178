"""`python scripts/bench_roofline.py`: the machine's measured memory bandwidth and GEMM rate.

The roofline of the report needs two numbers of the machine, measured rather than taken from a data
sheet:

    bandwidth   bytes per second of a large array copy (read + write counted),
    FLOP rate   the best GFLOP/s of the vendor GEMM (cuBLAS through CuPy on a GPU, NumPy's BLAS on
                the CPU) over square sizes up to --max-size and the course's sizes,

and the vendor GEMM's rate on the course's problem sizes, each with its arithmetic intensity
2 M N K / (bytes of A, B, C read and C written). Each time is the fastest of --repeat calls (on a
GPU CUDA events around calls queued back to back, nn_cuda.gpu_timer; on the CPU the host clock): a
roof is what the machine can do, and on a shared machine noise only ever slows a call down.
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/bench_roofline.py", running=__name__ == "__main__"):
    import argparse
    import sys

    import numpy as np

    from nn_cuda.arguments import int_at_least, positive_int
    from nn_cuda.course_gemm import COURSE_GEMM_SIZES
    from nn_cuda.gpu_timer import CupyEvents, time_calls
    from nn_cuda.records import machine_info, machine_line, write_json
    from nn_cuda.report.numbers import intensity
    from nn_cuda.bench.common import host_seconds, run_script

SMALLEST_SQUARE = 512  # the squares measured are 512, 1024, ... up to --max-size
#: the smallest copy that measures memory, not a cache: 2 x 64 MiB moved exceeds an H200's 60 MB of L2
#: and the last-level caches of most hosts (not the largest server parts: keep the default there)
SMALLEST_COPY_MIB = 64


class _Host:
    name = "numpy (CPU)"
    xp = np

    def best_seconds(self, call, repeat):
        return min(host_seconds(call, repeat))


class _Cupy:
    name = "cupy (cuBLAS)"

    def __init__(self):
        import cupy

        self.xp = cupy
        self.timer = CupyEvents()

    def best_seconds(self, call, repeat):
        """CUDA events around calls queued back to back (nn_cuda.gpu_timer.time_calls)."""
        return min(time_calls(self.timer, lambda index: call(), repeat, warmup=1)) / 1e3


def _device():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return _Cupy()
    except Exception:  # no CuPy, or no GPU: the CPU is measured
        pass
    return _Host()


def build_parser():
    p = argparse.ArgumentParser(prog="python scripts/bench_roofline.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--copy-mib", type=positive_int, default=256,
                   help=f"size of the copied array (MiB), >= {SMALLEST_COPY_MIB}: a copy that fits in a cache "
                        "measures the cache (a 1-MiB one gave 84 GB/s on a 2-core machine)")
    p.add_argument("--max-size", type=int_at_least(SMALLEST_SQUARE), default=None,
                   help=f"largest square GEMM, >= {SMALLEST_SQUARE} (default 8192 on a GPU, 2048 on the CPU)")
    p.add_argument("--repeat", type=positive_int, default=10, help="calls timed; the fastest counts")
    p.add_argument("--json", metavar="PATH", help="write the results here")
    return p


def _copy_seconds(device, xp, n, dtype, repeat) -> float:
    """Best time of copying n elements into another array (the arrays are freed on return)."""
    source, target = xp.ones(n, dtype), xp.empty(n, dtype)
    return device.best_seconds(lambda: xp.copyto(target, source), repeat)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.copy_mib < SMALLEST_COPY_MIB:
        parser.error(f"--copy-mib must be at least {SMALLEST_COPY_MIB}: a smaller copy fits in a cache and "
                     "measures it, not the memory")
    device = _device()
    xp, dtype = device.xp, np.dtype(args.dtype)
    info = machine_info()
    n = args.copy_mib * 2**20 // dtype.itemsize
    bandwidth = 2 * n * dtype.itemsize / _copy_seconds(device, xp, n, dtype, args.repeat)

    def gemm_rate(M, N, K):
        A, B = xp.ones((M, K), dtype), xp.ones((K, N), dtype)
        C = xp.empty((M, N), dtype)
        seconds = device.best_seconds(lambda: xp.matmul(A, B, out=C), args.repeat)
        return 2.0 * M * N * K / seconds / 1e9

    largest = args.max_size or (8192 if isinstance(device, _Cupy) else 2048)
    squares = []
    size = SMALLEST_SQUARE
    while size <= largest:
        squares.append({"M": size, "N": size, "K": size, "gflops": gemm_rate(size, size, size),
                        "intensity": intensity(size, size, size, dtype.itemsize)})
        size *= 2
    course = [{"M": M, "N": N, "K": K, "gflops": gemm_rate(M, N, K),
               "intensity": intensity(M, N, K, dtype.itemsize)} for M, N, K in COURSE_GEMM_SIZES]
    peak = max(row["gflops"] for row in squares + course)
    print(f"roofline of {device.name}, {args.dtype}; machine: {machine_line(info)}")
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s, best GEMM {peak:.1f} GFLOP/s "
          f"(ridge at {peak * 1e9 / bandwidth:.1f} FLOP/byte)")
    for row in squares + course:
        print(f"  {row['M']:5d} x {row['N']:5d} x {row['K']:5d}: {row['gflops']:9.1f} GFLOP/s, "
              f"{row['intensity']:7.1f} FLOP/byte")
    if args.json:
        write_json(args.json, {"benchmark": "roofline", "machine": info, "device": device.name,
                               "config": vars(args), "bandwidth_bytes_per_s": bandwidth,
                               "peak_gflops": peak, "squares": squares, "course_sizes": course})
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/bench_roofline.py", main))
