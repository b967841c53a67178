"""The maths of nn_cuda.model on the NumPy reference backend.

The gradient check is the foundation of every other correctness claim: if the float64 NumPy gradients
match finite differences, then "agrees with NumPy float64" means "computes the project statement's
gradients".
"""

import numpy as np
import pytest

from nn_cuda import model
from nn_cuda.backends import get_backend
from nn_cuda.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


@pytest.fixture
def backend():
    return get_backend("numpy")


def make_network(backend, hidden=4, n_in=6, n=5, dtype=np.float64, seed=1):
    """A tiny network with weights large enough that every nonlinearity is exercised."""
    rng = np.random.default_rng(seed)
    host = {k: 30 * v + 0.3 * rng.standard_normal(v.shape)
            for k, v in model.init_parameters(hidden, seed, n_in=n_in).items()}
    params = model.Parameters(backend, hidden, dtype, n_in=n_in)
    params.load(host)
    X = rng.random((n, n_in)).astype(dtype)
    labels = rng.integers(0, 10, n).astype(np.int32)
    return params, X, labels


def full_gradient(backend, params, X, labels, reg):
    """Analytic dJ/dp: the data terms from backward plus the reg terms the update adds."""
    grads = model.Parameters(backend, params.hidden, params.dtype, n_in=params.n_in)
    workspace = model.Workspace(backend, X.shape[0], params.hidden, params.dtype)
    model.forward(backend, params, workspace, X)
    model.backward(backend, params, grads, workspace, X, labels, 1.0 / X.shape[0])
    g = grads.to_host()
    p = params.to_host()
    g["W1"] += reg * p["W1"]
    g["W2"] += reg * p["W2"]
    return g


def loss_at(backend, params, flat, X, labels, reg):
    backend.copy(flat, params.flat)
    workspace = model.Workspace(backend, X.shape[0], params.hidden, params.dtype)
    Yhat = model.forward(backend, params, workspace, X)
    return model.loss(backend, params, Yhat, labels, reg)


@pytest.mark.parametrize("name", model.PARAMETER_NAMES)
def test_gradient_matches_central_differences(backend, name):
    reg = 0.1
    params, X, labels = make_network(backend)
    analytic = full_gradient(backend, params, X, labels, reg)[name].ravel()
    base = params.to_host()
    start, stop = params.offsets[name]
    flat0 = backend.to_host(params.flat)
    numeric = np.empty(stop - start)
    h = 1e-6  # central differences: truncation O(h^2) ~ 1e-12, rounding ~ eps / h ~ 1e-10
    for i in range(start, stop):
        up, down = flat0.copy(), flat0.copy()
        up[i] += h
        down[i] -= h
        numeric[i - start] = (loss_at(backend, params, up, X, labels, reg)
                              - loss_at(backend, params, down, X, labels, reg)) / (2 * h)
    params.load(base)
    err = np.linalg.norm(numeric - analytic) / np.linalg.norm(analytic)
    assert err <= 1e-7, f"{name}: relative error {err:.2e}"  # measured: ~2e-9 to 1e-10


def test_sigmoid_and_softmax_do_not_overflow(backend):
    for dtype in (np.float32, np.float64):
        Z = np.array([[-1e30, -800.0, 0.0, 800.0, 1e30]], dtype=dtype)
        out = np.full_like(Z, np.nan)
        backend.bias_sigmoid(Z, np.zeros(5, dtype), out)
        np.testing.assert_allclose(out, [[0, 0, 0.5, 1, 1]], atol=1e-30)
        Yhat = np.full_like(Z, np.nan)
        backend.bias_softmax(Z, np.zeros(5, dtype), Yhat)
        assert np.all(np.isfinite(Yhat)) and np.isclose(Yhat.sum(), 1)
        assert Yhat[0, 4] == 1


def test_numpy_backend_ops_match_definitions(backend):
    rng = np.random.default_rng(0)
    A = rng.random((7, 3))
    dA = rng.standard_normal((7, 3))
    out = np.full_like(A, np.nan)
    backend.sigmoid_backward(dA, A, out)
    np.testing.assert_allclose(out, dA * A * (1 - A), rtol=1e-15)
    labels = np.array([0, 2, 1, 1, 0, 2, 2], dtype=np.int32)
    grad = np.full_like(A, np.nan)
    backend.softmax_grad(A, labels, 0.25, grad)
    np.testing.assert_allclose(grad, 0.25 * (A - np.eye(3)[labels]), rtol=1e-15)
    s = np.full(3, np.nan)
    backend.col_sum(A, s)
    np.testing.assert_allclose(s, A.sum(axis=0), rtol=1e-15)
    p, g = rng.random(11), rng.random(11)
    expected = p - 0.1 * (g + 0.01 * p)
    backend.sgd_update(p, g, 0.1, 0.01)
    np.testing.assert_allclose(p, expected, rtol=1e-14)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_numpy_gemm_contract(backend, trans_a, trans_b):
    rng = np.random.default_rng(3)
    M, N, K = 5, 4, 3
    A = rng.random((K, M) if trans_a else (M, K))
    B = rng.random((N, K) if trans_b else (K, N))
    C0 = rng.random((M, N))
    C = C0.copy()
    backend.gemm(A, B, C, 2.0, 5.0, trans_a=trans_a, trans_b=trans_b)
    ref = 2.0 * (A.T if trans_a else A) @ (B.T if trans_b else B) + 5.0 * C0
    np.testing.assert_allclose(C, ref, rtol=1e-14)
    C[:] = np.nan  # beta = 0 must not read C
    backend.gemm(A, B, C, 2.0, 0.0, trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(C, ref - 5.0 * C0, rtol=1e-14)


def test_rank_with_no_rows_contributes_zero_gradient(backend):
    params, X, labels = make_network(backend)
    grads = model.Parameters(backend, params.hidden, params.dtype, n_in=params.n_in)
    backend.fill(grads.flat, np.nan)
    workspace = model.Workspace(backend, 4, params.hidden, params.dtype)
    model.forward(backend, params, workspace, X[:0])
    model.backward(backend, params, grads, workspace, X[:0], labels[:0], 1.0)
    assert np.all(backend.to_host(grads.flat) == 0)


def test_init_is_seeded_and_scaled():
    a, b, c = (model.init_parameters(1000, seed) for seed in (5, 5, 6))
    assert np.array_equal(a["W1"], b["W1"]) and not np.array_equal(a["W1"], c["W1"])
    s1, s2 = model.DEFAULT_INIT_SCALE
    # 784,000 and 10,000 draws: the sample std is within 0.2 % and 2 % of the scale
    assert abs(a["W1"].std() / s1 - 1) < 0.005 and abs(a["W2"].std() / s2 - 1) < 0.03
    assert not a["b1"].any() and not a["b2"].any()
    course = model.init_parameters(1000, 5, scale=model.COURSE_INIT_SCALE)
    assert np.allclose(course["W1"], a["W1"] * model.COURSE_INIT_SCALE[0] / s1, rtol=1e-12, atol=0)


def test_checkpoint_round_trip_and_errors(tmp_path):
    host = model.init_parameters(7, seed=2)
    path = save_checkpoint(tmp_path / "m.npz", host, hidden=7)
    loaded, meta = load_checkpoint(path)
    assert meta["hidden"] == 7
    for name in model.PARAMETER_NAMES:
        assert np.array_equal(loaded[name], host[name])
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary left behind
    bad = dict(host, b2=np.zeros(9))
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(CheckpointError, match="b2 has shape"):
        load_checkpoint(tmp_path / "bad.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(CheckpointError, match="not a checkpoint written by --save"):
        load_checkpoint(tmp_path / "junk.npz")
    np.savez(tmp_path / "obj.npz", W1=np.array([object()], dtype=object))
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "obj.npz")
