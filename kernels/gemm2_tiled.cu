// GEMM, algorithm 2 of the course (shared-memory tiling): C <- alpha * op(A) @ op(B) + beta * C.
//
// All matrices are row-major. C is M x N, op(A) is M x K (A is stored M x K, or K x M when TRANS_A),
// op(B) is K x N (B is stored K x N, or N x K when TRANS_B).
//
// Tile shape: 32 x 32 thread blocks; block (bx, by) computes the 32 x 32 tile of C whose corner is
// (row0, col0) = (32 * by, 32 * bx). Thread (tx, ty) owns C[row0 + ty, col0 + tx].
//
// What each thread does, for each step of 32 along K:
//   1. loads one element of the 32 x 32 tile of op(A) and one of the 32 x 32 tile of op(B) into
//      shared memory (zero past the edges of the matrices, so no padding is needed);
//   2. __syncthreads(); accumulates row ty of the A tile times column tx of the B tile;
//   3. __syncthreads() before the tiles are overwritten.
// Which element a thread loads follows the layout in memory: the 32 threads of a warp (one ty,
// tx = 0..31) always read 32 consecutive addresses, whether or not the operand is transposed, and
// store them into the tile transposed if needed. The tiles have one extra column so that those
// transposed stores (a stride of 33 elements) hit 32 different banks.
//
// Expected bottleneck: shared memory. Each element loaded from global memory is reused 32 times,
// which lifts the arithmetic intensity from 0.25 FLOP/byte (naive, float32) to 8 FLOP/byte, but
// every multiply-add still reads two operands from shared memory (one of them a broadcast), so
// shared-memory bandwidth and the two barriers per step limit it to a fraction of the peak.

constexpr int TILE = 32;

#include "common.cuh"

// launch: block (TILE, TILE), C tile (TILE, TILE)
template <typename T, bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(TILE * TILE)
gemm_tiled(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
           int M, int N, int K, T alpha, T beta)
{
    // TASK tiled: declare two TILE x (TILE + 1) __shared__ tiles. For each step of TILE along K: each
    //   thread stores one element of the op(A) tile and one of the op(B) tile (zero past the edges of
    //   the matrices), __syncthreads(), adds row ty of the A tile times column tx of the B tile into
    //   its accumulator, __syncthreads() again. Then thread (tx, ty) writes C[TILE * blockIdx.y + ty,
    //   TILE * blockIdx.x + tx] if that is inside C (alpha * acc, plus beta * C only when beta != 0).
    //   About 30 lines.
    __shared__ T a_tile[TILE][TILE + 1];  // a_tile[r][kk] = op(A)[row0 + r, k0 + kk]
    __shared__ T b_tile[TILE][TILE + 1];  // b_tile[kk][c] = op(B)[k0 + kk, col0 + c]

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row0 = blockIdx.y * TILE;
    const int col0 = blockIdx.x * TILE;

    // The tile element this thread loads: tx runs along the dimension that is contiguous in memory.
    const int a_r = TRANS_A ? tx : ty;  // A stored K x M: contiguous along the rows of op(A)
    const int a_k = TRANS_A ? ty : tx;  // A stored M x K: contiguous along k
    const int b_k = TRANS_B ? tx : ty;  // B stored N x K: contiguous along k
    const int b_c = TRANS_B ? ty : tx;  // B stored K x N: contiguous along the columns of op(B)

    T acc = T(0);
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const bool a_inside = row0 + a_r < M && k0 + a_k < K;
        a_tile[a_r][a_k] = a_inside ? op_element<T, TRANS_A>(A, row0 + a_r, k0 + a_k, M, K) : T(0);
        const bool b_inside = k0 + b_k < K && col0 + b_c < N;
        b_tile[b_k][b_c] = b_inside ? op_element<T, TRANS_B>(B, k0 + b_k, col0 + b_c, K, N) : T(0);
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc += a_tile[ty][kk] * b_tile[kk][tx];
        }
        __syncthreads();
    }

    const int i = row0 + ty;
    const int j = col0 + tx;
    if (i < M && j < N) {
        T* c = C + static_cast<long long>(i) * N + j;
        *c = (beta == T(0)) ? alpha * acc : alpha * acc + beta * (*c);
    }
    // END TASK
}
