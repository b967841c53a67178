// cub::WarpReduce on the CPU runner (written for it; see cub/cub.cuh): the lanes of a logical warp
// of LOGICAL_WARP_THREADS (1, 2, 4, 8, 16 or 32) reduce by shuffles down at offsets 1, 2, 4, ...;
// the result is lane 0's, as in CUB. The TempStorage is taken and unused, as CUB's shuffle-based
// WarpReduce leaves it.
#pragma once
#include "../thread/thread_operators.cuh"

namespace cub {

template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpReduce {
    static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                      (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                  "the CPU runner does not support cub::WarpReduce over logical warps other than 1, 2, 4, 8, 16 or 32 "
                  "threads");

public:
    struct TempStorage {
        unsigned char unused[1];
    };

    explicit WarpReduce(TempStorage&) {}

    T Sum(T input) { return Reduce(input, cub::Sum()); }
    T Sum(T input, int valid_items) { return Reduce(input, cub::Sum(), valid_items); }
    // CCCL 3's Max and Min, and its reductions of a thread's items (folded in the thread first)
    T Max(T input) { return Reduce(input, cub::Max()); }
    T Max(T input, int valid_items) { return Reduce(input, cub::Max(), valid_items); }
    T Min(T input) { return Reduce(input, cub::Min()); }
    T Min(T input, int valid_items) { return Reduce(input, cub::Min(), valid_items); }
    template <int ITEMS>
    T Sum(const T (&inputs)[ITEMS]) { return Reduce(inputs, cub::Sum()); }
    template <int ITEMS>
    T Max(const T (&inputs)[ITEMS]) { return Reduce(inputs, cub::Max()); }
    template <int ITEMS>
    T Min(const T (&inputs)[ITEMS]) { return Reduce(inputs, cub::Min()); }
    template <int ITEMS, typename ReductionOp>
    T Reduce(const T (&inputs)[ITEMS], ReductionOp reduction_op)
    {
        return Reduce(nn_cuda_cpu_detail::fold(inputs, reduction_op), reduction_op);
    }
    template <typename ReductionOp>
    T Reduce(T input, ReductionOp reduction_op) { return Reduce(input, reduction_op, LOGICAL_WARP_THREADS); }
    template <typename ReductionOp>
    T Reduce(T input, ReductionOp reduction_op, int valid_items)
    {
        const int lane = static_cast<int>(nn_cuda_cpu::lane_id()) % LOGICAL_WARP_THREADS;
        return nn_cuda_cpu_detail::warp_reduce<LOGICAL_WARP_THREADS>(input, reduction_op, lane, valid_items);
    }

    // the segmented reductions: refused at their use
    template <typename Flag>
    T HeadSegmentedSum(T, Flag)
    {
        static_assert(nn_cuda_cpu_unsupported<Flag>, "the CPU runner does not support cub::WarpReduce::HeadSegmentedSum "
                                                     "(CUB's segmented warp reductions)");
        return T();
    }
    template <typename Flag>
    T TailSegmentedSum(T, Flag)
    {
        static_assert(nn_cuda_cpu_unsupported<Flag>, "the CPU runner does not support cub::WarpReduce::TailSegmentedSum "
                                                     "(CUB's segmented warp reductions)");
        return T();
    }
    template <typename Flag, typename ReductionOp>
    T HeadSegmentedReduce(T, Flag, ReductionOp)
    {
        static_assert(nn_cuda_cpu_unsupported<Flag>, "the CPU runner does not support "
                                                     "cub::WarpReduce::HeadSegmentedReduce (CUB's segmented warp reductions)");
        return T();
    }
    template <typename Flag, typename ReductionOp>
    T TailSegmentedReduce(T, Flag, ReductionOp)
    {
        static_assert(nn_cuda_cpu_unsupported<Flag>, "the CPU runner does not support "
                                                     "cub::WarpReduce::TailSegmentedReduce (CUB's segmented warp reductions)");
        return T();
    }
};

}  // namespace cub
