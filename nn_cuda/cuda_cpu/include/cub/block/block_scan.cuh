// cub::BlockScan on the CPU runner (written for it; see cub/cub.cuh), as CUB's raking scan: each
// thread stores its value in the TempStorage, the block meets at __syncthreads(), the lanes of the
// first warp scan a segment of consecutive values each and the segments' totals by shuffles, write
// every value's exclusive prefix in its place, and the block meets again for each thread to read its
// own. Every algorithm of BlockScanAlgorithm computes so (WARP_SCANS groups a floating-point sum
// otherwise on a GPU, which changes its rounding only). A prefix callback is called by the lanes of
// the first warp with the block's total, and lane 0's answer goes first, as in CUB. As in CUB, a
// second collective on the same TempStorage needs a __syncthreads() before it (two scans in a row
// happen to be safe here, each thread reading back only its own place; a reduction after a scan,
// or two reductions, are not).
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
    // the values a lane of the first warp scans in turn
    static constexpr int nn_cuda_cpu_segment = (BLOCK_THREADS + nn_cuda_cpu_detail::kWarpThreads - 1) / nn_cuda_cpu_detail::kWarpThreads;
    static_assert(BLOCK_THREADS >= 1 && BLOCK_THREADS <= 1024, "cub::BlockScan: a block has 1 to 1024 threads");
    struct nn_cuda_cpu_layout {
        T items[BLOCK_THREADS];
        T aggregate;
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
    // the block goes first (then every thread has a prefix). Each thread stores its value, the block
    // meets, the lanes of the first warp scan a segment of consecutive values each, then the
    // segments' totals by shuffles, and write each value's exclusive prefix in its place; the block
    // meets again and each thread reads its own.
    template <typename Op, typename nn_cuda_cpu_callback = NoCallback>
    nn_cuda_cpu_prefix prefix(T input, Op& op, nn_cuda_cpu_callback* callback = nullptr)
    {
        using namespace nn_cuda_cpu_detail;
        const int rank = block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockScan");
        storage_.items[rank] = input;
        __syncthreads();
        if (rank < kWarpThreads) {
            const int first = rank * nn_cuda_cpu_segment, end = first + nn_cuda_cpu_segment < BLOCK_THREADS ? first + nn_cuda_cpu_segment : BLOCK_THREADS;
            T total = storage_.items[first < end ? first : 0];
            for (int k = first + 1; k < end; ++k) {
                total = op(total, storage_.items[k]);
            }
            const T inclusive = warp_inclusive_scan<kWarpThreads>(total, op, rank);
            const T before = shuffle_any(inclusive, [&](auto v) { return __shfl_up_sync(present_lanes(), v, 1); });
            const T aggregate = warp_broadcast<kWarpThreads>(inclusive, (BLOCK_THREADS + nn_cuda_cpu_segment - 1) / nn_cuda_cpu_segment - 1);
            bool has = rank > 0;
            T running = before;
            if (callback != nullptr) {
                const T block_prefix = warp_broadcast<kWarpThreads>((*callback)(aggregate), 0);  // lane 0's
                running = has ? op(block_prefix, before) : block_prefix;
                has = true;
            }
            for (int k = first; k < end; ++k) {
                const T item = storage_.items[k];
                if (has) {
                    storage_.items[k] = running;
                }
                running = has ? op(running, item) : item;
                has = true;
            }
            if (rank == 0) {
                storage_.aggregate = aggregate;
            }
        }
        __syncthreads();
        return nn_cuda_cpu_prefix{storage_.items[rank], rank > 0 || callback != nullptr, storage_.aggregate};
    }

    nn_cuda_cpu_layout& storage_;
};

}  // namespace cub
