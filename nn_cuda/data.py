"""The datasets: where they are found, how they are downloaded and checked, how they are split.

Each dataset is four IDX files with the standard names (see `nn_cuda.idx`):

    train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz
    t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz

(the uncompressed files, without `.gz`, work too). The datasets:

    mnist          handwritten digits (LeCun, Cortes, Burges): 60,000 training + 10,000 test images
    fashion-mnist  Zalando's clothes images, a drop-in replacement for MNIST with the same sizes
    mnist-sample   5,000 real MNIST digits bundled in data/mnist-sample: 4,000 training + 1,000 test

A data_dir (the --data-dir flag) is where the dataset must be: DIR/<name>/, or DIR itself; if
neither holds all four files, loading stops with an error naming the missing ones. Without one, a
dataset is looked for in these directories, in order; the first that holds all four files wins:

    1. $NN_CUDA_DATA/<name>/
    2. the repository's data folder: data/<name>/
    3. the download cache: $NN_CUDA_CACHE_DIR/<name>/, by default ~/.cache/nn_cuda/<name>/
    4. fashion-mnist only: /usr/share/datasets/fashion-mnist/ (from Debian's dataset-fashion-mnist)

`python -m nn_cuda.data fetch mnist` downloads MNIST into the cache, checking each file's SHA-256;
`python -m nn_cuda.data info` says where each dataset is found. When MNIST is wanted, no data_dir was
given, and MNIST is nowhere and cannot be downloaded, `load_dataset` falls back to the bundled sample
and says so in one line. Loading logs one line naming the files read, and whether they are the
published release (by SHA-256); files that are another dataset's published ones are refused.
"""

from __future__ import annotations

from .errors import failed
from .interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("python -m nn_cuda.data", running=__name__ == "__main__"):
    import argparse
    import hashlib
    import http.client
    import math
    import os
    import sys
    import urllib.error
    import urllib.request
    from dataclasses import dataclass, field
    from pathlib import Path

    import numpy as np

    from . import __version__
    from .arguments import positive_float
    from .cache import cache_dir
    from .idx import DataError, read_idx
    from .outputs import OutputError, atomic_file

__all__ = [
    "DATASETS", "DataError", "Dataset", "find_dataset_dir", "load_dataset", "fetch",
    "split_train_validation", "split_dataset", "epoch_order", "cache_dir", "search_dirs",
]

DATASETS = ("mnist", "fashion-mnist", "mnist-sample")

# The role of each file -> its standard name.
FILE_NAMES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}

IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10

# The repository's data folder (the parent of the package directory holds it).
REPOSITORY_DATA_DIR = Path(__file__).resolve().parent.parent / "data"

# Setting this environment variable to anything but "" or "0" stops load_dataset downloading.
OFFLINE_VARIABLE = "NN_CUDA_OFFLINE"


@dataclass(frozen=True)
class RemoteFile:
    """One file of a published dataset, as its publisher distributes it."""

    name: str
    size: int  # bytes
    sha256: str


@dataclass(frozen=True)
class DatasetSpec:
    """What the code knows about a dataset: where to download it and where else it may be."""

    name: str
    title: str
    how_to_get: str
    remote_files: tuple = ()  # RemoteFile, one per file in FILE_NAMES; empty: nothing to download
    mirrors: tuple = ()  # base URLs, tried in order
    system_dirs: tuple = ()  # directories that system packages install it in


# Sizes and SHA-256 sums as published by TensorFlow Datasets (url_checksums/mnist.txt and
# url_checksums/fashion_mnist.txt); every mirror serves these exact bytes.
SPECS = {
    "mnist": DatasetSpec(
        name="mnist",
        title="MNIST",
        how_to_get="python -m nn_cuda.data fetch mnist",
        remote_files=(
            RemoteFile("train-images-idx3-ubyte.gz", 9912422,
                       "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
            RemoteFile("train-labels-idx1-ubyte.gz", 28881,
                       "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
            RemoteFile("t10k-images-idx3-ubyte.gz", 1648877,
                       "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", 4542,
                       "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
        ),
        mirrors=(
            "https://ossci-datasets.s3.amazonaws.com/mnist/",
            "https://storage.googleapis.com/cvdf-datasets/mnist/",
        ),
    ),
    "fashion-mnist": DatasetSpec(
        name="fashion-mnist",
        title="Fashion-MNIST",
        how_to_get="python -m nn_cuda.data fetch fashion-mnist "
                   "(or, on Debian-based systems, apt install dataset-fashion-mnist)",
        remote_files=(
            RemoteFile("train-images-idx3-ubyte.gz", 26421880,
                       "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
            RemoteFile("train-labels-idx1-ubyte.gz", 29515,
                       "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
            RemoteFile("t10k-images-idx3-ubyte.gz", 4422102,
                       "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
            RemoteFile("t10k-labels-idx1-ubyte.gz", 5148,
                       "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
        ),
        mirrors=(
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
            "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
        ),
        # Debian recompressed the files (their .gz bytes differ; the images are the same), so
        # files found on disk are checked by reading them, not by the download checksums.
        system_dirs=(Path("/usr/share/datasets/fashion-mnist"),),
    ),
    "mnist-sample": DatasetSpec(
        name="mnist-sample",
        title="the bundled MNIST sample",
        how_to_get="it ships with the source repository in data/mnist-sample "
                   "(regenerate it with: python data/make_mnist_sample.py)",
    ),
}


@dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset in memory: uint8 pixels (one 784-pixel row per image) and labels, in file order."""

    name: str
    source: str  # the directory it was loaded from
    train_images: np.ndarray = field(repr=False)  # (n, 784) uint8
    train_labels: np.ndarray = field(repr=False)  # (n,) uint8
    test_images: np.ndarray = field(repr=False)
    test_labels: np.ndarray = field(repr=False)

    def summary(self) -> str:
        return (f"{self.name}: {len(self.train_labels):,} training + {len(self.test_labels):,} "
                f"test images from {self.source}")


# ---- where datasets are -----------------------------------------------------------------------


def search_dirs(name: str, data_dir=None) -> list:
    """The directories that may hold dataset `name`, in the order they are tried: data_dir/<name> and
    data_dir when a data_dir is given (and nothing else), the usual places otherwise."""
    spec = _spec(name)
    if data_dir is not None:
        data_dir = Path(data_dir).expanduser()
        return [data_dir / name, data_dir]
    candidates = []
    if os.environ.get("NN_CUDA_DATA"):
        candidates.append(Path(os.environ["NN_CUDA_DATA"]).expanduser() / name)
    candidates.append(REPOSITORY_DATA_DIR / name)
    candidates.append(cache_dir() / name)
    candidates += list(spec.system_dirs)
    return list(dict.fromkeys(candidates))  # without repeats, order kept


def _is_dir(path: Path) -> bool:
    """path.is_dir(), False where the name itself is unusable (too long, say)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def find_dataset_dir(name: str, data_dir=None):
    """The first directory from `search_dirs` that holds all four files, or None."""
    if data_dir is not None:
        try:
            usable = Path(data_dir).expanduser().is_dir()
        except OSError as error:
            raise DataError(f"data directory {data_dir} cannot be used ({error.strerror or error}); "
                            "check --data-dir") from None
        if not usable:
            raise DataError(f"data directory {data_dir} does not exist or is not a directory; "
                            f"check --data-dir")
    for directory in search_dirs(name, data_dir):
        if not _missing_files(directory):
            return directory
    return None


def _dataset_file(directory: Path, standard_name: str):
    """`directory/standard_name`, or its uncompressed twin (name without .gz), or None."""
    for candidate in (directory / standard_name, directory / standard_name.removesuffix(".gz")):
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a name the system refuses (too long): not there
            return None
    return None


def _missing_files(directory: Path) -> list:
    return [n for n in FILE_NAMES.values() if _dataset_file(directory, n) is None]


# ---- loading ----------------------------------------------------------------------------------


def load_dataset(name: str, data_dir=None, fallback: bool = True, download_timeout: float = 5.0,
                 log=print, progress: bool = True) -> Dataset:
    """Find dataset `name`, read and check its four files, and return it.

    With a `data_dir`, the dataset is read from there or DataError names the files missing there.
    Without one, MNIST that is not found anywhere is downloaded into the cache (network timeout
    `download_timeout` seconds, progress bars unless `progress` is false; skipped when
    $NN_CUDA_OFFLINE is set); if that fails too and
    `fallback` is true, one line starting "NOTE:" is logged and the bundled sample is returned.
    Any other missing dataset raises DataError saying where it looked and how to get it.
    One line naming the files read is logged.
    """
    spec = _spec(name)
    directory = find_dataset_dir(name, data_dir)
    if directory is not None:
        return _load_directory(name, directory, log)
    if data_dir is not None:
        raise DataError(_not_in_data_dir_message(spec, data_dir))
    if name != "mnist":
        raise DataError(_not_found_message(spec, data_dir))

    if _offline():
        failure = f"${OFFLINE_VARIABLE} is set, so no download was tried"
    else:
        try:
            directory = fetch("mnist", timeout=download_timeout, progress=progress)
            log(f"Downloaded MNIST to {directory}")
            return _load_directory(name, directory, log)
        except DataError as error:
            failure = f"the download failed ({error})"

    sample_dir = find_dataset_dir("mnist-sample")
    if not fallback or sample_dir is None:
        raise DataError(_not_found_message(spec, data_dir, failure))
    not_fetched = (f"(${OFFLINE_VARIABLE} is set: no download was tried)" if _offline()
                   else "and could not be downloaded")
    log(f"NOTE: MNIST was not found {not_fetched}, so the bundled 5,000-image "
        f"sample in {sample_dir} is used instead (results will not match full-MNIST numbers); "
        f"get the full set with: {spec.how_to_get}, or pass --data-dir DIR{_misplaced_in_nn_cuda_data(spec)}")
    return _load_directory("mnist-sample", sample_dir, log)


def _load_directory(name: str, directory: Path, log=print) -> Dataset:
    """Dataset `name` from the four files of `directory`, checked; logs one line naming them."""
    paths = {role: _dataset_file(directory, n) for role, n in FILE_NAMES.items()}
    missing = [FILE_NAMES[role] for role, path in paths.items() if path is None]
    if missing:
        raise DataError(f"{directory}: missing {', '.join(missing)} for dataset {name}")
    provenance = _identify(_spec(name), paths)
    train_images, train_labels = _read_pair(paths["train_images"], paths["train_labels"])
    test_images, test_labels = _read_pair(paths["test_images"], paths["test_labels"])
    log(f"data: {name} from {directory}: {', '.join(p.name for p in paths.values())} ({provenance})")
    return Dataset(name=name, source=str(directory), train_images=train_images,
                   train_labels=train_labels, test_images=test_images, test_labels=test_labels)


def _identify(spec: DatasetSpec, paths: dict) -> str:
    """What the files `paths` ({role: path}) are, by SHA-256 against every published release: "the
    published ..." when they are `spec`'s, "unknown files ..." when they are nobody's. DataError when
    one of them is a published file of another dataset, or of another role."""
    published = {remote.sha256: (other, remote.name) for other in SPECS.values()
                 for remote in other.remote_files}
    recognised = 0
    for role, path in paths.items():
        found = published.get(_sha256_of(path))
        if found is None:
            continue
        other, remote_name = found
        if (other.name, remote_name) != (spec.name, FILE_NAMES[role]):
            fix = (f"use --dataset {other.name}, or give the {spec.title} files"
                   if other.name != spec.name else f"rename it {FILE_NAMES[role]}")
            raise DataError(f"{path} is {other.title}'s {remote_name} (by its SHA-256), not "
                            f"{spec.title}'s {FILE_NAMES[role]}; {fix}")
        recognised += 1
    if not spec.remote_files:
        return "bundled with the source"
    if recognised == len(paths):
        return f"the published {spec.title} files, SHA-256 checked"
    return (f"unknown files: not the published {spec.title} release by SHA-256 (recompressed, "
            f"uncompressed or other data); read as {spec.name}, as asked")


def _read_pair(images_path: Path, labels_path: Path):
    """(images as (n, 784) uint8, labels as (n,) uint8) from two IDX files that must agree."""
    images = read_idx(images_path)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE:
        raise DataError(
            f"{images_path}: expected uint8 images of shape (n, 28, 28), found {images.dtype} "
            f"array of shape {images.shape}; is this the right file?"
        )
    labels = read_idx(labels_path)
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise DataError(
            f"{labels_path}: expected a uint8 vector of labels, found {labels.dtype} array of "
            f"shape {labels.shape}; is this the right file?"
        )
    if len(images) != len(labels):
        raise DataError(
            f"{images_path} holds {len(images)} images but {labels_path} holds {len(labels)} "
            f"labels; the two files must come from the same release: replace both"
        )
    if len(labels) == 0:
        raise DataError(f"{labels_path}: the file holds no labels (and its images file none)")
    if labels.max() >= NUM_CLASSES:
        where = int(np.argmax(labels >= NUM_CLASSES))
        raise DataError(
            f"{labels_path}: label {labels[where]} at index {where} is not a class 0-9; "
            f"the file is corrupt or not a label file"
        )
    return images.reshape(len(images), -1), labels


def _not_in_data_dir_message(spec: DatasetSpec, data_dir) -> str:
    """One line: which of the four files data_dir (and data_dir/<name>) lacks, and what to do."""
    places = [d for d in search_dirs(spec.name, data_dir) if _is_dir(d)]
    lacking = "; ".join(f"{d} lacks {', '.join(_missing_files(d))}" for d in places)
    return (f"{spec.title} is not in --data-dir {data_dir}: {lacking} (the four files are "
            f"{', '.join(FILE_NAMES.values())}, with or without .gz); put them there, "
            f"or drop --data-dir to look in the usual places; get them with: {spec.how_to_get}")


def _misplaced_in_nn_cuda_data(spec: DatasetSpec) -> str:
    """"; NN_CUDA_DATA=... holds the four files itself..." where $NN_CUDA_DATA, which names a folder of
    datasets, holds a dataset's files directly; else ""."""
    root = os.environ.get("NN_CUDA_DATA")
    if not root or not _is_dir(Path(root).expanduser()) or _missing_files(Path(root).expanduser()):
        return ""
    return (f"; NN_CUDA_DATA={root} holds the four files itself, but it names a folder of datasets: "
            f"move them to {Path(root) / spec.name}")


def _not_found_message(spec: DatasetSpec, data_dir, failure: str = "") -> str:
    """One line: where `spec`'s dataset was looked for (and which files were missing where some
    were there), what else failed, and how to get it."""
    looked = search_dirs(spec.name, data_dir)
    partial = [f"{d} lacks {', '.join(_missing_files(d))}" for d in looked
               if _is_dir(d) and len(_missing_files(d)) < len(FILE_NAMES)]
    message = f"{spec.title} not found: looked in {', '.join(str(d) for d in looked)}"
    if partial:
        message += f" ({'; '.join(partial)})"
    if data_dir is None:
        message += _misplaced_in_nn_cuda_data(spec)
    if failure:
        message += f"; {failure}"
    return f"{message}; get it with: {spec.how_to_get}"


def _offline() -> bool:
    return os.environ.get(OFFLINE_VARIABLE, "") not in ("", "0")


def _spec(name: str) -> DatasetSpec:
    if name not in SPECS:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return SPECS[name]


# ---- splitting --------------------------------------------------------------------------------


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The order of the n training samples in `epoch` with --shuffle: an int32 permutation drawn from
    (seed, epoch), so every MPI rank knows it without communication."""
    return np.random.default_rng([seed, epoch]).permutation(n).astype(np.int32)


def split_dataset(dataset: Dataset, validation_fraction: float = 0.1):
    """split_train_validation of `dataset`'s training file, refused (DataError) when the file is too
    small to leave a validation image (its accuracy, printed after training, would be NaN)."""
    parts = split_train_validation(dataset.train_images, dataset.train_labels, validation_fraction)
    if validation_fraction > 0 and len(parts[2]) == 0:
        n = len(dataset.train_labels)
        smallest = math.floor(0.5 / validation_fraction) + 1  # round(n * fraction) >= 1 from there
        raise DataError(
            f"{dataset.source}: the training file holds {n} image{'s' if n != 1 else ''}, too few to "
            f"keep {validation_fraction:.0%} of them for validation; use a training file of at "
            f"least {smallest} images"
        )
    return parts


def split_train_validation(images, labels, validation_fraction: float = 0.1):
    """(train_images, train_labels, val_images, val_labels): the first and the last part of the
    training file, in file order, the last `validation_fraction` of the rows being validation.

    MNIST's 60,000 training images give 54,000 + 6,000, as in the course. The results are views.
    """
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation fraction must be in [0, 1), got {validation_fraction}")
    num_validation = int(round(len(images) * validation_fraction))
    num_train = len(images) - num_validation
    if num_train < 1:
        raise ValueError(f"a validation fraction of {validation_fraction} leaves no training "
                         f"rows out of {len(images)}")
    return images[:num_train], labels[:num_train], images[num_train:], labels[num_train:]


# ---- downloading ------------------------------------------------------------------------------

CHUNK_BYTES = 1 << 16


class _DownloadFailed(Exception):
    """One attempt at one URL failed; the next mirror is tried."""


def fetch(name: str, dest_dir=None, mirrors=None, timeout: float = 30.0,
          progress: bool = True) -> Path:
    """Download dataset `name` into `dest_dir` (default: the cache) and return that directory.

    Mirrors are tried in order for each file; a file counts only if its size and SHA-256 match
    the published ones. Each file is written to a temporary name and renamed when verified, so a
    failed or interrupted download never leaves a partial file under the final name. Files
    already present with the right checksum are kept. `timeout` bounds each network wait. Refused
    while $NN_CUDA_OFFLINE is set.
    """
    spec = _spec(name)
    if not spec.remote_files:
        raise DataError(f"{name} is not downloaded: {spec.how_to_get}")
    if _offline():
        raise DataError(f"${OFFLINE_VARIABLE} is set, which forbids every download: unset it to fetch {name}")
    dest_dir = Path(dest_dir).expanduser() if dest_dir is not None else cache_dir() / name
    mirrors = tuple(mirrors) if mirrors is not None else spec.mirrors
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DataError(f"cannot create {dest_dir}: {error.strerror or error}; "
                        f"choose another directory with --dest") from None

    for remote in spec.remote_files:
        target = dest_dir / remote.name
        if target.is_file() and _sha256_of(target) == remote.sha256:
            continue
        _download_from_mirrors(spec, remote, target, mirrors, timeout, progress)
    return dest_dir


def _download_from_mirrors(spec, remote, target, mirrors, timeout, progress) -> None:
    failures = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + remote.name
        try:
            _download(url, remote, target, timeout, progress)
            return
        except _DownloadFailed as error:
            failures.append(f"{url}: {error}")
    raise DataError(
        f"could not download {spec.title} file {remote.name} ("
        + ("; ".join(failures) or "no mirrors given")
        + f"); check the network connection, or put the four files in {target.parent} by hand"
    )


def _download(url: str, remote: RemoteFile, target: Path, timeout: float, progress: bool):
    """Download `url` to `target` if its size and SHA-256 are `remote`'s; else _DownloadFailed."""
    from tqdm import tqdm

    request = urllib.request.Request(url, headers={"User-Agent": f"nn_cuda/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, \
                atomic_file(target) as out, \
                tqdm(total=remote.size, desc=remote.name, unit="B", unit_scale=True,
                     unit_divisor=1024, disable=not progress) as bar:
            digest = hashlib.sha256()
            received = 0
            while chunk := response.read(CHUNK_BYTES):
                received += len(chunk)
                if received > remote.size:
                    raise _DownloadFailed(f"the server sent more than the expected "
                                          f"{remote.size} bytes")
                digest.update(chunk)
                out.write(chunk)
                bar.update(len(chunk))
            if received != remote.size:
                raise _DownloadFailed(f"the transfer stopped after {received} of "
                                      f"{remote.size} bytes")
            if digest.hexdigest() != remote.sha256:
                raise _DownloadFailed(f"SHA-256 mismatch (got {digest.hexdigest()}, "
                                      f"expected {remote.sha256})")
    except urllib.error.HTTPError as error:
        raise _DownloadFailed(f"HTTP {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise _DownloadFailed(str(error.reason)) from None
    except http.client.IncompleteRead as error:
        raise _DownloadFailed(f"the transfer stopped after {len(error.partial)} bytes of a "
                              f"chunk, {error.expected} bytes short") from None
    except TimeoutError:
        raise _DownloadFailed(f"no data for {timeout:g} s") from None
    except (http.client.HTTPException, OSError, ValueError) as error:
        raise _DownloadFailed(f"{type(error).__name__}: {error}") from None


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# ---- command line -----------------------------------------------------------------------------


@ends_in_one_line_when_interrupted("python -m nn_cuda.data")
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nn_cuda.data",
        description="Download the datasets and say where they are found.",
    )
    commands = parser.add_subparsers(dest="command")  # none given: the help, listing them

    fetch_parser = commands.add_parser("fetch", help="download a dataset, verifying SHA-256 sums")
    fetch_parser.add_argument("name", choices=[n for n in DATASETS if SPECS[n].remote_files])
    fetch_parser.add_argument("--dest", type=Path, default=None,
                              help="directory for the four files (default: the cache, "
                                   f"{cache_dir()}/NAME)")
    fetch_parser.add_argument("--timeout", type=positive_float, default=30.0,
                              help="seconds to wait for the network before trying the next "
                                   "mirror (default 30)")
    fetch_parser.add_argument("--quiet", action="store_true", help="no progress bars")

    info_parser = commands.add_parser("info", help="say where each dataset is found")
    info_parser.add_argument("name", nargs="?", choices=DATASETS)
    info_parser.add_argument("--data-dir", type=Path, default=None,
                             help="look here first, as training's --data-dir does")

    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command == "fetch":
            directory = fetch(args.name, dest_dir=args.dest, timeout=args.timeout,
                              progress=not args.quiet)
            print(f"{SPECS[args.name].title} is in {directory}")
        else:
            for name in [args.name] if args.name else DATASETS:
                print(_describe_dataset(name, args.data_dir))
    except (DataError, OutputError) as error:
        return failed("python -m nn_cuda.data", error)
    return 0


def _describe_dataset(name: str, data_dir) -> str:
    directory = find_dataset_dir(name, data_dir)
    if directory is None:
        missing = (_not_found_message(SPECS[name], data_dir) if data_dir is None
                   else _not_in_data_dir_message(SPECS[name], data_dir))
        return f"{name}: {missing}"
    try:
        dataset = _load_directory(name, directory, log=lambda line: None)
    except DataError as error:
        return f"{name}: found in {directory} but unusable: {error}"
    return dataset.summary()


if __name__ == "__main__":
    sys.exit(main())
