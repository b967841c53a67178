"""Training on the GPU backends against the NumPy reference, at the course's grading thresholds.

Skipped without a CUDA GPU (the Numba backend's training path is also checked in the simulator by
tests/test_grade.py)."""

from pathlib import Path

import pytest

from nn_cuda import grading
from nn_cuda.config import TrainConfig

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e .[gpu])")


def _device_count() -> int:
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


pytestmark = pytest.mark.skipif(_device_count() == 0, reason="no CUDA GPU available to CuPy")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("gemm", ["naive", "tiled", "regblock", "cublas"])
def test_cupy_training_passes_mode_3(gemm, dtype, tmp_path):
    # Mode 3 (one epoch, the course's settings) on the bundled sample: every weight within 1e-4
    # (float32) / 1e-7 (float64) of the NumPy reference trained from the same weights.
    cfg = grading.course_config(3, TrainConfig(backend="cupy", gemm=gemm, dtype=dtype,
                                             dataset="mnist-sample", quiet=True, print_every=2))
    assert grading.compare_with_reference(cfg, Path(tmp_path))
    rows = (Path(tmp_path) / "CpuGpuDiff.txt").read_text().splitlines()
    assert len(rows) == 1 + 4  # header, iterations 0, 2, 4 and the last (5)


@pytest.mark.parametrize("gemm", ["naive", "regblock"])
def test_numba_gpu_training_passes_mode_3(gemm, tmp_path):
    from numba import config

    if config.ENABLE_CUDASIM:
        pytest.skip("Numba runs its simulator here")
    cfg = grading.course_config(3, TrainConfig(backend="numba", gemm=gemm, dtype="float32",
                                             dataset="mnist-sample", quiet=True))
    assert grading.compare_with_reference(cfg, Path(tmp_path))
