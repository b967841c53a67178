"""Shared test set-up.

Numba reads NUMBA_ENABLE_CUDASIM when it is first imported, so the choice between a real GPU and
Numba's CPU simulator is made here, before any test imports numba: without a CUDA driver and device,
the Numba tests run in the simulator.
"""

import ctypes
import os
from pathlib import Path


def _cuda_gpu_present() -> bool:
    if not any(Path("/dev").glob("nvidia[0-9]*")):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


GPU_PRESENT = _cuda_gpu_present()
if not GPU_PRESENT:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# Tests must never reach the network or the user's cache.
os.environ["NN_CUDA_OFFLINE"] = "1"
