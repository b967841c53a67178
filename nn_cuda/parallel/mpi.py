"""MPI helpers shared by every parallel strategy: who am I, how rows are split, counted messages, aborts.

Nothing here imports mpi4py until it is needed: a serial run (no mpirun) never touches MPI, and
`launched_by_mpi()` tells from the launcher's environment variables alone whether this process is one
rank of an MPI job.

- `world_from_environment`, `launched_by_mpi`: the rank and size the launcher announced.
- `split_sizes`, `split_offsets`, `rank_range`: the course's split of n items over p ranks,
  rank r getting n // p + (r < n % p) of them, in rank order.
- `Communicator`: an mpi4py communicator that counts the messages and payload bytes this rank hands
  to MPI and the seconds it spends inside MPI, per kind of operation (the data for the benchmarks'
  communication columns and for a cost model).
- `abort_on_error`: any exception on any rank ends the whole job, its message printed once, with
  a non-zero exit status, instead of leaving the other ranks waiting in a collective forever.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import io
import os
import signal
import stat
import struct
import sys
import termios
import time
import traceback
from collections import Counter

from ..interrupts import Terminated
from ..launcher import world_from_environment
from .course_task import rows_of_rank

#: the values of --parallel
PARALLEL_STRATEGIES = ("data", "model", "hybrid")
#: the values of --comm: how the gradient buffer is summed (see allreduce.py)
COMM_MODES = ("host", "cuda-aware", "nccl")


class ParallelError(Exception):
    """A problem with the parallel set-up that the user can fix (one line naming it and the fix)."""


# ---- who am I --------------------------------------------------------------------------------

def launched_by_mpi() -> bool:
    """True when mpirun/mpiexec/srun started this process (even with one rank)."""
    return world_from_environment() is not None


def import_mpi():
    """mpi4py's MPI module (initialising MPI), or a ParallelError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        world = world_from_environment()
        how = f" (the launcher started {world.size} ranks)" if world else ""
        raise ParallelError(
            f"this run was started by an MPI launcher{how} but mpi4py cannot be imported ({error}); "
            "install it with pip install -e .[mpi] (mpi4py and MPICH), or run without mpirun"
        ) from None
    return MPI


# The launchers' count of the ranks on this node.
LOCAL_SIZE_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def share_cores_between_ranks() -> int | None:
    """Under an MPI launcher, give each rank's BLAS its share of the node's cores.

    Without this, every rank's BLAS starts one thread per core: 4 ranks on a 2-core laptop would
    run 8 busy threads on 2 cores, several times slower than 4. The commands call it first thing;
    threadpoolctl changes the thread count of the BLAS already loaded, and the variables of
    BLAS_THREAD_VARIABLES carry it to the processes a rank starts. It does nothing (returns None)
    without a launcher, or when the user has set any of those variables. Returns the number of
    threads per rank it set.
    """
    world = world_from_environment()
    if world is None or any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        return None
    local = next((int(os.environ[v]) for v in LOCAL_SIZE_VARIABLES if os.environ.get(v, "").isdigit()),
                 world.size)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // max(1, local))
    for variable in BLAS_THREAD_VARIABLES:
        os.environ[variable] = str(threads)
    from threadpoolctl import threadpool_limits  # only MPI runs need it

    threadpool_limits(limits=threads)
    return threads


# ---- the course's split of rows over ranks ------------------------------------------------------


def split_sizes(n: int, p: int) -> list[int]:
    """How many of n items each of p ranks gets: n // p + (r < n % p) for rank r."""
    if p < 1:
        raise ValueError(f"cannot split over {p} ranks")
    return [n // p + (r < n % p) for r in range(p)]


def split_offsets(n: int, p: int) -> list[int]:
    """Where each rank's items start (prefix sums of split_sizes)."""
    offsets, start = [], 0
    for size in split_sizes(n, p):
        offsets.append(start)
        start += size
    return offsets


def rank_range(n: int, p: int, r: int) -> tuple[int, int]:
    """(start, stop) of rank r's items among n items split over p ranks (the course's split, written
    once in course_task.py, the student's MPI task)."""
    return rows_of_rank(n, p, r)


def ring_allreduce_bytes(payload_bytes: int, p: int) -> float:
    """Bytes each rank sends in a bandwidth-optimal (ring, or reduce-scatter + allgather) allreduce.

    Each rank sends (p - 1) / p of the buffer in the reduce-scatter and as much again in the
    allgather: 2 (p - 1) / p * payload, the bandwidth term of the standard cost model.
    """
    return 2.0 * (p - 1) / p * payload_bytes


# ---- a communicator that counts -----------------------------------------------------------------


class CommStats:
    """Per kind of operation ("allreduce", "bcast", ...): calls, payload bytes, seconds inside MPI.

    Payload bytes are the size of the buffer this rank hands to the operation; what travels on the
    wire depends on the algorithm MPI picks (see `ring_allreduce_bytes`).
    """

    def __init__(self):
        self.calls, self.bytes, self.seconds = Counter(), Counter(), Counter()

    def record(self, kind: str, nbytes: int, seconds: float) -> None:
        self.calls[kind] += 1
        self.bytes[kind] += int(nbytes)
        self.seconds[kind] += seconds

    def totals(self) -> dict:
        return {
            "calls": sum(self.calls.values()),
            "bytes": sum(self.bytes.values()),
            "seconds": sum(self.seconds.values()),
        }

    def as_dict(self) -> dict:
        return {
            kind: {"calls": self.calls[kind], "bytes": self.bytes[kind], "seconds": self.seconds[kind]}
            for kind in sorted(self.calls)
        }

    def reset(self) -> None:
        self.calls.clear()
        self.bytes.clear()
        self.seconds.clear()


class PendingRequest:
    """A nonblocking operation in flight; `wait()` completes it and counts the time spent waiting."""

    def __init__(self, request, stats: CommStats, kind: str):
        self._request, self._stats, self._kind = request, stats, kind

    def wait(self) -> None:
        started = time.perf_counter()
        with waiting_in(self._kind):
            self._request.Wait()
        self._stats.seconds[self._kind] += time.perf_counter() - started


#: this process's watchdog of --mpi-timeout (nn_cuda.parallel.watchdog), made with the world
_WATCHDOG = None


@contextlib.contextmanager
def _not_watched(kind: str):
    yield


def waiting_in(kind: str):
    """Mark the enclosed wait for other ranks (a collective, or a loop polling for a message) for
    this process's --mpi-timeout watchdog, if it runs; `kind` names the wait in its message."""
    return _WATCHDOG.collective(kind) if _WATCHDOG is not None else _not_watched(kind)


class Communicator:
    """An mpi4py communicator that records what this rank sends (see CommStats).

    Buffer methods (capitalised, as in mpi4py) take NumPy arrays, or device arrays when MPI is
    CUDA-aware; reductions are sums, in place. Lower-case methods move small Python objects.
    """

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.stats = CommStats()
        self._MPI = import_mpi()

    @classmethod
    def world(cls, timeout: float | None = None) -> "Communicator":
        """COMM_WORLD; with `timeout` (--mpi-timeout) and several ranks, this process's watchdog is
        started first (once), so that no collective of any communicator waits for ever."""
        global _WATCHDOG
        MPI = import_mpi()
        world = MPI.COMM_WORLD
        if timeout is not None and _WATCHDOG is None and world.Get_size() > 1:
            from .watchdog import Watchdog, job_key

            _WATCHDOG = Watchdog(world.Get_rank(), world.Get_size(), job_key(world), timeout,
                                 abort=MPI.COMM_WORLD.Abort,
                                 let_output_through=let_output_through)
        return cls(world)

    def _counted(self, kind: str, nbytes: int, operation, *args, **kwargs):
        """operation(*args, **kwargs), its time and `nbytes` recorded under `kind`."""
        started = time.perf_counter()
        with waiting_in(kind):
            result = operation(*args, **kwargs)
        self.stats.record(kind, nbytes, time.perf_counter() - started)
        return result

    # ---- buffers ----
    def Allreduce(self, buffer) -> None:
        """buffer <- the sum of every rank's buffer (in place, blocking)."""
        self._counted("allreduce", buffer.nbytes, self.comm.Allreduce, self._MPI.IN_PLACE, buffer,
                      op=self._MPI.SUM)

    def Iallreduce(self, buffer) -> PendingRequest:
        """Start buffer <- the sum over ranks (in place); the buffer is not to be touched until wait()."""
        request = self._counted("allreduce", buffer.nbytes, self.comm.Iallreduce, self._MPI.IN_PLACE, buffer,
                                op=self._MPI.SUM)
        return PendingRequest(request, self.stats, "allreduce")

    def Bcast(self, buffer, root: int = 0) -> None:
        self._counted("bcast", buffer.nbytes if self.rank == root else 0, self.comm.Bcast, buffer, root=root)

    # ---- small Python objects ----
    def sum(self, value: float) -> float:
        """The sum over ranks of a Python float."""
        return self._counted("allreduce (scalar)", 8, self.comm.allreduce, float(value), op=self._MPI.SUM)

    def bcast(self, obj, root: int = 0):
        return self._counted("bcast (object)", 0, self.comm.bcast, obj, root=root)

    def allgather(self, obj) -> list:
        return self._counted("allgather (object)", 0, self.comm.allgather, obj)

    def gather(self, obj, root: int = 0):
        """[every rank's obj] on `root` (in rank order), None elsewhere."""
        return self._counted("gather (object)", 0, self.comm.gather, obj, root=root)

    def barrier(self) -> None:
        with waiting_in("barrier"):
            self.comm.Barrier()

    def split(self, color: int, key: int) -> "Communicator":
        """A sub-communicator of the ranks with the same `color`, ordered by `key` (own counters)."""
        return Communicator(self.comm.Split(color, key))

    # ---- placement ----
    def node_placement(self) -> tuple[int, int]:
        """(this rank's index among the ranks on its node, how many ranks the node runs), found
        through shared memory: for picking a GPU."""
        node = self.comm.Split_type(self._MPI.COMM_TYPE_SHARED, key=self.rank)
        try:
            return node.Get_rank(), node.Get_size()
        finally:
            node.Free()


# ---- is MPI CUDA-aware? ------------------------------------------------------------------------


def mpi_library_paths() -> list[str]:
    """The MPI shared libraries loaded in this process (read from /proc/self/maps; Linux only)."""
    import_mpi()
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libmpi" in line}
    except OSError:
        return []
    return sorted(p for p in paths if ".so" in p)


def cuda_aware_mpi() -> bool | None:
    """Whether the MPI library accepts device pointers: True, False, or None (it cannot say).

    Open MPI and MPICH both export MPIX_Query_cuda_support(), which answers for the running
    library; it is looked up in the loaded MPI shared library (None where there is none).
    """
    for path in mpi_library_paths():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        query = getattr(library, "MPIX_Query_cuda_support", None)
        if query is not None:
            query.restype = ctypes.c_int
            return bool(query())
    return None


# ---- one error ends the whole job ----------------------------------------------------------------

# A failing rank other than 0 waits this long before printing and aborting. When the same error
# strikes every rank (a missing file, more ranks than rows, divergence), rank 0 aborts first and the
# job ends before the others print: the message appears once. When only this rank fails, the job
# ends this much later, still within seconds.
NON_ROOT_GRACE_SECONDS = 2.0
# The launcher forwards each rank's output through a pipe, and MPI_Abort races it: aborting at once
# can end the job before the last message has been forwarded (also after a fixed pause, on a loaded
# machine). So a rank waits until the launcher has read its pipes, for at most this long.
OUTPUT_DRAIN_SECONDS = 5.0
# Where a pipe's unread bytes cannot be counted (Linux counts them from either end, FIONREAD; other
# systems need not), or the output is not a file descriptor: a fixed pause instead.
OUTPUT_PAUSE_SECONDS = 0.5


def _unread_bytes(descriptor: int) -> int:
    """Bytes written to the pipe `descriptor` (either end) that its reader has not read yet."""
    return struct.unpack("i", fcntl.ioctl(descriptor, termios.FIONREAD, b"\0\0\0\0"))[0]


def let_output_through(most_seconds: float = OUTPUT_DRAIN_SECONDS) -> None:
    """Return once the launcher has read what this rank wrote to stdout and stderr (flushed here), or
    after `most_seconds`; after OUTPUT_PAUSE_SECONDS where either cannot be asked."""
    sys.stdout.flush()
    sys.stderr.flush()
    if not sys.platform.startswith("linux"):
        time.sleep(OUTPUT_PAUSE_SECONDS)
        return
    deadline = time.monotonic() + most_seconds
    for descriptor in (sys.stdout.fileno(), sys.stderr.fileno()):
        try:
            if stat.S_ISFIFO(os.fstat(descriptor).st_mode):  # a file or a terminal has it already
                while _unread_bytes(descriptor) and time.monotonic() < deadline:
                    time.sleep(0.01)
        except (OSError, ValueError):  # no descriptor (replaced by a buffer), or one that cannot be asked
            time.sleep(OUTPUT_PAUSE_SECONDS)
            return
    time.sleep(0.05)  # the launcher's own forwarding of what it has just read


def _current_rank() -> tuple[int, int]:
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    world = world_from_environment()
    return (world.rank, world.size) if world else (0, 1)


def abort_job(message: str, exit_code: int = 1) -> None:
    """Print `message` prefixed with this rank, end every rank of the job, and exit. Never returns."""
    rank, size = _current_rank()
    if rank != 0:
        # MPI start-up waits for every rank: when the error came before it (a bad flag), rank 0 can
        # only abort once this rank has started MPI too, so start it before waiting.
        try:
            import_mpi()
        except ParallelError as missing:  # no mpi4py: no rank can abort the others, each one exits
            if str(missing) in message:  # this very error, which every rank has: rank 0 says it, once
                sys.stdout.flush()
                os._exit(exit_code)
        time.sleep(NON_ROOT_GRACE_SECONDS)
    prefix = f"[rank {rank}/{size}] "
    sys.stdout.flush()
    sys.stderr.write("".join(prefix + line + "\n" for line in message.rstrip("\n").splitlines()))
    let_output_through()
    try:
        MPI = import_mpi()
        MPI.COMM_WORLD.Abort(exit_code)
    except ParallelError:
        pass  # without mpi4py no rank is inside MPI: exiting is enough
    # MPICH's MPI_Abort may return before the launcher kills this process: never run on after it.
    os._exit(exit_code)


@contextlib.contextmanager
def abort_on_error(prog: str, user_errors: tuple = ()):
    """Under an MPI launcher, turn an exception on this rank into the end of the whole job.

    The other ranks would otherwise wait forever in their next collective. `user_errors` are
    printed as one line "prog: error: message"; anything else with its traceback. Without an
    MPI launcher this does nothing, and exceptions propagate as usual.
    """
    if not launched_by_mpi():
        yield
        return
    try:
        yield
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        abort_job(f"{prog}: exited with status {exc.code}", exc.code if isinstance(exc.code, int) else 1)
    except user_errors as exc:
        abort_job(f"{prog}: error: {exc}")
    except KeyboardInterrupt as interruption:  # Ctrl-C, or SIGTERM (nn_cuda.interrupts.Terminated)
        received = signal.SIGTERM if isinstance(interruption, Terminated) else signal.SIGINT
        abort_job(f"{prog}: interrupted ({received.name})", 128 + received)
    except BaseException as exc:  # a bug: its traceback, then the same clean end
        abort_job("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


@contextlib.contextmanager
def output_on_root_only():
    """Silence stdout and stderr on ranks other than 0 (for argument parsing: usage errors once)."""
    world = world_from_environment()
    if world is None or world.rank == 0:
        yield
        return
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def refuse_extra_ranks(prog: str, what: str, alternative: str = "") -> bool:
    """For work that runs on one process: True under an MPI launcher with more than one rank, after
    rank 0 has printed one line saying to run `what` without mpirun (or `alternative`). Every rank then
    exits with status 1 before starting MPI, so no rank waits for another and MPI prints nothing more."""
    world = world_from_environment()
    if world is None or world.size == 1:
        return False
    if world.rank == 0:
        print(f"{prog}: error: {what} runs on one rank, not on {ranks(world.size)}; run it without "
              f"mpirun{alternative}", file=sys.stderr)
    return True


def ranks(count: int) -> str:
    """'1 MPI rank', '4 MPI ranks'."""
    return f"{count} MPI rank{'' if count == 1 else 's'}"


def find_mpiexec() -> str:
    """mpiexec next to this Python (the `mpich` wheel installs it there), else on PATH."""
    import shutil

    local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = local if os.access(local, os.X_OK) else shutil.which("mpiexec")
    if not found:
        raise ParallelError("no mpiexec next to Python or on PATH; install MPI with pip install -e .[mpi]")
    return found
