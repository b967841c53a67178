"""The Numba kernels and the Numba backend, checked against float64 NumPy.

These tests run on Numba's CUDA simulator (tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1 before Numba
is imported when the machine has no GPU) or, on a machine with a GPU, on that GPU. They are skipped
only when neither is possible.

The simulator runs one Python thread per CUDA thread, so sizes are tiny and the GEMM cases are
chosen, not multiplied out. Coverage of the GEMM kernels (GEMM_CASES, run for every algorithm):
- every size below runs with every algorithm: 1x1x1; 17x33x65 (K spans three 32-wide tiles);
  64x16x4 (the statement's 64x16 tile and 4-deep step); 32x64x32 (whole blocks of every kernel
  in M, N and K: 8x32 naive, 32x32 tiled, and the 16x64 tile of C that the register-blocked
  kernel computes in row-major terms); 65x17x5; 33x1x31 (a single column); 33x34x35 (crosses a
  32x32 tile of the tiled kernel in M, N and K, and the register-blocked tile in M);
- every algorithm runs every transpose combination at least once; op(A) is read by code that
  depends only on trans_a and op(B) by code that depends only on trans_b, so the two runs of the
  tile-crossing 33x34x35 (no transposes, both transposed) check all four load paths across tile
  boundaries in every dimension;
- every algorithm runs both dtypes, beta == 0 with C poisoned with NaN (C must not be read, and any
  element left unwritten stays NaN), and alpha, beta away from 0 and 1.
The element-wise kernels run at both dtypes on shapes that cross a 32-column block and end inside an
8-row one, with their outputs poisoned with NaN.

Tolerances: relative Frobenius-norm error against float64 NumPy applied to the same (rounded)
inputs. A dot product of length K in precision eps has a rounding error bounded by about K * eps
(times the size of the terms); the GEMM tolerance is (K + 4) * eps, the + 4 for alpha, beta and
the final rounding. Measured on the simulator: GEMM at most 1.5e-7 = 1.3 eps in float32 (K = 65,
tolerance 8.2e-6) and 1.8e-16 = 0.8 eps in float64; element-wise kernels at most 8.0e-8 = 0.7 eps
(float32) and 3.0e-16 = 1.4 eps (float64), against tolerances of 4 to 16 eps (about the number of
rounded operations per output; the simulator's exp is within an ulp, CUDA's expf within 2). A wrong
index, a missing tile or an unguarded edge gives errors of order 1e-2 to 1.

Run time on the simulator: about 50 s on 2 cores, half of it in the tiled kernel (1024 simulated
threads per block), which is why the cases are chosen rather than multiplied out.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import config as numba_config
from numba import cuda

SIMULATED = bool(numba_config.ENABLE_CUDASIM)
if not SIMULATED and not cuda.is_available():
    pytest.skip(
        "Numba was imported without its CUDA simulator and finds no GPU; "
        "run the tests with NUMBA_ENABLE_CUDASIM=1 in the environment",
        allow_module_level=True,
    )

from nn_cuda.backends.numba_backend import NumbaBackend  # noqa: E402

ALGOS = NumbaBackend.gemm_algos
DTYPES = (np.float32, np.float64)
F32, F64 = np.float32, np.float64


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def rel_err(got, ref) -> float:
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(np.asarray(got, dtype=np.float64) - ref) / np.linalg.norm(ref))


def nan_array(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


@pytest.fixture(scope="module")
def backend():
    return NumbaBackend()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ---- GEMM -------------------------------------------------------------------------------------
# (M, N, K, trans_a, trans_b, dtype, beta); alpha is 1.5 when beta != 0 and -2.25 when beta == 0.
GEMM_CASES = [
    (1, 1, 1, True, True, F64, 0.0),
    (17, 33, 65, False, True, F32, -0.5),
    (64, 16, 4, True, False, F64, 2.5),
    (32, 64, 32, False, True, F64, 0.0),
    (65, 17, 5, False, False, F32, 0.0),
    (33, 1, 31, True, False, F32, -0.5),
    (33, 34, 35, False, False, F64, -0.5),
    (33, 34, 35, True, True, F32, 0.0),
]


def _case_id(case):
    M, N, K, ta, tb, dtype, beta = case
    ops = ("T" if ta else "N") + ("T" if tb else "N")
    return f"{M}x{N}x{K}-{ops}-{np.dtype(dtype).name}-beta{beta:g}"


@pytest.mark.parametrize("case", GEMM_CASES, ids=[_case_id(c) for c in GEMM_CASES])
@pytest.mark.parametrize("algo", ALGOS)
def test_gemm_matches_numpy(backend, rng, algo, case):
    M, N, K, trans_a, trans_b, dtype, beta = case
    alpha = 1.5 if beta else -2.25
    A = rng.standard_normal((K, M) if trans_a else (M, K)).astype(dtype)
    B = rng.standard_normal((N, K) if trans_b else (K, N)).astype(dtype)
    C = rng.standard_normal((M, N)).astype(dtype) if beta else nan_array((M, N), dtype)

    op_a = A.T.astype(np.float64) if trans_a else A.astype(np.float64)
    op_b = B.T.astype(np.float64) if trans_b else B.astype(np.float64)
    expected = alpha * (op_a @ op_b)
    if beta:
        expected += beta * C.astype(np.float64)

    d_C = backend.to_device(C)
    backend.gemm(backend.to_device(A), backend.to_device(B), d_C, alpha, beta, trans_a, trans_b, algo=algo)
    got = backend.to_host(d_C)

    assert got.dtype == dtype
    assert np.isfinite(got).all(), "an element of C was not written, or C was read with beta == 0"
    assert rel_err(got, expected) <= (K + 4) * eps(dtype)


def test_every_transpose_combination_every_dtype_and_beta_mode_is_covered():
    combos = {(ta, tb) for _, _, _, ta, tb, _, _ in GEMM_CASES}
    assert combos == {(False, False), (False, True), (True, False), (True, True)}
    assert {dtype for *_, dtype, _ in GEMM_CASES} == set(DTYPES)
    assert {beta == 0 for *_, beta in GEMM_CASES} == {True, False}


@pytest.mark.parametrize("algo", ALGOS)
def test_gemm_on_row_slices_writes_only_the_slice(backend, rng, algo):
    # The training loop passes row slices X[a:b] of device arrays; they are views, not copies.
    X = rng.standard_normal((20, 7))
    W = rng.standard_normal((5, 7))
    out = nan_array((20, 5), np.float64)
    d_X, d_out = backend.to_device(X), backend.to_device(out)
    backend.gemm(d_X[3:11], backend.to_device(W), d_out[3:11], 1.0, 0.0, trans_b=True, algo=algo)
    got = backend.to_host(d_out)
    assert rel_err(got[3:11], X[3:11] @ W.T) <= 11 * eps(np.float64)
    assert np.isnan(got[:3]).all() and np.isnan(got[11:]).all()


def test_gemm_uses_the_algorithm_chosen_at_construction(backend, rng):
    regblock_backend = NumbaBackend("regblock")
    assert regblock_backend.gemm_algo == "regblock"
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    C = backend.to_device(nan_array((3, 2), np.float64))
    regblock_backend.gemm(backend.to_device(A), backend.to_device(B), C)
    assert rel_err(backend.to_host(C), A @ B) <= 8 * eps(np.float64)


# ---- element-wise and reduction kernels -------------------------------------------------------
def stable_sigmoid(z):
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_sigmoid_is_accurate_and_never_overflows(backend, rng, dtype, in_place):
    huge = float(np.finfo(dtype).max) / 4
    Z = (4 * rng.standard_normal((9, 33))).astype(dtype)
    Z[0, :6] = [huge, -huge, 1e4, -1e4, 100.0, -100.0]  # exp(100) and exp(1e4) overflow float32
    b = rng.standard_normal(33).astype(dtype)
    expected = stable_sigmoid(Z + b)  # the sum rounded in dtype, as the kernel does

    d_Z = backend.to_device(Z)
    d_out = d_Z if in_place else backend.to_device(nan_array(Z.shape, dtype))
    backend.bias_sigmoid(d_Z, backend.to_device(b), d_out)
    got = backend.to_host(d_out)

    assert np.isfinite(got).all()
    assert ((got >= 0) & (got <= 1)).all()
    assert got[0, 0] == 1 and got[0, 1] == 0 and got[0, 2] == 1 and got[0, 3] == 0
    assert rel_err(got, expected) <= 8 * eps(dtype)


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_softmax_rows_sum_to_one_with_huge_logits(backend, rng, dtype, in_place):
    Z = (3 * rng.standard_normal((17, 10))).astype(dtype)
    Z[1] += dtype(1e4)  # exp would overflow without subtracting the row max
    Z[2] -= dtype(1e4)  # exp would underflow to 0 / 0
    Z[3] = 0
    Z[3, 7] = 1e30  # one dominant logit: the row becomes one-hot
    Z[4] += dtype(1e30)  # all equal after rounding: the row becomes uniform
    b = rng.standard_normal(10).astype(dtype)
    z = (Z + b).astype(np.float64)  # the sum rounded in dtype, as the kernel does
    e = np.exp(z - z.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)

    d_Z = backend.to_device(Z)
    d_out = d_Z if in_place else backend.to_device(nan_array(Z.shape, dtype))
    backend.bias_softmax(d_Z, backend.to_device(b), d_out)
    got = backend.to_host(d_out)

    assert np.isfinite(got).all()
    assert np.abs(got.astype(np.float64).sum(axis=1) - 1).max() <= 16 * eps(dtype)
    assert got[3, 7] == 1
    assert rel_err(got, expected) <= 16 * eps(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_grad_subtracts_one_at_the_label(backend, rng, dtype):
    P = rng.random((17, 10)).astype(dtype)
    labels = rng.integers(0, 10, size=17).astype(np.int32)
    scale = 1.0 / 17
    expected = P.astype(np.float64)
    expected[np.arange(17), labels] -= 1
    expected *= scale

    d_out = backend.to_device(nan_array(P.shape, dtype))
    backend.softmax_grad(backend.to_device(P), backend.to_device(labels), scale, d_out)
    got = backend.to_host(d_out)

    assert np.isfinite(got).all()
    assert rel_err(got, expected) <= 4 * eps(dtype)


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_backward(backend, rng, dtype, in_place):
    dA = rng.standard_normal((9, 33)).astype(dtype)
    A = rng.random((9, 33)).astype(dtype)
    expected = dA.astype(np.float64) * A * (1 - A.astype(np.float64))

    d_dA = backend.to_device(dA)
    d_out = d_dA if in_place else backend.to_device(nan_array(A.shape, dtype))
    backend.sigmoid_backward(d_dA, backend.to_device(A), d_out)
    got = backend.to_host(d_out)

    assert np.isfinite(got).all()
    assert rel_err(got, expected) <= 4 * eps(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (70, 33)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES)
def test_col_sum(backend, rng, dtype, shape):
    M = rng.standard_normal(shape).astype(dtype)
    expected = M.astype(np.float64).sum(axis=0)

    d_out = backend.to_device(nan_array(shape[1], dtype))
    backend.col_sum(backend.to_device(M), d_out)
    got = backend.to_host(d_out)

    assert np.isfinite(got).all()
    assert rel_err(got, expected) <= (shape[0] + 2) * eps(dtype)


# weights (2-D, with weight decay) and biases (1-D, without), as the training step updates them
@pytest.mark.parametrize("shape, decay", [((9, 33), 0.01), ((10,), 0.0)], ids=["weights", "biases"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_update_with_weight_decay(backend, rng, dtype, shape, decay):
    lr = 0.1
    param = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    p64 = param.astype(np.float64)
    expected = p64 - lr * (grad + decay * p64)

    d_param = backend.to_device(param)
    backend.sgd_update(d_param, backend.to_device(grad), lr, decay)
    got = backend.to_host(d_param)

    assert rel_err(got, expected) <= 4 * eps(dtype)


def test_element_wise_kernels_on_row_slices(backend, rng):
    Z = rng.standard_normal((12, 33))
    b = rng.standard_normal(33)
    d_Z = backend.to_device(Z)
    backend.bias_sigmoid(d_Z[2:9], backend.to_device(b), d_Z[2:9])
    got = backend.to_host(d_Z)
    assert rel_err(got[2:9], stable_sigmoid(Z[2:9] + b)) <= 8 * eps(np.float64)
    np.testing.assert_array_equal(got[:2], Z[:2])
    np.testing.assert_array_equal(got[9:], Z[9:])

    d_sum = backend.to_device(nan_array(33, np.float64))
    backend.col_sum(d_Z[2:9], d_sum)
    assert rel_err(backend.to_host(d_sum), got[2:9].sum(axis=0)) <= 9 * eps(np.float64)

    dA = rng.standard_normal((12, 33))
    d_dA = backend.to_device(dA)
    backend.sigmoid_backward(d_dA[2:9], d_Z[2:9], d_dA[2:9])
    got_dA = backend.to_host(d_dA)
    expected = dA[2:9] * got[2:9] * (1 - got[2:9])
    assert rel_err(got_dA[2:9], expected) <= 4 * eps(np.float64)
    np.testing.assert_array_equal(got_dA[9:], dA[9:])


# ---- memory and read-backs --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_memory_operations(backend, dtype):
    x = backend.empty((3, 5), dtype)
    assert x.shape == (3, 5) and x.dtype == dtype
    backend.fill(x, 7)
    assert (backend.to_host(x) == 7).all()
    z = backend.zeros((4,), dtype)
    assert (backend.to_host(z) == 0).all()
    host = np.arange(15, dtype=dtype).reshape(3, 5)
    d = backend.to_device(host)
    backend.copy(d, x)
    np.testing.assert_array_equal(backend.to_host(x), host)
    backend.synchronize()


def test_to_device_makes_a_contiguous_copy(backend):
    host = np.arange(12.0).reshape(3, 4)
    d = backend.to_device(host.T)  # a non-contiguous view
    np.testing.assert_array_equal(backend.to_host(d), host.T)
    host[0, 0] = 99
    assert backend.to_host(d)[0, 0] == 0


def test_read_backs_match_numpy(backend, rng):
    P = rng.random((9, 10))
    P /= P.sum(axis=1, keepdims=True)
    P[4, 3] = 0  # clamped away from log(0)
    labels = rng.integers(0, 10, size=9).astype(np.int32)
    labels[4] = 3
    d_P = backend.to_device(P)
    loss = backend.cross_entropy_sum(d_P, backend.to_device(labels))
    picked = np.maximum(P[np.arange(9), labels], np.finfo(np.float64).tiny)
    assert np.isfinite(loss)
    assert loss == pytest.approx(-np.log(picked).sum(), rel=1e-12)
    assert backend.sum_squares(d_P) == pytest.approx((P**2).sum(), rel=1e-12)
    np.testing.assert_array_equal(backend.argmax_rows(d_P), P.argmax(axis=1))


# ---- argument checks --------------------------------------------------------------------------
def test_backend_identity():
    backend = NumbaBackend()
    assert backend.name == ("numba-sim" if SIMULATED else "numba") and backend.on_device
    assert backend.gemm_algos == ("naive", "tiled", "regblock")
    # the default: the fastest of the course's kernels on a GPU, the cheapest to emulate in the simulator
    assert backend.gemm_algo == ("naive" if SIMULATED else "regblock")
    with pytest.raises(ValueError, match="no GEMM algorithm 'cublas'"):
        NumbaBackend("cublas")


def test_gemm_rejects_bad_arguments(backend):
    A = backend.to_device(np.ones((3, 4)))
    B = backend.to_device(np.ones((4, 2)))
    C = backend.to_device(np.ones((3, 2)))
    with pytest.raises(ValueError, match="NumPy array.*to_device"):
        backend.gemm(np.ones((3, 4)), B, C)
    with pytest.raises(ValueError, match="shapes do not match"):
        backend.gemm(A, B, C, trans_a=True)
    with pytest.raises(ValueError, match="shapes do not match"):
        backend.gemm(A, B, backend.to_device(np.ones((2, 3))))
    with pytest.raises(ValueError, match="one dtype"):
        backend.gemm(A, backend.to_device(np.ones((4, 2), np.float32)), C)
    with pytest.raises(ValueError, match="float32 or float64"):
        backend.gemm(A, B, backend.to_device(np.ones((3, 2), np.int32)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        wide = backend.to_device(np.ones((3, 6)))
        backend.gemm(wide[:, :4], B, C)
    with pytest.raises(ValueError, match="must be 2-D"):
        backend.gemm(A, backend.to_device(np.ones(4)), C)
    with pytest.raises(ValueError, match="no GEMM algorithm 'fast'"):
        backend.gemm(A, B, C, algo="fast")


def test_too_many_rows_for_one_launch_is_a_clear_error(backend):
    # gridDim.y is at most 65535 blocks of 8 rows for the naive kernel; nothing is launched here.
    rows = 65535 * 8 + 1
    tall = backend.empty((rows, 1), np.float32)
    with pytest.raises(ValueError, match="handles at most 524280 rows of C"):  # as the CUDA C kernel's
        backend.gemm(tall, backend.empty((1, 1), np.float32), tall, algo="naive")
    with pytest.raises(ValueError, match="in chunks"):
        backend.bias_sigmoid(tall, backend.empty((1,), np.float32), tall)


def test_element_wise_ops_reject_bad_arguments(backend):
    Z = backend.to_device(np.ones((3, 4)))
    with pytest.raises(ValueError, match="b has shape"):
        backend.bias_sigmoid(Z, backend.to_device(np.ones(3)), Z)
    with pytest.raises(ValueError, match="out has shape"):
        backend.bias_softmax(Z, backend.to_device(np.ones(4)), backend.to_device(np.ones((4, 3))))
    with pytest.raises(ValueError, match="int32"):
        backend.softmax_grad(Z, backend.to_device(np.zeros(3, np.int64)), 1.0, Z)
    with pytest.raises(ValueError, match="labels has shape"):
        backend.softmax_grad(Z, backend.to_device(np.zeros(4, np.int32)), 1.0, Z)
    with pytest.raises(ValueError, match="A has shape"):
        backend.sigmoid_backward(Z, backend.to_device(np.ones((4, 3))), Z)
    with pytest.raises(ValueError, match="out has shape"):
        backend.col_sum(Z, backend.to_device(np.ones(3)))
    with pytest.raises(ValueError, match="one dtype"):
        backend.sgd_update(Z, backend.to_device(np.ones((3, 4), np.float32)), 0.1, 0.0)
    with pytest.raises(ValueError, match="to_device"):
        backend.sgd_update(np.ones((3, 4)), Z, 0.1, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_take_rows_gathers_a_permutation(backend, rng, dtype):
    # 40 x 33 crosses a 32-column block and ends inside an 8-row one; 1-D (labels) too.
    src = (rng.random((40, 33)) * 100).astype(dtype)
    rows = rng.permutation(40).astype(np.int32)
    out = backend.to_device(np.full_like(src, -1))
    backend.take_rows(backend.to_device(src), backend.to_device(rows), out)
    np.testing.assert_array_equal(backend.to_host(out), src[rows])
    labels = np.arange(40, dtype=dtype)
    out1 = backend.to_device(np.full_like(labels, -1))
    backend.take_rows(backend.to_device(labels), backend.to_device(rows), out1)
    np.testing.assert_array_equal(backend.to_host(out1), labels[rows])


def test_the_low_occupancy_warning_stays_quiet_also_in_colour():
    """Numba warns about launches of fewer than 128 blocks, which the network's 10-column matrices
    make by design; on an H200 its message came wrapped in colour codes and got past the filter."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    from nn_cuda.backends.numba_backend import quiet_low_occupancy_warnings

    coloured = "\x1b[1m\x1b[1mGrid size 2 will likely result in GPU under-utilization due to low occupancy.\x1b[0m\x1b[0m"
    with warnings.catch_warnings(record=True) as shown:
        quiet_low_occupancy_warnings()  # what NumbaBackend() does
        warnings.warn(coloured, NumbaPerformanceWarning)
        warnings.warn("\x1b[1manother performance warning\x1b[0m", NumbaPerformanceWarning)
    # Numba on a GPU wraps a warning's message in colour codes once more when it is made (an H200)
    assert len(shown) == 1 and "another performance warning" in str(shown[0].message), shown


def test_the_simulator_holds_no_cuda_context_for_a_step(backend):
    # On a GPU, launch_scope attaches the CUDA context for each training step; the simulator has none.
    import contextlib

    if not backend.emulated:
        pytest.skip("Numba runs on a GPU here")
    assert isinstance(backend.launch_scope(), contextlib.nullcontext)
