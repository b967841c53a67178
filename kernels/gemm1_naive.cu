// GEMM, algorithm 1 of the course ("naive"): C <- alpha * op(A) @ op(B) + beta * C, in place.
//
// All matrices are row-major. C is M x N, op(A) is M x K (A is stored M x K, or K x M when TRANS_A),
// op(B) is K x N (B is stored K x N, or N x K when TRANS_B).
//
// Thread mapping: one thread per element C[i, j]. threadIdx.x runs along the columns j (the
// contiguous dimension of C), threadIdx.y along the rows i; the launch line below gives the block
// shape (32 x 8), and the grid covers C with tiles of that many elements. Threads outside C return
// at once.
//
// What each thread does: walks the whole K dimension, reading row i of op(A) and column j of op(B)
// straight from global memory into one accumulator, then writes alpha * acc (+ beta * C[i, j]).
// When beta == 0, C is never read (it may hold NaN).
//
// Expected bottleneck: memory. Every multiply-add needs two loads and nothing is shared on purpose.
// In a warp (one i, 32 consecutive j) op(A)[i, k] is one address (a broadcast) and op(B)[k, j] is 32
// consecutive addresses when B is not transposed; with TRANS_B they are K elements apart and each
// thread pulls its own 32-byte sector. Only the L1/L2 caches provide reuse.

#include "common.cuh"

// launch: block (32, 8), C tile (8, 32)
template <typename T, bool TRANS_A, bool TRANS_B>
__global__ void gemm_naive(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                           int M, int N, int K, T alpha, T beta)
{
    // TASK naive: one thread per element C[i, j]: j from the x indices, i from the y indices; threads
    //   outside C return. Sum op(A)[i, k] * op(B)[k, j] over k (op_element of common.cuh reads an
    //   operand that may be stored transposed), then write alpha * acc, plus beta * C[i, j] only when
    //   beta != 0 (C may hold garbage when beta == 0). About 10 lines.
    const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of C
    const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of C
    if (i >= M || j >= N) {
        return;
    }

    T acc = T(0);
    for (int k = 0; k < K; ++k) {
        acc += op_element<T, TRANS_A>(A, i, k, M, K) * op_element<T, TRANS_B>(B, k, j, K, N);
    }

    T* c = C + static_cast<long long>(i) * N + j;
    *c = (beta == T(0)) ? alpha * acc : alpha * acc + beta * (*c);
    // END TASK
}
