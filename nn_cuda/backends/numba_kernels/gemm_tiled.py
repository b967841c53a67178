"""Shared-memory tiled GEMM (the course's algorithm 1): C <- alpha * op(A) @ op(B) + beta * C.

Algorithm   each block computes one 32 x 32 tile of C. It walks K in steps of 32; at each step the
            block stages a 32 x 32 tile of op(A) and a 32 x 32 tile of op(B) in shared memory (one
            element of each per thread, zeros past the edges of the matrices), synchronises,
            accumulates the 32 products of its row of the op(A) tile and column of the op(B) tile,
            and synchronises again before the tiles are overwritten.
Block       32 x 32 = 1024 threads; the grid covers C with 32 x 32 tiles (edge tiles are partial).
Thread      (threadIdx.x, threadIdx.y) owns C[row0 + ty, col0 + tx] (x along the contiguous
            columns). For its loads it takes the element of each tile that makes the warp read
            consecutive addresses of the stored matrix: a stored-transposed operand is read along
            its rows and written into the tile transposed. The tiles are 32 x 33 (one padding
            column) so that those transposed writes, which go down a column of the tile, hit 32
            different shared-memory banks instead of one.
Bottleneck  each element loaded from global memory is used 32 times, so global traffic is 1/32
            of the naive kernel's; what limits it now is shared memory: every multiply-add reads
            two shared values (one a broadcast), so the shared-memory load bandwidth and the two
            __syncthreads per step bound the speed, not the FMA units.
"""

from __future__ import annotations

import functools

from numba import cuda

#: the tile edge: the block is TILE x TILE threads and computes a TILE x TILE tile of C
TILE = 32
#: the row length of a shared tile: one padding column avoids bank conflicts on transposed writes
TILE_ROW = TILE + 1


@functools.lru_cache(maxsize=None)
def kernel(trans_a: bool, trans_b: bool):
    """The tiled kernel for one transpose combination, built once (see __init__)."""

    @cuda.jit
    def gemm_tiled(A, B, C, alpha, beta):
        # a_tile[r, kk] = op(A)[row0 + r, k0 + kk];  b_tile[kk, c] = op(B)[k0 + kk, col0 + c]
        a_tile = cuda.shared.array((TILE, TILE_ROW), dtype=C.dtype)
        b_tile = cuda.shared.array((TILE, TILE_ROW), dtype=C.dtype)

        M, N = C.shape
        K = A.shape[0] if trans_a else A.shape[1]
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row0 = cuda.blockIdx.y * TILE
        col0 = cuda.blockIdx.x * TILE
        i = row0 + ty  # the element of C this thread computes
        j = col0 + tx
        zero = C.dtype.type(0)

        acc = zero
        k0 = 0
        while k0 < K:  # not `for k0 in range(0, K, TILE)`: see the package's notes on loops
            # Stage one element of op(A) (x runs along the stored row of A: coalesced).
            if trans_a:  # A is K x M: A[k0 + ty, row0 + tx] is op(A)[row0 + tx, k0 + ty]
                k = k0 + ty
                r = row0 + tx
                a_tile[tx, ty] = A[k, r] if (k < K and r < M) else zero
            else:  # A is M x K: A[i, k0 + tx] is op(A)[i, k0 + tx]
                k = k0 + tx
                a_tile[ty, tx] = A[i, k] if (i < M and k < K) else zero
            # Stage one element of op(B), likewise.
            if trans_b:  # B is N x K: B[col0 + ty, k0 + tx] is op(B)[k0 + tx, col0 + ty]
                k = k0 + tx
                c = col0 + ty
                b_tile[tx, ty] = B[c, k] if (c < N and k < K) else zero
            else:  # B is K x N: B[k0 + ty, j] is op(B)[k0 + ty, j]
                k = k0 + ty
                b_tile[ty, tx] = B[k, j] if (k < K and j < N) else zero
            cuda.syncthreads()  # the tiles are complete

            kk = 0
            while kk < TILE:
                acc += a_tile[ty, kk] * b_tile[kk, tx]
                kk += 1
            cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
            k0 += TILE

        if i < M and j < N:
            if beta == 0:
                C[i, j] = alpha * acc
            else:
                C[i, j] = alpha * acc + beta * C[i, j]

    return gemm_tiled
