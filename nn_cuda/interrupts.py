"""How a command ends when it is interrupted: Ctrl-C (SIGINT), or SIGTERM (kill, a batch system's
time limit).

`ends_in_one_line_when_interrupted(prog)` decorates a command's `main`. While it runs, SIGTERM raises
Terminated, a KeyboardInterrupt, where the program is, so that SIGTERM unwinds the program as Ctrl-C
does: every `finally` and clean-up runs (nn_cuda.outputs removes the temporary file of a write in
progress). The interruption then ends the command with one line, "PROG: interrupted (SIGINT)", and
the exit status a shell gives a process killed by the signal: 128 + its number (130 for Ctrl-C, 143
for SIGTERM). Under MPI, nn_cuda.parallel.abort_on_error ends the whole job first, in the same way.
A reader that closes the command's output pipe (`python -m nn_cuda.course tasks | head -1`) ends it
silently with 141, as SIGPIPE ends other Unix tools.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
import threading
import time


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program was, as Ctrl-C raises KeyboardInterrupt."""


def ends_in_one_line_when_interrupted(prog: str):
    """Decorator of a command's main(): SIGTERM raises Terminated while it runs, and an interruption
    returns 128 + the signal's number after one line on stderr, instead of a traceback."""
    def decorate(main):
        @functools.wraps(main)
        def main_ending_in_one_line(*args, **kwargs):
            with _sigterm_raises_terminated():
                try:
                    with _ended_if_still_running_after_an_interruption(prog):
                        return main(*args, **kwargs)
                except KeyboardInterrupt as interruption:
                    received = signal.SIGTERM if isinstance(interruption, Terminated) else signal.SIGINT
                    print(f"{prog}: interrupted ({received.name})", file=sys.stderr)
                    _end_now_if_threads_remain(128 + received)
                    return 128 + received
                except BrokenPipeError:
                    return _reader_gone()

        return main_ending_in_one_line

    return decorate


#: seconds an interrupted command has to end before it is ended where it is: a launch on a GPU that
#: never ends holds the main thread inside CUDA (CuPy waits there without the GIL), where neither
#: Ctrl-C nor SIGTERM reaches it (measured on an H100: training still ran 20 s after either)
GRACE_SECONDS = 10


@contextlib.contextmanager
def _ended_if_still_running_after_an_interruption(prog: str):
    """While the command runs, a thread that SIGINT or SIGTERM wakes (Python's wakeup fd is written by
    the signal's C handler, whatever the main thread is doing): if the command has not ended
    GRACE_SECONDS later, it says so in one line and ends the process with 128 + the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end = write_end = previous = watcher = None
    # the set-up with both signals held back: an interruption lands before it or after it, never
    # half-way (the watcher, started meanwhile, keeps them held back and never takes one itself)
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    try:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        watcher = threading.Thread(target=_end_if_still_running, args=(prog, read_end), daemon=True,
                                   name="nn_cuda interruption watcher")
        watcher.start()
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        if previous is not None:
            signal.set_wakeup_fd(previous)
        if write_end is not None:
            os.close(write_end)  # the watcher reads the end of the pipe, and ends
        if watcher is not None and watcher.ident is not None:
            watcher.join()
        if read_end is not None:
            os.close(read_end)


#: the interruptions the watcher acts on
_WATCHED = (signal.SIGINT, signal.SIGTERM)


def _end_if_still_running(prog: str, read_end: int) -> None:
    received = b"\0"
    while received[0] not in _WATCHED:  # other signals with a Python handler pass
        received = os.read(read_end, 1)
        if not received:  # the command ended without an interruption
            return
    deadline = time.monotonic() + GRACE_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        if select.select([read_end], [], [], left)[0] and not os.read(read_end, 1):
            return  # the command ended in time
    number = signal.Signals(received[0])
    print(f"{prog}: interrupted ({number.name}), and still running {GRACE_SECONDS} s later (a GPU "
          "launch that never ends?): ended now", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(128 + number)


def _end_now_if_threads_remain(status: int) -> None:
    """Python's exit waits for every thread; Numba's simulator runs a kernel's threads as Python
    threads, and one that spins (on a flag another thread never sets) never ends. So when threads
    other than daemons remain after an interruption, end the process now, once its output is out."""
    others = [thread for thread in threading.enumerate()
              if thread is not threading.main_thread() and thread.is_alive() and not thread.daemon]
    if others:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _reader_gone() -> int:
    """Standard output was a pipe whose reader has closed it (`... | head`): end silently, as a
    program killed by SIGPIPE does (status 128 + 13), with no traceback from the final flush."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


@contextlib.contextmanager
def ends_in_one_line_while_starting(prog: str, running: bool = True):
    """For a command's own imports (numpy and the rest take a few tenths of a second): Ctrl-C there
    ends the command with the same one line and status as later, not a traceback of the import,
    also when the import turned the interruption into another error (numpy's C code reports an
    import it could not finish as ImportError). `running`: False in a library module that is a
    command only as __main__ (nothing changes then)."""
    if not running or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        with _interruptions_remembered((signal.SIGINT,)):
            yield
    except BaseException:
        if _pending is None:
            raise
        _interrupted_while_starting(prog)
    if _pending is not None:  # raised where Python ignored it (a finalizer): it still ends the command
        _interrupted_while_starting(prog)
    # the rest of the module (its classes and functions) runs before main's decorator takes over:
    # Ctrl-C there ends the command in the same line (main's decorator replaces this handler)
    signal.signal(signal.SIGINT, lambda signum, frame: _interrupted_while_starting(prog))


def _interrupted_while_starting(prog: str):
    # imported here, not at the top: a command imports this module first, and Ctrl-C before it has
    # installed its handler still gives a traceback; launcher's dataclasses (and inspect) widened that
    # window to tens of milliseconds, which a loaded machine stretched to a tenth of a second
    from .launcher import world_from_environment

    world = world_from_environment()
    if world is None or world.rank == 0:  # mpirun passes Ctrl-C to every rank: rank 0 says it, once
        print(f"{prog}: interrupted ({signal.SIGINT.name})", file=sys.stderr)
    raise SystemExit(128 + signal.SIGINT) from None


@contextlib.contextmanager
def _sigterm_raises_terminated():
    """SIGTERM raises Terminated and Ctrl-C KeyboardInterrupt inside the with-block, and either is
    remembered until it ends the command (signal handlers belong to the main thread: elsewhere
    nothing changes)."""
    global _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        with _interruptions_remembered((signal.SIGTERM, signal.SIGINT)):
            yield
    finally:
        _pending = None  # it has ended the command


@contextlib.contextmanager
def _interruptions_remembered(signals):
    """Inside the with-block each of `signals` raises its interruption where the program is and is
    remembered in _pending (forgotten on entry), and Python's "Exception ignored" report of one
    raised in a finalizer is left out; the previous handlers and hook are put back after."""
    global _pending
    _pending = None
    previous = {number: signal.signal(number, _raise_interruption) for number in signals}
    previous_hook, sys.unraisablehook = sys.unraisablehook, _remembered_interruptions_are_quiet
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for number, handler in previous.items():
            signal.signal(number, handler)


#: the signal that interrupted the command, until the command ends
_pending = None


def _raise_interruption(signum, frame):
    global _pending
    _pending = signum
    raise _interruption(signum)


def _interruption(signum) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _remembered_interruptions_are_quiet(unraisable) -> None:
    """sys.unraisablehook: an interruption raised in a finalizer is remembered (_pending) and ends
    the command later in its one line, so Python's "Exception ignored" traceback is not printed."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _pending is not None:
        return
    sys.__unraisablehook__(unraisable)


def raise_if_interrupted() -> None:
    """Raise again an interruption that was lost: a signal that arrives while Python runs a
    finalizer or a weakref callback (an import's lock, a freed array) raises there, where Python
    prints "Exception ignored" and goes on. Long loops call this once per step."""
    if _pending is not None:
        raise _interruption(_pending)
