"""A kernel's fault ends every command the same way: exit status 1 (nn_cuda.errors.FAILED), one line
naming the kernel, its thread and its file:line, and no traceback.

The kernel is a copy of the naive GEMM whose bound check lets row M through: on sizes that are not
a multiple of the block, a thread reads one row past the end of A. The checking mode
(NN_CUDA_CPU_CHECK=1) traps the read; the runner names the line of the kernel file that made it.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from nn_cuda.errors import FAILED
from test_cuda_cpu import edited_kernels  # a copy of kernels/ with one edit (not a test)

COMMANDS = {
    "train": ["nn_cuda.train", "--backend", "cuda-cpu", "--gemm", "naive", "--epochs", "1", "--max-steps", "1"],
    "grade": ["nn_cuda.grade", "--mode", "1", "--backend", "cuda-cpu", "--gemm", "naive", "--max-steps", "1"],
    "bench": ["nn_cuda.bench", "gemm", "--backend", "cuda-cpu", "--algo", "naive", "--sizes", "33x17x65"],
}


@pytest.fixture
def faulting_naive_gemm(tmp_path, monkeypatch):
    copy = edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu", "if (i >= M || j >= N) {", "if (i > M || j >= N) {")
    monkeypatch.setenv("NN_CUDA_CPU_CHECK", "1")
    source = (copy / "gemm1_naive.cu").read_text().splitlines()
    # the line that reads A (through op_element, inlined)
    line = next(number for number, text in enumerate(source, 1) if "op_element<T, TRANS_A>(A" in text)
    return copy / "gemm1_naive.cu", line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_kernel_fault_ends_every_command_in_one_line_with_status_1(command, faulting_naive_gemm, tmp_path):
    kernel_file, line = faulting_naive_gemm
    prog = " ".join(COMMANDS[command][:2]) if command == "bench" else COMMANDS[command][0]
    result = subprocess.run([sys.executable, "-m", *COMMANDS[command]], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == FAILED, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1].split("\r")[-1]  # after a progress bar's last redraw
    assert re.fullmatch(rf"{re.escape(prog)}: error: gemm_naive<\w+, \w+, \w+>: an invalid memory access: an "
                        rf"access 1 element\(s\) past the end of A in thread \(\d+, \d+, 0\) of block "
                        rf"\(\d+, \d+, 0\) at .*{re.escape(str(kernel_file))}:{line}", last), last


def test_course_check_fails_the_task_with_status_1_and_the_line(faulting_naive_gemm, tmp_path):
    kernel_file, line = faulting_naive_gemm
    workspace = tmp_path / "student"
    subprocess.run([sys.executable, "-m", "nn_cuda.course", "start", str(workspace)], check=True,
                   capture_output=True, timeout=120)
    (workspace / "kernels" / "gemm1_naive.cu").write_text(kernel_file.read_text())
    # on the CPU runner, which sees the read past A (auto takes a GPU where there is one; it may not fault)
    result = subprocess.run([sys.executable, "-m", "nn_cuda.course", "check", "--backend", "cuda-cpu",
                             str(workspace), "naive"], capture_output=True, text=True, timeout=300)
    assert result.returncode == FAILED, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert f"{workspace / 'kernels' / 'gemm1_naive.cu'}:{line}" in result.stdout


@pytest.mark.parametrize("command", [["nn_cuda.course", "tasks"], ["nn_cuda.bench"], ["nn_cuda"]])
def test_a_reader_that_closes_the_pipe_ends_the_command_silently(command):
    # `python -m nn_cuda.course tasks | head -1`: the output's reader is gone before the first write.
    # The command ends as SIGPIPE ends a Unix tool (141), with nothing on stderr, not a traceback.
    read_end, write_end = os.pipe()
    os.close(read_end)
    job = subprocess.Popen([sys.executable, "-m", *command], stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 128 + signal.SIGPIPE and stderr == ""


def test_an_interruption_that_lands_in_a_finalizer_still_ends_the_command(capsys):
    # Python ignores an exception raised in a finalizer: a Ctrl-C that lands there was lost (under
    # load a training ran on for its 100,000 epochs) and printed an "Exception ignored" traceback.
    from nn_cuda import interrupts

    class Finalized:
        def __del__(self):
            interrupts._raise_interruption(signal.SIGINT, None)  # what the handler does when Ctrl-C lands here

    @interrupts.ends_in_one_line_when_interrupted("prog")
    def main():
        Finalized()  # freed at once
        for _ in range(3):  # a training loop's steps
            interrupts.raise_if_interrupted()
        return 0

    assert main() == 128 + signal.SIGINT
    assert capsys.readouterr().err == "prog: interrupted (SIGINT)\n"
    assert interrupts._pending is None  # forgotten once it has ended the command


HELD_MAIN = """
import ctypes, sys
from nn_cuda import interrupts
interrupts.GRACE_SECONDS = 2

@interrupts.ends_in_one_line_when_interrupted("prog")
def main():
    print("ready", flush=True)
    ctypes.CDLL(sys.argv[1]).wait_forever()

sys.exit(main())
"""
#: a call into C that never returns and does not hold the GIL (ctypes lets it go), as CUDA's wait for
#: a launch that never ends (CuPy lets the GIL go there): no signal handler of Python runs in between
WAIT_FOREVER = '#include <unistd.h>\nextern "C" void wait_forever() { for (;;) pause(); }\n'


@pytest.mark.parametrize("received", [signal.SIGINT, signal.SIGTERM])
def test_a_command_still_running_after_an_interruption_is_ended_with_one_line(received, tmp_path):
    # On an H100 a training whose kernel never ended still ran 20 s after Ctrl-C, and after SIGTERM
    from nn_cuda.host_compiler import find_compiler

    (tmp_path / "wait.cpp").write_text(WAIT_FOREVER)
    subprocess.run([find_compiler(), "-shared", "-fPIC", "-o", str(tmp_path / "wait.so"), str(tmp_path / "wait.cpp")],
                   check=True)
    job = subprocess.Popen([sys.executable, "-c", HELD_MAIN, str(tmp_path / "wait.so")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline() == "ready\n"
        time.sleep(1)  # into the call
        job.send_signal(received)
        _, stderr = job.communicate(timeout=60)
    finally:
        job.kill()
    assert job.returncode == 128 + received
    assert stderr == (f"prog: interrupted ({received.name}), and still running 2 s later (a GPU launch that never "
                      "ends?): ended now\n")


def test_a_command_that_ends_leaves_no_watcher_and_python_s_wakeup_fd_as_it_was():
    from nn_cuda import interrupts

    @interrupts.ends_in_one_line_when_interrupted("prog")
    def main():
        assert any(thread.name == "nn_cuda interruption watcher" for thread in threading.enumerate())
        return 0

    assert main() == 0
    assert signal.set_wakeup_fd(-1) == -1
    assert not any(thread.name == "nn_cuda interruption watcher" for thread in threading.enumerate())


@pytest.mark.parametrize("rank, said", [("0", True), ("1", False)])
def test_under_mpirun_what_every_rank_would_say_alike_is_said_by_rank_0_alone(rank, said, monkeypatch, capsys):
    # a Ctrl-C in a command's first 0.3 s, and nn_cuda.adversarial's usage: once a rank before (4 lines
    # with mpirun -n 4), as the launcher passes the signal, and the command line, to every rank
    from nn_cuda import interrupts
    from nn_cuda.adversarial.cli import main as adversarial_main

    monkeypatch.setenv("PMI_RANK", rank)
    monkeypatch.setenv("PMI_SIZE", "4")
    with pytest.raises(SystemExit) as stop:
        interrupts._interrupted_while_starting("prog")
    assert stop.value.code == 128 + signal.SIGINT
    assert (capsys.readouterr().err == "prog: interrupted (SIGINT)\n") == said
    assert adversarial_main([]) == 2 and adversarial_main(["bogus"]) == 2
    printed = capsys.readouterr()
    assert bool(printed.out + printed.err) == said
