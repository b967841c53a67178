"""`python scripts/gpu_check.py` (`./run.sh gpu-check`): the acceptance run on a machine with a GPU.

It first checks that the NVIDIA wheels installed are of one CUDA major version, then runs, each as
its own process, with its output kept, for both GPU libraries (CuPy with the CUDA C kernels, Numba
with their mirrors; Numba without its simulator):
1. the kernel and training tests on the GPU: every kernel against float64 NumPy, GPU training
   against the NumPy reference (tests/test_cuda_kernels.py, tests/test_gpu_training.py,
   tests/test_numba_sim.py);
2. the grading modes 1-4 with --backend cupy, mode 4 with --backend numba (the course's harness;
   Outputs/ under the results dir);
3. bench gemm: every GEMM kernel's error, GFLOP/s and, for CuPy, % of cuBLAS (Numba at the course's sizes);
4. the default training run (its history: loss and accuracies per epoch);
and writes gpu_check.json (every step's command, exit status, time and the numbers it measured) and
gpu_check.md, a summary to paste into an issue or a report, also printed at the end.
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/gpu_check.py", running=__name__ == "__main__"):
    import argparse
    import json
    import os
    import re
    import sys
    import time
    from pathlib import Path

    from nn_cuda.cuda_wheels import MixedCudaVersions, check_one_major, installed_majors
    from nn_cuda.outputs import write_text
    from nn_cuda.records import gpu_name, machine_info, machine_line, write_json
    from nn_cuda.bench.common import run_child, run_script
    from nn_cuda.course_gemm import COURSE_GEMM_SIZES

REPOSITORY = Path(__file__).resolve().parents[1]
COURSE_SIZES = ",".join(f"{M}x{N}x{K}" for M, N, K in COURSE_GEMM_SIZES)


def steps(out: Path) -> list[dict]:
    """The acceptance steps: a name, a command line and the environment variables it adds."""
    python = sys.executable
    pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    on_gpu = {"NUMBA_ENABLE_CUDASIM": "0"}  # Numba on the GPU, never its simulator
    return [
        {"name": "cupy tests", "command": [*pytest, "tests/test_cuda_kernels.py", "tests/test_gpu_training.py",
                                           "-k", "cupy"]},
        {"name": "numba tests", "command": [*pytest, "tests/test_numba_sim.py", "tests/test_gpu_training.py",
                                            "-k", "numba"], "environment": on_gpu},
        *({"name": f"grade mode {mode}",
           "command": [python, "-m", "nn_cuda.grade", "--mode", str(mode), "--backend", "cupy",
                       "--outputs", str(out / f"Outputs_mode{mode}")]} for mode in (1, 2, 3, 4)),
        {"name": "grade mode 4 numba", "environment": on_gpu,
         "command": [python, "-m", "nn_cuda.grade", "--mode", "4", "--backend", "numba",
                     "--outputs", str(out / "Outputs_mode4_numba")]},
        # Numba at the course's sizes only: at the large ones its naive kernel took about 1 s a call on
        # an H200 (2026-11-26, before its K loop became a while loop), minutes for the whole check
        *({"name": f"bench gemm {library}", "environment": on_gpu,
           "command": [python, "-m", "nn_cuda.bench", "gemm", "--backend", library, *sizes,
                       "--json", str(out / f"gemm_{library}_float32.json")]}
          for library, sizes in (("cupy", ()), ("numba", ("--sizes", COURSE_SIZES)))),
        *({"name": f"default training {library}", "environment": on_gpu,
           "command": [python, "-m", "nn_cuda.train", "--backend", library, "--quiet",
                       "--history", str(out / f"history_{library}.json")]} for library in ("cupy", "numba")),
    ]


def run_step(step: dict) -> dict:
    started = time.perf_counter()
    environment = {**os.environ, **step.get("environment", {})}
    result = run_child(step["command"], environment, cwd=REPOSITORY)
    output = result.stdout + result.stderr
    print(output, end="" if output.endswith("\n") else "\n")
    return {**step, "returncode": result.returncode, "passed": result.returncode == 0,
            "seconds": round(time.perf_counter() - started, 1), "output_tail": output[-4000:]}


def measured_numbers(out: Path, record: dict) -> dict:
    """The numbers a finished step measured, read from its output or its JSON file."""
    name, text = record["name"], record.get("output_tail", "")
    library = name.rsplit(" ", 1)[-1]
    if name.endswith(" tests"):
        counts = re.findall(r"(\d+) (passed|failed|skipped|error)", text)
        return {kind: int(count) for count, kind in counts}
    gemm_file = out / f"gemm_{library}_float32.json"
    if name.startswith("bench gemm") and gemm_file.is_file():
        results = [r for r in json.loads(gemm_file.read_text())["results"] if r["trans"] == "NN"]
        if any("percent_of_cublas" in r for r in results):
            return {f"{r['algo']} {r['M']}x{r['N']}x{r['K']} % of cuBLAS": round(r["percent_of_cublas"], 1)
                    for r in results if "percent_of_cublas" in r}
        return {f"{r['algo']} {r['M']}x{r['N']}x{r['K']} GFLOP/s": round(r["gflops"], 1)
                for r in results if "gflops" in r}
    history_file = out / f"history_{library}.json"
    if name.startswith("default training") and history_file.is_file():
        history = json.loads(history_file.read_text())
        return {"test accuracy": history["test_acc"], "training seconds": round(history["train_seconds"], 2)}
    return {}  # the grading modes: their exit status is the verdict


def summary_lines(records: list[dict]) -> list[str]:
    lines = []
    for record in records:
        status = "PASS" if record["passed"] else f"FAIL (exit {record['returncode']})"
        numbers = ", ".join(f"{key} {value}" for key, value in record.get("numbers", {}).items())
        lines.append(f"{record['name']:18s} {status:16s} {record['seconds']:8.1f} s  {numbers}")
    return lines


def summary_markdown(info: dict, records: list[dict]) -> str:
    """gpu_check.md: the machine, the CUDA wheels, and one row per step."""
    wheels = "; ".join(f"CUDA {major}: {', '.join(names)}" for major, names in installed_majors().items())
    rows = "".join(
        f"| {record['name']} | {'PASS' if record['passed'] else 'FAIL (exit %d)' % record['returncode']} | "
        f"{record['seconds']:.1f} | {', '.join(f'{k} {v}' for k, v in record.get('numbers', {}).items())} |\n"
        for record in records)
    return (f"# nn_cuda gpu-check\n\nMachine: {machine_line(info)}\n\nNVIDIA wheels: {wheels or 'none'}\n\n"
            f"| step | verdict | seconds | measured |\n|---|---|---|---|\n{rows}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python scripts/gpu_check.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs", help="folder of gpu_check.json, gpu_check.md and the steps' files")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_one_major()
    except MixedCudaVersions as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    gpu = gpu_name()
    if gpu is None:
        parser.exit(2, f"{parser.prog}: error: gpu-check needs an NVIDIA GPU that CuPy can reach "
                    "(pip install -e '.[mpi,dev,gpu]'); without one, pytest checks the same kernels on the "
                    "CPU (--backend cuda-cpu)\n")
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
    summary = summary_markdown(info, records)
    write_text(out / "gpu_check.md", summary)
    print("\nsummary")
    for line in summary_lines(records):
        print(line)
    print(f"\nwrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'} (paste the latter):\n\n{summary}")
    return 0 if all(record["passed"] for record in records) else 1


if __name__ == "__main__":
    sys.exit(run_script("scripts/gpu_check.py", main))
