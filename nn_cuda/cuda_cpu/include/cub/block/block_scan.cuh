// cub::BlockScan on the CPU runner (written for it; see cub/cub.cuh), as CUB's warp-scans scan: each
// warp scans its values by shuffles, its last lane stores the warp's total in the TempStorage, the
// block meets at __syncthreads(), and each thread folds the totals of the warps before its own. So
// the TempStorage holds a value per warp, and the block's prefix, no more than CUB's (a value per
// thread until 2026-11-27, 16 to 21 times CUB's: CUB-sized dynamic shared memory was reported as
// overrun). Every algorithm of BlockScanAlgorithm computes so (RAKING groups a floating-point sum
// otherwise on a GPU, which changes its rounding only). A prefix callback is called by the lanes of
// the first warp with the block's total, and lane 0's answer goes first, as in CUB. As in CUB, a
// second collective on the same TempStorage needs a __syncthreads() before it.
#pragma once
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockScanAlgorithm {
    BLOCK_SCAN_RAKING,
    BLOCK_SCAN_RAKING_MEMOIZE,
    BLOCK_SCAN_WARP_SCANS,
};

template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr int nn_cuda_cpu_warps =
        (BLOCK_THREADS + nn_cuda_cpu_detail::kWarpThreads - 1) / nn_cuda_cpu_detail::kWarpThreads;
    static_assert(BLOCK_THREADS >= 1 && BLOCK_THREADS <= 1024, "cub::BlockScan: a block has 1 to 1024 threads");
    struct nn_cuda_cpu_layout {
        T warp_totals[nn_cuda_cpu_warps];
        T block_prefix;  // what a prefix callback gave
    };
    // a thread's exclusive prefix (none in thread 0) and the block's total
    struct nn_cuda_cpu_prefix {
        T value;
        bool has;
        T aggregate;
    };

public:
    struct TempStorage : nn_cuda_cpu_detail::raw_storage<nn_cuda_cpu_layout> {};

    explicit BlockScan(TempStorage& storage) : storage_(storage.get()) {}
    // CUB's private TempStorage, a __shared__ one of the collective's own
    BlockScan() : storage_(private_storage()) {}

    // ---- one item per thread ----
    void ExclusiveSum(T input, T& output) { T aggregate; ExclusiveSum(input, output, aggregate); }
    void ExclusiveSum(T input, T& output, T& block_aggregate)
    {
        cub::Sum op;
        const nn_cuda_cpu_prefix p = prefix(input, op);
        output = p.has ? p.value : T{};  // CUB's initial value, T{} (a struct with operator+ and no constructor from int)
        block_aggregate = p.aggregate;
    }
    template <typename BlockPrefixCallbackOp>
    void ExclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        cub::Sum op;
        output = prefix(input, op, &block_prefix_callback_op).value;
    }

    void InclusiveSum(T input, T& output) { T aggregate; InclusiveSum(input, output, aggregate); }
    void InclusiveSum(T input, T& output, T& block_aggregate) { InclusiveScan(input, output, cub::Sum(), block_aggregate); }
    template <typename BlockPrefixCallbackOp>
    void InclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        InclusiveScan(input, output, cub::Sum(), block_prefix_callback_op);
    }

    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(input, scan_op);
        output = p.has ? scan_op(initial_value, p.value) : initial_value;
        block_aggregate = p.aggregate;
    }
    template <typename ScanOp, typename BlockPrefixCallbackOp>
    void ExclusiveScan(T input, T& output, ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        output = prefix(input, scan_op, &block_prefix_callback_op).value;
    }
    // without an initial value: thread 0's output is undefined in CUB (here its input)
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, scan_op, aggregate);
    }
    template <typename ScanOp>
    void ExclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(input, scan_op);
        output = p.has ? p.value : input;
        block_aggregate = p.aggregate;
    }

    template <typename ScanOp>
    void InclusiveScan(T input, T& output, ScanOp scan_op) { T aggregate; InclusiveScan(input, output, scan_op, aggregate); }
    template <typename ScanOp>
    void InclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(input, scan_op);
        output = p.has ? scan_op(p.value, input) : input;
        block_aggregate = p.aggregate;
    }
    template <typename ScanOp, typename BlockPrefixCallbackOp>
    void InclusiveScan(T input, T& output, ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        output = scan_op(prefix(input, scan_op, &block_prefix_callback_op).value, input);
    }

    // ---- ITEMS_PER_THREAD consecutive items per thread (a blocked arrangement) ----
    template <int ITEMS_PER_THREAD>
    void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD]) { T aggregate; ExclusiveSum(input, output, aggregate); }
    template <int ITEMS_PER_THREAD>
    void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T& block_aggregate)
    {
        ExclusiveScan(input, output, T{}, cub::Sum(), block_aggregate);
    }
    template <int ITEMS_PER_THREAD>
    void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD]) { T aggregate; InclusiveSum(input, output, aggregate); }
    template <int ITEMS_PER_THREAD>
    void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T& block_aggregate)
    {
        InclusiveScan(input, output, cub::Sum(), block_aggregate);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value, ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value, ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op);
        exclusive_items(input, output, p.has ? scan_op(initial_value, p.value) : initial_value, scan_op);
        block_aggregate = p.aggregate;
    }
    // without an initial value: thread 0's first output is undefined in CUB (here its first input)
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op)
    {
        T aggregate;
        ExclusiveScan(input, output, scan_op, aggregate);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op);
        T running = p.has ? p.value : input[0];
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
            const T item = input[i];
            output[i] = running;
            running = i == 0 && !p.has ? item : scan_op(running, item);
        }
        block_aggregate = p.aggregate;
    }
    template <int ITEMS_PER_THREAD, typename ScanOp, typename BlockPrefixCallbackOp>
    void ExclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                       BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        exclusive_items(input, output,
                        prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op, &block_prefix_callback_op).value,
                        scan_op);
    }
    template <int ITEMS_PER_THREAD, typename BlockPrefixCallbackOp>
    void ExclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        ExclusiveScan(input, output, cub::Sum(), block_prefix_callback_op);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op)
    {
        T aggregate;
        InclusiveScan(input, output, scan_op, aggregate);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op);
        T running = p.has ? scan_op(p.value, input[0]) : input[0];
        output[0] = running;
        for (int i = 1; i < ITEMS_PER_THREAD; ++i) {
            running = scan_op(running, input[i]);
            output[i] = running;
        }
        block_aggregate = p.aggregate;
    }
    // with an initial value (CCCL 2.6), which goes before thread 0's first item; the aggregate leaves it out
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value, ScanOp scan_op)
    {
        T aggregate;
        InclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T initial_value, ScanOp scan_op, T& block_aggregate)
    {
        const nn_cuda_cpu_prefix p = prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op);
        inclusive_items(input, output, p.has ? scan_op(initial_value, p.value) : initial_value, scan_op);
        block_aggregate = p.aggregate;
    }
    template <int ITEMS_PER_THREAD, typename ScanOp, typename BlockPrefixCallbackOp>
    void InclusiveScan(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], ScanOp scan_op,
                       BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        inclusive_items(input, output,
                        prefix(nn_cuda_cpu_detail::fold(input, scan_op), scan_op, &block_prefix_callback_op).value,
                        scan_op);
    }
    template <int ITEMS_PER_THREAD, typename BlockPrefixCallbackOp>
    void InclusiveSum(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], BlockPrefixCallbackOp& block_prefix_callback_op)
    {
        InclusiveScan(input, output, cub::Sum(), block_prefix_callback_op);
    }

private:

    // A thread's items scanned from `running`, the prefix of its first: exclusively (each output the
    // prefix before its item) or inclusively. Input and output may be one array.
    template <int ITEMS_PER_THREAD, typename ScanOp>
    static void exclusive_items(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T running, ScanOp& scan_op)
    {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
            const T item = input[i];
            output[i] = running;
            running = scan_op(running, item);
        }
    }
    template <int ITEMS_PER_THREAD, typename ScanOp>
    static void inclusive_items(T (&input)[ITEMS_PER_THREAD], T (&output)[ITEMS_PER_THREAD], T running, ScanOp& scan_op)
    {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
            running = scan_op(running, input[i]);
            output[i] = running;
        }
    }

    static nn_cuda_cpu_layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }

    struct NoCallback {
        T operator()(const T& aggregate) { return aggregate; }
    };

    // This thread's exclusive prefix and the block's total; with a callback, the prefix it gives
    // the block goes first (then every thread has a prefix). Each warp scans its values by shuffles
    // up and its last lane stores the warp's total; the block meets; each thread folds the totals of
    // the warps before its own, then its warp's values before it (the operands in their order: the
    // operator need not commute).
    template <typename Op, typename nn_cuda_cpu_callback = NoCallback>
    nn_cuda_cpu_prefix prefix(T input, Op& op, nn_cuda_cpu_callback* callback = nullptr)
    {
        using namespace nn_cuda_cpu_detail;
        const int rank = block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockScan");
        const int warp = rank / kWarpThreads, lane = rank % kWarpThreads;
        const int lanes = BLOCK_THREADS - warp * kWarpThreads < kWarpThreads ? BLOCK_THREADS - warp * kWarpThreads
                                                                            : kWarpThreads;
        const T inclusive = warp_inclusive_scan<kWarpThreads>(input, op, lane);
        const T before = shuffle_any(inclusive, [&](auto v) { return __shfl_up_sync(present_lanes(), v, 1); });
        if (lane == lanes - 1) {
            storage_.warp_totals[warp] = inclusive;
        }
        __syncthreads();
        T aggregate = storage_.warp_totals[0];
        for (int w = 1; w < nn_cuda_cpu_warps; ++w) {
            aggregate = op(aggregate, storage_.warp_totals[w]);
        }
        bool has = false;
        T value = input;  // no value yet (thread 0's has none without a callback)
        if (callback != nullptr) {
            if (warp == 0) {
                const T block_prefix = warp_broadcast<kWarpThreads>((*callback)(aggregate), 0);  // lane 0's
                if (lane == 0) {
                    storage_.block_prefix = block_prefix;
                }
            }
            __syncthreads();
            value = storage_.block_prefix;
            has = true;
        }
        for (int w = 0; w < warp; ++w) {
            value = has ? op(value, storage_.warp_totals[w]) : storage_.warp_totals[w];
            has = true;
        }
        if (lane > 0) {
            value = has ? op(value, before) : before;
            has = true;
        }
        return nn_cuda_cpu_prefix{value, has, aggregate};
    }

    nn_cuda_cpu_layout& storage_;
};

}  // namespace cub
