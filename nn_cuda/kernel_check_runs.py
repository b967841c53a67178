"""Where a kernel's checks (nn_cuda.kernel_checks) run: in the grading process on the CPU, in a
process of their own on a GPU (`grade --kernels --backend cupy`, `course check` on a GPU).

On a GPU two faults of a student's kernel outlive the kernel. A launch that never ends (a loop whose
index never reaches its bound) holds its process for ever: no timeout, and not ctrl-C, ends a wait for
the GPU. An illegal address, a failed device assert or a trap leaves the process's CUDA context
unusable: every later launch of that process fails with the same error, so every later kernel, and
every later folder of a class, would fail with it. So on a GPU the checks run in a child process that
sends each case's result as soon as it has it. A child silent for CASE_SECONDS is killed (the case
it was running fails as one that never ends, the later ones are not run), and after a kernel that
failed in a way every later case would repeat (a CUDA error among them) the next kernel starts in a
fresh child. The CPU runner has neither fault (its watchdog stops a launch and a fault raises
KernelError), so there the checks run in the calling process.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from . import kernel_checks, kernel_info
from .backends import get_backend

#: backends whose checks run in a process of their own (see above)
ISOLATED_BACKENDS = ("cupy",)
#: seconds a child may go without sending a result before it counts as stuck: a correct kernel's
#: slowest case takes milliseconds on a GPU, and a child's first one also waits for CuPy to start and
#: for NVRTC to compile the kernel file (seconds)
CASE_SECONDS = 60


def make_backend(backend_name: str):
    """The backend the checks run on: the CPU runner in its checking mode for cuda-cpu."""
    if backend_name == "cuda-cpu":
        from .backends.cuda_cpu_backend import CudaCpuBackend

        return CudaCpuBackend(check=True)
    return get_backend(backend_name)


def run_checks(backend_name: str, kernel_dir: Path, kernels: list[str], stop_at_first_failure=False,
               progress: Callable | None = None, isolate: bool | None = None) -> Iterator[tuple]:
    """Each kernel's checks with the .cu files of `kernel_dir`, in order: yields (kernel, its results),
    or (kernel, the exception) where its checks could not start (a backend that cannot run). In a
    process of their own where `isolate` (by default: on the backends of ISOLATED_BACKENDS)."""
    if not (backend_name in ISOLATED_BACKENDS if isolate is None else isolate):
        with kernel_info.kernels_from(kernel_dir):
            backend = make_backend(backend_name)
            for kernel in kernels:
                try:
                    yield kernel, kernel_checks.check(backend, kernel, stop_at_first_failure, progress)
                except Exception as error:  # the check's own fault: this kernel's verdict
                    yield kernel, error
        return
    left = list(kernels)
    while left:  # one child for the kernels left, until one leaves it unusable
        done = yield from _checks_in_child(backend_name, kernel_dir, left, stop_at_first_failure, progress)
        left = left[done:]


def _checks_in_child(backend_name, kernel_dir, kernels, stop_at_first_failure, progress) -> Iterator[tuple]:
    """Yields as run_checks does for the first kernels of `kernels` that one child checks; returns how
    many were checked (at least one)."""
    context = multiprocessing.get_context("spawn")  # a fresh process: no CUDA state of this one
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(backend_name, str(kernel_dir), kernels, stop_at_first_failure,
                                                 sender), daemon=True)
    child.start()
    sender.close()  # the child's end: receiving from a child that ended then raises EOFError
    done, results, said_all = 0, [], False
    try:
        while done < len(kernels):
            message = _next_message(receiver, child)
            if isinstance(message, str):  # _SILENT or _ENDED: the child is stuck, or ended without a word
                stuck = message == _SILENT
                if not stuck:
                    child.join(timeout=5)  # its status: it has closed its end, and is ending
                why = (f"not finished after {CASE_SECONDS} s (on a GPU nothing stops a launch that never ends: "
                       "its process was killed)" if stuck else
                       f"the process running the checks ended (status {child.exitcode}) before this case was done")
                kernel_checks.add_unfinished_case(results, kernels[done], why, stuck, progress)
                yield kernels[done], results
                return done + 1
            kind, payload = message
            if kind == "result":
                results.append(payload)
                if progress:
                    progress(payload)
                continue
            yield kernels[done], (results if kind == "checked" else RuntimeError(payload))
            unusable = kind != "checked" or any(result.repeats for result in results)
            done, results = done + 1, []
            said_all = unusable or done == len(kernels)
            if unusable:  # the child ends here: the kernels left go to a fresh one
                return done
        return done
    finally:  # also on ctrl-C, or when the caller stops early: then the child is ended at once
        receiver.close()
        child.join(timeout=5 if said_all else 0)  # one that has sent its last message is ending
        if child.is_alive():  # on a GPU its context, and a launch still running in it, end with it
            child.kill()
            child.join()


#: what _next_message returns instead of a message: the child sent none for CASE_SECONDS, or it ended
_SILENT, _ENDED = "silent", "ended"


def _next_message(receiver, child):
    """The child's next message, or _SILENT or _ENDED."""
    deadline = time.monotonic() + CASE_SECONDS
    while True:
        if receiver.poll():
            try:
                return receiver.recv()
            except EOFError:
                return _ENDED
        left = deadline - time.monotonic()
        if left <= 0:
            return _SILENT
        ready = multiprocessing.connection.wait([receiver, child.sentinel], timeout=left)
        if child.sentinel in ready and receiver not in ready:
            return _ENDED


def _child(backend_name: str, kernel_dir: str, kernels: list, stop_at_first_failure: bool, sender) -> None:
    """In the child: each kernel's checks, every result sent as it comes ('result'), then ('checked') or
    the checks' own error ('raised'). It stops after a kernel whose failure every later case would
    repeat: on a GPU its context may be unusable now."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ctrl-C is for the grading process, which ends this one
    with kernel_info.kernels_from(Path(kernel_dir)):
        try:
            backend = make_backend(backend_name)
        except Exception as error:
            sender.send(("raised", str(error)))
            return
        for kernel in kernels:
            try:
                results = kernel_checks.check(backend, kernel, stop_at_first_failure,
                                              progress=lambda result: sender.send(("result", result)))
            except Exception as error:
                sender.send(("raised", str(error)))
                return
            sender.send(("checked", None))
            if any(result.repeats for result in results):
                # after a fault of the GPU's, CuPy's clean-up at exit would report the same error for
                # every module it unloads (a page of tracebacks in the grade's output): none of it
                sender.close()
                os._exit(0)
