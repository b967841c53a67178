"""Memory a run will need, checked before it allocates: one line naming the flag to lower, instead of a
MemoryError traceback halfway through (a batch of 10^9 rows, H = 10^8, mode 4 at --scale 1000).

The estimates count the large buffers only (matrices, never Python objects) and compare them with the
memory the operating system reports as available (Linux: MemAvailable in /proc/meminfo). Where that
cannot be read, nothing is refused.
"""

from __future__ import annotations

import os


class NotEnoughMemory(ValueError):
    """A size flag asks for more memory than the machine has available: the user's to fix."""


def available_bytes() -> int | None:
    """Memory available to a new allocation without swapping, or None where the system does not say."""
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
