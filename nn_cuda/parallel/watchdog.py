"""--mpi-timeout: a collective that does not complete in time ends the job, naming the ranks that
never reached it; and SIGTERM or Ctrl-C ends a rank that is blocked inside MPI.

A rank stopped (SIGSTOP, a debugger, a dead node) or stuck outside MPI leaves every other rank
waiting in its next collective forever, and a rank blocked inside MPI never runs Python's signal
handlers, so `kill` and Ctrl-C of mpirun did not end the job either. Each rank therefore runs one
watchdog thread, which needs no MPI call until it ends the job:

- the ranks of a node share a small board (a file in /dev/shm, or the temporary folder, named by a
  key rank 0 draws for the job): each rank writes its heartbeat there every HEARTBEAT_SECONDS, and
  whether it is waiting in a collective and since when (two memory writes per collective);
- when this rank has waited in one collective for longer than the timeout, the first rank to notice
  prints one line naming the ranks that are not waiting in a collective (stuck elsewhere) or show no
  heartbeat (stopped), and the job is aborted (MPI_Abort: the launcher ends every rank, stopped ones
  included) with exit status 1; ranks on other nodes are not on this node's board and are named as
  such;
- a SIGTERM or SIGINT reaches the thread at once (signal.set_wakeup_fd); if the main thread has not
  ended the rank within SIGNAL_GRACE_SECONDS (it is blocked in MPI), the thread ends it with one line
  and the exit status of the signal (143 or 130).
"""

from __future__ import annotations

import atexit
import mmap
import os
import secrets
import signal
import struct
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

#: the default of --mpi-timeout (torch.distributed's collectives default to 10 minutes too)
DEFAULT_TIMEOUT_SECONDS = 600.0
HEARTBEAT_SECONDS = 0.5
#: a rank whose heartbeat is older than this is taken as stopped
STOPPED_AFTER_SECONDS = 3.0
SIGNAL_GRACE_SECONDS = 2.0
#: per rank: heartbeat (seconds since the epoch, written by the thread), waiting since (0: not in a
#: collective; written by the main thread)
_FIELD = struct.Struct("d")
_SLOT = 2 * _FIELD.size


def _board_folder() -> Path:
    shared = Path("/dev/shm")
    return shared if shared.is_dir() and os.access(shared, os.W_OK) else Path(tempfile.gettempdir())


class Watchdog:
    """The watchdog of one rank (see the module's docstring); `collective(name)` marks a wait.
    `abort(status)` ends the job; `let_output_through()`, called after printing, returns once the
    launcher has the line (an abort could otherwise end the job before it is forwarded)."""

    def __init__(self, rank: int, size: int, key: str, timeout: float, abort, let_output_through):
        self.rank, self.size, self.timeout, self._abort = rank, size, timeout, abort
        self._let_output_through = let_output_through
        self.path = _board_folder() / f"nn_cuda-mpi-{key}"
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(descriptor, _SLOT * size)
            self._board = mmap.mmap(descriptor, _SLOT * size)
        finally:
            os.close(descriptor)
        self._waiting_in = None
        self._waiting_since = 0.0
        self._write_heartbeat()
        self._stop = threading.Event()
        self._signals = self._watch_signals()
        self._thread = threading.Thread(target=self._run, name="nn_cuda-mpi-watchdog", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # ---- the main thread's side --------------------------------------------------------------------
    @contextmanager
    def collective(self, name: str):
        """Mark the enclosed blocking MPI call as a wait in collective `name`."""
        self._waiting_in, self._waiting_since = name, time.time()
        self._write_waiting()
        try:
            yield
        finally:
            self._waiting_in, self._waiting_since = None, 0.0
            self._write_waiting()

    def close(self) -> None:
        self._stop.set()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    # ---- the board ---------------------------------------------------------------------------------
    def _write_heartbeat(self) -> None:
        _FIELD.pack_into(self._board, _SLOT * self.rank, time.time())

    def _write_waiting(self) -> None:
        _FIELD.pack_into(self._board, _SLOT * self.rank + _FIELD.size, self._waiting_since)

    def _slots(self) -> list[tuple[float, float]]:
        return [(_FIELD.unpack_from(self._board, _SLOT * rank)[0],
                 _FIELD.unpack_from(self._board, _SLOT * rank + _FIELD.size)[0]) for rank in range(self.size)]

    def not_answering(self, now: float) -> str:
        """The ranks that are not waiting in a collective, and why, as words."""
        stopped, elsewhere, unseen = [], [], []
        for rank, (heartbeat, waiting_since) in enumerate(self._slots()):
            if heartbeat == 0.0:
                unseen.append(rank)
            elif now - heartbeat > STOPPED_AFTER_SECONDS:
                stopped.append(rank)
            elif waiting_since == 0.0:
                elsewhere.append(rank)
        parts = []
        if stopped:
            parts.append(f"{_ranks(stopped)} gave no sign of life for over {STOPPED_AFTER_SECONDS:g} s (stopped?)")
        if elsewhere:
            parts.append(f"{_ranks(elsewhere)} never reached a collective (stuck computing?)")
        if unseen:
            parts.append(f"{_ranks(unseen)} on other nodes cannot be seen from here")
        return "; ".join(parts) or "every rank of this node is waiting (a rank on another node?)"

    # ---- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            self._write_heartbeat()
            now = time.time()
            if self._signals is not None:
                self._check_signals()
            if self._waiting_in is not None and now - self._waiting_since > self.timeout:
                self._time_out(now)

    def _time_out(self, now: float) -> None:
        claim = self.path.with_name(self.path.name + ".reported")
        try:
            os.close(os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            first = True
        except FileExistsError:
            first = False
        if first:
            sys.stderr.write(
                f"[rank {self.rank}/{self.size}] nn_cuda: error: {self._waiting_in} did not complete within "
                f"--mpi-timeout {self.timeout:g} s: {self.not_answering(now)}; ending the job\n")
            sys.stderr.flush()
            self._let_output_through()
        else:
            time.sleep(SIGNAL_GRACE_SECONDS)  # the first rank reports; its abort ends this one
        self._end(1)

    def _end(self, status: int) -> None:
        for path in (self.path, self.path.with_name(self.path.name + ".reported")):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        try:
            self._abort(status)
        finally:
            os._exit(status)

    def _watch_signals(self):
        """A pipe the C-level signal handler writes each signal's number to, or None (not the main
        thread, or the wakeup descriptor is taken)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        os.set_blocking(read_end, False)
        try:
            previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        except ValueError:
            os.close(read_end)
            os.close(write_end)
            return None
        if previous != -1:  # someone else's: give it back, and watch no signals
            signal.set_wakeup_fd(previous)
            os.close(read_end)
            os.close(write_end)
            return None
        return read_end

    def _check_signals(self) -> None:
        try:
            received = os.read(self._signals, 64)
        except BlockingIOError:
            return
        for number in received:
            if number in (signal.SIGTERM, signal.SIGINT):
                # Python's handler runs when the main thread next runs Python: give it the time;
                # only a rank still blocked in MPI after it is ended from here.
                if self._stop.wait(SIGNAL_GRACE_SECONDS) or self._waiting_in is None:
                    return
                name = signal.Signals(number).name
                sys.stderr.write(f"[rank {self.rank}/{self.size}] nn_cuda: interrupted ({name}) while waiting "
                                 f"in {self._waiting_in}\n")
                sys.stderr.flush()
                self._let_output_through()
                self._end(128 + number)


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(rank) for rank in ranks)


def job_key(comm) -> str:
    """A name for this job's board, the same on every rank (one broadcast from rank 0)."""
    return comm.bcast(secrets.token_hex(8) if comm.Get_rank() == 0 else None, root=0)
