"""What every benchmark records: the machine, the date, the command; and a JSON writer."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import sys
from pathlib import Path

from ..outputs import write_text
from ..parallel.mpi import BLAS_THREAD_VARIABLES


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


def machine_info() -> dict:
    import numpy as np

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "-m", "nn_cuda.bench", *sys.argv[1:]]),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "gpu": gpu_name(),
    }


def machine_line(info: dict) -> str:
    gpu = f", GPU {info['gpu']}" if info.get("gpu") else ", no GPU"
    return f"{info['cpu']} ({info['cores']} cores){gpu}; {info['date']}"


def write_json(path, payload) -> None:
    """Write `payload` to `path` as indented JSON, atomically (nn_cuda.outputs), NumPy scalars as floats."""
    write_text(path, json.dumps(payload, indent=2, default=float) + "\n")


def default_backend() -> str:
    """The benchmarks' default: cupy where CuPy reaches a GPU, else numpy."""
    from ..backends import get_backend

    try:
        get_backend("cupy")
        return "cupy"
    except (ImportError, RuntimeError):
        return "numpy"


def backend_or_usage_error(parser, name: str, gemm: str | None = None):
    """get_backend(name, gemm), or the parser's one-line usage error (exit status 2) saying why not:
    an unknown GEMM algorithm, CuPy not installed, no GPU. Checked before any work starts."""
    from ..backends import get_backend

    try:
        return get_backend(name, gemm)
    except (ImportError, RuntimeError, ValueError) as error:
        parser.error(f"--backend {name}" + (f" --gemm {gemm}" if gemm else "") + f": {error}")


def find_mpiexec(benchmark: str) -> str:
    """mpiexec next to this Python (the `mpich` wheel installs it there), else on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = local if os.access(local, os.X_OK) else shutil.which("mpiexec")
    if not found:
        raise SystemExit(f"nn_cuda.bench {benchmark}: error: no mpiexec next to Python or on PATH; "
                         "install MPI with pip install -e .[mpi]")
    return found


def mpi_child_environment(threads: int) -> dict:
    """The environment of an mpiexec job: this Python's folder first on PATH, `threads` BLAS threads."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for variable in BLAS_THREAD_VARIABLES:
        env[variable] = str(threads)
    return env


def format_ratio(summary) -> str:
    """A ratio measured round by round ({median, min, max}): "1.23x [1.10-1.40]", or "-" without one."""
    if not summary:
        return "-"
    return f"{summary['median']:.2f}x [{summary['min']:.2f}-{summary['max']:.2f}]"
