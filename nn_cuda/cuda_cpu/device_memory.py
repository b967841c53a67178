"""Device memory on the CPU runner: `empty(shape, dtype)` gives each array pages of its own between two
inaccessible pages, as cudaMalloc gives each allocation memory of its own on a GPU.

A kernel that reads or writes past such an array then faults on a guard page, outside the checking
mode too, and the launch ends in a KernelError naming the thread and the line; past a NumPy array
the same write lands in the heap and takes Python down later (`free(): invalid size`). The array
starts on a 256-byte boundary, cudaMalloc's alignment (so vector loads such as float4 are aligned),
so up to 255 bytes after its end lie before the guard page: an access there is not caught (the
checking mode's exact bounds catch it) but stays in the array's own pages. The pages, guards
included, are unmapped when the array is freed. The cuda-cpu backend allocates all its arrays here.
"""

from __future__ import annotations

import ctypes
import mmap

import numpy as np

#: where an array starts: cudaMalloc's alignment
ALIGNMENT = 256
PROT_NONE = 0  # mprotect: no access (the mmap module names the others)

_libc = None


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
    memory = mmap.mmap(-1, page + data + page)  # guard, data, guard
    array = np.frombuffer(memory, dtype=dtype, count=count, offset=page + data - span).reshape(shape)
    base = array.__array_interface__["data"][0] - (page + data - span)
    protect = libc().mprotect
    if protect(base, page, PROT_NONE) != 0 or protect(base + page + data, page, PROT_NONE) != 0:
        raise MemoryError(f"could not protect the guard pages of a {shape} {dtype} array "
                          f"(errno {ctypes.get_errno()})")
    return array


def to_device(host_array) -> np.ndarray:
    """A copy of `host_array` in device memory (C order)."""
    host_array = np.asarray(host_array)
    array = empty(host_array.shape, host_array.dtype)
    array[...] = host_array
    return array
