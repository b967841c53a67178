"""A stopped rank never hangs the job: --mpi-timeout, and SIGTERM to mpirun in any state.

Each test starts a long data- or model-parallel run on 2 ranks under mpirun, stops rank 1 with
SIGSTOP once training runs, and checks that the job ends by itself (--mpi-timeout) naming rank 1, or
ends on SIGTERM to mpirun, with no process left behind. Before the watchdog, rank 0 waited in its
allreduce for ever and mpirun ignored SIGTERM.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def start_job(tmp_path, *flags, program=("nn_cuda.train", "--history"), ranks=2):
    marker = tmp_path / "run-marker.json"  # makes the ranks' command lines unique to this test
    module, marker_flag = program
    command = ["mpirun", "-n", str(ranks), sys.executable, "-m", *module.split(), "--dataset", "mnist-sample",
               "-n", "64", "-e", "5000", "--quiet", marker_flag, str(marker), *flags]
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment)
    return job, str(marker)


def rank_processes(marker: str) -> dict:
    """{rank: pid} of the job's ranks (the processes whose command line holds `marker`). A rank's child
    right after a fork has its command line and environment too, for a moment: the rank is the
    oldest of them, the smallest pid (a child taken for the rank had exited by the time the test
    stopped it, once in a full run)."""
    found = {}
    for folder in Path("/proc").iterdir():
        if not folder.name.isdigit():
            continue
        try:
            command = (folder / "cmdline").read_bytes().split(b"\0")
            environment = (folder / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in command and any(b"nn_cuda." in part for part in command):
            for entry in environment:
                if entry.startswith(b"PMI_RANK="):
                    rank = int(entry[len(b"PMI_RANK="):])
                    found[rank] = min(found.get(rank, int(folder.name)), int(folder.name))
    return found


def stop_rank_once_training(job, marker, rank=1, size=2):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ranks = rank_processes(marker)
        if len(ranks) == size:
            time.sleep(3)  # past the start-up: training runs
            ranks = rank_processes(marker)  # as they are now
            os.kill(ranks[rank], signal.SIGSTOP)
            return ranks
        assert job.poll() is None, job.communicate()[0]
        time.sleep(0.2)
    pytest.fail("the ranks did not start")


def finish(job, ranks, within: float) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        output, _ = job.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        for pid in ranks.values():
            os.kill(pid, signal.SIGKILL)
        job.kill()
        pytest.fail(f"the job did not end within {within} s")
    return job.returncode, output, time.monotonic() - started


def assert_no_rank_left(ranks):
    time.sleep(1)
    left = [pid for pid in ranks.values() if Path(f"/proc/{pid}").exists()
            and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()]
    assert not left, f"ranks still running: {left}"


@pytest.mark.parametrize("parallel", ["data", "model"])
def test_a_stopped_rank_ends_the_job_within_the_timeout_naming_it(tmp_path, parallel):
    job, marker = start_job(tmp_path, "--mpi-timeout", "3", "--parallel", parallel)
    ranks = stop_rank_once_training(job, marker)
    status, output, seconds = finish(job, ranks, within=30)
    assert status != 0, output
    lines = [line for line in output.splitlines() if "did not complete within --mpi-timeout 3 s" in line]
    assert len(lines) == 1, output
    assert "rank 1 gave no sign of life" in lines[0] and "Traceback" not in output, output
    assert_no_rank_left(ranks)


def test_a_stopped_generator_of_the_asynchronous_pipeline_ends_the_job_naming_it(tmp_path):
    job, marker = start_job(tmp_path, "--async", "--eval-steps", "1", "--mpi-timeout", "3",
                            program=("nn_cuda.adversarial train", "--json"), ranks=3)
    ranks = stop_rank_once_training(job, marker, rank=2, size=3)
    status, output, seconds = finish(job, ranks, within=30)
    assert status != 0, output
    lines = [line for line in output.splitlines() if "did not complete within --mpi-timeout 3 s" in line]
    assert len(lines) == 1 and "rank 2 gave no sign of life" in lines[0], output
    assert "rank 0 never reached a collective" not in lines[0], output  # it waits on the stopped rank
    assert_no_rank_left(ranks)


def test_sigterm_to_mpirun_ends_a_job_whose_rank_is_stopped(tmp_path):
    job, marker = start_job(tmp_path)  # the default timeout: 10 minutes
    ranks = stop_rank_once_training(job, marker)
    time.sleep(1)
    job.send_signal(signal.SIGTERM)
    status, output, seconds = finish(job, ranks, within=20)
    # mpirun (MPICH's Hydra) ends with the status of the rank it reaps first: the interrupted one's
    # 143, or the stopped one's, which it kills once the other has ended (9, SIGKILL: seen once in a
    # full run on a loaded machine, its banner naming that rank)
    assert status in (128 + signal.SIGTERM, signal.SIGKILL), output
    assert "interrupted (SIGTERM)" in output and "Traceback" not in output, output
    assert_no_rank_left(ranks)


def processes_with(variable: str) -> list[int]:
    """The live processes whose environment holds `variable` (inherited from the benchmark)."""
    found = []
    for folder in Path("/proc").iterdir():
        try:
            if folder.name.isdigit() and variable.encode() in (folder / "environ").read_bytes().split(b"\0"):
                if "zombie" not in (folder / "status").read_text().lower():
                    found.append(int(folder.name))
        except OSError:
            continue
    return found


def test_killing_a_benchmark_ends_its_mpiexec_job(tmp_path):
    # SIGKILL of bench scaling used to leave mpiexec and its ranks at 100 % CPU until their epochs ended.
    variable = f"NN_CUDA_TEST_JOB={tmp_path.name}"
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                   "NN_CUDA_TEST_JOB": tmp_path.name}
    bench = subprocess.Popen([sys.executable, "-m", "nn_cuda.bench", "scaling", "--ranks", "2", "--epochs", "50",
                              "--json", str(tmp_path / "scaling.json")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
    deadline = time.monotonic() + 60
    while len(processes_with(variable)) < 4 and time.monotonic() < deadline:  # bench, mpiexec, 2 ranks
        assert bench.poll() is None
        time.sleep(0.2)
    time.sleep(2)
    children = [pid for pid in processes_with(variable) if pid != bench.pid]
    assert len(children) >= 3, "the benchmark's mpiexec job did not start"
    bench.kill()
    bench.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and processes_with(variable):
        time.sleep(0.2)
    left = processes_with(variable)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"the benchmark's children outlived it: {left}"


WATCHDOG_SIGTERM_SCRIPT = """
import os, signal, sys
from nn_cuda.parallel.watchdog import Watchdog

events = []
class Stderr:
    def write(self, text):
        events.append(text.strip())
    def flush(self):
        pass
sys.stderr = Stderr()

def abort(status):
    print(status, *events, sep="\\n", flush=True)
    os._exit(status)

signal.signal(signal.SIGTERM, lambda *_: None)  # the main thread stays 'blocked in MPI'
watchdog = Watchdog(0, 1, sys.argv[1], 600.0, abort, let_output_through=lambda: events.append("let through"))
with watchdog.collective("allreduce"):
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
"""


def test_the_watchdog_lets_its_sigterm_line_out_before_it_aborts(tmp_path):
    # MPI_Abort right after printing could end the job before the launcher forwarded the line.
    ended = subprocess.run([sys.executable, "-c", WATCHDOG_SIGTERM_SCRIPT, tmp_path.name], capture_output=True,
                           text=True, timeout=60)
    status, line, then = ended.stdout.splitlines()
    assert int(status) == 128 + signal.SIGTERM, ended.stdout + ended.stderr
    assert "interrupted (SIGTERM) while waiting in allreduce" in line and then == "let through", ended.stdout


DRAINING_SCRIPT = """
import sys, time
from nn_cuda.parallel.mpi import let_output_through
sys.stderr.write("x" * 1000)
print("written", flush=True)
started = time.monotonic()
let_output_through(most_seconds=float(sys.argv[1]))
print(f"{time.monotonic() - started:.3f}")
"""


LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="elsewhere a fixed pause: a pipe's unread bytes are counted on Linux only")


@LINUX_ONLY
@pytest.mark.parametrize("read_after", [0.0, 1.5])
def test_a_rank_waits_until_the_launcher_has_read_its_output(read_after):
    child = subprocess.Popen([sys.executable, "-c", DRAINING_SCRIPT, "10"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "written\n"
    time.sleep(read_after)  # the launcher's delay in reading stderr
    assert child.stderr.read(1000) == "x" * 1000
    waited = float(child.stdout.readline())
    assert child.wait(timeout=30) == 0
    assert read_after <= waited < 5, waited  # never the 10 s limit


@LINUX_ONLY
def test_a_launcher_that_never_reads_delays_the_abort_by_the_limit_only():
    child = subprocess.Popen([sys.executable, "-c", DRAINING_SCRIPT, "0.8"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.wait(timeout=30) == 0  # its pipes are read only after it ended
    written, waited = child.stdout.read().split()
    child.stderr.close()
    assert 0.8 <= float(waited) < 5, waited  # the limit, not OUTPUT_PAUSE_SECONDS (0.5)
