// CUDA's warp matrix functions (nvcuda::wmma) on the CPU runner: not provided. Their names are declared
// so that a use, not the #include, stops the build at its line, in one line: bitsandbytes includes
// <mma.h> in every kernel file, and most of its kernels use none of it.
#pragma once

namespace nvcuda {
namespace wmma {

#define NN_CUDA_CPU_WMMA_REFUSED "the CPU runner does not support tensor core matrix operations (nvcuda::wmma; mma.h)"

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}
namespace experimental {
namespace precision {
struct u4 {};
struct s4 {};
struct b1 {};
}  // namespace precision
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}  // namespace experimental

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment {
    static_assert(nn_cuda_cpu_unsupported<Use>, NN_CUDA_CPU_WMMA_REFUSED);

public:
    static constexpr int num_elements = 1;
    T x[1];
};

template <typename... Args>
void fill_fragment(Args&&...) { static_assert(nn_cuda_cpu_unsupported<Args...>, NN_CUDA_CPU_WMMA_REFUSED); }
template <typename... Args>
void load_matrix_sync(Args&&...) { static_assert(nn_cuda_cpu_unsupported<Args...>, NN_CUDA_CPU_WMMA_REFUSED); }
template <typename... Args>
void store_matrix_sync(Args&&...) { static_assert(nn_cuda_cpu_unsupported<Args...>, NN_CUDA_CPU_WMMA_REFUSED); }
template <typename... Args>
void mma_sync(Args&&...) { static_assert(nn_cuda_cpu_unsupported<Args...>, NN_CUDA_CPU_WMMA_REFUSED); }
template <typename... Args>
void bmma_sync(Args&&...) { static_assert(nn_cuda_cpu_unsupported<Args...>, NN_CUDA_CPU_WMMA_REFUSED); }
template <typename T>
T __float_to_tf32(T) { static_assert(nn_cuda_cpu_unsupported<T>, NN_CUDA_CPU_WMMA_REFUSED); }

#undef NN_CUDA_CPU_WMMA_REFUSED
}  // namespace wmma
}  // namespace nvcuda
