"""The stacks the CPU runner's threads run on: one pool for the process, which every library it loads
(each kernel file, each RawModule) is given (runtime.cpp StackPool).

The pool is as large as a launch can need: in the checking mode 4 blocks of 1024 threads are
resident at once, each with a scheduler's stack as well; the sizes are the runtime's
(nn_cuda_cpu_stack_layout). Each stack lies above an inaccessible page, so a thread whose locals
outgrow it faults there (reported as such). The memory is reserved, not committed: only the pages a
thread touches are backed. One pool rather than one per library because each stack and its guard
page are two memory mappings, and a process that loads many libraries (a test run loads dozens)
would otherwise exceed the kernel's limit on mappings (vm.max_map_count, 65,530 by default).
"""

from __future__ import annotations

import ctypes
import mmap
import sys

from .device_memory import PROT_NONE, libc

#: mmap's flag for memory reserved without committing it (Linux's value where the module lacks it)
MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)

_pool: tuple[int, int, int] | None = None  # (address, stacks, bytes per stack)


def process_stacks(stack_bytes: int, count: int) -> int:
    """The address of the process's pool of `count` stacks of `stack_bytes`, each above a guard page
    (mapped at the first call). MemoryError when it cannot be mapped."""
    global _pool
    if _pool is None:
        page = mmap.PAGESIZE
        span = stack_bytes + page
        c = libc()
        address = c.mmap(None, count * span, mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"could not reserve {count * span / 2**20:.0f} MiB for the CPU runner's thread "
                              f"stacks (errno {ctypes.get_errno()})")
        for stack in range(count):
            if c.mprotect(address + stack * span, page, PROT_NONE) != 0:
                raise MemoryError(f"could not protect the guard page of a thread stack (errno {ctypes.get_errno()})")
        _pool = (address, count, stack_bytes)
    address, pooled, pooled_bytes = _pool
    if (pooled, pooled_bytes) != (count, stack_bytes):
        raise RuntimeError(f"two CPU runtimes in one process: stacks of {pooled_bytes} and {stack_bytes} bytes")
    return address
