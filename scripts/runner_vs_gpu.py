"""`python scripts/runner_vs_gpu.py`: does the CPU runner give what a GPU gives? (on a machine with one)

Runs the CPU runner's tests (tests/test_cuda_cpu*.py) with the GPU mirror (tests/gpu_mirror.py): every
kernel they launch through `nn_cuda.cuda_cpu.RawModule` is launched again by CuPy on the GPU, from the
same inputs, and its outputs are compared bit for bit. Writes one record (default
runs/runner_vs_gpu.json; `--out results/checks/runner_vs_gpu.json` updates the committed one, kept
apart from the benchmarks' records): the machine,
CuPy's and NVRTC's versions, how many launches gave the same bits, and each launch that did not, with
its largest relative difference, its elements that differ and the first of them in bits; the GPU
builds that failed, with NVRTC's first error. The tests' own pass or fail is printed too (a test that
reads the process's stdout also sees the GPU's device printf).
"""

from __future__ import annotations

from nn_cuda.interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("scripts/runner_vs_gpu.py", running=__name__ == "__main__"):
    import argparse
    import collections
    import json
    import os
    import re
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from nn_cuda.bench.common import run_script
    from nn_cuda.records import machine_info, write_json

REPOSITORY = Path(__file__).resolve().parents[1]
PROG = "python scripts/runner_vs_gpu.py"


def summary(records: list[dict]) -> dict:
    """The mirror's launch records summed up: counts by outcome, the launches that differ (one entry
    per test and kernel: the largest difference of its launches), the failed GPU builds."""
    differing: dict[tuple, dict] = {}
    for record in records:
        if record["outcome"] != "differs":
            continue
        entry = differing.setdefault((record["test"], record["kernel"]), {
            "test": record["test"], "kernel": record["kernel"], "launches": 0, "outputs": {}})
        entry["launches"] += 1
        for output, compared in record["compared"].items():
            if compared["same_bits"]:
                continue
            seen = entry["outputs"].setdefault(output, {"dtype": compared["dtype"], "size": compared["size"],
                                                        "elements_differing": 0, "max_relative_difference": 0.0})
            seen["elements_differing"] = max(seen["elements_differing"], compared.get("elements_differing") or 0)
            relative = compared.get("max_relative_difference")
            if relative is not None:
                seen["max_relative_difference"] = max(seen["max_relative_difference"], relative)
            seen.setdefault("first", compared.get("differing", [None])[0])  # [index, CPU bits, GPU bits]
    failed_builds = {}
    for record in records:
        if record["outcome"] == "GPU build failed":
            first_error = next((line.strip() for line in record["error"].splitlines() if "error" in line),
                               record["error"].splitlines()[0])
            failed_builds.setdefault(record["test"], re.sub(r"\S*?\.cu\((\d+)\)", r"line \1", first_error))
    return {
        "launches": len(records),
        "outcomes": dict(collections.Counter(record["outcome"] for record in records).most_common()),
        "differing": sorted(differing.values(), key=lambda entry: (entry["test"], entry["kernel"])),
        "failed_gpu_builds": failed_builds,
    }


def mirrored_run(workers: int) -> tuple[list[dict], int]:
    """The CPU runner's tests with the mirror: its launch records, and pytest's exit status."""
    with tempfile.TemporaryDirectory(prefix="nn_cuda_mirror_") as folder:
        environment = dict(os.environ, NN_CUDA_GPU_MIRROR=folder)
        tests = sorted(str(path.relative_to(REPOSITORY)) for path in (REPOSITORY / "tests").glob("test_cuda_cpu*.py"))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), *tests]
        print(" ".join(command[1:]), flush=True)
        status = subprocess.run(command, cwd=REPOSITORY, env=environment).returncode
        records = [json.loads(line) for path in sorted(Path(folder).glob("*.jsonl"))
                   for line in path.read_text().splitlines()]
    return records, status


def library_versions() -> dict:
    import cupy
    from cupy.cuda import nvrtc, runtime

    if runtime.getDeviceCount() < 1:  # NVRTC and the runtime answer without a GPU
        raise RuntimeError("CuPy sees no GPU")
    return {"cupy": cupy.__version__, "nvrtc": ".".join(map(str, nvrtc.getVersion())),
            "cuda_runtime": runtime.runtimeGetVersion(), "cuda_driver": runtime.driverGetVersion()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count(),
                        help="pytest-xdist workers (default: every core)")
    parser.add_argument("--out", default="runs/runner_vs_gpu.json", help="the record to write")
    args = parser.parse_args(argv)
    try:
        versions = library_versions()
    except Exception as error:  # no CuPy, or no GPU it reaches
        print(f"{PROG}: error: the mirror needs CuPy and a GPU ({type(error).__name__}: {error})", file=sys.stderr)
        return 1
    records, status = mirrored_run(args.workers)
    if not records:
        print(f"{PROG}: error: the tests launched nothing through the mirror", file=sys.stderr)
        return 1
    result = {"check": "runner_vs_gpu", "machine": machine_info(), **versions, "tests_exit_status": status,
              **summary(records)}
    write_json(args.out, result)
    print(f"{result['launches']} launches: " + ", ".join(f"{n} {outcome}" for outcome, n in result["outcomes"].items()))
    for entry in result["differing"]:
        worst = max(entry["outputs"].values(), key=lambda output: output["max_relative_difference"])
        print(f"  differs: {entry['test'].split('::')[-1]} {entry['kernel']}: "
              f"{worst['elements_differing']} of {worst['size']} {worst['dtype']}, "
              f"largest relative difference {worst['max_relative_difference']:.2g}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script("scripts/runner_vs_gpu.py", main))
