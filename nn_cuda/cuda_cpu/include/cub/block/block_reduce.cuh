// cub::BlockReduce on the CPU runner (written for it; see cub/cub.cuh), as CUB's raking reduction:
// each thread stores its value in the TempStorage, the block meets at __syncthreads(), the lanes of
// the first warp reduce a segment of consecutive values each, then their values by shuffles; the
// result is thread 0's, as in CUB (the other threads get a partial value or their own). Every
// algorithm of BlockReduceAlgorithm computes so (on a GPU WARP_REDUCTIONS groups a floating-point
// sum otherwise, which changes its rounding only; the operator need not commute for any of them). As in CUB, a second collective on the same TempStorage
// needs a __syncthreads() before it; without one the checking mode reports a race.
#pragma once
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockReduceAlgorithm {
    BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
    BLOCK_REDUCE_RAKING,
    BLOCK_REDUCE_WARP_REDUCTIONS,
};

template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static_assert(BLOCK_THREADS >= 1 && BLOCK_THREADS <= 1024, "cub::BlockReduce: a block has 1 to 1024 threads");
    // the values a lane of the first warp reduces in turn
    static constexpr int SEGMENT = (BLOCK_THREADS + nn_cuda_cpu_detail::kWarpThreads - 1) / nn_cuda_cpu_detail::kWarpThreads;
    struct Layout {
        T items[BLOCK_THREADS];
    };

public:
    struct TempStorage : nn_cuda_cpu_detail::raw_storage<Layout> {};

    explicit BlockReduce(TempStorage& storage) : storage_(storage.get()) {}
    // CUB's private TempStorage, a __shared__ one of the collective's own
    BlockReduce() : storage_(private_storage()) {}

    template <typename ReductionOp>
    T Reduce(T input, ReductionOp reduction_op) { return reduce(input, reduction_op, BLOCK_THREADS); }
    template <typename ReductionOp>
    T Reduce(T input, ReductionOp reduction_op, int num_valid) { return reduce(input, reduction_op, num_valid); }
    template <int ITEMS_PER_THREAD, typename ReductionOp>
    T Reduce(T (&inputs)[ITEMS_PER_THREAD], ReductionOp reduction_op)
    {
        return reduce(nn_cuda_cpu_detail::fold(inputs, reduction_op), reduction_op, BLOCK_THREADS);
    }

    T Sum(T input) { return Reduce(input, cub::Sum()); }
    T Sum(T input, int num_valid) { return Reduce(input, cub::Sum(), num_valid); }
    template <int ITEMS_PER_THREAD>
    T Sum(T (&inputs)[ITEMS_PER_THREAD]) { return Reduce(inputs, cub::Sum()); }

private:

    static Layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }

    // the first num_valid threads' values, reduced in thread 0: each stores its value, the block
    // meets, and the lanes of the first warp reduce SEGMENT consecutive values each, then the warp's
    // values by shuffles (in order, so that an operator need not commute)
    template <typename Op>
    T reduce(T input, Op& op, int num_valid)
    {
        using namespace nn_cuda_cpu_detail;
        const int rank = block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockReduce");
        const int valid = num_valid < BLOCK_THREADS ? num_valid : BLOCK_THREADS;
        if (rank < valid) {
            storage_.items[rank] = input;
        }
        __syncthreads();
        if (rank >= kWarpThreads) {
            return input;
        }
        const int first = rank * SEGMENT, end = first + SEGMENT < valid ? first + SEGMENT : valid;
        T partial = input;
        if (first < end) {
            partial = storage_.items[first];
            for (int k = first + 1; k < end; ++k) {
                partial = op(partial, storage_.items[k]);
            }
        }
        return warp_reduce<kWarpThreads>(partial, op, rank, (valid + SEGMENT - 1) / SEGMENT);
    }

    Layout& storage_;
};

}  // namespace cub
