"""The JSON records every benchmark and run writes: the machine, the date and the command beside the
numbers, written atomically (nn_cuda.outputs). nn_cuda.report reads them back from results/.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

from .outputs import write_text


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name() -> str | None:
    """The name of CUDA device 0 through CuPy, or None where there is none (never raises)."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return None


def benchmark_command(backend: str | None = None) -> str:
    """This benchmark's command line as typed: `python -m nn_cuda.bench gemm ...`, or
    `python scripts/bench_lr.py ...` for a study of scripts/ (commands that are not benchmarks put
    their own line in the record), after the variables that change what `backend` runs
    (command_line)."""
    script = Path(sys.argv[0])
    started = [f"scripts/{script.name}"] if script.parent.name == "scripts" else ["-m", "nn_cuda.bench"]
    return command_line([Path(sys.executable).name, *started, *sys.argv[1:]], backend)


def machine_info(backend: str | None = None) -> dict:
    """The machine, the date and the command of a record (`backend`: the one measured, whose
    variables the command shows)."""
    import numpy as np

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": benchmark_command(backend),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "gpu": gpu_name(),
    }


def machine_name(info: dict) -> str:
    """"AMD EPYC (2 cores), no GPU": the machine of a record, as every table and figure names it."""
    gpu = f"GPU {info['gpu']}" if info.get("gpu") else "no GPU"
    return f"{info['cpu']} ({info.get('cores', '?')} cores), {gpu}"


def machine_line(info: dict) -> str:
    return f"{machine_name(info)}; {info['date']}"


def write_json(path, payload) -> None:
    """Write `payload` to `path` as indented JSON, atomically (nn_cuda.outputs), NumPy scalars as floats."""
    write_text(path, json.dumps(payload, indent=2, default=float) + "\n")


#: backend -> the environment variables that change what a run on it computes or how
RUN_VARIABLES = {
    "cuda-cpu": ("NN_CUDA_CPU_CHECK", "NN_CUDA_CPU_RACECHECK", "NN_CUDA_CPU_SEED", "NN_CUDA_CPU_FMA",
                 "NN_CUDA_CPU_THREADS", "NN_CUDA_KERNEL_DIR"),
    "cupy": ("NN_CUDA_KERNEL_DIR",),
    "numba": ("NUMBA_ENABLE_CUDASIM",),
}


def command_line(words: list[str], backend: str | None, environ=None) -> str:
    """`words` as a shell command, after the variables of RUN_VARIABLES[backend] that are set
    (`NN_CUDA_CPU_CHECK=1 python ...`)."""
    environ = os.environ if environ is None else environ
    settings = [f"{name}={environ[name]}" for name in RUN_VARIABLES.get(backend, ()) if environ.get(name)]
    return " ".join([*settings, *words])
