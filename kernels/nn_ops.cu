// The network's element-wise and reduction kernels (semantics: nn_cuda/backends/base.py).
//
// All matrices are row-major, `rows` x `cols`; bias vectors have `cols` entries; labels are int32.
// Every kernel is memory-bound: it does a few flops per element loaded, so the goal is one pass over
// memory with coalesced accesses (consecutive threads touch consecutive addresses).
//
// Thread mappings (each kernel's `// launch: block (...)` line gives its block; nn_cuda/kernel_launch.py
// computes the grids):
//   matrix kernels (bias_sigmoid, softmax_grad): blocks of 32 x 8 threads; threadIdx.x runs along the
//       columns j, the y dimension along the rows i, looping over rows when the grid is capped;
//   flat kernels (sigmoid_backward, sgd_update, pgd_step): one thread per element, 256-thread blocks, a
//       grid-stride loop with a 64-bit index;
//   bias_softmax: one thread per row (a row holds the 10 class scores: too short to share);
//   col_sum: 32 x 32 blocks; each block sums 32 columns, each of its 32 rows of threads adds every
//       32nd row, and the 32 partial sums of a column are added in shared memory.

// exp in the precision of T (expf for float, exp for double).
__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }

// The logistic function without overflow for any finite z: exp is only taken of -|z| <= 0.
template <typename T>
__device__ __forceinline__ T stable_sigmoid(T z)
{
    if (z >= T(0)) {
        return T(1) / (T(1) + exp_of(-z));
    }
    const T e = exp_of(z);
    return e / (T(1) + e);
}

// out[i, j] = sigmoid(Z[i, j] + b[j]). out may be Z.
// Thread (x, y) of the 32 x 8 block handles column j and rows i, i + stride, ...
// launch: block (32, 8)
template <typename T>
__global__ void bias_sigmoid(const T* Z, const T* __restrict__ b, T* out, int rows, int cols)
{
    // TASK bias_sigmoid: column j from the x indices (return past cols); loop over the rows i from the
    //   y index with a stride of all the grid's y threads; out[i, j] = stable_sigmoid(Z[i, j] + b[j]).
    //   About 10 lines.
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) {
        return;
    }
    const T bias = b[j];
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < rows; i += gridDim.y * blockDim.y) {
        const long long ij = static_cast<long long>(i) * cols + j;
        out[ij] = stable_sigmoid(Z[ij] + bias);
    }
    // END TASK
}

// out[i, :] = softmax(Z[i, :] + b), subtracting the row maximum so that exp never overflows.
// One thread per row: the rows are the 10 class scores, too short to be worth a cooperative
// (warp-per-row) reduction; the batch (hundreds of rows) provides the parallelism. out may be Z.
// launch: block (256)
template <typename T>
__global__ void bias_softmax(const T* Z, const T* __restrict__ b, T* out, int rows, int cols)
{
    // TASK bias_softmax: one thread per row i (a grid-stride loop over the rows): find the maximum of
    //   the row of Z + b, write exp(Z + b - maximum) into the row of out while summing it, then divide
    //   the row by the sum. About 20 lines.
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x) {
        const T* z = Z + static_cast<long long>(i) * cols;
        T* o = out + static_cast<long long>(i) * cols;

        T row_max = z[0] + b[0];
        for (int j = 1; j < cols; ++j) {
            const T v = z[j] + b[j];
            row_max = v > row_max ? v : row_max;
        }
        T total = T(0);
        for (int j = 0; j < cols; ++j) {
            const T e = exp_of(z[j] + b[j] - row_max);
            o[j] = e;
            total += e;
        }
        for (int j = 0; j < cols; ++j) {
            o[j] = o[j] / total;
        }
    }
    // END TASK
}

// out[i, j] = scale * (P[i, j] - (j == labels[i])): the gradient of the mean cross-entropy with
// respect to the softmax input (scale = 1 / batch), without building a one-hot matrix.
// Same 32 x 8 mapping as bias_sigmoid. out may be P.
// launch: block (32, 8)
template <typename T>
__global__ void softmax_grad(const T* P, const int* __restrict__ labels, T scale, T* out,
                             int rows, int cols)
{
    // TASK softmax_grad: the mapping of bias_sigmoid: out[i, j] = scale * (P[i, j] - (labels[i] == j ?
    //   1 : 0)). About 10 lines.
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) {
        return;
    }
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < rows; i += gridDim.y * blockDim.y) {
        const long long ij = static_cast<long long>(i) * cols + j;
        const T target = (labels[i] == j) ? T(1) : T(0);
        out[ij] = scale * (P[ij] - target);
    }
    // END TASK
}

// out = dA * A * (1 - A), element-wise over n elements: the backward pass through a sigmoid whose
// output is A. out may be dA.
// launch: block (256)
template <typename T>
__global__ void sigmoid_backward(const T* dA, const T* __restrict__ A, T* out, long long n)
{
    // TASK sigmoid_backward: a grid-stride loop over the n elements with a 64-bit index: out = dA * A
    //   * (1 - A). About 7 lines.
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
         idx += stride) {
        const T a = A[idx];
        out[idx] = dA[idx] * a * (T(1) - a);
    }
    // END TASK
}

// out[j] = sum_i M[i, j] (bias gradients). Blocks of COL_SUM_COLS x COL_SUM_GROUPS threads.
// Thread (x, y) sums rows y, y + 32, y + 64, ... of column j = 32 * blockIdx.x + x: a warp reads 32
// consecutive columns of one row (coalesced). The 32 partial sums of each column are then added in
// shared memory by the first warp. The order of the additions is fixed: results are reproducible.
constexpr int COL_SUM_COLS = 32;
constexpr int COL_SUM_GROUPS = 32;

// launch: block (COL_SUM_COLS, COL_SUM_GROUPS)
template <typename T>
__global__ void __launch_bounds__(COL_SUM_COLS * COL_SUM_GROUPS)
col_sum(const T* __restrict__ M, T* __restrict__ out, int rows, int cols)
{
    // TASK col_sum: thread (x, y) sums rows y, y + COL_SUM_GROUPS, ... of column j = COL_SUM_COLS *
    //   blockIdx.x + x into a __shared__ T partial[COL_SUM_GROUPS][COL_SUM_COLS]; after
    //   __syncthreads() the threads with y == 0 add the partial sums of their column and write out[j].
    //   About 20 lines.
    __shared__ T partial[COL_SUM_GROUPS][COL_SUM_COLS];

    const int x = threadIdx.x;
    const int y = threadIdx.y;
    const int j = blockIdx.x * COL_SUM_COLS + x;

    T sum = T(0);
    if (j < cols) {
        for (int i = y; i < rows; i += COL_SUM_GROUPS) {
            sum += M[static_cast<long long>(i) * cols + j];
        }
    }
    partial[y][x] = sum;
    __syncthreads();

    if (y == 0 && j < cols) {
        T total = T(0);
        for (int g = 0; g < COL_SUM_GROUPS; ++g) {
            total += partial[g][x];
        }
        out[j] = total;
    }
    // END TASK
}

// param <- param - lr * (grad + decay * param), element-wise over n elements: a plain SGD step
// with L2 weight decay (decay = 0 for biases).
// launch: block (256)
template <typename T>
__global__ void sgd_update(T* __restrict__ param, const T* __restrict__ grad, T lr, T decay, long long n)
{
    // TASK sgd_update: a grid-stride loop over the n elements with a 64-bit index: param = param - lr
    //   * (grad + decay * param). About 7 lines.
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
         idx += stride) {
        const T p = param[idx];
        param[idx] = p - lr * (grad[idx] + decay * p);
    }
    // END TASK
}

// One signed-gradient attack step (FGSM, PGD), element-wise over n pixels:
//     out = clip(clip(X_adv + alpha * sign(grad), X_clean - eps, X_clean + eps), 0, pixel_max)
// a step up the loss, projected onto the L-infinity ball of radius eps around the clean images and
// then onto the valid pixel range [0, pixel_max] (1, or 255 for raw pixels); sign(0) = 0. One thread per pixel, grid-stride loop (256-thread
// blocks): three loads and one store for a few comparisons, so memory-bound. out may be X_adv.
// launch: block (256)
template <typename T>
__global__ void pgd_step(const T* X_adv, const T* __restrict__ grad, const T* __restrict__ X_clean,
                         T alpha, T eps, T pixel_max, T* out, long long n)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
         idx += stride) {
        const T g = grad[idx];
        const T step = g > T(0) ? alpha : (g < T(0) ? -alpha : T(0));
        const T low = X_clean[idx] - eps;
        const T high = X_clean[idx] + eps;
        T v = X_adv[idx] + step;
        v = v < low ? low : (v > high ? high : v);
        out[idx] = v < T(0) ? T(0) : (v > pixel_max ? pixel_max : v);
    }
}
