"""The network's element-wise and reduction kernels (semantics in nn_cuda/backends/base.py).

Algorithm   one thread per output element (the flat and 2-D kernels), per row (softmax) or per
            column (column sums); the bias add is fused into the activation, saving a pass over
            the matrix.
Bottleneck  all are memory-bound: each reads its inputs and writes its output once, with a few flops
            (one exp at most) per element, so their speed is the memory bandwidth - or, for the
            small grids of 10-column matrices (softmax, its gradient, the bias gradient of layer
            2), launch latency.

Kernel              block    each thread
fill_flat           256      out[idx] = value
bias_sigmoid        32 x 8   out[i, j] = sigmoid(Z[i, j] + b[j]); x runs along the columns j
bias_softmax        128      one ROW i: its max, the sum of exp(z - max), then the quotients. Rows
                             have 10 entries here, too few to split between threads; the price is
                             strided loads within a warp, on a matrix 100x smaller than A1.
softmax_grad        32 x 8   out[i, j] = scale * (P[i, j] - (j == labels[i])): no one-hot matrix
sigmoid_backward    256      out[idx] = dA[idx] * A[idx] * (1 - A[idx]) (flat; out may be dA)
col_sum             32 x 8   x picks the column j (coalesced reads); the 8 threads of a column sum
                             every 8th row, then add their 8 partial sums through shared memory
sgd_update          256      p[idx] <- p[idx] - lr * (g[idx] + decay * p[idx]) (flat)
take_rows           32 x 8   out[i, j] = src[rows[i], j]: the --shuffle gather, once per epoch
pgd_step            256      one pixel of an attack step: x + alpha * sign(g), clipped to the eps
                             ball around the clean pixel and to [0, 1] (flat)

The GEMM kernels mirror kernels/*.cu exactly; these follow kernels/nn_ops.cu in what each thread
computes, with two simplifications: one block per 256 elements instead of a capped grid with a
grid-stride loop, and 32 x 8 blocks for col_sum instead of 32 x 32 (the same algorithm with 8
partial sums per column; a quarter of the threads keeps the CPU simulator fast).

"flat" kernels take 1-D views: the backend reshapes C-contiguous arrays of any shape. Constants are
made with `X.dtype.type(...)`, so the float32 kernels compute in float32 (a bare 1.0 would be a
float64 and promote the whole expression). Every scalar argument arrives already of the arrays'
dtype (the backend casts it).
"""

from __future__ import annotations

import math

from numba import cuda

#: threads per block of the flat (1-D) kernels
FLAT_BLOCK = 256
#: threads per block (x along the columns, y along the rows) of the 2-D kernels
BLOCK_X, BLOCK_Y = 32, 8
#: threads per block of the one-thread-per-row softmax
ROW_BLOCK = 128


@cuda.jit
def fill_flat(out, value):
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < out.shape[0]:
        out[idx] = value


@cuda.jit
def bias_sigmoid(Z, b, out):
    """out[i, j] = sigmoid(Z[i, j] + b[j]); Z and out may be the same array."""
    M, N = out.shape
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    i = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if i >= M or j >= N:
        return
    one = out.dtype.type(1)
    z = Z[i, j] + b[j]
    # exp only ever sees a non-positive argument, so it cannot overflow for any finite z
    if z >= 0:
        out[i, j] = one / (one + math.exp(-z))
    else:
        e = math.exp(z)
        out[i, j] = e / (one + e)


@cuda.jit
def bias_softmax(Z, b, out):
    """out[i, :] = softmax(Z[i, :] + b), one thread per row; Z and out may be the same array."""
    M, N = out.shape
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i >= M:
        return
    # while loops, not range(): see the notes on loops in __init__
    row_max = Z[i, 0] + b[0]
    j = 1
    while j < N:
        row_max = max(row_max, Z[i, j] + b[j])
        j += 1
    total = out.dtype.type(0)
    j = 0
    while j < N:
        e = math.exp(Z[i, j] + b[j] - row_max)  # argument <= 0: no overflow, largest term is 1
        out[i, j] = e
        total += e
        j += 1
    inv_total = out.dtype.type(1) / total
    j = 0
    while j < N:
        out[i, j] *= inv_total
        j += 1


@cuda.jit
def softmax_grad(P, labels, scale, out):
    """out[i, j] = scale * (P[i, j] - (j == labels[i])); P and out may be the same array."""
    M, N = out.shape
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    i = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if i >= M or j >= N:
        return
    p = P[i, j]
    if j == labels[i]:
        p -= out.dtype.type(1)
    out[i, j] = scale * p


@cuda.jit
def sigmoid_backward(dA, A, out):
    """out = dA * A * (1 - A) on flat views; out may be dA."""
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < out.shape[0]:
        a = A[idx]
        out[idx] = dA[idx] * a * (out.dtype.type(1) - a)


@cuda.jit
def col_sum(M, out):
    """out[j] = sum_i M[i, j]: a block of 32 x 8 threads sums 32 columns."""
    partial = cuda.shared.array((BLOCK_Y, BLOCK_X), dtype=out.dtype)
    rows, cols = M.shape
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    j = cuda.blockIdx.x * BLOCK_X + tx

    # Each of the 8 threads of column j sums rows ty, ty + 8, ty + 16, ...
    acc = out.dtype.type(0)
    if j < cols:
        i = ty
        while i < rows:  # not range(ty, rows, BLOCK_Y): see the notes on loops in __init__
            acc += M[i, j]
            i += BLOCK_Y
    partial[ty, tx] = acc
    cuda.syncthreads()

    # Tree reduction over the 8 partial sums of each column: 8 -> 4 -> 2 -> 1.
    stride = BLOCK_Y // 2
    while stride > 0:
        if ty < stride:
            partial[ty, tx] += partial[ty + stride, tx]
        cuda.syncthreads()
        stride //= 2

    if ty == 0 and j < cols:
        out[j] = partial[0, tx]


@cuda.jit
def sgd_update(param, grad, lr, decay):
    """param <- param - lr * (grad + decay * param) on flat views."""
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < param.shape[0]:
        p = param[idx]
        param[idx] = p - lr * (grad[idx] + decay * p)


@cuda.jit
def take_rows(src, rows, out):
    """out[i, j] = src[rows[i], j]: the rows of src in the order of `rows` (a permutation)."""
    M, N = out.shape
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    i = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if i < M and j < N:
        out[i, j] = src[rows[i], j]


@cuda.jit
def pgd_step(X_adv, grad, X_clean, alpha, eps, pixel_max, out):
    """out = clip(clip(X_adv + alpha * sign(grad), X_clean - eps, X_clean + eps), 0, pixel_max), flat
    views.

    One thread per pixel; reads three arrays and writes one, so it is memory-bound (4 accesses for
    about 6 flops). out may be X_adv.
    """
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < out.shape[0]:
        zero = out.dtype.type(0)
        g = grad[idx]
        step = alpha if g > zero else (-alpha if g < zero else zero)
        x = X_adv[idx] + step
        clean = X_clean[idx]
        x = min(max(x, clean - eps), clean + eps)
        out[idx] = min(max(x, zero), pixel_max)
