"""Naive GEMM (the course's first algorithm): C <- alpha * op(A) @ op(B) + beta * C.

Algorithm   one thread per element of C, no data reuse between threads.
Block       32 x 8 threads covering a 8-row x 32-column patch of C; the grid covers all of C.
Thread      (threadIdx.x, threadIdx.y) -> C[i, j] with j (the contiguous dimension of C) from x
            and i from y. It walks the K dimension: acc += op(A)[i, k] * op(B)[k, j], then writes
            alpha * acc (+ beta * C[i, j] when beta != 0; with beta == 0, C is not read).
Bottleneck  global-memory bandwidth and latency: every multiply-add loads two values from global
            memory (2 loads per 2 flops). A warp reads one element of op(A) (a broadcast) and 32
            consecutive elements of op(B) per step when B is not transposed (coalesced); with
            trans_b the 32 threads read 32 different rows of B (strided, ~32x the traffic).
"""

from __future__ import annotations

import functools

from numba import cuda


@functools.lru_cache(maxsize=None)
def kernel(trans_a: bool, trans_b: bool):
    """The naive kernel for one transpose combination, built once (see __init__)."""

    @cuda.jit
    def gemm_naive(A, B, C, alpha, beta):
        M, N = C.shape
        K = A.shape[0] if trans_a else A.shape[1]
        j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x  # column of C
        i = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y  # row of C
        if i >= M or j >= N:
            return
        acc = C.dtype.type(0)
        k = 0
        while k < K:  # not `for k in range(K)`: see the package's notes on loops
            a = A[k, i] if trans_a else A[i, k]  # op(A)[i, k]
            b = B[j, k] if trans_b else B[k, j]  # op(B)[k, j]
            acc += a * b
            k += 1
        if beta == 0:
            C[i, j] = alpha * acc
        else:
            C[i, j] = alpha * acc + beta * C[i, j]

    return gemm_naive
