"""`python scripts/gpu_vs_cpu.py`: how far the CPU runner's float32 results are from a GPU's.

The CUDA C kernels run the same operations in the same order on a GPU (`--backend cupy`) and on
the CPU (`--backend cuda-cpu`); only the compilers' floating-point choices differ (NVRTC fuses
`a * b + c` into FMA, CuPy flushes denormals). Measure it in two steps:

    python scripts/gpu_vs_cpu.py gemm --backend cupy --out gemm_cupy.npz        # on the GPU machine
    python scripts/gpu_vs_cpu.py gemm --backend cuda-cpu --out gemm_cpu.npz     # anywhere
    python scripts/gpu_vs_cpu.py compare gemm_cupy.npz gemm_cpu.npz

`gemm` computes the course's mode-4 product C <- 2 A B + 5 C at its three sizes, with every GEMM
algorithm of the backend, on inputs drawn from [0, 1) by a fixed seed. `compare` prints, for every
array two .npz files share (the GEMM results above, or the weights `train --save` writes), the
relative inf-norm difference, the share of elements that are bit for bit equal, and for the GEMM
results each one's relative error against float64 NumPy.
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/gpu_vs_cpu.py", running=__name__ == "__main__"):
    import argparse
    import sys
    import zipfile

    import numpy as np

    from nn_cuda.backends import BACKENDS
    from nn_cuda.bench.common import backend_or_usage_error, run_script
    from nn_cuda.bench.gemm import Problem
    from nn_cuda.course_gemm import COURSE_GEMM_SIZES, GEMM_ALPHA, GEMM_BETA
    from nn_cuda.outputs import OutputError, atomic_file, check_output_paths
    from nn_cuda.relative_errors import relative_error

SEED = 0
PROG = "python scripts/gpu_vs_cpu.py"


def problem(M: int, N: int, K: int) -> Problem:
    """bench gemm's float32 inputs in [0, 1) and float64 reference, drawn by SEED and the size."""
    return Problem(M, N, K, False, False, np.float32, seed=[SEED, M, N, K])


def gemm_key(algo: str, M: int, N: int, K: int) -> str:
    return f"{algo}_{M}x{N}x{K}"


def float64_gemm(key: str) -> np.ndarray | None:
    """The float64 NumPy result of the product a gemm_key names (None for other arrays)."""
    try:
        M, N, K = (int(n) for n in key.rsplit("_", 1)[1].split("x"))
    except (IndexError, ValueError):
        return None
    return problem(M, N, K).reference


def save_gemms(backend, backend_name: str, out: str) -> None:
    results = {}
    for algo in backend.gemm_algos:
        for M, N, K in COURSE_GEMM_SIZES:
            case = problem(M, N, K)
            A, B, C = (backend.to_device(x) for x in (case.A, case.B, case.C))
            backend.gemm(A, B, C, GEMM_ALPHA, GEMM_BETA, algo=algo)
            results[gemm_key(algo, M, N, K)] = backend.to_host(C)
            print(f"{backend_name} {gemm_key(algo, M, N, K)}", flush=True)
    with atomic_file(out) as handle:  # under this very name (np.savez adds .npz to a name without it)
        np.savez(handle, **results)
    print(f"wrote {out}")


def load_arrays(path: str):
    """The arrays of a .npz file; ValueError in one line where `path` is missing or holds none."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"{path} is not a .npz file of arrays, as `gemm --out` and `train --save` write "
                         f"({type(error).__name__})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} holds one array, not a .npz file of arrays as `gemm --out` and `train --save` "
                         "write")
    return data


def compare(first: str, second: str) -> None:
    a, b = load_arrays(first), load_arrays(second)
    shared = [key for key in a.files if key in b.files]
    if not shared:
        sys.exit(f"{PROG}: error: {first} and {second} have no array in common")
    print(f"{'array':28s} {'rel. difference':>16s} {'bitwise equal':>14s} {'first vs f64':>13s} "
          f"{'second vs f64':>14s}")
    for key in shared:
        x, y = a[key], b[key]
        if x.dtype.kind != "f":
            continue  # what `train --save` writes beside the weights (its settings)
        if x.shape != y.shape or x.dtype != y.dtype:
            sys.exit(f"{PROG}: error: {key} is {x.shape} {x.dtype} in {first}, {y.shape} {y.dtype} in {second}")
        bits = f"u{x.itemsize}"
        equal = float(np.mean(x.view(bits) == y.view(bits)))
        reference = float64_gemm(key)
        against = ("", "") if reference is None else (
            f"{relative_error(reference, x, np.inf):.2e}", f"{relative_error(reference, y, np.inf):.2e}")
        print(f"{key:28s} {relative_error(x, y, np.inf):16.2e} {equal:14.1%} {against[0]:>13s} {against[1]:>14s}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gemm = commands.add_parser("gemm", help="the course's products with every GEMM algorithm of a backend")
    gemm.add_argument("--backend", choices=BACKENDS, required=True)
    gemm.add_argument("--out", required=True, help="the .npz file to write")
    both = commands.add_parser("compare", help="two .npz files, array by array")
    both.add_argument("first")
    both.add_argument("second")
    args = parser.parse_args(argv)
    if args.command == "gemm":
        try:  # before the products: a path that cannot be written, a backend this machine lacks
            check_output_paths({"--out": args.out})
        except OutputError as error:
            parser.exit(2, f"{PROG}: error: {error}\n")
        save_gemms(backend_or_usage_error(parser, args.backend), args.backend, args.out)
    else:
        compare(args.first, args.second)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/gpu_vs_cpu.py", main))
