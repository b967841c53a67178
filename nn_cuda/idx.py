"""Read and write IDX files, the format MNIST and Fashion-MNIST are distributed in.

An IDX file is a small header followed by the array's elements in row-major order:

    bytes 0-1   zero
    byte  2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
                0x0E float64
    byte  3     number of dimensions d
    d x 4 bytes the size of each dimension, big-endian unsigned 32-bit integers
    the data    prod(sizes) elements, big-endian

MNIST images are (n, 28, 28) uint8 ("idx3-ubyte") and labels are (n,) uint8 ("idx1-ubyte"). Files
are usually gzip-compressed (`.gz`); `read_idx` recognises gzip by its content, so either form
works whatever the file is called.

`read_idx` checks everything it can, so that a corrupt, truncated or foreign file ends with one
`DataError` naming the file and the problem, never with an array of the wrong shape.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import zlib
from pathlib import Path

import numpy as np

from . import memory
from .outputs import atomic_file

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_BYTES = 1 << 20  # bytes read at a time

# IDX type code -> big-endian NumPy dtype of one element.
IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


class DataError(Exception):
    """A data file or dataset is missing, corrupt or inconsistent.

    `str(error)` is one line that names the file (or dataset), what is wrong and how to fix it.
    """


def read_idx(path) -> np.ndarray:
    """The array stored in the IDX file `path` (gzip-compressed or not), in native byte order.

    Raises DataError if the file is missing, is not IDX, or its length disagrees with its header.
    Reading stops one byte after the data the header announces, so a file that goes on (a
    decompression bomb, say) costs no more memory than a valid one.
    """
    path = Path(path)
    with _open_decompressed(path) as stream, _read_errors_reported(path):
        dtype, shape, header_size = _read_header(path, stream)
        expected = math.prod(shape) * dtype.itemsize
        if isinstance(stream, gzip.GzipFile):  # a plain file's length bounds the read already
            _check_fits_in_memory(path, shape, expected)
        data = _read_at_most(stream, expected + 1)

    found = len(data)
    shape_text = " x ".join(str(n) for n in shape)
    if found < expected:
        raise DataError(
            f"{path}: file is truncated: its header promises {shape_text} elements "
            f"({expected} bytes of data) but only {found} bytes follow; "
            f"delete it and download it again"
        )
    if found > expected:
        raise DataError(
            f"{path}: file is longer than its header says: more than the {expected} bytes of its "
            f"{shape_text} elements follow the header; the file is corrupt or not IDX: delete it "
            f"and download it again"
        )

    array = np.frombuffer(data, dtype=dtype).reshape(shape)
    # A native-byte-order copy: writable, and fast for the arithmetic that follows.
    return array.astype(dtype.newbyteorder("="))


def write_idx(path, array) -> None:
    """Write `array` to `path` as IDX, gzip-compressed when the name ends in `.gz`.

    The write is atomic (temporary file, then rename) and deterministic: gzip output carries no
    time stamp or file name, so the same array always gives the same bytes.
    """
    path = Path(path)
    array = np.asarray(array)
    type_code = _type_code(array.dtype)
    if not 1 <= array.ndim <= 255:
        raise ValueError(f"IDX stores arrays of 1 to 255 dimensions, not {array.ndim}")
    if any(n >= 2**32 for n in array.shape):
        raise ValueError(f"IDX dimensions must be below 2**32; got shape {array.shape}")

    header = bytes([0, 0, type_code, array.ndim])
    header += np.array(array.shape, dtype=">u4").tobytes()
    content = header + np.ascontiguousarray(array, dtype=IDX_DTYPES[type_code]).tobytes()

    with atomic_file(path) as raw:
        if path.name.endswith(".gz"):
            # filename="" and mtime=0 keep the gzip header free of names and dates.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9,
                               mtime=0) as compressed:
                compressed.write(content)
        else:
            raw.write(content)


# ---- helpers ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _open_decompressed(path: Path):
    """The file as a binary stream, decompressed as it is read if it starts with the gzip magic."""
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected an IDX file") from None
    except OSError as error:
        raise DataError(f"{path}: cannot be read: {error.strerror or error}") from None
    with raw:
        with _read_errors_reported(path):
            compressed = raw.read(len(GZIP_MAGIC)) == GZIP_MAGIC
            raw.seek(0)
        if not compressed:
            yield raw
            return
        with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
            yield stream


@contextlib.contextmanager
def _read_errors_reported(path: Path):
    """A failure to read or decompress `path` as one DataError."""
    try:
        yield
    except EOFError:
        raise DataError(
            f"{path}: gzip stream is truncated (an interrupted download?); "
            f"delete it and download it again"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as error:
        raise DataError(
            f"{path}: corrupt gzip data ({error}); delete it and download it again"
        ) from None
    except OSError as error:
        raise DataError(f"{path}: cannot be read: {error.strerror or error}") from None


def _read_at_most(stream, size: int) -> bytearray:
    """Up to `size` bytes of `stream`, fewer where it ends first, read a chunk at a time (a header
    announcing more data than the file holds allocates no more than the file's bytes)."""
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(min(CHUNK_BYTES, size - len(data)))
        if not chunk:
            break
        data += chunk
    return data


def _read_header(path: Path, stream):
    """(big-endian dtype, shape, header size in bytes), read from the start of `stream`."""
    start = bytes(_read_at_most(stream, 4))
    if len(start) < 4:
        raise DataError(
            f"{path}: only {len(start)} bytes long, too short for an IDX header; "
            f"delete it and download it again"
        )
    if start[0] != 0 or start[1] != 0 or start[2] not in IDX_DTYPES:
        raise DataError(
            f"{path}: not an IDX file (magic number 0x{start.hex()}; "
            f"IDX files start with 0x0000 then a type code such as 08 for uint8)"
        )
    dtype = IDX_DTYPES[start[2]]
    ndim = start[3]
    if ndim == 0:
        raise DataError(f"{path}: IDX header declares 0 dimensions; the file is corrupt")
    header_size = 4 + 4 * ndim
    sizes = bytes(_read_at_most(stream, 4 * ndim))
    if len(sizes) < 4 * ndim:
        raise DataError(
            f"{path}: file ends inside its header ({4 + len(sizes)} bytes, the header of a "
            f"{ndim}-dimensional IDX array needs {header_size}); delete it and download it again"
        )
    shape = tuple(int(n) for n in np.frombuffer(sizes, dtype=">u4"))
    return dtype, shape, header_size


def _check_fits_in_memory(path: Path, shape: tuple, expected: int) -> None:
    """DataError, before anything is decompressed, when the array the header announces (read, then
    copied into native byte order) cannot fit in the memory available: a small gzip file can claim
    millions of images."""
    available = memory.available_bytes()
    if available is not None and 2 * expected > available:
        raise DataError(
            f"{path}: its header announces {' x '.join(str(n) for n in shape)} elements "
            f"({memory.format_bytes(expected)}), which with a copy needs more than the "
            f"{memory.format_bytes(available)} of memory available; the file is corrupt or not the "
            f"dataset expected: delete it and download it again"
        )


def _type_code(dtype: np.dtype) -> int:
    for code, idx_dtype in IDX_DTYPES.items():
        if np.dtype(dtype).newbyteorder("=") == idx_dtype.newbyteorder("="):
            return code
    supported = ", ".join(str(d.newbyteorder("=")) for d in IDX_DTYPES.values())
    raise ValueError(f"IDX cannot store {np.dtype(dtype)} elements; use one of {supported}")
