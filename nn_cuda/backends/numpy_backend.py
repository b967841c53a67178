"""The CPU reference backend: NumPy, every operation writing into a preallocated output (`out=`).

In float64 this is the reference that every other backend is compared with. It is also a fair CPU
baseline: the GEMMs go to NumPy's BLAS with transposes passed as strides (no transposed copies), and
the element-wise work runs in place.
"""

from __future__ import annotations

import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    gemm_algos = ("numpy",)
    on_device = False

    def __init__(self, gemm=None):
        super().__init__(gemm)
        self._scratch_buffers = {}

    # ---- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype)

    def fill(self, out, value):
        out.fill(value)

    def to_device(self, host_array):
        return np.array(host_array, order="C", copy=True)

    def to_host(self, array):
        return np.array(array, copy=True)

    def copy(self, src, dst):
        np.copyto(dst, src)

    def take_rows(self, src, rows, out):
        np.take(src, rows, axis=0, out=out)

    # ---- linear algebra -----------------------------------------------------------------------
    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        if algo not in (None, "numpy"):
            raise ValueError(f"backend 'numpy' has no GEMM algorithm {algo!r}")
        op_a = A.T if trans_a else A
        op_b = B.T if trans_b else B
        if op_a.shape[1] != op_b.shape[0] or C.shape != (op_a.shape[0], op_b.shape[1]):
            raise ValueError(
                f"gemm shapes do not match: op(A) {op_a.shape}, op(B) {op_b.shape}, C {C.shape}"
            )
        if beta == 0:
            np.matmul(op_a, op_b, out=C)
            if alpha != 1:
                C *= alpha
        else:
            product = op_a @ op_b
            C *= beta
            product *= alpha
            C += product

    # ---- fused element-wise and reduction operations ------------------------------------------
    def bias_sigmoid(self, Z, b, out):
        # sigmoid(z) = (1 + tanh(z / 2)) / 2: one transcendental, no overflow for any finite z.
        np.add(Z, b, out=out)
        out *= 0.5
        np.tanh(out, out=out)
        out *= 0.5
        out += 0.5

    def bias_softmax(self, Z, b, out):
        np.add(Z, b, out=out)
        out -= out.max(axis=1, keepdims=True)
        np.exp(out, out=out)
        out /= out.sum(axis=1, keepdims=True)

    def softmax_grad(self, P, labels, scale, out):
        np.multiply(P, scale, out=out)
        out[np.arange(out.shape[0]), labels] -= scale

    def sigmoid_backward(self, dA, A, out):
        one_minus_a = self._scratch(A.shape, A.dtype)
        np.subtract(1, A, out=one_minus_a)
        one_minus_a *= A
        np.multiply(dA, one_minus_a, out=out)

    def col_sum(self, M, out):
        np.sum(M, axis=0, out=out)

    def sgd_update(self, param, grad, lr, decay):
        # param - lr * (grad + decay * param) == param * (1 - lr * decay) - lr * grad
        step = self._scratch(grad.shape, grad.dtype)
        np.multiply(grad, lr, out=step)
        if decay:
            param *= 1 - lr * decay
        param -= step

    def pgd_step(self, X_adv, grad, X_clean, alpha, eps, pixel_max, out):
        step = self._scratch(grad.shape, grad.dtype)
        np.sign(grad, out=step)
        step *= alpha
        np.add(X_adv, step, out=out)
        np.subtract(X_clean, eps, out=step)  # the lower edge of the ball
        np.maximum(out, step, out=out)
        np.add(X_clean, eps, out=step)  # the upper edge
        np.minimum(out, step, out=out)
        np.clip(out, 0, pixel_max, out=out)

    def _scratch(self, shape, dtype):
        """A reusable work array (one per shape and dtype), so the hot path allocates nothing."""
        key = (tuple(shape), np.dtype(dtype))
        buffer = self._scratch_buffers.get(key)
        if buffer is None:
            buffer = self._scratch_buffers[key] = np.empty(shape, dtype=dtype)
        return buffer

    # ---- read-backs ---------------------------------------------------------------------------
    def cross_entropy_sum(self, P, labels):
        picked = P[np.arange(P.shape[0]), labels].astype(np.float64)
        return float(-np.log(np.maximum(picked, np.finfo(P.dtype).tiny)).sum())

    def sum_squares(self, X):
        flat = X.ravel().astype(np.float64, copy=False)
        return float(flat @ flat)

    def argmax_rows(self, P):
        return np.argmax(P, axis=1)
