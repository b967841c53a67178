"""Memory a run will need, checked before it allocates: one line naming the flag to lower, instead of a
MemoryError traceback halfway through (a batch of 10^9 rows, H = 10^8, mode 4 at --scale 1000).

The estimates count the large buffers only (matrices, never Python objects) and compare them with the
memory this process may still take: the least of what the operating system reports as available
(Linux: MemAvailable in /proc/meminfo), what the process's control group leaves below its limit
(cgroup v2 memory.max, v1 memory.limit_in_bytes) and what `ulimit -v` leaves of the address space.
Where none can be read, nothing is refused.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path


class NotEnoughMemory(ValueError):
    """A size flag asks for more memory than the machine has available: the user's to fix."""


def available_bytes() -> int | None:
    """Memory available to a new allocation of this process without swapping, or None where the
    system does not say: the least of the machine's, its control group's and its ulimit's."""
    limits = [limit for limit in (_machine_available(), _cgroup_available(), _address_space_available())
              if limit is not None]
    return max(0, min(limits)) if limits else None


def _machine_available() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _read_number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _cgroup_available(root: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")) -> int | None:
    """The control group's memory limit less its usage, or None without a limit."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        relative = path.lstrip("/")
        if hierarchy == "0" and controllers == "":  # cgroup v2
            limit, used = (root / relative / "memory.max", root / relative / "memory.current")
        elif "memory" in controllers.split(","):  # cgroup v1
            limit, used = (root / "memory" / relative / "memory.limit_in_bytes",
                           root / "memory" / relative / "memory.usage_in_bytes")
        else:
            continue
        limit_bytes, used_bytes = _read_number(limit), _read_number(used)
        if limit_bytes is not None and used_bytes is not None and limit_bytes < 2**60:
            return limit_bytes - used_bytes
    return None


def _address_space_available() -> int | None:
    """What `ulimit -v` (RLIMIT_AS) leaves of the address space, or None without a limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return soft - int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return soft


def format_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if count < 1024 or unit == "PiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def require(parts: dict, fix: str, what: str = "this run") -> None:
    """Raise NotEnoughMemory when the sum of `parts` ({description: bytes}) is more than the memory
    available; the message lists the parts, largest first, and ends with `fix`."""
    needed = sum(parts.values())
    available = available_bytes()
    if available is None or needed <= available:
        return
    listed = ", ".join(f"{name} {format_bytes(size)}"
                       for name, size in sorted(parts.items(), key=lambda item: -item[1]))
    parts_text = f" ({listed})" if len(parts) > 1 else ""
    raise NotEnoughMemory(f"{what} needs about {format_bytes(needed)} of memory{parts_text}, more than the "
                          f"{format_bytes(available)} available; {fix}")
