"""Register-blocked GEMM (the course's "even better" algorithm, statement section 4.2).

    C <- alpha * op(A) @ op(B) + beta * C

From column-major to row-major. The course's kernel is written for column-major matrices: a block
of 16 x 4 = 64 threads computes a 64 x 16 tile of D = A B; each step puts a 4 x 16 slice of B in
shared memory (one element per thread), each thread reads a 1 x 4 piece of A into a local a[4] and
updates its 1 x 16 row of D held in registers. Our matrices are row-major, and a row-major M x N
matrix is the column-major N x M matrix holding its transpose. So we run the course's kernel on

    C^T = op(B)^T op(A)^T        (column-major views, no data moved)

its first operand is our op(B)^T, its second our op(A)^T, its output C^T. Read back in row-major
terms, one block computes a 16-row x 64-column tile of C, and:

Block       blockDim = (16, 4): 64 threads, t = 16 * threadIdx.y + threadIdx.x in 0..63.
Thread      thread t owns column j = col0 + t of the tile: the 16 values C[row0 : row0 + 16, j],
            kept in a local array c_col[16] (registers). At each step of 4 along K it
              - stages ONE element of the 4 x 16 slice op(A)[row0 : row0 + 16, k0 : k0 + 4] in
                shared memory (the course's shared slice of its second operand), then
              - reads its own 4 x 1 piece op(B)[k0 : k0 + 4, j] into a local b_col[4] (the course's
                a[4]) and does 4 x 16 multiply-adds: c_col[r] += a_slice[kk, r] * b_col[kk].
            The 64 threads of a block walk the contiguous dimension of C and of B: their reads of B
            (when not transposed) and their writes of C are coalesced, as the course's reads of A
            and writes of D were. Each thread loads its shared element so that consecutive threads
            read consecutive addresses of A (along K for A, along M for a transposed A).
Bottleneck  per step a thread does 4 x 16 = 64 multiply-adds for 5 global loads (4 of op(B), 1 to
            stage the slice): about the tiled kernel's global traffic per flop. The gain is in
            shared memory: one read per multiply-add, a broadcast (the warp reads one a_slice
            element), against the tiled kernel's two, and each op(B) value is reused 16 times from
            a register. What remains: only 64 threads per block and a short step (K / 4 steps, two
            __syncthreads each) leave memory latency exposed; with trans_b the reads of B are
            strided (a warp touches 32 rows instead of one).
"""

from __future__ import annotations

import functools

from numba import cuda

#: the block's threads; it computes a TILE_M x TILE_N tile of C (TILE_N = threads in the block)
BLOCK_X, BLOCK_Y = 16, 4
TILE_M, TILE_N = 16, BLOCK_X * BLOCK_Y
#: the K step: a TILE_K x TILE_M slice of op(A)^T is staged per step (one element per thread)
TILE_K = 4


@functools.lru_cache(maxsize=None)
def kernel(trans_a: bool, trans_b: bool):
    """The register-blocked kernel for one transpose combination, built once (see __init__)."""

    @cuda.jit
    def gemm_regblock(A, B, C, alpha, beta):
        # a_slice[kk, r] = op(A)[row0 + r, k0 + kk]: the 4 x 16 slice shared by the block
        a_slice = cuda.shared.array((TILE_K, TILE_M), dtype=C.dtype)
        b_col = cuda.local.array(TILE_K, dtype=C.dtype)  # op(B)[k0 : k0 + 4, j]
        c_col = cuda.local.array(TILE_M, dtype=C.dtype)  # C[row0 : row0 + 16, j] being summed

        M, N = C.shape
        K = A.shape[0] if trans_a else A.shape[1]
        t = cuda.threadIdx.y * BLOCK_X + cuda.threadIdx.x  # 0..63
        row0 = cuda.blockIdx.y * TILE_M
        j = cuda.blockIdx.x * TILE_N + t  # the column of C this thread owns
        zero = C.dtype.type(0)

        # The element of the shared slice this thread loads, chosen for coalesced reads of A.
        if trans_a:  # A is K x M: 16 consecutive threads read 16 consecutive entries of a row
            load_k = t // TILE_M
            load_r = t % TILE_M
        else:  # A is M x K: 4 consecutive threads read 4 consecutive entries of a row
            load_k = t % TILE_K
            load_r = t // TILE_K
        load_i = row0 + load_r

        for r in range(TILE_M):
            c_col[r] = zero

        k0 = 0
        while k0 < K:  # not `for k0 in range(0, K, TILE_K)`: see the package's notes on loops
            k = k0 + load_k
            if load_i < M and k < K:
                a_slice[load_k, load_r] = A[k, load_i] if trans_a else A[load_i, k]
            else:
                a_slice[load_k, load_r] = zero
            for kk in range(TILE_K):
                k = k0 + kk
                if j < N and k < K:
                    b_col[kk] = B[j, k] if trans_b else B[k, j]
                else:
                    b_col[kk] = zero
            cuda.syncthreads()  # the slice is complete

            for kk in range(TILE_K):
                for r in range(TILE_M):
                    c_col[r] += a_slice[kk, r] * b_col[kk]
            cuda.syncthreads()  # everyone is done with the slice before it is overwritten
            k0 += TILE_K

        if j < N:
            for r in range(TILE_M):
                i = row0 + r
                if i < M:
                    if beta == 0:
                        C[i, j] = alpha * c_col[r]
                    else:
                        C[i, j] = alpha * c_col[r] + beta * C[i, j]

    return gemm_regblock
