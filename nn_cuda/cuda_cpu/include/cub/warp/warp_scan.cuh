// cub::WarpScan on the CPU runner (written for it; see cub/cub.cuh): the lanes of a logical warp of
// LOGICAL_WARP_THREADS (1, 2, 4, 8, 16 or 32) scan by shuffles up at offsets 1, 2, 4, ...; an
// exclusive scan is the inclusive one from the lane before. The warp's total is its last lane's
// inclusive value. The TempStorage is taken and unused, as CUB's shuffle-based WarpScan leaves it.
#pragma once
#include "../thread/thread_operators.cuh"

namespace cub {

template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpScan {
    static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                      (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                  "the CPU runner does not support cub::WarpScan over logical warps other than 1, 2, 4, 8, 16 or 32 "
                  "threads");

public:
    struct TempStorage {
        unsigned char unused[1];
    };

    explicit WarpScan(TempStorage&) : lane_(static_cast<int>(nn_cuda_cpu::lane_id()) % LOGICAL_WARP_THREADS) {}

    void InclusiveSum(T input, T& output) { InclusiveScan(input, output, cub::Sum()); }
    void InclusiveSum(T input, T& output, T& warp_aggregate) { InclusiveScan(input, output, cub::Sum(), warp_aggregate); }
    void ExclusiveSum(T input, T& output) { T aggregate; ExclusiveSum(input, output, aggregate); }
    void ExclusiveSum(T input, T& output, T& warp_aggregate)
    {
        ExclusiveScan(input, output, T{}, cub::Sum(), warp_aggregate);
    }

    template <typename ScanOp>
    void InclusiveScan(T input, T& output, ScanOp scan_op)
    {
        output = nn_cuda_cpu_detail::warp_inclusive_scan<LOGICAL_WARP_THREADS>(input, scan_op, lane_);
    }
    template <typename ScanOp>
    void InclusiveScan(T input, T& output, ScanOp scan_op, T& warp_aggregate)
    {
        InclusiveScan(input, output, scan_op);
        warp_aggregate = total(output);
    }
    // with an initial value (CCCL 2.6), which goes before lane 0's item; the aggregate leaves it out
    template <typename ScanOp>
    void InclusiveScan(T input, T& output, T initial_value, ScanOp scan_op)
    {
        T aggregate;
        InclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <typename ScanOp>
    void InclusiveScan(T input, T& output, T initial_value, ScanOp scan_op, T& warp_aggregate)
    {
        InclusiveScan(input, output, scan_op, warp_aggregate);
        output = scan_op(initial_value, output);
    }
    // without an initial value: lane 0's output is undefined in CUB (here its input)
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, scan_op, aggregate);
    }
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, ScanOp scan_op, T& warp_aggregate)
    {
        T inclusive;
        InclusiveScan(input, inclusive, scan_op);
        const T before = from_lane_before(inclusive);
        warp_aggregate = total(inclusive);
        output = lane_ == 0 ? input : before;
    }
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op, T& warp_aggregate)
    {
        T inclusive;
        InclusiveScan(input, inclusive, scan_op);
        const T before = from_lane_before(inclusive);
        warp_aggregate = total(inclusive);
        output = lane_ == 0 ? initial_value : scan_op(initial_value, before);
    }
    // both scans at once
    template <typename ScanOp>
    void Scan(T input, T& inclusive_output, T& exclusive_output, ScanOp scan_op)
    {
        InclusiveScan(input, inclusive_output, scan_op);
        const T before = from_lane_before(inclusive_output);
        exclusive_output = lane_ == 0 ? input : before;
    }
    // the initial value seeds both, as CUB's does on a GPU (its inclusive output left it out until 2026-11-28)
    template <typename ScanOp>
    void Scan(T input, T& inclusive_output, T& exclusive_output, T initial_value, ScanOp scan_op)
    {
        InclusiveScan(input, inclusive_output, scan_op);
        inclusive_output = scan_op(initial_value, inclusive_output);
        const T before = from_lane_before(inclusive_output);
        exclusive_output = lane_ == 0 ? initial_value : before;
    }

    // lane src_lane's input, in every lane of the logical warp
    T Broadcast(T input, unsigned int src_lane)
    {
        return nn_cuda_cpu_detail::warp_broadcast<LOGICAL_WARP_THREADS>(input, static_cast<int>(src_lane));
    }

private:
    T from_lane_before(const T& value) const
    {
        const unsigned mask = nn_cuda_cpu_detail::logical_warp_mask(LOGICAL_WARP_THREADS);
        return nn_cuda_cpu_detail::shuffle_any(
            value, [&](auto v) { return __shfl_up_sync(mask, v, 1, LOGICAL_WARP_THREADS); });
    }
    // the last lane's inclusive value, as CUB broadcasts it: in a partial warp a lane the block has
    // not, whose value is undefined on a GPU (the runner's fill, reported in the checking mode; the
    // last lane the block has until 2026-11-27)
    T total(const T& inclusive) const
    {
        return nn_cuda_cpu_detail::warp_broadcast<LOGICAL_WARP_THREADS>(inclusive, LOGICAL_WARP_THREADS - 1);
    }

    int lane_;
};

}  // namespace cub
