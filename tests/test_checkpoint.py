"""Checkpoints that are not what --save writes are refused when loaded, each with one line that says
so: non-finite weights, H = 0, a .npy array, a file that is not an archive. A checkpoint records the
pixels it was trained on, and is read for the other ones as the same network."""

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.checkpoint import CheckpointError, for_pixels, load_checkpoint, save_checkpoint
from nn_cuda.train import main

SMALL = ["--dataset", "mnist-sample", "--quiet", "--max-steps", "1"]


def parameters(hidden=4):
    rng = np.random.default_rng(0)
    return {"W1": rng.normal(size=(hidden, 784)), "b1": np.zeros(hidden),
            "W2": rng.normal(size=(10, hidden)), "b2": np.zeros(10)}


def one_line_error(path) -> str:
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message


@pytest.mark.parametrize("name, value", [("W2", np.nan), ("b1", np.inf), ("W1", -np.inf)])
def test_non_finite_weights_are_refused_naming_the_array(tmp_path, name, value):
    """Before, --init from such a file trained on and the NaN loss was blamed on the learning rate."""
    params = parameters()
    params[name].flat[1] = value
    path = tmp_path / "bad.npz"
    save_checkpoint(path, params)
    assert f"{name} holds 1 NaN or Inf values" in one_line_error(path)


def test_a_checkpoint_without_hidden_units_is_refused(tmp_path):
    """Before, H = 0 trained with exit status 0."""
    path = tmp_path / "empty.npz"
    save_checkpoint(path, parameters(hidden=0))
    assert "H = 0 hidden units" in one_line_error(path)


def test_a_npy_array_is_not_a_checkpoint(tmp_path):
    """Before: "'numpy.ndarray' object does not support the context manager protocol"."""
    path = tmp_path / "weights.npy"
    np.save(path, np.zeros((4, 784)))
    assert one_line_error(path) == f"{path}: a single NumPy array (.npy), not a checkpoint written by --save"


@pytest.mark.parametrize("content", [b"W1,b1\n1,2\n", b"", b"PK\x03\x04 a broken zip"])
def test_a_file_that_is_not_an_archive_is_not_a_checkpoint(tmp_path, content):
    """Before, NumPy's hint about allow_pickle=False was passed on."""
    path = tmp_path / "weights.npz"
    path.write_bytes(content)
    message = one_line_error(path)
    assert "not a checkpoint written by --save" in message
    assert "pickle" not in message


def test_training_from_a_non_finite_checkpoint_stops_before_training(tmp_path, capsys):
    params = parameters()
    params["W1"][0, 0] = np.nan
    path = tmp_path / "nan.npz"
    save_checkpoint(path, params)
    assert main([*SMALL, "--init", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"nn_cuda.train: error: {path}: W1 holds 1 NaN or Inf values; these weights " \
                           "cannot be trained on or evaluated: start from another checkpoint (or none)\n"
    assert "diverged" not in captured.err and "validation accuracy" not in captured.out


def _archive_with_header(path, header: bytes):
    """A .npz whose W1.npy starts with `header` (and the other arrays fine)."""
    import io
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("W1.npy", header + bytes(64))
        for name in ("b1", "W2", "b2"):
            buffer = io.BytesIO()
            np.save(buffer, np.zeros(3))
            archive.writestr(f"{name}.npy", buffer.getvalue())


def _npy_header(text: str) -> bytes:
    padded = text + " " * (-(10 + len(text) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(padded).to_bytes(2, "little") + padded.encode("latin1")


def test_a_checkpoint_announcing_more_than_memory_is_refused_before_reading(tmp_path, monkeypatch):
    # A 1.2 MB .npz reached 9.3 GB before the memory check of training ran: the .npy headers say how
    # large the arrays are before anything is decompressed.
    import tracemalloc

    from nn_cuda import memory

    path = tmp_path / "huge.npz"
    _archive_with_header(path, _npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 784), }"))
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as error:
            load_checkpoint(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(error.value)
    assert "5.8 GiB" in message and "1.0 GiB of memory available" in message and "\n" not in message
    assert peak < 10 * 2**20, f"{peak} bytes allocated before refusing"


def test_a_damaged_npy_header_in_a_checkpoint_is_one_line(tmp_path):
    path = tmp_path / "damaged.npz"
    _archive_with_header(path, _npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3, "))
    with pytest.raises(CheckpointError, match="a damaged .npz archive"):
        load_checkpoint(path)


@pytest.mark.parametrize("trained_on, used_on", [("raw", "unit"), ("unit", "raw")])
def test_a_checkpoint_read_for_the_other_pixels_is_the_same_network(trained_on, used_on, tmp_path):
    path = save_checkpoint(tmp_path / "m.npz", parameters(), pixels=trained_on)
    params, note = for_pixels(*load_checkpoint(path), used_on, path)
    assert f"{path} was trained on {trained_on} pixels: its W1 is multiplied by" in note
    images = np.random.default_rng(1).integers(0, 256, (5, 784)).astype(np.float64)
    as_trained, as_used = (images / model.RAW_PIXEL_MAX if pixels == "unit" else images
                           for pixels in (trained_on, used_on))
    original = parameters()
    logits = [x @ p["W1"].T @ p["W2"].T for x, p in ((as_trained, original), (as_used, params))]  # b = 0
    assert np.linalg.norm(logits[1] - logits[0]) <= 1e-12 * np.linalg.norm(logits[0])  # float64 rounding


def test_a_checkpoint_on_its_own_pixels_or_without_the_record_is_used_as_it_is(tmp_path):
    same = save_checkpoint(tmp_path / "same.npz", parameters(), pixels="raw")
    params, note = for_pixels(*load_checkpoint(same), "raw", same)
    assert note is None and np.array_equal(params["W1"], parameters()["W1"])
    older = save_checkpoint(tmp_path / "older.npz", parameters())  # no record of its pixels
    params, note = for_pixels(*load_checkpoint(older), "unit", older)
    assert note.startswith(f"NOTE: {older} does not record the pixels")
    assert np.array_equal(params["W1"], parameters()["W1"])


def test_training_records_its_pixels_in_the_checkpoint(tmp_path):
    assert main([*SMALL, "--pixels", "unit", "--lr", "0.5", "--save", str(tmp_path / "m.npz")]) == 0
    assert load_checkpoint(tmp_path / "m.npz")[1]["pixels"] == "unit"
