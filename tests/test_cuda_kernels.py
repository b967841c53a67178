"""The CUDA C kernels of kernels/*.cu against float64 NumPy, on a GPU and on the CPU.

Every test runs on three backends: `cupy` (the kernels on a GPU; skipped without CuPy or a GPU),
`cuda-cpu` (the same kernel files compiled for the CPU, launched by the same launch code) and
`cuda-cpu` in its checking mode (threads shuffled between barriers, outputs and __shared__ memory
filled with NaN, guarded buffers). So in CI every kernel instance and every launch shape is run.

Tolerances. GEMM inputs are drawn from [0, 1) and alpha, beta > 0, so nothing cancels: each computed
entry is within gamma_(K+3) = (K + 3) u of the exact one for any order of summation (u = 2^-24 in
float32, 2^-53 in float64), hence so is the relative inf-norm error; the float64 reference is as far
from the exact one in its own u_64, so the bound is (K + 3) (u + u_64). Measured on the CPU build:
at most 2.2e-7 in float32 at K = 1000 (bound 6.0e-5); an element written wrong, left unwritten
(NaN) or a term missing fails by far.
"""

import shutil

import numpy as np
import pytest

from nn_cuda import kernel_info
from nn_cuda.relative_errors import relative_error


def _cupy_sees_a_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device, or a driver too old for this CuPy
        return False


#: the backends these tests run on: cupy only where CuPy sees a GPU (its cases are then not collected
#: at all elsewhere, instead of hundreds of skips; test_the_cupy_cases_need_a_gpu says so once)
BACKENDS = (["cupy"] if _cupy_sees_a_gpu() else []) + ["cuda-cpu", "cuda-cpu-check"]
_BACKENDS: dict = {}


def backend_named(name: str):
    """The backend of these tests called `name`, made once per module."""
    if name not in _BACKENDS:
        if name == "cupy":
            from nn_cuda.backends.cupy_backend import CupyBackend

            _BACKENDS[name] = CupyBackend()
        else:
            from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend

            _BACKENDS[name] = CudaCpuBackend(check=name == "cuda-cpu-check")
    return _BACKENDS[name]


#: the fast loop (pytest -m "not slow") runs the plain CPU build at small sizes; the checking mode and
#: the larger sizes belong to the full suite
SLOW = pytest.mark.slow


@pytest.fixture(params=[pytest.param(name, marks=SLOW) if name == "cuda-cpu-check" else name for name in BACKENDS])
def backend(request):
    return backend_named(request.param)


def test_the_cupy_cases_need_a_gpu():
    if "cupy" not in BACKENDS:
        pytest.skip("CuPy sees no GPU here: every test of this file also runs through CuPy on a machine with one "
                    "(pip install -e '.[mpi,dev,gpu]', then pytest or ./run.sh gpu-check)")
    assert backend_named("cupy").name == "cupy"


def too_slow_to_check(name: str, *sizes) -> bool:
    """The checking mode copies every buffer and shuffles threads: it takes the smaller cases only
    (the larger ones run without it)."""
    return name == "cuda-cpu-check" and np.prod(sizes) > 2_000_000


DTYPES = (np.float32, np.float64)
TRANSPOSES = [(False, False), (False, True), (True, False), (True, True)]
GEMM_SIZES = [  # (M, N, K): odd sizes, one-element edges, sizes smaller than a tile, several tiles
    (1, 1, 1),
    (17, 33, 65),
    (64, 16, 4),
    (65, 17, 5),
    (33, 1, 31),
    (257, 129, 300),
    (37, 53, 29),
    (7, 7, 7),
    (800, 100, 1000),  # a course size (the second layer's backward product)
]
GUARD = 64  # elements on each side of C that a kernel must not touch


def unit_roundoff(dtype) -> float:
    return float(np.finfo(dtype).eps) / 2


def guarded_output(backend, host_values, poison):
    """C as a C-contiguous view into a larger buffer whose margins hold `poison` (to catch stray writes)."""
    M, N = host_values.shape
    buffer = backend.empty((M * N + 2 * GUARD,), host_values.dtype)
    backend.fill(buffer, poison)
    C = buffer[GUARD : GUARD + M * N].reshape(M, N)
    C[...] = backend.to_device(host_values)
    return buffer, C


def assert_guards_intact(backend, buffer, poison):
    margins = np.concatenate([backend.to_host(buffer[:GUARD]), backend.to_host(buffer[-GUARD:])])
    if np.isnan(poison):
        assert np.isnan(margins).all(), "a kernel wrote outside C"
    else:
        assert (margins == poison).all(), "a kernel wrote outside C"


# ---- GEMM ---------------------------------------------------------------------------------------


GEMM_CASES = [
    pytest.param(name, algo, dtype, trans_a, trans_b, M, N, K,
                 id=f"{name}-{algo}-{np.dtype(dtype).name}-{'NT'[trans_a]}{'NT'[trans_b]}-{M}x{N}x{K}",
                 marks=[SLOW] if name == "cuda-cpu-check" or M * N * K > 100_000 else [])
    for name in BACKENDS
    for algo in ("naive", "tiled", "regblock", *(("cublas",) if name == "cupy" else ()))
    for dtype in DTYPES
    for trans_a, trans_b in TRANSPOSES
    for M, N, K in GEMM_SIZES
    if not too_slow_to_check(name, M, N, K)
]


@pytest.mark.parametrize("name, algo, dtype, trans_a, trans_b, M, N, K", GEMM_CASES)
def test_gemm_matches_float64_numpy(name, algo, dtype, trans_a, trans_b, M, N, K):
    backend = backend_named(name)
    rng = np.random.default_rng(M * 10007 + N * 101 + K)
    A = rng.random((K, M) if trans_a else (M, K)).astype(dtype)
    B = rng.random((N, K) if trans_b else (K, N)).astype(dtype)
    C0 = rng.random((M, N)).astype(dtype)
    op_a = (A.T if trans_a else A).astype(np.float64)
    op_b = (B.T if trans_b else B).astype(np.float64)
    product = op_a @ op_b
    alpha = 1.5
    tolerance = (K + 3) * (unit_roundoff(dtype) + unit_roundoff(np.float64))

    for beta in (0.0, 0.75, 1.0):
        # beta == 0: C starts as NaN, so an element the kernel does not write (or reads) stays NaN.
        poison = np.nan if beta == 0 else -7.0
        start = np.full((M, N), np.nan, dtype=dtype) if beta == 0 else C0
        buffer, C = guarded_output(backend, start, poison)
        backend.gemm(
            backend.to_device(A), backend.to_device(B), C,
            alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, algo=algo,
        )
        result = backend.to_host(C)
        assert result.dtype == dtype
        assert np.isfinite(result).all(), f"beta={beta}: unwritten or NaN elements"
        expected = alpha * product + beta * C0.astype(np.float64)
        error = relative_error(expected, result, np.inf)
        assert error <= tolerance, f"beta={beta}: relative error {error:.3g} > {tolerance:.3g}"
        assert_guards_intact(backend, buffer, poison)


def course_mode4_matrices(M, N, K, dtype):
    """The course's GEMM test: A[i,j] = i*j/M, B[i,j] = (i*j+1)/N, C[i,j] = (i*j+2)/N."""
    i, j = np.ogrid[:M, :K]
    A = i * j / M
    i, j = np.ogrid[:K, :N]
    B = (i * j + 1) / N
    i, j = np.ogrid[:M, :N]
    C = (i * j + 2) / N
    return A.astype(dtype), B.astype(dtype), C.astype(dtype)


#: needs cuBLAS, so a GPU: without one the list is empty and the test one skip (the CPU build is
#: checked against NumPy above)
COURSE_CASES = [pytest.param(algo, dtype, M, N, K, id=f"{algo}-{np.dtype(dtype).name}-{M}x{N}x{K}")
                for algo in ("naive", "tiled", "regblock") for dtype in DTYPES
                for M, N, K in ((800, 1000, 784), (800, 10, 1000), (800, 100, 1000))] if "cupy" in BACKENDS else []


@pytest.mark.parametrize("algo, dtype, M, N, K", COURSE_CASES)
def test_course_mode4_against_cublas(algo, dtype, M, N, K):
    backend = backend_named("cupy")
    # The course's threshold. A float32 emulation of the kernels' summation order measures
    # 2.2e-7 / 3.9e-7 / 2.9e-7 against the exact product for these three sizes; cuBLAS's own
    # (blocked) summation error is smaller still.
    tolerance = 1e-6 if dtype == np.float32 else 1e-12
    A, B, C = course_mode4_matrices(M, N, K, dtype)
    A_d, B_d = backend.to_device(A), backend.to_device(B)
    ours, anchor = backend.to_device(C), backend.to_device(C)
    backend.gemm(A_d, B_d, ours, alpha=2.0, beta=5.0, algo=algo)
    backend.gemm(A_d, B_d, anchor, alpha=2.0, beta=5.0, algo="cublas")
    error = relative_error(backend.to_host(anchor), backend.to_host(ours), np.inf)
    assert error < tolerance, f"{algo} differs from cuBLAS by {error:.3g} (relative inf-norm)"


def fresh_backend(name: str):
    """A new backend of these tests, made under the kernel folder in use now."""
    if name == "cupy":
        from nn_cuda.backends.cupy_backend import CupyBackend

        return CupyBackend()
    from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend

    return CudaCpuBackend(check=False)


@pytest.mark.parametrize("name", [name for name in BACKENDS if name != "cuda-cpu-check"])
def test_a_backend_runs_the_kernels_of_the_folder_it_was_made_under(name, tmp_path):
    # grade --kernels grades a class folder after folder in one process. The CuPy backend kept one
    # module per file name, so every folder after the first ran the first one's kernels (seen on an
    # H100: after a test had run a workspace's tiled kernel, the project's tiled GEMM left C's last
    # column unwritten for the rest of that pytest worker).
    student = tmp_path / "kernels"
    shutil.copytree(kernel_info.project_kernel_dir(), student)
    tiled = student / "gemm2_tiled.cu"
    guard = "if (i < M && j < N) {"
    assert guard in tiled.read_text()
    tiled.write_text(tiled.read_text().replace(guard, "if (i < M && j < N - 1) {"))  # off by one

    def last_column_written() -> bool:
        backend = fresh_backend(name)
        A, B = (np.ones((5, 3), np.float32), np.ones((3, 7), np.float32))
        C = backend.empty((5, 7), np.float32)
        backend.fill(C, np.nan)
        backend.gemm(backend.to_device(A), backend.to_device(B), C, algo="tiled")
        result = backend.to_host(C)
        assert (result[:, :-1] == 3).all()
        return bool(np.isfinite(result[:, -1]).all())

    assert last_column_written()
    with kernel_info.kernels_from(student):
        assert not last_column_written(), "the student's tiled kernel was not the one that ran"
    assert last_column_written(), "the student's tiled kernel still ran with the project's kernels back"


def test_gemm_rejects_bad_arguments(backend):
    A = backend.zeros((4, 3), np.float32)
    B = backend.zeros((3, 5), np.float32)
    C = backend.zeros((4, 5), np.float32)
    with pytest.raises(ValueError, match="shapes do not match"):
        backend.gemm(A, B, C, trans_a=True)
    with pytest.raises(ValueError, match="one dtype"):
        backend.gemm(A, backend.zeros((3, 5), np.float64), C)
    with pytest.raises(ValueError, match="C-contiguous"):
        backend.gemm(A, backend.zeros((5, 3), np.float32).T, C)
    with pytest.raises(ValueError, match="no GEMM algorithm"):
        backend.gemm(A, B, C, algo="strassen")
    with pytest.raises(ValueError, match=backend.array_kind):
        backend.gemm([[0.0] * 3] * 4, B, C)
    with pytest.raises(ValueError, match="overlaps"):
        square = backend.zeros((4, 4), np.float32)
        backend.gemm(square, square, square)


# ---- element-wise and reduction kernels ----------------------------------------------------------

OP_SHAPES = [(1, 1), (7, 7), (17, 33), (65, 10), (800, 1000)]
OP_IDS = [f"{r}x{c}" for r, c in OP_SHAPES]


def nan_output(backend, shape, dtype):
    out = backend.empty(shape, dtype)
    backend.fill(out, np.nan)
    return out


def sigmoid64(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("rows, cols", OP_SHAPES, ids=OP_IDS)
def test_bias_sigmoid(backend, dtype, rows, cols):
    rng = np.random.default_rng(1)
    Z = (rng.standard_normal((rows, cols)) * 8).astype(dtype)
    Z.flat[0] = -1000.0  # exp(1000) would overflow in a naive sigmoid
    b = rng.standard_normal(cols).astype(dtype)
    out = nan_output(backend, (rows, cols), dtype)
    backend.bias_sigmoid(backend.to_device(Z), backend.to_device(b), out)
    # the bias is added in the array's precision; the rest is compared with float64
    expected = sigmoid64((Z + b).astype(np.float64))
    result = backend.to_host(out)
    assert np.isfinite(result).all()
    # exp (2 ulps), one addition, one division: a few ulps of a result in [0, 1]
    assert np.abs(result - expected).max() <= 8 * unit_roundoff(dtype)

    Z_d = backend.to_device(Z)  # in place: out is Z
    backend.bias_sigmoid(Z_d, backend.to_device(b), Z_d)
    np.testing.assert_array_equal(backend.to_host(Z_d), result)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("rows, cols", OP_SHAPES, ids=OP_IDS)
def test_bias_softmax(backend, dtype, rows, cols):
    rng = np.random.default_rng(2)
    Z = (rng.standard_normal((rows, cols)) * 5).astype(dtype)
    Z[0] += 1e4  # would overflow exp without subtracting the row maximum
    b = rng.standard_normal(cols).astype(dtype)
    out = nan_output(backend, (rows, cols), dtype)
    backend.bias_softmax(backend.to_device(Z), backend.to_device(b), out)
    # the bias is added in the array's precision (at 1e4 that rounding alone is 1e4 u); the rest
    # is compared with float64
    shifted = (Z + b).astype(np.float64)
    shifted -= shifted.max(axis=1, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    result = backend.to_host(out)
    assert np.isfinite(result).all()
    # exp(x - max) within a few ulps, a sum of cols terms and a division: (cols + 4) u at most
    tolerance = 2 * (cols + 8) * unit_roundoff(dtype)
    assert np.abs(result - expected).max() <= tolerance
    np.testing.assert_allclose(result.astype(np.float64).sum(axis=1), 1.0, rtol=tolerance)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("rows, cols", OP_SHAPES, ids=OP_IDS)
def test_softmax_grad(backend, dtype, rows, cols):
    rng = np.random.default_rng(3)
    P = rng.random((rows, cols)).astype(dtype)
    labels = rng.integers(0, cols, rows).astype(np.int32)
    scale = 1.0 / max(rows, 3)
    out = nan_output(backend, (rows, cols), dtype)
    backend.softmax_grad(backend.to_device(P), backend.to_device(labels), scale, out)
    onehot = np.zeros((rows, cols))
    onehot[np.arange(rows), labels] = 1.0
    expected = scale * (P.astype(np.float64) - onehot)
    result = backend.to_host(out)
    assert np.isfinite(result).all()
    # one subtraction and one product, plus scale rounded to the dtype: 3 u of scale
    assert np.abs(result - expected).max() <= 4 * unit_roundoff(dtype) * scale


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("rows, cols", OP_SHAPES, ids=OP_IDS)
def test_sigmoid_backward(backend, dtype, rows, cols):
    rng = np.random.default_rng(4)
    dA = rng.standard_normal((rows, cols)).astype(dtype)
    A = rng.random((rows, cols)).astype(dtype)
    out = nan_output(backend, (rows, cols), dtype)
    backend.sigmoid_backward(backend.to_device(dA), backend.to_device(A), out)
    A64 = A.astype(np.float64)
    expected = dA.astype(np.float64) * A64 * (1.0 - A64)
    result = backend.to_host(out)
    assert np.isfinite(result).all()
    # 1 - A and two products: 3 roundings of a result no larger than |dA| / 4 (measured: 2.7 u)
    assert np.all(np.abs(result - expected) <= 6 * unit_roundoff(dtype) * np.abs(dA) * 0.25)

    dA_d = backend.to_device(dA)  # in place: out is dA
    backend.sigmoid_backward(dA_d, backend.to_device(A), dA_d)
    np.testing.assert_array_equal(backend.to_host(dA_d), result)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("rows, cols", OP_SHAPES + [(3000, 7)], ids=OP_IDS + ["3000x7"])
def test_col_sum(backend, dtype, rows, cols):
    rng = np.random.default_rng(5)
    M = rng.standard_normal((rows, cols)).astype(dtype)
    out = backend.empty((cols,), dtype)
    backend.fill(out, np.nan)
    backend.col_sum(backend.to_device(M), out)
    M64 = M.astype(np.float64)
    expected = M64.sum(axis=0)
    result = backend.to_host(out)
    assert np.isfinite(result).all()
    # any order of summation: within gamma_rows of the sum of |M| in each column
    bound = (rows + 2) * unit_roundoff(dtype) * np.abs(M64).sum(axis=0)
    assert np.all(np.abs(result - expected) <= bound)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (33,), (1000, 784), (10, 1000)], ids=str)
def test_sgd_update(backend, dtype, shape):
    rng = np.random.default_rng(6)
    param = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    lr, decay = 0.05, 1e-3
    param_d = backend.to_device(param)
    backend.sgd_update(param_d, backend.to_device(grad), lr, decay)
    p64 = param.astype(np.float64)
    expected = p64 - lr * (grad.astype(np.float64) + decay * p64)
    result = backend.to_host(param_d)
    scale = np.abs(p64) + lr * np.abs(grad) + 1e-30
    assert np.all(np.abs(result - expected) <= 8 * unit_roundoff(dtype) * scale)


def test_read_backs(backend):
    rng = np.random.default_rng(7)
    P = rng.random((65, 10))
    P /= P.sum(axis=1, keepdims=True)
    P[3, 4] = 0.0  # clamped away from log(0)
    labels = rng.integers(0, 10, 65).astype(np.int32)
    labels[3] = 4
    P_d, labels_d = backend.to_device(P), backend.to_device(labels)
    picked = np.maximum(P[np.arange(65), labels], np.finfo(np.float64).tiny)
    assert backend.cross_entropy_sum(P_d, labels_d) == pytest.approx(-np.log(picked).sum(), rel=1e-12)
    assert backend.sum_squares(P_d) == pytest.approx(float((P**2).sum()), rel=1e-12)
    np.testing.assert_array_equal(backend.argmax_rows(P_d), P.argmax(axis=1))


def test_element_wise_ops_reject_bad_arguments(backend):
    Z = backend.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match="shape"):
        backend.bias_sigmoid(Z, backend.zeros((4,), np.float32), backend.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="does not match"):
        backend.bias_sigmoid(Z, backend.zeros((3,), np.float32), backend.zeros((4, 3), np.float64))
    with pytest.raises(ValueError, match="int32"):
        labels = backend.to_device(np.zeros(4, np.int64))
        backend.softmax_grad(Z, labels, 0.25, backend.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="does not match"):
        backend.sgd_update(Z, backend.zeros((3, 4), np.float32), 0.1, 0.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (7, 33), (65, 784)], ids=str)
def test_pgd_step(backend, dtype, shape):
    # pixels in [0, 0.9]: the clip's top is the pixel_max argument, not a 1 written in the kernel
    rng = np.random.default_rng(8)
    pixel_max = 0.9
    clean = (pixel_max * rng.random(shape)).astype(dtype)
    adversarial = np.clip(clean + rng.uniform(-0.2, 0.2, shape), 0, pixel_max).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    grad.flat[0] = 0.0  # sign(0) = 0: no step
    alpha, eps = 0.05, 0.1
    out = nan_output(backend, shape, dtype)
    backend.pgd_step(backend.to_device(adversarial), backend.to_device(grad), backend.to_device(clean),
                     alpha, eps, pixel_max, out)
    a64, c64 = adversarial.astype(np.float64), clean.astype(np.float64)
    expected = np.clip(np.clip(a64 + alpha * np.sign(grad), c64 - eps, c64 + eps), 0, pixel_max)
    result = backend.to_host(out)
    # one addition and the edges of the ball, each rounded once in the array's precision (and the
    # top of the range, pixel_max rounded to the array's type)
    assert np.abs(result - expected).max() <= 4 * unit_roundoff(dtype)

    adversarial_d = backend.to_device(adversarial)  # in place: out is X_adv
    backend.pgd_step(adversarial_d, backend.to_device(grad), backend.to_device(clean), alpha, eps, pixel_max,
                     adversarial_d)
    np.testing.assert_array_equal(backend.to_host(adversarial_d), result)
