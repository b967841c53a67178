"""What the benchmarks share: the default backend, flag checks, mpiexec and its environment, ratios.
(The machine record and the JSON writer every run uses are in nn_cuda.records.)"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

from ..parallel.mpi import BLAS_THREAD_VARIABLES


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


def _die_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the benchmark's process dies, even by SIGKILL
    (Linux's parent-death signal; elsewhere nothing). mpiexec forwards it to the ranks."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


#: prctl's option number for the parent-death signal (linux/prctl.h)
PR_SET_PDEATHSIG = 1


def run_child(command: list[str], env: dict, cwd=None) -> subprocess.CompletedProcess:
    """Run a benchmark's job (an mpiexec, a test run) to its end, its output captured; it ends with
    the benchmark, killed or not, instead of running on as an orphan."""
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)


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


def host_seconds(call, repeat: int) -> list[float]:
    """Seconds of each of `repeat` calls of `call` by the host clock, after one untimed warm-up call."""
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples
