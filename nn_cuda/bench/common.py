"""What the benchmarks share: how a benchmark command runs, the default backend, flag checks, the
mpiexec jobs' environment, the host clock. (The machine record and the JSON writer every run uses are in
nn_cuda.records; the studies in scripts/ run through `run_benchmark` too.)"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

from ..parallel.mpi import BLAS_THREAD_VARIABLES


def run_benchmark(prog: str, main, argv: list[str]) -> int:
    """What every benchmark command does around its `main(argv)`: it runs on one rank (the MPI
    benchmarks start their own mpiexec jobs), --json is checked before minutes of work, and a user's
    error (a missing dataset, a size a kernel cannot take...) ends in one line with status 1."""
    from ..errors import USAGE, failed
    from ..outputs import OutputError, check_output_paths
    from ..parallel import refuse_extra_ranks
    from ..training import USER_ERRORS

    started_by_themselves = " (bench scaling and scripts/bench_adversarial.py start their own mpiexec jobs)"
    if refuse_extra_ranks(prog, prog.removeprefix("nn_cuda."), started_by_themselves):
        return 1
    try:
        check_output_paths({"--json": flag_value(argv, "--json")})
    except OutputError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return USAGE
    try:
        return main(argv) or 0
    except USER_ERRORS as error:
        return failed(prog, error)


def run_script(prog: str, main) -> int:
    """A study of scripts/ as a command: run_benchmark on its command line, an interruption ending it
    in one line as it ends every command."""
    from ..interrupts import ends_in_one_line_when_interrupted

    return ends_in_one_line_when_interrupted(prog)(run_benchmark)(prog, main, sys.argv[1:])


def flag_value(arguments: list, flag: str):
    """The value given to `flag` (as "FLAG VALUE" or "FLAG=VALUE"), or None."""
    for position, argument in enumerate(arguments):
        if argument == flag and position + 1 < len(arguments):
            return arguments[position + 1]
        if argument.startswith(flag + "="):
            return argument[len(flag) + 1:]
    return None


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


def host_seconds(call, repeat: int) -> list[float]:
    """Seconds of each of `repeat` calls of `call` by the host clock, after one untimed warm-up call."""
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples
