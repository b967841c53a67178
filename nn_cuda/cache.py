"""Where nn_cuda keeps what it can rebuild or fetch again: downloads and compiled kernels."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$NN_CUDA_CACHE_DIR, or $XDG_CACHE_HOME/nn_cuda, or ~/.cache/nn_cuda."""
    if os.environ.get("NN_CUDA_CACHE_DIR"):
        return Path(os.environ["NN_CUDA_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "nn_cuda"
