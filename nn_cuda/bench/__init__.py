"""Benchmarks: `python -m nn_cuda.bench gemm|train|...`. Each writes a table and, with --json, a record of
the numbers, the machine and the command, for the README and the report. Speed is only ever measured
here, as ratios against a baseline timed in the same run, never in tests."""

BENCHMARKS = {
    "gemm": ("nn_cuda.bench.gemm", "GEMM kernels against NumPy float64 and cuBLAS"),
    "train": ("nn_cuda.bench.train", "training step throughput (and a PyTorch loop when installed)"),
    "scaling": ("nn_cuda.bench.scaling", "data-parallel scaling over MPI ranks (mpiexec -n 1..4)"),
}
#: the benchmarks that became scripts: the records they wrote still name `python -m nn_cuda.bench NAME`
MOVED = {"lr": "scripts/bench_lr.py", "diff": "scripts/bench_diff.py", "roofline": "scripts/bench_roofline.py",
         "gpu-check": "scripts/gpu_check.py", "adversarial": "scripts/bench_adversarial.py",
         "launch": "scripts/bench_launch.py"}
