"""Datasets: lookup order, loading and checking, the MNIST fallback, the split, the bundled sample,
its generator script, and the `python -m nn_cuda.data` command line. No network is used."""

import dataclasses
import hashlib
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import data
from nn_cuda.data import (DATASETS, DataError, Dataset, find_dataset_dir, load_dataset,
                          split_train_validation)
from nn_cuda.idx import read_idx, write_idx

REPOSITORY = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPOSITORY / "data" / "mnist-sample"
FILE_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
              "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No test sees the user's data, cache or system packages, or touches the network: the
    repository data folder is a temporary one holding only the bundled sample."""
    repository_data = tmp_path / "repository-data"
    repository_data.mkdir()
    (repository_data / "mnist-sample").symlink_to(SAMPLE_DIR)
    monkeypatch.setattr(data, "REPOSITORY_DATA_DIR", repository_data)
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NN_CUDA_DATA", raising=False)
    monkeypatch.setenv("NN_CUDA_OFFLINE", "1")
    monkeypatch.setitem(data.SPECS, "fashion-mnist",
                        dataclasses.replace(data.SPECS["fashion-mnist"], system_dirs=()))
    return tmp_path


def make_dataset(directory: Path, num_train=12, num_test=6, seed=0, gz=True):
    """Four small IDX files of random 28x28 images and labels; returns the arrays written."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (num_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, num_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (num_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, num_test, dtype=np.uint8),
    }
    for name, array in arrays.items():
        write_idx(directory / (name + (".gz" if gz else "")), array)
    return arrays


# ---- lookup -------------------------------------------------------------------------------------


def test_dataset_names():
    assert DATASETS == ("mnist", "fashion-mnist", "mnist-sample")
    assert set(data.SPECS) == set(DATASETS)


def test_lookup_order(isolated, monkeypatch):
    """$NN_CUDA_DATA/<name>, data/<name>, cache/<name>, system; with --data-dir: --data-dir/<name>,
    --data-dir, and nowhere else."""
    system = isolated / "usr-share" / "fashion-mnist"
    monkeypatch.setitem(data.SPECS, "fashion-mnist",
                        dataclasses.replace(data.SPECS["fashion-mnist"], system_dirs=(system,)))
    monkeypatch.setenv("NN_CUDA_DATA", str(isolated / "env"))
    places = [isolated / "env" / "fashion-mnist", isolated / "repository-data" / "fashion-mnist",
              isolated / "cache" / "fashion-mnist", system]
    assert data.search_dirs("fashion-mnist") == places
    for place in reversed(places):  # each place, once filled, wins over all the later ones
        place.mkdir(parents=True, exist_ok=True)
        make_dataset(place)
        assert find_dataset_dir("fashion-mnist") == place
    flag = isolated / "flag"
    assert data.search_dirs("fashion-mnist", flag) == [flag / "fashion-mnist", flag]
    flag.mkdir()
    assert find_dataset_dir("fashion-mnist", flag) is None  # the places above are not looked at
    for place in (flag, flag / "fashion-mnist"):
        place.mkdir(exist_ok=True)
        make_dataset(place)
        assert find_dataset_dir("fashion-mnist", flag) == place


def test_environment_variable_needs_a_subfolder_per_dataset(isolated, monkeypatch):
    # $NN_CUDA_DATA pointing straight at MNIST files must not serve them as another dataset.
    make_dataset(isolated / "mnist-files")
    monkeypatch.setenv("NN_CUDA_DATA", str(isolated / "mnist-files"))
    assert find_dataset_dir("fashion-mnist") is None
    assert find_dataset_dir("mnist") is None


def test_incomplete_directory_is_skipped_and_reported(isolated):
    flag = isolated / "flag"
    make_dataset(flag)
    (flag / "t10k-labels-idx1-ubyte.gz").unlink()
    assert find_dataset_dir("fashion-mnist", flag) is None
    with pytest.raises(DataError) as error:
        load_dataset("fashion-mnist", data_dir=flag)
    message = str(error.value)
    assert "\n" not in message
    assert f"{flag} lacks t10k-labels-idx1-ubyte.gz" in message
    assert "fetch fashion-mnist" in message and "dataset-fashion-mnist" in message


def test_uncompressed_files_are_found(isolated):
    arrays = make_dataset(isolated / "flag", gz=False)
    dataset = load_dataset("fashion-mnist", data_dir=isolated / "flag")
    np.testing.assert_array_equal(dataset.train_labels, arrays["train-labels-idx1-ubyte"])


def test_missing_data_dir_is_an_error(isolated):
    with pytest.raises(DataError, match="does not exist or is not a directory; check --data-dir"):
        load_dataset("mnist", data_dir=isolated / "typo")


def test_unknown_dataset():
    with pytest.raises(DataError, match="unknown dataset 'cifar10'; choose one of mnist"):
        load_dataset("cifar10")


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("NN_CUDA_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data.cache_dir() == tmp_path / "home" / ".cache" / "nn_cuda"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data.cache_dir() == tmp_path / "xdg" / "nn_cuda"


# ---- loading and checking -----------------------------------------------------------------------


def test_load_keeps_file_order_and_flattens_images(isolated):
    arrays = make_dataset(isolated / "flag", num_train=12, num_test=6)
    dataset = load_dataset("mnist", data_dir=isolated / "flag")
    assert dataset.name == "mnist" and dataset.source == str(isolated / "flag")
    assert dataset.train_images.shape == (12, 784) and dataset.train_images.dtype == np.uint8
    assert dataset.test_images.shape == (6, 784) and dataset.test_labels.dtype == np.uint8
    np.testing.assert_array_equal(dataset.train_images,
                                  arrays["train-images-idx3-ubyte"].reshape(12, 784))
    np.testing.assert_array_equal(dataset.train_labels, arrays["train-labels-idx1-ubyte"])
    np.testing.assert_array_equal(dataset.test_images,
                                  arrays["t10k-images-idx3-ubyte"].reshape(6, 784))
    np.testing.assert_array_equal(dataset.test_labels, arrays["t10k-labels-idx1-ubyte"])
    assert "array" not in repr(dataset)  # the repr names the dataset, it does not print pixels
    with pytest.raises(dataclasses.FrozenInstanceError):
        dataset.name = "other"


@pytest.mark.parametrize("file_name, array, phrases", [
    ("train-labels-idx1-ubyte.gz", np.zeros(11, np.uint8),
     ["holds 12 images but", "train-labels-idx1-ubyte.gz holds 11 labels", "replace both"]),
    ("t10k-images-idx3-ubyte.gz", np.zeros((6, 32, 32), np.uint8),
     ["expected uint8 images of shape (n, 28, 28)", "(6, 32, 32)"]),
    ("train-images-idx3-ubyte.gz", np.zeros((12, 28, 28), np.int16), ["int16"]),
    ("train-images-idx3-ubyte.gz", np.zeros(12, np.uint8), ["shape (12,)"]),
    ("t10k-labels-idx1-ubyte.gz", np.zeros((6, 1), np.uint8), ["expected a uint8 vector"]),
    ("t10k-labels-idx1-ubyte.gz", np.array([0, 1, 2, 10, 4, 5], np.uint8),
     ["label 10 at index 3 is not a class 0-9"]),
])
def test_inconsistent_files_are_rejected(isolated, file_name, array, phrases):
    make_dataset(isolated / "flag")
    write_idx(isolated / "flag" / file_name, array)
    with pytest.raises(DataError) as error:
        load_dataset("mnist", data_dir=isolated / "flag")
    message = str(error.value)
    assert "\n" not in message and file_name in message
    for phrase in phrases:
        assert phrase in message


def test_corrupt_file_is_an_error_not_a_reason_to_look_elsewhere(isolated):
    make_dataset(isolated / "flag")
    make_dataset(isolated / "cache" / "mnist")
    path = isolated / "flag" / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match="truncated"):
        load_dataset("mnist", data_dir=isolated / "flag")


def test_fashion_mnist_found_in_system_directory(isolated, monkeypatch):
    system = isolated / "usr-share-datasets" / "fashion-mnist"
    arrays = make_dataset(system, num_train=7)
    monkeypatch.setitem(data.SPECS, "fashion-mnist",
                        dataclasses.replace(data.SPECS["fashion-mnist"], system_dirs=(system,)))
    dataset = load_dataset("fashion-mnist")
    assert dataset.source == str(system)
    np.testing.assert_array_equal(dataset.train_labels, arrays["train-labels-idx1-ubyte"])


def test_fashion_mnist_not_found_says_where_and_how(isolated, monkeypatch):
    monkeypatch.delenv("NN_CUDA_OFFLINE")
    monkeypatch.setattr(data, "fetch", lambda *a, **k: pytest.fail("only MNIST is downloaded"))
    with pytest.raises(DataError) as error:
        load_dataset("fashion-mnist")
    message = str(error.value)
    assert message.startswith("Fashion-MNIST not found: looked in ")
    assert str(isolated / "cache" / "fashion-mnist") in message
    assert "python -m nn_cuda.data fetch fashion-mnist" in message
    assert "apt install dataset-fashion-mnist" in message


DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not (DEBIAN_FASHION_MNIST / "t10k-labels-idx1-ubyte.gz").exists(),
                    reason="Debian's dataset-fashion-mnist package is not installed")
def test_debian_fashion_mnist_package(monkeypatch):
    monkeypatch.setitem(data.SPECS, "fashion-mnist", dataclasses.replace(
        data.SPECS["fashion-mnist"], system_dirs=(DEBIAN_FASHION_MNIST,)))
    dataset = load_dataset("fashion-mnist")
    assert dataset.source == str(DEBIAN_FASHION_MNIST)
    assert dataset.train_images.shape == (60000, 784) and dataset.test_images.shape == (10000, 784)
    # Fashion-MNIST's training file starts: ankle boot, T-shirt, T-shirt, dress, T-shirt, pullover
    assert dataset.train_labels[:6].tolist() == [9, 0, 0, 3, 0, 2]
    assert np.bincount(dataset.test_labels).tolist() == [1000] * 10


# ---- the MNIST fallback -------------------------------------------------------------------------


def test_mnist_falls_back_to_sample_offline(monkeypatch):
    monkeypatch.setattr(data, "fetch", lambda *a, **k: pytest.fail("offline: no download"))
    lines = []
    dataset = load_dataset("mnist", log=lines.append)
    assert dataset.name == "mnist-sample"
    assert dataset.source == str(data.REPOSITORY_DATA_DIR / "mnist-sample")
    assert len(dataset.train_labels) == 4000
    assert len(lines) == 2
    assert lines[0].startswith("NOTE: MNIST was not found")
    assert "5,000-image sample" in lines[0] and "python -m nn_cuda.data fetch mnist" in lines[0]
    assert lines[1].startswith(f"data: mnist-sample from {dataset.source}: train-images-idx3-ubyte.gz, ")


def test_mnist_without_fallback_is_an_error(monkeypatch):
    with pytest.raises(DataError) as error:
        load_dataset("mnist", fallback=False, log=lambda line: pytest.fail("nothing to log"))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("MNIST not found: looked in ")
    assert "NN_CUDA_OFFLINE is set" in message
    assert message.endswith("get it with: python -m nn_cuda.data fetch mnist")


def test_mnist_download_attempt_then_fallback(isolated, monkeypatch):
    monkeypatch.delenv("NN_CUDA_OFFLINE")
    calls = []

    def failing_fetch(name, dest_dir=None, mirrors=None, timeout=30.0, progress=True):
        calls.append((name, dest_dir, timeout))
        raise DataError("could not download MNIST file train-images-idx3-ubyte.gz (no network)")

    monkeypatch.setattr(data, "fetch", failing_fetch)
    lines = []
    assert load_dataset("mnist", download_timeout=1.5, log=lines.append).name == "mnist-sample"
    assert calls == [("mnist", None, 1.5)]  # into the default place, the cache
    assert len(lines) == 2 and lines[0].startswith("NOTE:") and lines[1].startswith("data: mnist-sample")
    with pytest.raises(DataError, match=r"the download failed \(could not download .*no network"):
        load_dataset("mnist", fallback=False)


def test_mnist_download_success_is_used(isolated, monkeypatch):
    monkeypatch.delenv("NN_CUDA_OFFLINE")
    arrays = {}

    def working_fetch(name, dest_dir=None, mirrors=None, timeout=30.0, progress=True):
        target = data.cache_dir() / name
        arrays.update(make_dataset(target, num_train=9))
        return target

    monkeypatch.setattr(data, "fetch", working_fetch)
    lines = []
    dataset = load_dataset("mnist", log=lines.append)
    assert dataset.name == "mnist" and dataset.source == str(isolated / "cache" / "mnist")
    np.testing.assert_array_equal(dataset.train_labels, arrays["train-labels-idx1-ubyte"])
    assert not any(line.startswith("NOTE") for line in lines)


def test_offline_variable_zero_means_online(monkeypatch):
    monkeypatch.setenv("NN_CUDA_OFFLINE", "0")
    assert not data._offline()
    monkeypatch.setenv("NN_CUDA_OFFLINE", "yes")
    assert data._offline()


def test_sample_missing_too_is_an_error(isolated, monkeypatch):
    monkeypatch.setattr(data, "REPOSITORY_DATA_DIR", isolated / "no-repository")
    with pytest.raises(DataError, match="MNIST not found"):
        load_dataset("mnist")
    with pytest.raises(DataError, match="ships with the source repository"):
        load_dataset("mnist-sample")


# ---- an explicit --data-dir, and the files actually used ------------------------------------------


def no_download(*args, **kwargs):
    pytest.fail("a --data-dir given is used or refused, never replaced by a download")


@pytest.mark.parametrize("name", ["mnist", "fashion-mnist"])
def test_a_data_dir_lacking_a_file_is_an_error_naming_it(isolated, monkeypatch, name):
    """Before: mnist fell back to the bundled sample (with a NOTE advising --data-dir), and
    fashion-mnist silently used the complete copy in the cache."""
    monkeypatch.delenv("NN_CUDA_OFFLINE")
    monkeypatch.setattr(data, "fetch", no_download)
    make_dataset(isolated / "cache" / name)  # a complete copy elsewhere must not be used instead
    flag = isolated / "flag"
    make_dataset(flag)
    (flag / "t10k-labels-idx1-ubyte.gz").rename(flag / "t10k-labels.idx1-ubyte.gz")  # misnamed
    with pytest.raises(DataError) as error:
        load_dataset(name, data_dir=flag, log=lambda line: pytest.fail(f"logged {line!r}"))
    message = str(error.value)
    assert "\n" not in message
    assert f"--data-dir {flag}: {flag} lacks t10k-labels-idx1-ubyte.gz" in message
    assert "drop --data-dir" in message


def test_a_training_run_with_an_incomplete_data_dir_stops_with_one_line(isolated, capsys):
    from nn_cuda.train import main as train_main

    flag = isolated / "flag"
    make_dataset(flag)
    (flag / "train-images-idx3-ubyte.gz").unlink()
    assert train_main(["--data-dir", str(flag), "--quiet", "-n", "4", "--max-steps", "1"]) == 1
    captured = capsys.readouterr()
    assert "NOTE" not in captured.out and "validation accuracy" not in captured.out
    (line,) = captured.err.splitlines()
    assert line.startswith("nn_cuda.train: error: MNIST is not in --data-dir")
    assert "lacks train-images-idx3-ubyte.gz" in line


def published_as(spec_name: str, directory: Path):
    """SPECS[spec_name] whose published files are the four files of `directory` (so that small
    files made here stand for a release whose real files are too large to ship with the tests)."""
    remote = tuple(data.RemoteFile(n, (directory / n).stat().st_size, data._sha256_of(directory / n))
                   for n in FILE_NAMES)
    return dataclasses.replace(data.SPECS[spec_name], remote_files=remote)


def test_the_files_used_are_named_with_their_provenance(isolated, monkeypatch):
    flag = isolated / "flag"
    make_dataset(flag)
    lines = []
    load_dataset("mnist", data_dir=flag, log=lines.append)
    (line,) = lines
    assert line.startswith(f"data: mnist from {flag}: train-images-idx3-ubyte.gz, "
                           "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz")
    assert "unknown files: not the published MNIST release by SHA-256" in line
    monkeypatch.setitem(data.SPECS, "mnist", published_as("mnist", flag))
    lines.clear()
    load_dataset("mnist", data_dir=flag, log=lines.append)
    assert lines[0].endswith("(the published MNIST files, SHA-256 checked)")


def test_another_datasets_published_files_are_refused(isolated, monkeypatch):
    """Fashion-MNIST's files under --dataset mnist were read and labelled mnist."""
    flag = isolated / "flag"
    make_dataset(flag)
    monkeypatch.setitem(data.SPECS, "fashion-mnist", published_as("fashion-mnist", flag))
    with pytest.raises(DataError) as error:
        load_dataset("mnist", data_dir=flag, log=lambda line: pytest.fail(f"logged {line!r}"))
    message = str(error.value)
    assert message == (f"{flag / 'train-images-idx3-ubyte.gz'} is Fashion-MNIST's train-images-idx3-ubyte.gz "
                       "(by its SHA-256), not MNIST's train-images-idx3-ubyte.gz; use --dataset "
                       "fashion-mnist, or give the MNIST files")
    assert load_dataset("fashion-mnist", data_dir=flag, log=lambda line: None).name == "fashion-mnist"


def test_a_training_file_too_small_for_a_validation_set_is_refused(isolated, capsys):
    """5 training images keep round(0.5) = 0 for validation: "validation accuracy nan" before."""
    from nn_cuda.train import main as train_main

    flag = isolated / "flag"
    make_dataset(flag, num_train=5)
    with pytest.raises(DataError) as error:
        data.split_dataset(load_dataset("mnist", data_dir=flag, log=lambda line: None))
    assert str(error.value) == (f"{flag}: the training file holds 5 images, too few to keep 10% of them "
                                "for validation; use a training file of at least 6 images")
    assert train_main(["--data-dir", str(flag), "--quiet", "-n", "4", "-e", "1"]) == 1
    assert "validation accuracy" not in capsys.readouterr().out
    make_dataset(flag, num_train=6)
    assert [len(part) for part in data.split_dataset(load_dataset("mnist", data_dir=flag))] == [5, 5, 1, 1]


# ---- the split ----------------------------------------------------------------------------------


def test_split_is_head_and_tail_in_file_order():
    images = np.arange(60000, dtype=np.int64).reshape(60000, 1)
    labels = np.arange(60000, dtype=np.int64) % 10
    train_x, train_y, val_x, val_y = split_train_validation(images, labels)
    assert len(train_x) == len(train_y) == 54000 and len(val_x) == len(val_y) == 6000
    assert train_x[0, 0] == 0 and train_x[-1, 0] == 53999
    assert val_x[0, 0] == 54000 and val_x[-1, 0] == 59999
    np.testing.assert_array_equal(val_y, labels[54000:])
    assert np.shares_memory(train_x, images)  # views, not copies


@pytest.mark.parametrize("n, fraction, expected", [
    (4000, 0.1, (3600, 400)), (10, 0.25, (8, 2)), (7, 0.0, (7, 0)), (1, 0.1, (1, 0)),
])
def test_split_sizes(n, fraction, expected):
    parts = split_train_validation(np.zeros((n, 3)), np.zeros(n), fraction)
    assert (len(parts[0]), len(parts[2])) == expected
    assert len(parts[1]) == expected[0] and len(parts[3]) == expected[1]


def test_split_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        split_train_validation(np.zeros((10, 3)), np.zeros(10), 1.0)
    with pytest.raises(ValueError, match="10 images but 9 labels"):
        split_train_validation(np.zeros((10, 3)), np.zeros(9))
    with pytest.raises(ValueError, match="leaves no training rows"):
        split_train_validation(np.zeros((1, 3)), np.zeros(1), 0.9)


# ---- the bundled sample -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> Dataset:
    return data._load_directory("mnist-sample", SAMPLE_DIR)


def test_sample_sizes_and_types(sample):
    assert sample.train_images.shape == (4000, 784) and sample.test_images.shape == (1000, 784)
    assert sample.train_images.dtype == sample.train_labels.dtype == np.uint8
    assert sample.train_images.max() == 255 and sample.train_images.min() == 0


def test_sample_is_stratified(sample):
    train, train_labels, _, validation_labels = split_train_validation(
        sample.train_images, sample.train_labels)
    assert len(train) == 3600
    assert np.bincount(train_labels, minlength=10).tolist() == [360] * 10
    assert np.bincount(validation_labels, minlength=10).tolist() == [40] * 10
    assert np.bincount(sample.test_labels, minlength=10).tolist() == [100] * 10


def test_sample_is_shuffled_for_training_in_file_order(sample):
    # The source CSV is sorted by class; every course-sized batch of 800 must mix all ten digits.
    for start in range(0, 3600, 800):
        counts = np.bincount(sample.train_labels[start:start + 800], minlength=10)
        assert counts.min() >= 40, counts
    assert np.mean(sample.train_labels[1:] == sample.train_labels[:-1]) < 0.2


def test_sample_images_are_distinct_across_splits(sample):
    train = {row.tobytes() for row in sample.train_images}
    test = {row.tobytes() for row in sample.test_images}
    assert len(train) == 4000 and len(test) == 1000 and not train & test


def test_sample_images_look_like_digits(sample):
    # MNIST digits are centred: the border rows and columns are nearly blank, the centre is not.
    images = sample.train_images.reshape(-1, 28, 28).astype(np.float64)
    assert images[:, :, :2].mean() < 1 and images[:, :2, :].mean() < 1
    assert images[:, 10:18, 10:18].mean() > 60
    # ones are the narrowest digit: fewer ink pixels than zeros
    ink = (images > 127).sum(axis=(1, 2))
    assert ink[sample.train_labels == 1].mean() < 0.6 * ink[sample.train_labels == 0].mean()


def load_generator_script():
    spec = importlib.util.spec_from_file_location(
        "make_mnist_sample", REPOSITORY / "data" / "make_mnist_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sample_files_match_recorded_checksums():
    script = load_generator_script()
    readme = (REPOSITORY / "data" / "README.md").read_text()
    recorded = dict(re.findall(r"\| `([a-z0-9-]+\.gz)` +\| `([0-9a-f]{64})` \|", readme))
    assert set(recorded) == set(FILE_NAMES)
    for name in FILE_NAMES:
        content = (SAMPLE_DIR / name).read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        assert digest == recorded[name] == script.EXPECTED_SHA256[name]
        assert read_idx(SAMPLE_DIR / name).size > 0


def test_generator_split_is_stratified_and_deterministic():
    script = load_generator_script()
    labels = np.repeat(np.arange(10, dtype=np.uint8), 30)  # sorted by class, as the CSV is
    parts = script.stratified_split(labels, test_per_class=6, validation_per_class=3, seed=213)
    assert {k: len(v) for k, v in parts.items()} == {"train": 210, "validation": 30, "test": 60}
    for part, per_class in [("train", 21), ("validation", 3), ("test", 6)]:
        assert np.bincount(labels[parts[part]], minlength=10).tolist() == [per_class] * 10
    every_row = np.concatenate(list(parts.values()))
    assert sorted(every_row.tolist()) == list(range(300))  # a partition of the rows
    assert np.any(np.diff(labels[parts["train"]].astype(int)) < 0)  # shuffled, no longer sorted
    again = script.stratified_split(labels, 6, 3, seed=213)
    for part in parts:
        np.testing.assert_array_equal(parts[part], again[part])


def test_generator_reads_the_csv_format():
    import gzip
    script = load_generator_script()
    rows = [[0] * 784 + [3], [255] * 784 + [9]]
    csv = gzip.compress("\n".join(",".join(map(str, r)) for r in rows).encode())
    images, labels = script.parse_csv(csv)
    assert images.shape == (2, 784) and images.dtype == np.uint8 and images[1].min() == 255
    assert labels.tolist() == [3, 9]
    bad = gzip.compress(",".join(["256"] * 784 + ["3"]).encode())
    with pytest.raises(ValueError, match="unexpected CSV contents"):
        script.parse_csv(bad)


# ---- command line -------------------------------------------------------------------------------


def test_info_command(isolated, capsys):
    assert data.main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("mnist: MNIST not found") and "fetch mnist" in lines[0]
    assert lines[1].startswith("fashion-mnist: Fashion-MNIST not found")
    assert lines[2] == ("mnist-sample: 4,000 training + 1,000 test images from "
                        f"{isolated / 'repository-data' / 'mnist-sample'}")


def test_info_command_reports_unusable_files(isolated, capsys):
    make_dataset(isolated / "flag")
    write_idx(isolated / "flag" / "t10k-labels-idx1-ubyte.gz", np.zeros(5, np.uint8))
    assert data.main(["info", "mnist", "--data-dir", str(isolated / "flag")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"mnist: found in {isolated / 'flag'} but unusable: ")
    assert "holds 6 images but" in out


def test_fetch_command_rejects_the_bundled_sample(capsys):
    with pytest.raises(SystemExit) as exit_info:
        data.main(["fetch", "mnist-sample"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
