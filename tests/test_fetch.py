"""Downloading, against an HTTP server on 127.0.0.1 in a thread: a good transfer, a wrong checksum,
a truncated transfer, a stalled server, mirrors tried in order. Never the real network.

The published MNIST files cannot be served here, so "mnist" is redefined for each test as a tiny
dataset of random images whose sizes and SHA-256 sums the test computes itself.
"""

import dataclasses
import hashlib
import http.server
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import data
from nn_cuda.data import DataError, RemoteFile, fetch, load_dataset
from nn_cuda.idx import write_idx

FILE_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
              "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
TIMEOUT = 5.0  # seconds; the client's bound on every network wait, so no test can hang


class Server:
    """Serves `files[path] = bytes`; `behaviour[path]` changes how: "truncate" (announce the full
    length, send half, close), "stall" (send headers, then nothing), "extra" (append bytes)."""

    def __init__(self):
        self.files, self.behaviour, self.requests = {}, {}, []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                how = server.behaviour.get(self.path)
                if how == "extra":
                    body = body + b"\x00" * 100
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if how == "stall":
                    self.wfile.flush()
                    server.release.wait(30)
                    return
                if how == "truncate":
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(TIMEOUT)


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()


@pytest.fixture
def tiny_mnist(monkeypatch, tmp_path):
    """Redefine "mnist" as four tiny files; return {file name: bytes}. Isolate cache and data."""
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NN_CUDA_DATA", raising=False)
    monkeypatch.delenv("NN_CUDA_OFFLINE", raising=False)
    repository_data = tmp_path / "repository-data"
    repository_data.mkdir()
    (repository_data / "mnist-sample").symlink_to(
        Path(__file__).resolve().parent.parent / "data" / "mnist-sample")
    monkeypatch.setattr(data, "REPOSITORY_DATA_DIR", repository_data)

    rng = np.random.default_rng(5)
    arrays = [rng.integers(0, 256, (20, 28, 28), dtype=np.uint8),
              rng.integers(0, 10, 20, dtype=np.uint8),
              rng.integers(0, 256, (8, 28, 28), dtype=np.uint8),
              rng.integers(0, 10, 8, dtype=np.uint8)]
    source = tmp_path / "published"
    contents = {}
    for name, array in zip(FILE_NAMES, arrays):
        write_idx(source / name, array)
        contents[name] = (source / name).read_bytes()
    remote_files = tuple(RemoteFile(name, len(body), hashlib.sha256(body).hexdigest())
                         for name, body in contents.items())
    monkeypatch.setitem(data.SPECS, "mnist", dataclasses.replace(
        data.SPECS["mnist"], remote_files=remote_files, mirrors=()))
    return contents


def publish(server, prefix, contents):
    for name, body in contents.items():
        server.files[f"/{prefix}/{name}"] = body
    return f"{server.url}/{prefix}/"


def names_in(directory: Path):
    """Every entry, hidden temporary files included."""
    return sorted(p.name for p in directory.iterdir())


def test_good_download(server, tiny_mnist, tmp_path, capsys):
    mirror = publish(server, "good", tiny_mnist)
    dest = fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=TIMEOUT)
    assert dest == tmp_path / "dest"
    assert names_in(dest) == sorted(FILE_NAMES)
    for name, body in tiny_mnist.items():
        assert (dest / name).read_bytes() == body
    assert "train-images-idx3-ubyte.gz" in capsys.readouterr().err  # a progress bar per file
    dataset = load_dataset("mnist", data_dir=dest)
    assert dataset.train_images.shape == (20, 784)


def test_nn_cuda_offline_refuses_a_fetch_without_touching_the_network(server, tiny_mnist, tmp_path, monkeypatch,
                                                                      capsys):
    mirror = publish(server, "good", tiny_mnist)
    monkeypatch.setenv("NN_CUDA_OFFLINE", "1")
    with pytest.raises(DataError, match=r"\$NN_CUDA_OFFLINE is set, which forbids every download: unset it"):
        fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=TIMEOUT)
    assert server.requests == [] and not (tmp_path / "dest").exists()
    assert data.main(["fetch", "mnist"]) != 0
    assert "forbids every download" in capsys.readouterr().err


def test_default_destination_is_the_cache(server, tiny_mnist, tmp_path):
    mirror = publish(server, "good", tiny_mnist)
    assert fetch("mnist", mirrors=[mirror], timeout=TIMEOUT, progress=False) \
        == tmp_path / "cache" / "mnist"


def test_wrong_checksum_keeps_nothing(server, tiny_mnist, tmp_path):
    tampered = dict(tiny_mnist)
    body = bytearray(tampered["train-labels-idx1-ubyte.gz"])
    body[20] ^= 0x01  # same size, different bytes
    tampered["train-labels-idx1-ubyte.gz"] = bytes(body)
    mirror = publish(server, "bad", tampered)
    with pytest.raises(DataError) as error:
        fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=TIMEOUT,
              progress=False)
    message = str(error.value)
    assert "\n" not in message
    assert f"{mirror}train-labels-idx1-ubyte.gz: SHA-256 mismatch" in message
    assert "check the network connection" in message
    # The file before it was kept; the bad one left nothing, not even a temporary file.
    assert names_in(tmp_path / "dest") == ["train-images-idx3-ubyte.gz"]


def test_truncated_transfer_keeps_nothing(server, tiny_mnist, tmp_path):
    mirror = publish(server, "cut", tiny_mnist)
    server.behaviour["/cut/train-images-idx3-ubyte.gz"] = "truncate"
    started = time.monotonic()
    with pytest.raises(DataError) as error:
        fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=TIMEOUT,
              progress=False)
    assert time.monotonic() - started < TIMEOUT  # a closed connection is noticed at once
    assert "train-images-idx3-ubyte.gz: the transfer stopped" in str(error.value)
    assert names_in(tmp_path / "dest") == []


def test_oversized_transfer_is_rejected(server, tiny_mnist, tmp_path):
    mirror = publish(server, "big", tiny_mnist)
    server.behaviour["/big/t10k-labels-idx1-ubyte.gz"] = "extra"
    with pytest.raises(DataError, match="more than the expected"):
        fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=TIMEOUT,
              progress=False)
    assert "t10k-labels-idx1-ubyte.gz" not in names_in(tmp_path / "dest")


def test_stalled_server_times_out(server, tiny_mnist, tmp_path):
    mirror = publish(server, "slow", tiny_mnist)
    server.behaviour["/slow/train-images-idx3-ubyte.gz"] = "stall"
    started = time.monotonic()
    with pytest.raises(DataError, match="no data for 0.5 s"):
        fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[mirror], timeout=0.5, progress=False)
    assert time.monotonic() - started < TIMEOUT
    assert names_in(tmp_path / "dest") == []


def test_mirrors_are_tried_in_order(server, tiny_mnist, tmp_path):
    bad = dict(tiny_mnist)
    bad["t10k-images-idx3-ubyte.gz"] = b"\x00" * len(bad["t10k-images-idx3-ubyte.gz"])
    first = publish(server, "first", bad)
    del server.files["/first/train-labels-idx1-ubyte.gz"]  # a 404 there
    second = publish(server, "second", tiny_mnist)
    dest = fetch("mnist", dest_dir=tmp_path / "dest", mirrors=[first, second], timeout=TIMEOUT,
                 progress=False)
    for name, body in tiny_mnist.items():
        assert (dest / name).read_bytes() == body
    assert server.requests == [
        "/first/train-images-idx3-ubyte.gz",
        "/first/train-labels-idx1-ubyte.gz", "/second/train-labels-idx1-ubyte.gz",
        "/first/t10k-images-idx3-ubyte.gz", "/second/t10k-images-idx3-ubyte.gz",
        "/first/t10k-labels-idx1-ubyte.gz",
    ]


def test_every_mirror_failing_names_each(server, tiny_mnist, tmp_path):
    with pytest.raises(DataError) as error:
        fetch("mnist", dest_dir=tmp_path / "dest", timeout=TIMEOUT, progress=False,
              mirrors=[f"{server.url}/missing/", unused_port_url()])
    message = str(error.value)
    assert f"{server.url}/missing/train-images-idx3-ubyte.gz: HTTP 404" in message
    assert "Connection refused" in message
    assert f"put the four files in {tmp_path / 'dest'} by hand" in message


def test_verified_files_are_not_downloaded_again(server, tiny_mnist, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "train-images-idx3-ubyte.gz").write_bytes(tiny_mnist["train-images-idx3-ubyte.gz"])
    (dest / "t10k-labels-idx1-ubyte.gz").write_bytes(b"a stale, damaged file")
    mirror = publish(server, "good", tiny_mnist)
    fetch("mnist", dest_dir=dest, mirrors=[mirror], timeout=TIMEOUT, progress=False)
    assert "/good/train-images-idx3-ubyte.gz" not in server.requests
    assert "/good/t10k-labels-idx1-ubyte.gz" in server.requests
    assert (dest / "t10k-labels-idx1-ubyte.gz").read_bytes() == tiny_mnist[
        "t10k-labels-idx1-ubyte.gz"]


def test_bundled_sample_is_not_fetched():
    with pytest.raises(DataError, match="mnist-sample is not downloaded: it ships with"):
        fetch("mnist-sample")


def test_load_dataset_downloads_missing_mnist(server, tiny_mnist, tmp_path, monkeypatch):
    mirror = publish(server, "good", tiny_mnist)
    monkeypatch.setitem(data.SPECS, "mnist",
                        dataclasses.replace(data.SPECS["mnist"], mirrors=(mirror,)))
    lines = []
    dataset = load_dataset("mnist", download_timeout=TIMEOUT, log=lines.append)
    assert dataset.name == "mnist" and dataset.source == str(tmp_path / "cache" / "mnist")
    assert dataset.train_images.shape == (20, 784)
    assert lines[0] == f"Downloaded MNIST to {tmp_path / 'cache' / 'mnist'}"
    assert lines[1].startswith(f"data: mnist from {tmp_path / 'cache' / 'mnist'}: ")
    assert lines[1].endswith("(the published MNIST files, SHA-256 checked)") and len(lines) == 2


def test_load_dataset_falls_back_when_mirrors_fail(tiny_mnist, tmp_path, monkeypatch):
    monkeypatch.setitem(data.SPECS, "mnist",
                        dataclasses.replace(data.SPECS["mnist"], mirrors=(unused_port_url(),)))
    lines = []
    dataset = load_dataset("mnist", download_timeout=TIMEOUT, log=lines.append)
    assert dataset.name == "mnist-sample"
    assert len(lines) == 2 and lines[0].startswith("NOTE:") and lines[1].startswith("data: mnist-sample from ")
    assert names_in(tmp_path / "cache" / "mnist") == []


def test_fetch_command(server, tiny_mnist, tmp_path, monkeypatch, capsys):
    mirror = publish(server, "good", tiny_mnist)
    monkeypatch.setitem(data.SPECS, "mnist",
                        dataclasses.replace(data.SPECS["mnist"], mirrors=(mirror,)))
    assert data.main(["fetch", "mnist", "--dest", str(tmp_path / "dest"), "--quiet"]) == 0
    assert capsys.readouterr().out == f"MNIST is in {tmp_path / 'dest'}\n"
    assert names_in(tmp_path / "dest") == sorted(FILE_NAMES)

    monkeypatch.setitem(data.SPECS, "mnist",
                        dataclasses.replace(data.SPECS["mnist"], mirrors=(unused_port_url(),)))
    assert data.main(["fetch", "mnist", "--dest", str(tmp_path / "other"), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("python -m nn_cuda.data: error: could not download MNIST file")
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize("timeout", ["0", "-1", "inf"])
def test_fetch_timeout_must_be_positive(timeout, capsys):
    with pytest.raises(SystemExit) as stop:
        data.main(["fetch", "mnist", "--timeout", timeout])
    assert stop.value.code == 2
    assert "argument --timeout: must be a positive finite number" in capsys.readouterr().err


def unused_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/mnist/"
