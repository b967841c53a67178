"""Checkpoints: `.npz` files with W1 (H x 784), b1 (H), W2 (10 x H), b2 (10) and a JSON metadata string.

Written atomically (a temporary file in the same folder, then a rename), so a crash never leaves a
half-written checkpoint under the final name; read with allow_pickle=False, so a file can hold data only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .idx import atomic_file
from .model import N_CLASSES, PARAMETER_NAMES, parameter_shapes


class CheckpointError(Exception):
    """A checkpoint that cannot be read or does not hold the network's parameters."""


def save_checkpoint(path, params: dict, **metadata) -> Path:
    arrays = {name: np.asarray(params[name]) for name in PARAMETER_NAMES}
    arrays["metadata"] = np.array(json.dumps(metadata, sort_keys=True, default=str))
    with atomic_file(path) as handle:
        np.savez(handle, **arrays)
    return Path(path)


def load_checkpoint(path) -> tuple[dict, dict]:
    """({W1, b1, W2, b2} as NumPy arrays, metadata dict); CheckpointError when unusable."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [name for name in PARAMETER_NAMES if name not in archive.files]
            if missing:
                raise CheckpointError(f"{path}: not an nn_cuda checkpoint (missing {', '.join(missing)})")
            params = {name: np.array(archive[name]) for name in PARAMETER_NAMES}
            metadata = json.loads(str(archive["metadata"])) if "metadata" in archive.files else {}
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except Exception as exc:  # zipfile, pickle and value errors all mean the same thing here
        raise CheckpointError(f"{path}: cannot read checkpoint ({exc})") from None
    W1 = params["W1"]
    if W1.ndim != 2:
        raise CheckpointError(f"{path}: W1 must be 2-D (H x 784), has shape {W1.shape}")
    expected = parameter_shapes(W1.shape[0], W1.shape[1], N_CLASSES)
    for name in PARAMETER_NAMES:
        if params[name].shape != expected[name]:
            raise CheckpointError(
                f"{path}: {name} has shape {params[name].shape}, expected {expected[name]}"
            )
        if not np.issubdtype(params[name].dtype, np.floating):
            raise CheckpointError(f"{path}: {name} is {params[name].dtype}, expected floating point")
    return params, metadata
