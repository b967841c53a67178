"""The device heap: what kernel code allocates with malloc and new, as the runtime records it.

A kernel that allocates (the ray tracer of "Ray Tracing in One Weekend in CUDA" builds its world with
`new` in a kernel of one thread, storing the objects' addresses in an array) gets addresses no launch
can foresee, on a GPU too. The checking mode runs each launch twice and compares what the runs left:
their addresses differ, though nothing raced. runtime.cpp records each allocation a CUDA thread makes
with who made it (its block, its thread, and how many of that size the thread made before in the
run); two addresses the runs left at one place are the same where they point at the same place of
allocations made alike. And after every launch the live allocations are searched for an address of
the launch's copies of its arrays, which a later launch would find gone.
"""

from __future__ import annotations

import ctypes

import numpy as np

#: the columns of allocations()' rows
ADDRESS, SIZE, RUN, BLOCK, THREAD, NTH = range(6)


def allocations(lib, run: int = 0) -> np.ndarray:
    """The live allocations of kernel code in `lib`'s runtime (of `run` only unless 0), a row each:
    address, size, run, block (linear), thread (linear in its block), how many of that size that
    thread had made before in that run."""
    count_of = lib.nn_cuda_cpu_heap_allocations
    count_of.restype = ctypes.c_size_t
    rows = np.zeros((count_of(ctypes.c_ulonglong(run), None, ctypes.c_size_t(0)), 6), np.uint64)
    if len(rows):  # none freed or made between the two calls: nothing runs between them
        count_of(ctypes.c_ulonglong(run), rows.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(len(rows)))
    return rows


def last_run(lib) -> int:
    """The number of the runtime's last run of a launch."""
    lib.nn_cuda_cpu_heap_run.restype = ctypes.c_ulonglong
    return lib.nn_cuda_cpu_heap_run()


def live_memory(lib) -> list[np.ndarray]:
    """The bytes of every live allocation of kernel code, as writable arrays over them (no copies):
    what the checking mode puts back between its runs and compares after them, where a held pointer
    reaches the heap (a `__device__` list head, an array of the objects' addresses)."""
    return [np.ctypeslib.as_array((ctypes.c_uint8 * int(row[SIZE])).from_address(int(row[ADDRESS])))
            for row in allocations(lib)]


def holds_all(lib, addresses: np.ndarray) -> bool:
    """Whether every one of `addresses` lies within a live allocation of kernel code (up to one past
    its end)."""
    return bool(_places(np.asarray(addresses, np.uint64), allocations(lib))[0].all())


def _places(words: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether each 64-bit word points into one of `rows`' allocations, up to one past its end; the
    place as (size, block, thread, nth, offset) rows)."""
    rows = rows[np.argsort(rows[:, ADDRESS])]
    found = np.searchsorted(rows[:, ADDRESS], words, side="right") - 1
    inside = found >= 0
    row = rows[np.maximum(found, 0)] if len(rows) else np.zeros((len(words), 6), np.uint64)
    inside &= words <= row[:, ADDRESS] + row[:, SIZE]
    place = np.column_stack([row[:, [SIZE, BLOCK, THREAD, NTH]], words - row[:, ADDRESS]])
    return inside, place


class RunAddresses:
    """The addresses of allocations that a checked launch's first run made, told from another run's
    of the same launch: `same(before, now)`, for the 64-bit words at which the two runs' results
    differ."""

    def __init__(self, lib, first: np.ndarray):
        self.lib, self.first = lib, first

    def same(self, before: np.ndarray, now: np.ndarray) -> np.ndarray:
        """Whether each word of `before` (the first run's) and of `now` (the last run's) points at the
        same place of allocations made alike in its run."""
        before, now = before.astype(np.uint64), now.astype(np.uint64)
        inside_before, place_before = _places(before, self.first)
        inside_now, place_now = _places(now, allocations(self.lib, last_run(self.lib)))
        return inside_before & inside_now & (place_before == place_now).all(axis=1)


def after_first_run(lib) -> RunAddresses | None:
    """The first run's allocations to compare the next runs' with; None where it made none."""
    first = allocations(lib, last_run(lib))
    return RunAddresses(lib, first) if len(first) else None


def same_words(before: np.ndarray, now: np.ndarray, differs: np.ndarray, heap: RunAddresses | None) -> np.ndarray:
    """`differs` (a flat mask of elements of 8-byte integers that differ) without the elements that
    hold addresses of the same place of the runs' allocations."""
    if heap is None or before.dtype.kind not in "iu" or before.itemsize != 8 or not differs.any():
        return differs
    where = np.flatnonzero(differs)
    differs = differs.copy()
    differs[where[heap.same(before.reshape(-1)[where].view(np.uint64), now.reshape(-1)[where].view(np.uint64))]] = False
    return differs
