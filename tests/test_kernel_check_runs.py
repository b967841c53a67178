"""A kernel's checks in a process of their own (what grade --kernels and course check do on a GPU),
run here on the CPU runner: the same results as in the calling process; a child that stops answering
is killed and the kernel after it runs in a fresh one; a child that ends is a verdict, not a hang."""

import multiprocessing
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from nn_cuda import kernel_check_runs

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
#: element-wise kernels: their cases are small, and a child sees the module's full list of them
OPS = ["col_sum", "bias_sigmoid"]
#: a loop that never ends, on a GPU too: its compiler drops a loop on a volatile local (a GPU ran
#: through `for (volatile int spin = 1; spin;) {}`), the clock is read at each turn
SPIN = "for (long long start = clock64(); clock64() >= start;) {}"


def copy_with(tmp_path, old: str, new: str) -> Path:
    folder = tmp_path / "kernels"
    shutil.copytree(KERNELS, folder)
    source = (folder / "nn_ops.cu").read_text()
    assert source.count(old) == 1
    (folder / "nn_ops.cu").write_text(source.replace(old, new))
    return folder


def test_checks_in_a_child_give_the_results_of_checks_in_the_calling_process():
    reported = []
    isolated = list(kernel_check_runs.run_checks("cuda-cpu", KERNELS, OPS, progress=reported.append, isolate=True))
    here = list(kernel_check_runs.run_checks("cuda-cpu", KERNELS, OPS, isolate=False))
    assert [kernel for kernel, _ in isolated] == OPS
    assert isolated == here and all(result.passed for _, results in here for result in results)
    assert reported == [result for _, results in here for result in results]  # each as it came
    assert not multiprocessing.active_children()


def test_a_child_that_stops_answering_is_killed_and_the_next_kernel_runs_in_a_fresh_one(tmp_path, monkeypatch):
    # a GPU has no watchdog: the CPU runner's is set far beyond the parent's limit, which acts first
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "600")
    monkeypatch.setattr(kernel_check_runs, "CASE_SECONDS", 10)  # a child's start and build on a busy machine
    folder = copy_with(tmp_path, "    T sum = T(0);\n    if (j < cols) {",
                       "    T sum = T(0);\n    " + SPIN + "\n    if (j < cols) {")
    started = time.monotonic()
    (spun, spun_results), (after, after_results) = kernel_check_runs.run_checks("cuda-cpu", folder, OPS, isolate=True)
    assert time.monotonic() - started < 90
    assert (spun, after) == tuple(OPS) and len(spun_results) == 1 and not spun_results[0].passed
    assert "not finished after 10 s" in spun_results[0].detail and "its process was killed" in spun_results[0].detail
    assert "(the 7 later cases were not run: each would end the same way)" in spun_results[0].detail
    assert "the kernel did not finish" in spun_results[0].hint
    assert len(after_results) == 8 and all(result.passed for result in after_results)
    assert not multiprocessing.active_children()


def test_ctrl_c_while_a_child_checks_ends_the_child_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "600")
    folder = copy_with(tmp_path, "    T sum = T(0);\n    if (j < cols) {", "    T sum = T(0);\n    " + SPIN + "\n    if (j < cols) {")
    sent = []

    def ctrl_c():  # in the middle of the wait for the child
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(5, ctrl_c).start()
    # Python's own handler (a command module imported by another test leaves one of its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            list(kernel_check_runs.run_checks("cuda-cpu", folder, OPS, isolate=True))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not multiprocessing.active_children() and time.monotonic() - sent[0] < 2  # killed, not waited for


def test_a_kernel_that_ends_its_process_is_a_verdict_and_the_next_kernel_still_runs(tmp_path):
    # on a GPU a fault can leave the process unusable; here the kernel ends the process itself
    folder = copy_with(tmp_path, "    T sum = T(0);\n    if (j < cols) {",
                       "    T sum = T(0);\n    if (rows == 33) _exit(3);\n    if (j < cols) {")
    source = (folder / "nn_ops.cu").read_text()
    (folder / "nn_ops.cu").write_text('extern "C" void _exit(int);\n' + source)
    (kernel, results), (_, after_results) = kernel_check_runs.run_checks("cuda-cpu", folder, OPS, isolate=True)
    assert kernel == "col_sum" and [result.passed for result in results] == [True] * 4 + [False]
    assert "the process running the checks ended (status 3) before this case was done" in results[-1].detail
    assert results[-1].case.shape == (33, 7) and "(the 3 later cases were not run" in results[-1].detail
    assert all(result.passed for result in after_results)


def test_checks_that_cannot_start_in_a_child_are_each_kernels_verdict():
    outcomes = list(kernel_check_runs.run_checks("no-such-backend", KERNELS, OPS, isolate=True))
    assert [kernel for kernel, _ in outcomes] == OPS
    assert all(isinstance(error, RuntimeError) and "unknown backend 'no-such-backend'" in str(error)
               for _, error in outcomes)


@pytest.mark.parametrize("backend, isolated", [("cuda-cpu", False), ("cupy", True)])
def test_only_a_gpu_backend_checks_in_a_process_of_its_own(backend, isolated):
    assert (backend in kernel_check_runs.ISOLATED_BACKENDS) == isolated


def _gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver
        return 0


@pytest.mark.skipif(not _gpus(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("fault, expected", [
    # 2**34 floats past out: no memory there; the context is unusable after it (a sticky error)
    ("out[j + (1LL << 34)] = total;", "an illegal memory access"),
    (SPIN, "not finished after 20 s"),
])
def test_on_a_gpu_a_kernel_that_faults_or_spins_leaves_the_next_kernel_a_process_of_its_own(
        tmp_path, monkeypatch, fault, expected):
    monkeypatch.setattr(kernel_check_runs, "CASE_SECONDS", 20)
    folder = copy_with(tmp_path, "        out[j] = total;", "        out[j] = total;\n        " + fault)
    (kernel, results), (_, after_results) = kernel_check_runs.run_checks("cupy", folder, OPS)
    assert kernel == "col_sum" and not results[-1].passed and expected in results[-1].detail, results[-1].detail
    assert "later cases were not run" in results[-1].detail
    assert len(after_results) == 8 and all(result.passed for result in after_results), after_results
    assert not multiprocessing.active_children()
