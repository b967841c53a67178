"""The attack step `pgd_step` on every backend:

    out = clip(clip(X_adv + alpha * sign(grad), X_clean - eps, X_clean + eps), 0, pixel_max)

on [0, 1] pixels (pixel_max 1) and raw ones (255, alpha and eps scaled with it). Compared with a
float64 NumPy reference written here from the definition. Every operation of the step is one rounded
add or subtract followed by exact min/max, so a float32 result lies within one float32 rounding
(2^-24 relative, pixels <= pixel_max + eps) of the float64 reference; we allow 2^-23 pixel_max
absolute. The NumPy and Numba backends round the same operations in the same order, so they must
agree bit for bit. Outputs are poisoned with NaN first, so an unwritten element fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from nn_cuda.backends import get_backend

DTYPES = (np.float32, np.float64)
SHAPES = ((1, 1), (3, 17), (5, 33))  # odd sizes: partial blocks; the simulator keeps them tiny
PIXEL_MAXES = (1.0, 255.0)  # [0, 1] pixels and raw ones


def reference(X_adv, grad, X_clean, alpha, eps, pixel_max=1.0):
    x = X_adv.astype(np.float64) + alpha * np.sign(grad.astype(np.float64))
    clean = X_clean.astype(np.float64)
    return np.clip(np.clip(x, clean - eps, clean + eps), 0.0, pixel_max)


def case(shape, dtype, seed=7, pixel_max=1.0):
    rng = np.random.default_rng(seed)
    clean = rng.uniform(0, 1, shape)
    clean[..., 0] = 0.0  # pixels at the edges of [0, 1], where the clip to [0, 1] bites
    clean[..., -1] = 1.0
    adversarial = np.clip(clean + rng.uniform(-0.15, 0.15, shape), 0, 1)  # some outside the eps = 0.1 ball
    grad = rng.standard_normal(shape)
    grad[rng.uniform(size=shape) < 0.2] = 0.0  # sign(0) = 0: no step
    return (adversarial * pixel_max).astype(dtype), grad.astype(dtype), (clean * pixel_max).astype(dtype)


def run_step(backend, adversarial, grad, clean, alpha, eps, in_place=False, pixel_max=1.0):
    d_adversarial = backend.to_device(adversarial)
    d_grad, d_clean = backend.to_device(grad), backend.to_device(clean)
    if in_place:
        out = d_adversarial
    else:
        out = backend.to_device(np.full(adversarial.shape, np.nan, dtype=adversarial.dtype))
    backend.pgd_step(d_adversarial, d_grad, d_clean, alpha, eps, pixel_max, out)
    return backend.to_host(out)


def tolerance(dtype):
    return 2.0 ** -23 if dtype == np.float32 else 1e-15


@pytest.mark.parametrize("pixel_max", PIXEL_MAXES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("in_place", (False, True))
def test_numpy_pgd_step_matches_the_definition(shape, dtype, in_place, pixel_max):
    adversarial, grad, clean = case(shape, dtype, pixel_max=pixel_max)
    alpha, eps = 0.03 * pixel_max, 0.1 * pixel_max
    got = run_step(get_backend("numpy"), adversarial, grad, clean, alpha, eps, in_place, pixel_max)
    assert got.dtype == dtype and not np.isnan(got).any()
    assert got.max() <= pixel_max and (pixel_max == 1.0 or got.max() > 1.0)
    error = np.max(np.abs(got - reference(adversarial, grad, clean, alpha, eps, pixel_max)))
    assert error <= tolerance(dtype) * pixel_max


@pytest.mark.parametrize("pixel_max", PIXEL_MAXES)
def test_fgsm_from_the_clean_images_is_a_signed_step_clipped_to_the_pixel_range(pixel_max):
    clean = np.array([[0.0, 0.5, 1.0, 0.95]]) * pixel_max
    grad = np.array([[-1.0, 2.0, 3.0, 0.0]])
    step = 0.1 * pixel_max
    got = run_step(get_backend("numpy"), clean, grad, clean, step, step, pixel_max=pixel_max)
    np.testing.assert_array_equal(got, np.array([[0.0, 0.6, 1.0, 0.95]]) * pixel_max)


@pytest.fixture(scope="module")
def numba_backend():
    from numba import config as numba_config
    from numba import cuda

    if not numba_config.ENABLE_CUDASIM and not cuda.is_available():
        pytest.skip("Numba has neither its CUDA simulator nor a GPU; set NUMBA_ENABLE_CUDASIM=1")
    from nn_cuda.backends.numba_backend import NumbaBackend

    return NumbaBackend()


@pytest.mark.parametrize("pixel_max", PIXEL_MAXES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("in_place", (False, True))
def test_numba_pgd_step_matches_numpy_bit_for_bit(numba_backend, shape, dtype, in_place, pixel_max):
    adversarial, grad, clean = case(shape, dtype, seed=11, pixel_max=pixel_max)
    alpha, eps = 0.05 * pixel_max, 0.1 * pixel_max
    got = run_step(numba_backend, adversarial, grad, clean, alpha, eps, in_place, pixel_max)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(
        got, run_step(get_backend("numpy"), adversarial, grad, clean, alpha, eps, pixel_max=pixel_max))
    error = np.max(np.abs(got - reference(adversarial, grad, clean, alpha, eps, pixel_max)))
    assert error <= tolerance(dtype) * pixel_max


def test_numba_pgd_step_rejects_mismatched_shapes(numba_backend):
    a = numba_backend.to_device(np.zeros((2, 3), np.float32))
    b = numba_backend.to_device(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="shape"):
        numba_backend.pgd_step(a, b, a, 0.1, 0.1, 1.0, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_pgd_step(dtype):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no GPU")
    backend = get_backend("cupy")
    adversarial, grad, clean = case((37, 785), dtype, seed=5)
    for pixel_max in PIXEL_MAXES:
        scaled = [array * np.asarray(pixel_max, dtype) if array is not grad else array
                  for array in (adversarial, grad, clean)]
        alpha, eps = 0.05 * pixel_max, 0.1 * pixel_max
        got = run_step(backend, *scaled, alpha, eps, pixel_max=pixel_max)
        assert not np.isnan(got).any()
        error = np.max(np.abs(got - reference(*scaled, alpha, eps, pixel_max)))
        assert error <= tolerance(dtype) * pixel_max


@pytest.mark.parametrize("pixel_max", PIXEL_MAXES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("in_place", (False, True))
def test_cuda_c_pgd_step_on_the_cpu_matches_numpy_bit_for_bit(shape, dtype, in_place, pixel_max):
    """kernels/nn_ops.cu's pgd_step rounds the same operations in the same order as NumPy."""
    adversarial, grad, clean = case(shape, dtype, seed=13, pixel_max=pixel_max)
    alpha, eps = 0.05 * pixel_max, 0.1 * pixel_max
    got = run_step(get_backend("cuda-cpu"), adversarial, grad, clean, alpha, eps, in_place, pixel_max)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(
        got, run_step(get_backend("numpy"), adversarial, grad, clean, alpha, eps, pixel_max=pixel_max))
