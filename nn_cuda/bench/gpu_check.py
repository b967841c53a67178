"""`python -m nn_cuda.bench gpu-check` (`./run.sh gpu-check`): the acceptance run on a machine with a GPU.

It runs, each as its own process, with its output kept:
1. the CuPy tests: every CUDA C kernel against float64 NumPy, and GPU training against the NumPy
   reference (tests/test_cuda_kernels.py, tests/test_gpu_training.py);
2. the grading modes 1-4 with --backend cupy (the course's harness; Outputs/ under the results dir);
3. bench gemm --backend cupy: every GEMM kernel's error, GFLOP/s and % of cuBLAS;
4. the default training run with --backend cupy (its history: loss and accuracies per epoch);
and writes one JSON file (gpu_check.json) with every step's command, exit status, time and the
numbers it measured, plus a short summary on the terminal.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from ..records import gpu_name, machine_info, machine_line, write_json

REPOSITORY = Path(__file__).resolve().parents[2]


def steps(out: Path) -> list[dict]:
    """The acceptance steps: a name and a command line each."""
    python = sys.executable
    return [
        {"name": "cupy tests", "command": [python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                           "tests/test_cuda_kernels.py", "tests/test_gpu_training.py",
                                           "-k", "cupy"]},
        *({"name": f"grade mode {mode}",
           "command": [python, "-m", "nn_cuda.grade", "--mode", str(mode), "--backend", "cupy",
                       "--outputs", str(out / f"Outputs_mode{mode}")]} for mode in (1, 2, 3, 4)),
        {"name": "bench gemm", "command": [python, "-m", "nn_cuda.bench", "gemm", "--backend", "cupy",
                                           "--json", str(out / "gemm_cupy_float32.json")]},
        {"name": "default training", "command": [python, "-m", "nn_cuda.train", "--backend", "cupy", "--quiet",
                                                 "--history", str(out / "history_cupy.json")]},
    ]


def run_step(step: dict) -> dict:
    started = time.perf_counter()
    result = subprocess.run(step["command"], cwd=REPOSITORY, capture_output=True, text=True)
    output = result.stdout + result.stderr
    print(output, end="" if output.endswith("\n") else "\n")
    return {**step, "returncode": result.returncode, "passed": result.returncode == 0,
            "seconds": round(time.perf_counter() - started, 1), "output_tail": output[-4000:]}


def measured_numbers(out: Path, record: dict) -> dict:
    """The numbers a finished step measured, read from its output or its JSON file."""
    name, text = record["name"], record.get("output_tail", "")
    if name == "cupy tests":
        counts = re.findall(r"(\d+) (passed|failed|skipped|error)", text)
        return {kind: int(count) for count, kind in counts}
    if name == "bench gemm" and (out / "gemm_cupy_float32.json").is_file():
        results = json.loads((out / "gemm_cupy_float32.json").read_text())["results"]
        return {f"{r['algo']} {r['M']}x{r['N']}x{r['K']} % of cuBLAS": round(r["percent_of_cublas"], 1)
                for r in results if r["trans"] == "NN" and "percent_of_cublas" in r}
    if name == "default training" and (out / "history_cupy.json").is_file():
        history = json.loads((out / "history_cupy.json").read_text())
        return {"test accuracy": history["test_acc"], "training seconds": round(history["train_seconds"], 2)}
    return {}  # the grading modes: their exit status is the verdict


def summary_lines(records: list[dict]) -> list[str]:
    lines = []
    for record in records:
        status = "PASS" if record["passed"] else f"FAIL (exit {record['returncode']})"
        numbers = ", ".join(f"{key} {value}" for key, value in record.get("numbers", {}).items())
        lines.append(f"{record['name']:18s} {status:16s} {record['seconds']:8.1f} s  {numbers}")
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m nn_cuda.bench gpu-check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="results", help="folder of gpu_check.json and the steps' files")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    gpu = gpu_name()
    if gpu is None:
        parser.error("gpu-check needs an NVIDIA GPU that CuPy can reach (pip install -e '.[gpu]'); "
                     "without one, pytest checks the same kernels on the CPU (--backend cuda-cpu)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    print(f"gpu-check on {machine_line(info)}")
    records = []
    for step in steps(out):
        print(f"== {step['name']}: {' '.join(step['command'][1:])}", flush=True)
        record = run_step(step)
        record["numbers"] = measured_numbers(out, record)
        records.append(record)
    write_json(out / "gpu_check.json", {"benchmark": "gpu-check", "machine": info, "steps": records})
    print("\nsummary")
    for line in summary_lines(records):
        print(line)
    print(f"wrote {out / 'gpu_check.json'}")
    return 0 if all(record["passed"] for record in records) else 1


if __name__ == "__main__":
    sys.exit(main())
