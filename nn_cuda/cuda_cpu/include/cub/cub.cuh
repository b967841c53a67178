// CUB (CCCL's block, warp and device primitives) on the CPU runner: a subset, written for the runner
// (not CUB's code), with CUB's names and semantics. <cub/cub.cuh> brings it all; the headers of the
// same paths as CUB's bring their part:
//   cub/block/block_reduce.cuh  cub::BlockReduce (Sum, Reduce, num_valid, items per thread)
//   cub/block/block_scan.cuh    cub::BlockScan (inclusive and exclusive sums and scans, aggregates,
//                               prefix callbacks, items per thread)
//   cub/warp/warp_reduce.cuh    cub::WarpReduce (Sum, Reduce, valid_items)
//   cub/warp/warp_scan.cuh      cub::WarpScan (inclusive and exclusive sums and scans, Broadcast)
//   cub/thread/thread_operators.cuh, cub/util_type.cuh: cub::Sum, Max, Min, Equality, Inequality,
//                               ArgMax, ArgMin, KeyValuePair, NullType
//   cub/thread/thread_search.cuh  cub::LowerBound, UpperBound
//   cub/block/block_load.cuh, block_store.cuh  cub::BlockLoad, BlockStore (every algorithm), and the
//                               direct blocked and striped loads and stores
// here: cub::CTA_SYNC, WARP_SYNC, LaneId, WarpId, RowMajorTid, CUB_MAX and CUB_MIN.
// What else CUB has that code names (BlockRadixSort, BlockExchange, ..., DeviceReduce, ...) is declared
// so that a use stops the build at its line: "the CPU runner does not support cub::BlockRadixSort
// (...)". An #include of one of CUB's other headers names CUB as a library the runner lacks
// (build.py, MISSING_LIBRARIES).
#pragma once

#include "block/block_load.cuh"
#include "block/block_reduce.cuh"
#include "block/block_scan.cuh"
#include "block/block_store.cuh"
#include "thread/thread_search.cuh"
#include "warp/warp_reduce.cuh"
#include "warp/warp_scan.cuh"

namespace cub {

// ---- utilities -------------------------------------------------------------------------------------

inline void CTA_SYNC() { __syncthreads(); }
inline void WARP_SYNC(unsigned member_mask) { __syncwarp(member_mask); }
inline unsigned int LaneId() { return nn_cuda_cpu::lane_id(); }
inline unsigned int WarpId()
{
    return static_cast<unsigned int>(nn_cuda_cpu::current->tid / nn_cuda_cpu_detail::kWarpThreads);
}

// ---- what the runner refuses ------------------------------------------------------------------------
// The algorithms' names, so that code that names one reaches the refusal of its primitive.
enum BlockHistogramAlgorithm { BLOCK_HISTO_SORT, BLOCK_HISTO_ATOMIC };
enum WarpLoadAlgorithm { WARP_LOAD_DIRECT, WARP_LOAD_STRIPED, WARP_LOAD_VECTORIZE, WARP_LOAD_TRANSPOSE };
enum WarpStoreAlgorithm { WARP_STORE_DIRECT, WARP_STORE_STRIPED, WARP_STORE_VECTORIZE, WARP_STORE_TRANSPOSE };
enum WarpExchangeAlgorithm { WARP_EXCHANGE_SMEM, WARP_EXCHANGE_SHUFFLE };
enum CacheLoadModifier { LOAD_DEFAULT, LOAD_CA, LOAD_CG, LOAD_CS, LOAD_CV, LOAD_LDG, LOAD_VOLATILE };
enum CacheStoreModifier { STORE_DEFAULT, STORE_WB, STORE_CG, STORE_CS, STORE_WT, STORE_VOLATILE };

// A block or warp primitive of CUB's with its template parameters (a type, then numbers: every
// algorithm and flag CUB takes there converts to int), refused where it is instantiated: a
// TempStorage declared, an object made.
#define NN_CUDA_CPU_CUB_REFUSED(name, what, ...)                                                           \
    template <__VA_ARGS__>                                                                                 \
    class name {                                                                                           \
        static_assert(nn_cuda_cpu_unsupported<T>, "the CPU runner does not support cub::" #name " (" what ")"); \
                                                                                                           \
    public:                                                                                                \
        struct TempStorage {                                                                               \
            unsigned char unused[1];                                                                       \
        };                                                                                                 \
        template <typename... Args>                                                                        \
        explicit name(Args&&...) {}                                                                        \
    };
NN_CUDA_CPU_CUB_REFUSED(BlockRadixSort, "CUB's block radix sort", typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
                        typename ValueT = NullType, int RADIX_BITS = 4, int MEMOIZE_OUTER_SCAN = 1,
                        int INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS, int SMEM_CONFIG = 0, int BLOCK_DIM_Y = 1,
                        int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockMergeSort, "CUB's block merge sort", typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
                        typename ValueT = NullType, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1)
NN_CUDA_CPU_CUB_REFUSED(BlockExchange, "CUB's block exchanges", typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
                        int WARP_TIME_SLICING = 0, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockHistogram, "CUB's block histograms", typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
                        int BINS, int ALGORITHM = BLOCK_HISTO_SORT, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
                        int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockDiscontinuity, "CUB's block discontinuity flags", typename T, int BLOCK_DIM_X,
                        int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockAdjacentDifference, "CUB's block adjacent differences", typename T, int BLOCK_DIM_X,
                        int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockShuffle, "CUB's block shuffles", typename T, int BLOCK_DIM_X, int BLOCK_DIM_Y = 1,
                        int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(BlockRunLengthDecode, "CUB's block run-length decoding", typename T, int BLOCK_DIM_X,
                        int RUNS_PER_THREAD, int DECODED_ITEMS_PER_THREAD, typename DecodedOffsetT = unsigned int,
                        int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1)
NN_CUDA_CPU_CUB_REFUSED(WarpLoad, "CUB's warp loads", typename T, int ITEMS_PER_THREAD,
                        int ALGORITHM = WARP_LOAD_DIRECT, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(WarpStore, "CUB's warp stores", typename T, int ITEMS_PER_THREAD,
                        int ALGORITHM = WARP_STORE_DIRECT, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0)
NN_CUDA_CPU_CUB_REFUSED(WarpExchange, "CUB's warp exchanges", typename T, int ITEMS_PER_THREAD,
                        int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0, int ALGORITHM = WARP_EXCHANGE_SMEM)
NN_CUDA_CPU_CUB_REFUSED(WarpMergeSort, "CUB's warp merge sort", typename T, int ITEMS_PER_THREAD,
                        int LOGICAL_WARP_THREADS = 32, typename ValueT = NullType, int LEGACY_PTX_ARCH = 0)
#undef NN_CUDA_CPU_CUB_REFUSED

// CUB's device-wide algorithms, which host code calls: refused where a member is named
// (cub::DeviceReduce::Sum(...)), which makes the class.
#define NN_CUDA_CPU_CUB_REFUSED_DEVICE(name)                                                               \
    template <int I = 0>                                                                                   \
    struct nn_cuda_cpu_refused_##name {                                                                    \
        static_assert(I < 0, "the CPU runner does not support cub::" #name                                 \
                             " (CUB's device-wide algorithms, which host code launches: the runner runs kernels "   \
                             "from RawModule; CuPy's own reductions, scans and sorts do this work)");      \
        template <typename... Args>                                                                        \
        static int Sum(Args...) { return 0; }                                                              \
    };                                                                                                     \
    using name = nn_cuda_cpu_refused_##name<>;
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceReduce)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceSegmentedReduce)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceScan)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceRadixSort)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceSegmentedRadixSort)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceMergeSort)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceSegmentedSort)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceSelect)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DevicePartition)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceHistogram)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceRunLengthEncode)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceAdjacentDifference)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceSpmv)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceCopy)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceMemcpy)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceFor)
NN_CUDA_CPU_CUB_REFUSED_DEVICE(DeviceTransform)
#undef NN_CUDA_CPU_CUB_REFUSED_DEVICE

}  // namespace cub

// CUB 2.x's util_macro.cuh (deprecated in CCCL 3, still written)
#ifndef CUB_MAX
#define CUB_MAX(a, b) (((b) > (a)) ? (b) : (a))
#endif
#ifndef CUB_MIN
#define CUB_MIN(a, b) (((b) < (a)) ? (b) : (a))
#endif
