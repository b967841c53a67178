"""Checkpoints: `.npz` files with W1 (H x 784), b1 (H), W2 (10 x H), b2 (10) and a JSON metadata string.

Written atomically (nn_cuda.outputs: a temporary file in the same folder, then a rename), so a crash
never leaves a half-written checkpoint under the final name; when the file cannot be written (a full
disk), the parameters go to the system's temporary folder instead, so that a training is not lost.
Read with allow_pickle=False, so a file can hold data only, and checked: the four arrays, their shapes,
H >= 1, and finite values.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import memory
from .model import N_CLASSES, PARAMETER_NAMES, RAW_PIXEL_MAX, parameter_shapes
from .outputs import OutputError, atomic_file

NOT_A_CHECKPOINT = "not a checkpoint written by --save"


class CheckpointError(Exception):
    """A checkpoint that cannot be read or does not hold the network's parameters."""


def save_checkpoint(path, params: dict, **metadata) -> Path:
    """Write `params` (and `metadata`) to `path`.

    When `path` cannot be written, the checkpoint is written to a new file in the system's temporary
    folder instead, and OutputError says why, and where the parameters are (or that they could not
    be saved at all)."""
    arrays = {name: np.asarray(params[name]) for name in PARAMETER_NAMES}
    arrays["metadata"] = np.array(json.dumps(metadata, sort_keys=True, default=str))
    try:
        _write(path, arrays)
    except OutputError as error:
        raise OutputError(f"{error}; {_save_elsewhere(arrays)}") from None
    return Path(path)


def for_pixels(params: dict, metadata: dict, pixels: str, path) -> tuple[dict, str | None]:
    """`params` for inputs in `pixels` ("raw" 0-255 or "unit" [0, 1]), and a line to print or None.

    A checkpoint trained on the other pixels gets W1 rescaled by RAW_PIXEL_MAX: W1 x_raw = (255 W1)
    x_unit, the same network. One that does not record its pixels (written before checkpoints did) is
    used as it is, and the line says so."""
    trained_on = metadata.get("pixels")
    if trained_on == pixels:
        return params, None
    if trained_on not in ("raw", "unit"):
        return params, (f"NOTE: {path} does not record the pixels it was trained on (an older checkpoint): "
                        f"used as if trained on {pixels} pixels")
    factor = RAW_PIXEL_MAX if trained_on == "raw" else 1 / RAW_PIXEL_MAX
    rescaled = {**params, "W1": (params["W1"] * factor).astype(params["W1"].dtype)}
    return rescaled, (f"{path} was trained on {trained_on} pixels: its W1 is multiplied by {factor:.6g} to read "
                      f"{pixels} pixels (the same network)")


def load_checkpoint(path) -> tuple[dict, dict]:
    """({W1, b1, W2, b2} as NumPy arrays, metadata dict); CheckpointError when unusable."""
    path = Path(path)
    params, metadata = _read(path)
    W1 = params["W1"]
    if W1.ndim != 2:
        raise CheckpointError(f"{path}: W1 must be 2-D (H x 784), has shape {W1.shape}")
    if W1.shape[0] == 0:
        raise CheckpointError(f"{path}: W1 has no rows (H = 0 hidden units); the network needs "
                              "H >= 1: start from another checkpoint")
    expected = parameter_shapes(W1.shape[0], W1.shape[1], N_CLASSES)
    for name in PARAMETER_NAMES:
        if params[name].shape != expected[name]:
            raise CheckpointError(
                f"{path}: {name} has shape {params[name].shape}, expected {expected[name]}"
            )
        if not np.issubdtype(params[name].dtype, np.floating):
            raise CheckpointError(f"{path}: {name} is {params[name].dtype}, expected floating point")
        bad = int(np.count_nonzero(~np.isfinite(params[name])))
        if bad:
            raise CheckpointError(
                f"{path}: {name} holds {bad} NaN or Inf values; these weights cannot be trained on "
                f"or evaluated: start from another checkpoint (or none)"
            )
    return params, metadata


# ---- helpers ----------------------------------------------------------------------------------


def _write(path, arrays: dict) -> None:
    with atomic_file(path) as handle:
        np.savez(handle, **arrays)


def _save_elsewhere(arrays: dict) -> str:
    """Write the checkpoint to a new file of the system's temporary folder; say where, or why not."""
    rescue = None
    try:
        descriptor, rescue = tempfile.mkstemp(prefix="nn_cuda-weights-", suffix=".npz")
        os.close(descriptor)
        _write(rescue, arrays)
    except (OSError, OutputError) as error:
        if rescue is not None:  # the empty file mkstemp made: nothing of the weights is in it
            Path(rescue).unlink(missing_ok=True)
        return (f"saving them to {tempfile.gettempdir()} instead failed too ({error}): "
                "the trained weights are lost")
    return f"the weights were saved to {rescue} instead"


def _check_announced_sizes(path: Path) -> None:
    """CheckpointError, before anything is decompressed, when the arrays that the .npy headers inside
    the archive announce do not fit in the memory available (a small zip can announce gigabytes),
    or when a header is damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            announced = 0
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(member)
                announced += int(np.prod(shape, dtype=object)) * dtype.itemsize
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
        return  # np.load below says what is wrong with the archive itself
    except Exception as error:  # NumPy's header parser raises ValueError, SyntaxError, TokenError...
        raise CheckpointError(f"{path}: a damaged .npz archive (a .npy header cannot be read: "
                              f"{type(error).__name__}); write it again with --save") from None
    available = memory.available_bytes()
    if available is not None and 2 * announced > available:
        raise CheckpointError(
            f"{path}: its arrays would take {memory.format_bytes(announced)}, which with a copy is more than "
            f"the {memory.format_bytes(available)} of memory available; start from a smaller checkpoint"
        )


def _read(path: Path) -> tuple[dict, dict]:
    """The four arrays and the metadata of the archive `path`, unchecked."""
    if zipfile.is_zipfile(path):
        _check_announced_sizes(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a folder, {NOT_A_CHECKPOINT}") from None
    except (ValueError, EOFError):  # NumPy: "... allow_pickle=False": neither .npy nor .npz
        raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT} (not a .npz archive)") from None
    except zipfile.BadZipFile:
        raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT} (a damaged zip archive)") from None
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise CheckpointError(f"{path}: a single NumPy array (.npy), {NOT_A_CHECKPOINT}")
    with loaded as archive:
        missing = [name for name in PARAMETER_NAMES if name not in archive.files]
        if missing:
            raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT} (no {', '.join(missing)} in it)")
        try:
            params = {name: np.array(archive[name]) for name in PARAMETER_NAMES}
            metadata = json.loads(str(archive["metadata"])) if "metadata" in archive.files else {}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
            raise CheckpointError(f"{path}: a damaged .npz archive ({error}); "
                                  "write it again with --save") from None
    return params, metadata
