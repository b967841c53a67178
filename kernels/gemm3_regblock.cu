// GEMM, the course's "even better" algorithm (register blocking, statement section 4.2):
// C <- alpha * op(A) @ op(B) + beta * C, in place.
//
// All matrices are row-major. C is M x N, op(A) is M x K (A is stored M x K, or K x M when TRANS_A),
// op(B) is K x N (B is stored K x N, or N x K when TRANS_B).
//
// The course describes this kernel for COLUMN-major matrices, D = A B: 16 x 4 = 64 threads compute a
// 64 x 16 tile of D; per step a 4 x 16 slice of B goes to shared memory and each thread reads a 1 x 4
// piece of A into a local a[4] and updates its 1 x 16 row of D, kept in registers. Thread t of the
// block owns row t of the tile, so a warp reads A and writes D along columns: coalesced.
// A row-major matrix is the column-major view of its transpose, and C^T = op(B)^T op(A)^T. So this
// file runs the course's kernel on the column-major views: its A is our op(B)^T, its B is our
// op(A)^T, its D is C^T. In our terms:
//   - block (bx, by) computes the 16 x 64 tile C[i0 : i0 + 16, j0 : j0 + 64], i0 = 16 by, j0 = 64 bx;
//   - thread t = 16 * threadIdx.y + threadIdx.x owns column j = j0 + t of that tile: c[16] in registers;
//   - per step of 4 along K, the block stages the 4 x 16 slice op(A)[i0 : i0 + 16, k0 : k0 + 4]
//     (transposed: a_slice[kk][ii]) in shared memory, one element per thread, and each thread reads
//     b_col[4] = op(B)[k0 : k0 + 4, j] (the course's a[4]) into registers;
//   - c[ii] += b_col[kk] * a_slice[kk][ii] for kk < 4, ii < 16: 64 multiply-adds per step.
// The 64 threads walk the contiguous dimension j of C and of B: reads of B (when not transposed) and
// writes of C are coalesced, exactly as in the course. Edges: elements past M, N or K load as zero
// and are never written, so any M, N, K >= 1 works without padding. When beta == 0, C is not read.
//
// Expected bottleneck: latency. Each element of B is reused 16 times from registers and each element
// of A 64 times from shared memory, and a multiply-add reads one shared operand, a broadcast (the
// tiled kernel reads two); but only 64 multiply-adds separate two barriers and the global loads of
// the next step are not overlapped with the arithmetic, so it relies on many resident 64-thread
// blocks to hide the latency of global memory. With TRANS_B a warp reads B with a stride of
// K elements (each thread's four k values are contiguous), which costs extra memory transactions.

constexpr int RB_THREADS_X = 16;
constexpr int RB_THREADS_Y = 4;
constexpr int RB_THREADS = RB_THREADS_X * RB_THREADS_Y;  // 64 columns of C per block
constexpr int RB_ROWS = 16;                              // rows of C per block (c[16] per thread)
constexpr int RB_K = 4;                                  // step along K

#include "common.cuh"

// launch: block (RB_THREADS_X, RB_THREADS_Y), C tile (RB_ROWS, RB_THREADS)
// No __launch_bounds__(64) on purpose: with it, CUDA 13.0's ptxas for sm_90 trades registers for
// occupancy and spills 8 bytes of gemm_regblock<double, false, true>; without it nothing spills.
template <typename T, bool TRANS_A, bool TRANS_B>
__global__ void gemm_regblock(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                              int M, int N, int K, T alpha, T beta)
{
    // TASK regblock: thread t = RB_THREADS_X * threadIdx.y + threadIdx.x owns column j = RB_THREADS *
    //   blockIdx.x + t of the RB_ROWS x RB_THREADS tile of C whose first row is RB_ROWS * blockIdx.y,
    //   accumulated in T c[RB_ROWS]. Per step of RB_K along K: the block stages the RB_K x RB_ROWS
    //   slice of op(A) in __shared__ memory (one element per thread, a_slice[kk][ii]), each thread
    //   reads its RB_K values of column j of op(B) into registers, __syncthreads(), c[ii] += b_col[kk]
    //   * a_slice[kk][ii] for every kk and ii, __syncthreads() again. Zeros past M, N and K; at the
    //   end write the rows of c that lie inside C. About 45 lines.
    __shared__ T a_slice[RB_K][RB_ROWS];  // a_slice[kk][ii] = op(A)[i0 + ii, k0 + kk]

    const int t = threadIdx.y * RB_THREADS_X + threadIdx.x;  // 0 .. 63
    const int i0 = blockIdx.y * RB_ROWS;
    const int j = blockIdx.x * RB_THREADS + t;  // the column of C this thread owns
    const bool j_inside = j < N;

    // The slice element this thread loads: consecutive threads follow the contiguous dimension of A.
    const int s_i = TRANS_A ? t % RB_ROWS : t / RB_K;  // A stored K x M: contiguous along i
    const int s_k = TRANS_A ? t / RB_ROWS : t % RB_K;  // A stored M x K: contiguous along k

    T c[RB_ROWS];
#pragma unroll
    for (int ii = 0; ii < RB_ROWS; ++ii) {
        c[ii] = T(0);
    }

    for (int k0 = 0; k0 < K; k0 += RB_K) {
        const bool s_inside = i0 + s_i < M && k0 + s_k < K;
        a_slice[s_k][s_i] = s_inside ? op_element<T, TRANS_A>(A, i0 + s_i, k0 + s_k, M, K) : T(0);

        T b_col[RB_K];
#pragma unroll
        for (int kk = 0; kk < RB_K; ++kk) {
            const bool inside = j_inside && k0 + kk < K;
            b_col[kk] = inside ? op_element<T, TRANS_B>(B, k0 + kk, j, K, N) : T(0);
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < RB_K; ++kk) {
#pragma unroll
            for (int ii = 0; ii < RB_ROWS; ++ii) {
                c[ii] += b_col[kk] * a_slice[kk][ii];
            }
        }
        __syncthreads();
    }

    if (!j_inside) {
        return;
    }
#pragma unroll
    for (int ii = 0; ii < RB_ROWS; ++ii) {
        const int i = i0 + ii;
        if (i < M) {
            T* out = C + static_cast<long long>(i) * N + j;
            *out = (beta == T(0)) ? alpha * c[ii] : alpha * c[ii] + beta * (*out);
        }
    }
    // END TASK
}
