"""The IDX reader and writer: exact bytes, round trips, one clear error per kind of bad file."""

import gzip

import numpy as np
import pytest

from nn_cuda.idx import DataError, read_idx, write_idx


def assert_one_line_error(error_info, path, *phrases):
    message = str(error_info.value)
    assert "\n" not in message
    assert str(path) in message
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in {message!r}"


def raw_idx(type_code: int, shape, payload: bytes) -> bytes:
    """IDX bytes built by hand from the format's definition, independently of write_idx."""
    header = bytes([0, 0, type_code, len(shape)])
    for n in shape:
        header += int(n).to_bytes(4, "big")
    return header + payload


# ---- the format ---------------------------------------------------------------------------------


def test_write_produces_the_documented_bytes(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "images-idx3-ubyte", images)
    assert (tmp_path / "images-idx3-ubyte").read_bytes() == (
        b"\x00\x00\x08\x03" b"\x00\x00\x00\x02" b"\x00\x00\x00\x03" b"\x00\x00\x00\x04"
        + bytes(range(24))
    )


def test_multibyte_elements_are_big_endian(tmp_path):
    write_idx(tmp_path / "a", np.array([1, 256], dtype=np.int16))
    assert (tmp_path / "a").read_bytes() == b"\x00\x00\x0b\x01\x00\x00\x00\x02\x00\x01\x01\x00"


def test_read_of_handmade_file(tmp_path):
    (tmp_path / "labels").write_bytes(raw_idx(0x08, (5,), bytes([7, 2, 1, 0, 4])))
    labels = read_idx(tmp_path / "labels")
    assert labels.dtype == np.uint8 and labels.shape == (5,)
    assert labels.tolist() == [7, 2, 1, 0, 4]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("name", ["array-idx", "array-idx.gz"])
def test_round_trip(tmp_path, dtype, name):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal((3, 5, 7)) * 100).astype(dtype)
    write_idx(tmp_path / name, array)
    back = read_idx(tmp_path / name)
    assert back.dtype == np.dtype(dtype).newbyteorder("=")
    assert back.dtype.isnative
    assert back.shape == array.shape
    np.testing.assert_array_equal(back, array)
    assert back.flags.writeable and back.flags.c_contiguous


def test_gz_name_gives_gzip_and_deterministic_bytes(tmp_path):
    array = np.arange(1000, dtype=np.uint8).reshape(10, 10, 10)
    write_idx(tmp_path / "a.gz", array)
    write_idx(tmp_path / "b.gz", array)  # another name: the name must not be stored
    first, second = (tmp_path / "a.gz").read_bytes(), (tmp_path / "b.gz").read_bytes()
    assert first == second
    assert first[:2] == b"\x1f\x8b"
    assert first[3] == 0  # FLG: no file name, no comment, no extras
    assert first[4:8] == b"\x00\x00\x00\x00"  # MTIME = 0
    assert gzip.decompress(first)[:4] == b"\x00\x00\x08\x03"


def test_compression_is_recognised_by_content_not_name(tmp_path):
    array = np.arange(6, dtype=np.uint8)
    write_idx(tmp_path / "plain", array)
    (tmp_path / "plain").rename(tmp_path / "plain.gz")  # an uncompressed file named .gz
    write_idx(tmp_path / "packed.gz", array)
    (tmp_path / "packed.gz").rename(tmp_path / "packed")  # a compressed file without .gz
    np.testing.assert_array_equal(read_idx(tmp_path / "plain.gz"), array)
    np.testing.assert_array_equal(read_idx(tmp_path / "packed"), array)


def test_write_rejects_unsupported_arrays_and_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="int64"):
        write_idx(tmp_path / "a.gz", np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="dimensions"):
        write_idx(tmp_path / "a.gz", np.float32(1.0))
    assert list(tmp_path.iterdir()) == []


# ---- bad files ----------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(DataError) as error:
        read_idx(tmp_path / "nothing.gz")
    assert_one_line_error(error, tmp_path / "nothing.gz", "not found")


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(DataError) as error:
        read_idx(tmp_path)
    assert_one_line_error(error, tmp_path, "directory")


@pytest.mark.parametrize("content, phrase", [
    (b"", "too short"),
    (b"\x00\x00", "too short"),
    (b"<html>404 Not Found</html>", "not an IDX file"),
    (b"\x00\x01\x08\x01\x00\x00\x00\x01\x07", "not an IDX file"),  # second byte not zero
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x07", "not an IDX file"),  # unknown type code
    (b"\x00\x00\x08\x00\x07", "0 dimensions"),
    (b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00", "ends inside its header"),
])
def test_bad_headers(tmp_path, content, phrase):
    for name, data in [("f", content), ("f.gz", gzip.compress(content))]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DataError) as error:
            read_idx(path)
        assert_one_line_error(error, path, phrase)


def test_data_shorter_than_header_says(tmp_path):
    path = tmp_path / "images.gz"
    path.write_bytes(gzip.compress(raw_idx(0x08, (3, 28, 28), bytes(3 * 784 - 1))))
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated", "3 x 28 x 28", "2351 bytes")


def test_data_longer_than_header_says(tmp_path):
    path = tmp_path / "labels"
    path.write_bytes(raw_idx(0x08, (4,), bytes(6)))
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "longer than its header says", "more than the 4 bytes")


def test_huge_header_dimensions_do_not_allocate(tmp_path):
    # A corrupt header claiming (2^32 - 1)^3 elements must give a clean error, not a MemoryError.
    path = tmp_path / "corrupt"
    path.write_bytes(raw_idx(0x0E, (2**32 - 1,) * 3, bytes(16)))
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated")


def test_multibyte_data_with_partial_element(tmp_path):
    path = tmp_path / "floats"
    path.write_bytes(raw_idx(0x0D, (2,), bytes(7)))  # 2 float32 need 8 bytes
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated")


def test_truncated_gzip_stream(tmp_path):
    path = tmp_path / "images.gz"
    write_idx(path, np.random.default_rng(1).integers(0, 256, (50, 28, 28), dtype=np.uint8))
    compressed = path.read_bytes()
    path.write_bytes(compressed[: len(compressed) // 2])  # an interrupted download
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated", "download it again")


def test_corrupt_gzip_stream(tmp_path):
    path = tmp_path / "images.gz"
    write_idx(path, np.random.default_rng(2).integers(0, 256, (50, 28, 28), dtype=np.uint8))
    compressed = bytearray(path.read_bytes())
    compressed[-6] ^= 0xFF  # inside the CRC-32 of the trailer
    path.write_bytes(bytes(compressed))
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "corrupt gzip")
    compressed = bytearray(path.read_bytes())
    compressed[len(compressed) // 2] ^= 0xFF  # inside the deflate data
    path.write_bytes(bytes(compressed))
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_a_file_that_goes_on_after_its_data_is_read_no_further(tmp_path, monkeypatch):
    """A gzip whose header announces 1,000 labels followed by 64 MiB of zeros (a decompression bomb:
    the file is 64 KiB) is reported too long after reading header + 1,000 + 1 bytes. Before the
    stream was read in bounded chunks, the whole file was decompressed first (64 MiB read)."""
    announced = 1000
    path = tmp_path / "bomb.gz"
    with gzip.GzipFile(path, "wb") as stream:
        stream.write(raw_idx(0x08, (announced,), b""))
        for _ in range(64):
            stream.write(bytes(1 << 20))
    assert path.stat().st_size < 1 << 20
    decompressed = []

    class CountingGzipFile(gzip.GzipFile):
        def read(self, size=-1):
            data = super().read(size)
            decompressed.append(len(data))
            return data

    monkeypatch.setattr(gzip, "GzipFile", CountingGzipFile)
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "longer than its header says")
    header_size = 8
    assert sum(decompressed) == header_size + announced + 1


def test_a_small_gzip_file_announcing_more_than_memory_is_refused_before_decompressing(tmp_path, monkeypatch):
    # A few hundred kB of gzip whose header claims 300,000 images that really are there (zeros): with
    # 100 MiB available, nothing may be decompressed; it used to be read whole (4.6 GB at 3,000,000).
    from nn_cuda import memory

    path = tmp_path / "bomb-images-idx3-ubyte.gz"
    with gzip.open(path, "wb", compresslevel=1) as stream:
        stream.write(raw_idx(0x08, (300_000, 28, 28), b""))
        zeros = bytes(784 * 10_000)
        for _ in range(30):
            stream.write(zeros)
    assert path.stat().st_size < 2_000_000
    monkeypatch.setattr(memory, "available_bytes", lambda: 100 * 2**20)
    with pytest.raises(DataError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "announces 300000 x 28 x 28 elements", "100.0 MiB")
