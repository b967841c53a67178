// cub::BlockReduce on the CPU runner (written for it; see cub/cub.cuh), as CUB's warp reductions:
// each warp reduces its lanes' values by shuffles, lane 0 of each warp stores the warp's value in the
// TempStorage, the block meets at __syncthreads(), and the lanes of the first warp reduce the warps'
// values by shuffles; the result is thread 0's, as in CUB (the others get a partial value or their own).
// The TempStorage holds one value per warp, no more than CUB's, so that dynamic shared memory sized by
// CUB's figure suffices. Every algorithm of BlockReduceAlgorithm computes so (on a GPU the raking ones
// group a floating-point sum otherwise, which changes its rounding only); values are combined in rank
// order, so the operator need not commute. As in CUB, a second collective on the same TempStorage
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
    static constexpr int WARPS = (BLOCK_THREADS + nn_cuda_cpu_detail::kWarpThreads - 1) / nn_cuda_cpu_detail::kWarpThreads;
    struct nn_cuda_cpu_layout {
        T warp_values[WARPS];
    };

public:
    struct TempStorage : nn_cuda_cpu_detail::raw_storage<nn_cuda_cpu_layout> {};

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

    static nn_cuda_cpu_layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }

    // the first num_valid threads' values, reduced in thread 0: each warp reduces its valid lanes'
    // values by shuffles, lane 0 stores the warp's value, the block meets, and the lanes of the first
    // warp reduce the warps' values by shuffles (in rank order, so that an operator need not commute)
    template <typename Op>
    T reduce(T input, Op& op, int num_valid)
    {
        using namespace nn_cuda_cpu_detail;
        const int valid = num_valid < BLOCK_THREADS ? num_valid : BLOCK_THREADS;
        const int rank = block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockReduce",
                                                                           valid < BLOCK_THREADS ? valid : -1);
        const int warp = rank / kWarpThreads, lane = rank % kWarpThreads;
        const int warp_valid = valid - warp * kWarpThreads;
        const T warp_value = warp_reduce<kWarpThreads>(input, op, lane, warp_valid);
        if (lane == 0 && warp_valid > 0) {
            storage_.warp_values[warp] = warp_value;
        }
        __syncthreads();
        if (rank >= kWarpThreads) {
            return input;
        }
        const int valid_warps = (valid + kWarpThreads - 1) / kWarpThreads;
        const T value = rank < valid_warps ? storage_.warp_values[rank] : input;
        return warp_reduce<kWarpThreads>(value, op, rank, valid_warps);
    }

    nn_cuda_cpu_layout& storage_;
};

}  // namespace cub
