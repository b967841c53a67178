// What the runner's CUB headers (cub/block/..., cub/warp/..., cub/cub.cuh) share: this thread's
// place in a block or a logical warp, shuffles of values of any type, and the check that a block
// collective's template dimensions are the block's. Written for the CPU runner (runtime.h is
// included first in every CPU build): a block collective meets at __syncthreads() over the
// __shared__ TempStorage its caller declares, as CUB's do, and a warp collective meets at the
// *_sync shuffles.
#pragma once

#include <cstring>
#include <functional>
#include <type_traits>
#include "../../cooperative_groups.h"  // its shuffle of any type
#include "../../nn_cuda_cpu_cuda_std.h"  // cuda::std::plus and the rest of <functional>, as CUB 2.x brings them
#include "../../cuda/functional"  // cuda::maximum and cuda::minimum, as CCCL 2.8 brings them

// CUB's architecture macros (util_arch.cuh, which every CUB header brings): the runner's code is sm_80's,
// __CUDA_ARCH__ 800. HOOMD-blue's WarpTools.cuh sizes its warps by CUB_PTX_WARP_THREADS.
#ifndef CUB_PTX_ARCH
#define CUB_PTX_ARCH __CUDA_ARCH__
#endif
#ifndef CUB_PTX_WARP_THREADS
#define CUB_LOG_WARP_THREADS(unused) 5
#define CUB_WARP_THREADS(unused) 32
#define CUB_PTX_WARP_THREADS 32
#define CUB_PTX_LOG_WARP_THREADS 5
#define CUB_LOG_SMEM_BANKS(unused) 5
#define CUB_SMEM_BANKS(unused) 32
#define CUB_PTX_SMEM_BANKS 32
#define CUB_PTX_LOG_SMEM_BANKS 5
#endif

namespace cub {

// CUB's empty type, the default of what a template does not take
struct NullType {};

// This thread's rank in a block of those dimensions, row-major (CCCL's block tests rank by it)
inline int RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z)
{
    return (block_dim_z == 1 ? 0 : static_cast<int>(threadIdx.z) * block_dim_x * block_dim_y) +
           (block_dim_y == 1 ? 0 : static_cast<int>(threadIdx.y) * block_dim_x) + static_cast<int>(threadIdx.x);
}

namespace nn_cuda_cpu_detail {

constexpr int kWarpThreads = 32;

// A value of any type moved by `shuffle`, 8 bytes at a time: the cooperative groups' helper
template <typename T, typename nn_cuda_cpu_shuffle>
T shuffle_any(const T& value, nn_cuda_cpu_shuffle shuffle)
{
    return cooperative_groups::details::shuffle_words(value, shuffle);
}

// The items of one thread folded by `op`, first to last (an items-per-thread collective's own part)
template <int ITEMS_PER_THREAD, typename T, typename Op>
T fold(const T (&items)[ITEMS_PER_THREAD], Op& op)
{
    T partial = items[0];
    for (int i = 1; i < ITEMS_PER_THREAD; ++i) {
        partial = op(partial, items[i]);
    }
    return partial;
}

// The lanes of this thread's hardware warp that the block has (its last warp may be partial).
inline unsigned present_lanes()
{
    return nn_cuda_cpu::lanes_of(nn_cuda_cpu::current->tid / kWarpThreads, nn_cuda_cpu::threads_in_block());
}

// The lanes of the logical warp of `width` lanes (a power of 2) that hold this thread, as a mask
// over its hardware warp, less those the block does not have.
inline unsigned logical_warp_mask(int width)
{
    const unsigned lane = nn_cuda_cpu::lane_id(), first = lane / width * width;
    const unsigned lanes = width == kWarpThreads ? 0xFFFFFFFFu : ((1u << width) - 1u) << first;
    return lanes & present_lanes();
}

// How many lanes of this thread's logical warp of `width` lanes the block has.
inline int logical_warp_lanes(int width)
{
    const unsigned mask = logical_warp_mask(width);
    return __builtin_popcount(mask);
}

// Reduction over the first `valid` lanes of a logical warp of LOGICAL_WARP_THREADS lanes, by shuffles
// down at offsets 1, 2, 4, ...: lane 0 gets op over lanes 0 .. valid - 1 in their order (the others a
// partial value). A lane past `valid` takes part in the shuffles but its value is not used; a lane
// whose partner past `valid` the block does not have (a block of 16 threads) reads its own value
// instead, not used either. A partner within `valid` that the block does not have is read as CUB's
// shuffle reads it, an absent lane, whose value is undefined on a GPU (the runner's fill, reported
// in the checking mode): WarpReduce::Sum without valid_items in a partial last warp.
template <int LOGICAL_WARP_THREADS, typename T, typename Op>
T warp_reduce(T value, Op& op, int lane, int valid)
{
    const unsigned mask = logical_warp_mask(LOGICAL_WARP_THREADS);
    const int present = __builtin_popcount(mask);
    for (int offset = 1; offset < LOGICAL_WARP_THREADS; offset *= 2) {
        const int source = lane + offset < present || lane + offset < valid ? lane + offset : lane;
        const T other =
            shuffle_any(value, [&](auto v) { return __shfl_sync(mask, v, source, LOGICAL_WARP_THREADS); });
        if (lane + offset < valid) {
            value = op(value, other);
        }
    }
    return value;
}

// Inclusive scan over a logical warp of LOGICAL_WARP_THREADS lanes, by shuffles up at offsets 1, 2, 4, ...
template <int LOGICAL_WARP_THREADS, typename T, typename Op>
T warp_inclusive_scan(T value, Op& op, int lane)
{
    const unsigned mask = logical_warp_mask(LOGICAL_WARP_THREADS);
    for (int offset = 1; offset < LOGICAL_WARP_THREADS; offset *= 2) {
        const T other =
            shuffle_any(value, [&](auto v) { return __shfl_up_sync(mask, v, offset, LOGICAL_WARP_THREADS); });
        if (lane >= offset) {
            value = op(other, value);
        }
    }
    return value;
}

// The value of lane `source` of this thread's logical warp of LOGICAL_WARP_THREADS lanes.
template <int LOGICAL_WARP_THREADS, typename T>
T warp_broadcast(const T& value, int source)
{
    const unsigned mask = logical_warp_mask(LOGICAL_WARP_THREADS);
    return shuffle_any(value, [&](auto v) { return __shfl_sync(mask, v, source, LOGICAL_WARP_THREADS); });
}

// This thread's rank in a block of the template's dimensions, row-major as CUB ranks it, after the
// check that the block has those dimensions: CUB's block collectives index their TempStorage by
// this rank, and a GPU leaves the result undefined in a block of other dimensions. A collective of
// the first `valid` threads only (BlockReduce's num_valid; -1: all of them) may run in a 1-D block
// of fewer threads than BLOCK_DIM_X that holds them: CUB's reduction then reads the values of the
// warps that exist only (vLLM's rms_norm reduces with BLOCK_DIM_X 1024 in blocks of the row's size).
template <int BLOCK_DIM_X, int BLOCK_DIM_Y, int BLOCK_DIM_Z>
int block_rank(const char* collective, int valid = -1)
{
    const bool smaller_1d_block = valid >= 0 && BLOCK_DIM_Y == 1 && BLOCK_DIM_Z == 1 && blockDim.y == 1 &&
                                  blockDim.z == 1 && blockDim.x <= static_cast<unsigned>(BLOCK_DIM_X) &&
                                  blockDim.x >= static_cast<unsigned>(valid);
    if (!smaller_1d_block && (blockDim.x != static_cast<unsigned>(BLOCK_DIM_X) ||
                              blockDim.y != static_cast<unsigned>(BLOCK_DIM_Y) ||
                              blockDim.z != static_cast<unsigned>(BLOCK_DIM_Z))) {
        nn_cuda_cpu::report("%s: %s with BLOCK_DIM_X = %d, BLOCK_DIM_Y = %d, BLOCK_DIM_Z = %d in thread (%u, %u, "
                            "%u) of block (%u, %u, %u), a block of (%u, %u, %u) threads: CUB's block collectives "
                            "take the block's dimensions as their template arguments (a GPU leaves the result "
                            "undefined)", nn_cuda_cpu::launch.kernel, collective, BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z,
                            threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z, blockDim.x,
                            blockDim.y, blockDim.z);
        nn_cuda_cpu::end_launch_reported();
    }
    return static_cast<int>((threadIdx.z * BLOCK_DIM_Y + threadIdx.y) * BLOCK_DIM_X + threadIdx.x);
}

// Bytes for a TempStorage, so that it goes in a union with others' (CUB's is uninitialized storage too).
template <typename nn_cuda_cpu_layout>
struct raw_storage {
    alignas(nn_cuda_cpu_layout) unsigned char bytes[sizeof(nn_cuda_cpu_layout)];
    nn_cuda_cpu_layout& get() { return *reinterpret_cast<nn_cuda_cpu_layout*>(bytes); }
};

// The exchange of cub::BlockLoad's and BlockStore's transposing algorithms, through their TempStorage
// (`layout`) as CUB's BlockExchange does: KIND 0 among the block's threads (BLOCK_*_TRANSPOSE), 1 among
// each warp's (BLOCK_*_WARP_TRANSPOSE), -1 none (the direct algorithms, which need no storage). A
// group's items are striped (its thread `lane` holds items lane, lane + group, ...) in memory order or
// blocked (items lane * ITEMS_PER_THREAD, ...); the items of one group follow those of the one before.
template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, int BLOCK_DIM_Y, int BLOCK_DIM_Z, int KIND>
struct BlockExchangeOf {
    static constexpr int kind = KIND;
    static constexpr int threads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static_assert(KIND != 1 || threads % kWarpThreads == 0,
                  "cub's warp-transposing block loads and stores take a block of whole warps, as in CUB");
    static constexpr int group = KIND == 1 ? kWarpThreads : threads;
    struct layout {
        T items[KIND < 0 ? 1 : threads * ITEMS_PER_THREAD];
    };

    static int first_item(int rank) { return (rank - rank % group) * ITEMS_PER_THREAD; }
    static void sync()
    {
        if (KIND == 1) {
            __syncwarp();
        } else {
            __syncthreads();
        }
    }
    template <typename InputIteratorT>
    static void load_striped(int rank, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid)
    {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
            const int at = first_item(rank) + rank % group + i * group;
            if (at < valid) items[i] = block_itr[at];
        }
    }
    template <typename OutputIteratorT>
    static void store_striped(int rank, OutputIteratorT block_itr, const T (&items)[ITEMS_PER_THREAD], int valid)
    {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
            const int at = first_item(rank) + rank % group + i * group;
            if (at < valid) block_itr[at] = items[i];
        }
    }
    static void striped_to_blocked(layout& storage, int rank, T (&items)[ITEMS_PER_THREAD])
    {
        const int first = first_item(rank), lane = rank % group;
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) storage.items[first + lane + i * group] = items[i];
        sync();
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = storage.items[first + lane * ITEMS_PER_THREAD + i];
    }
    static void blocked_to_striped(layout& storage, int rank, const T (&items)[ITEMS_PER_THREAD],
                                   T (&striped)[ITEMS_PER_THREAD])
    {
        const int first = first_item(rank), lane = rank % group;
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) storage.items[first + lane * ITEMS_PER_THREAD + i] = items[i];
        sync();
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) striped[i] = storage.items[first + lane + i * group];
    }
};

// The exchange of an algorithm of cub::BlockLoad or BlockStore, which number theirs alike (DIRECT,
// STRIPED, VECTORIZE, TRANSPOSE, WARP_TRANSPOSE, WARP_TRANSPOSE_TIMESLICED): BlockExchangeOf's KIND.
constexpr int exchange_of(int algorithm) { return algorithm == 3 ? 0 : algorithm >= 4 ? 1 : -1; }

// What cub::BlockLoad and BlockStore share: the exchange of their ALGORITHM, their TempStorage, CUB's two
// constructors, and the thread's rank. `Collective` is the class itself, so that each has a private
// TempStorage of its own.
template <typename Collective, typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, int BLOCK_DIM_Y, int BLOCK_DIM_Z,
          int ALGORITHM>
class BlockMove {
protected:
    using exchange = BlockExchangeOf<T, BLOCK_DIM_X, ITEMS_PER_THREAD, BLOCK_DIM_Y, BLOCK_DIM_Z, exchange_of(ALGORITHM)>;
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr bool striped = ALGORITHM == 1;  // BLOCK_LOAD_STRIPED, BLOCK_STORE_STRIPED

public:
    struct TempStorage : raw_storage<typename exchange::layout> {};

    explicit BlockMove(TempStorage& storage) : storage_(storage.get()) {}
    // CUB's private TempStorage, a __shared__ one of the collective's own
    BlockMove() : storage_(private_storage()) {}

protected:
    // CUB's row-major rank where the items move directly; where the block exchanges them, the block must
    // have the template's dimensions
    static int rank(const char* collective)
    {
        return exchange::kind < 0 ? RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)
                                  : block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>(collective);
    }

    typename exchange::layout& storage_;

private:
    static typename exchange::layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }
};

}  // namespace nn_cuda_cpu_detail
}  // namespace cub
