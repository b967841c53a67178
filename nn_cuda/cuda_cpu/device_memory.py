"""Device memory on the CPU runner: `empty(shape, dtype)` gives each array pages of its own between two
inaccessible spans (guard_bytes: 1 MiB, or the array's size if more, so that an index off by up to
a whole array still lands in one), as cudaMalloc gives each allocation memory of its own on a GPU.

A kernel that reads or writes past such an array then faults on a guard page, outside the checking
mode too, and the launch ends in a KernelError naming the thread and the line; past a NumPy array
the same write lands in the heap and takes Python down later (`free(): invalid size`). The array
starts on a 256-byte boundary, cudaMalloc's alignment (so vector loads such as float4 are aligned),
so up to 255 bytes after its end lie before the guard page: an access there is not caught (the
checking mode's exact bounds catch it) but stays in the array's own pages. The pages, guards
included, are unmapped when the array is freed. The cuda-cpu backend allocates all its arrays here.

`guarded(args, signature)` does the same for a RawModule launch outside the checking mode: each
NumPy array a pointer parameter takes is copied here for the launch (unless it lies here already)
and the copies of non-const ones are copied back after it, so that a write past a user's array
faults instead of landing in Python's heap. A view is copied with the whole array it views (`x[1:]`
with `x`), and passed at its place there, as CuPy passes a view's pointer into its array: a kernel
given `in + RADIUS` may read `in[-1]`, and views of one array share one copy.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import weakref

import numpy as np

#: where an array starts: cudaMalloc's alignment
ALIGNMENT = 256
#: the least inaccessible span on each side of an array (address space only: never touched)
GUARD_BYTES = 1 << 20
PROT_NONE = 0  # mprotect: no access (the mmap module names the others)

_libc = None
#: the memory of every array empty() made, while it lives
_ALLOCATIONS: weakref.WeakSet = weakref.WeakSet()
#: memory -> (the array's first byte, its offset in the memory, its length, its dtype), while it lives
_ARRAYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def libc():
    """The C library's mmap, mprotect and munmap, typed for ctypes (loaded once)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_long]
        _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return _libc


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-ordered array of `shape` and `dtype` between two inaccessible pages."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    count = int(np.prod(shape, dtype=np.int64))
    page = mmap.PAGESIZE
    span = -(-max(count * dtype.itemsize, 1) // ALIGNMENT) * ALIGNMENT
    data = -(-span // page) * page
    guard = guard_bytes(data)
    memory = mmap.mmap(-1, guard + data + guard)  # guard, data, guard
    _ALLOCATIONS.add(memory)
    array = np.frombuffer(memory, dtype=dtype, count=count, offset=guard + data - span).reshape(shape)
    _ARRAYS[memory] = (array.ctypes.data, guard + data - span, count, dtype)
    base = array.__array_interface__["data"][0] - (guard + data - span)
    protect = libc().mprotect
    if protect(base, guard, PROT_NONE) != 0 or protect(base + guard + data, guard, PROT_NONE) != 0:
        raise MemoryError(f"could not protect the guard pages of a {shape} {dtype} array "
                          f"(errno {ctypes.get_errno()})")
    return array


def guard_bytes(data_bytes: int) -> int:
    """The inaccessible span on each side of `data_bytes` (a whole number of pages) of an array."""
    return max(GUARD_BYTES, data_bytes)


def to_device(host_array) -> np.ndarray:
    """A copy of `host_array` in device memory (C order)."""
    host_array = np.asarray(host_array)
    array = empty(host_array.shape, host_array.dtype)
    array[...] = host_array
    return array


def arrays_holding(addresses) -> list[np.ndarray] | None:
    """The arrays of empty() (flat, each once) that hold `addresses` (within an array's bytes and its
    alignment's slack); None when one of them lies in none (memory of NumPy's, or of no array): the
    checking mode compares the arrays a struct argument's pointers reach when they are device memory."""
    found: dict[int, np.ndarray] = {}
    arrays = [(memory, *record) for memory, record in list(_ARRAYS.items())]
    for address in map(int, addresses):
        for memory, start, offset, count, dtype in arrays:
            if start <= address < start + -(-max(count * dtype.itemsize, 1) // ALIGNMENT) * ALIGNMENT:
                if start not in found:
                    found[start] = np.frombuffer(memory, dtype=dtype, count=count, offset=offset)
                break
        else:
            return None
    return list(found.values())


def array_at(address: int, dtype=None) -> np.ndarray | None:
    """The memory of the array of empty() that holds the byte at `address`, from there to its end, as
    elements of `dtype` (the array's own where None; a view of the whole array, flat), as CuPy takes
    an integer address (`x.data.ptr + 4 * k`, PyCUDA's `numpy.uintp(a.gpudata)`, MegEngine's checksum
    of a uint32_t* one byte off) for a pointer; None where no array holds a byte there."""
    for memory, (start, offset, count, own) in list(_ARRAYS.items()):
        if 0 <= address - start < count * own.itemsize:
            whole = np.frombuffer(memory, dtype=own, count=count, offset=offset)
            rest = whole.view(np.uint8)[address - start:]
            dtype = own if dtype is None else np.dtype(dtype)
            return rest[:len(rest) // dtype.itemsize * dtype.itemsize].view(dtype)
    return None


def beside_an_array(address: int) -> tuple[str, int, int] | None:
    """Where `address` lies in the inaccessible pages around an array of empty(), which a fault there
    comes from: ("1 element(s) past the end", the array's first byte, its bytes), or "... before the
    start"; None where it is beside none."""
    for memory, (start, offset, count, dtype) in list(_ARRAYS.items()):
        end, memory_start = start + count * dtype.itemsize, start - offset
        if end <= address < memory_start + len(memory):
            return f"{(address - end) // dtype.itemsize + 1} element(s) past the end", start, count * dtype.itemsize
        if memory_start <= address < start:
            before = -(-(start - address) // dtype.itemsize)
            return f"{before} element(s) before the start", start, count * dtype.itemsize
    return None


def holds(array: np.ndarray) -> bool:
    """Whether `array` lies in memory empty() gave (between guard pages already)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):  # NumPy 2 keeps np.frombuffer's buffer as a memoryview of the mmap
        base = base.obj
    return isinstance(base, mmap.mmap) and base in _ALLOCATIONS


def same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays are views of the same bytes (an argument passed twice)."""
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def place_in_whole(array: np.ndarray) -> tuple[np.ndarray, int]:
    """(the C-contiguous array whose memory `array` views, the offset of `array`'s first byte in it):
    its last NumPy base, as CuPy passes a view's pointer into the memory of its array; (`array`, 0)
    where NumPy does not hold that memory whole (a view of a Fortran-ordered array, of a buffer)."""
    whole = array
    while isinstance(whole.base, np.ndarray):
        whole = whole.base
    offset = array.ctypes.data - whole.ctypes.data
    if not whole.flags.c_contiguous or not 0 <= offset <= whole.nbytes - array.nbytes:
        return array, 0
    return whole, offset


def _bytes_of(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array's memory as a flat uint8 view."""
    return array.reshape(-1).view(np.uint8)


@contextlib.contextmanager
def guarded(args: tuple, signature: tuple):
    """`args` with each array a pointer parameter takes in device memory (those here already are
    passed as they are): a C-contiguous array together with the whole array it views, one copy for
    every argument that views it, each passed at its place in that copy; on leaving, copies that a
    non-const parameter took are written back to the caller's arrays."""
    values, copies, written = list(args), {}, set()  # id(owner) -> (owner, its copy's bytes)
    for i, (value, c_type) in enumerate(zip(args, signature)):
        if not (isinstance(value, np.ndarray) and c_type.endswith("*")) or holds(value):
            continue
        owner, offset = place_in_whole(value)
        if id(owner) not in copies:
            copies[id(owner)] = (owner, to_device(_bytes_of(owner)))
        copy = copies[id(owner)][1]
        values[i] = copy[offset:offset + value.nbytes].view(value.dtype).reshape(value.shape)
        if not c_type.startswith("const "):
            written.add(id(owner))
    try:
        yield tuple(values)
    finally:
        for key in written:
            owner, copy = copies[key]
            _bytes_of(owner)[...] = copy
