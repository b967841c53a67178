// <cub/block/block_load.cuh> on the CPU runner (written for it; see cub/cub.cuh): the direct blocked and
// striped loads, and cub::BlockLoad. Every algorithm gives CUB's arrangement of the items: blocked
// (thread t holds items t * ITEMS_PER_THREAD ...) but for BLOCK_LOAD_STRIPED (items t, t + BLOCK_THREADS,
// ...). The transposing ones move the items through the TempStorage as CUB's do, a striped load, then a
// barrier (__syncthreads(), or __syncwarp() for the warp's), then the blocked items: so they must be
// called by every thread of the block, and a second collective on the same TempStorage needs a
// __syncthreads() before it; without one the race check reports a race (bitsandbytes' quantize kernels
// load with BLOCK_LOAD_WARP_TRANSPOSE).
#pragma once
#include "../detail/nn_cuda_cpu_cub.h"

namespace cub {

// Thread `linear_tid`'s ITEMS_PER_THREAD items: consecutive ones (blocked), or every BLOCK_THREADS-th
// (striped); with valid_items, only those before it (and the others oob_default, when given).
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectBlocked(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_itr[linear_tid * ITEMS_PER_THREAD + i];
}
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectBlocked(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (linear_tid * ITEMS_PER_THREAD + i < valid_items) items[i] = block_itr[linear_tid * ITEMS_PER_THREAD + i];
    }
}
template <typename T, typename DefaultT, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectBlocked(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items,
                       DefaultT oob_default)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
    LoadDirectBlocked(linear_tid, block_itr, items, valid_items);
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectStriped(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_itr[linear_tid + i * BLOCK_THREADS];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectStriped(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (linear_tid + i * BLOCK_THREADS < valid_items) items[i] = block_itr[linear_tid + i * BLOCK_THREADS];
    }
}
template <int BLOCK_THREADS, typename T, typename DefaultT, int ITEMS_PER_THREAD, typename InputIteratorT>
void LoadDirectStriped(int linear_tid, InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items,
                       DefaultT oob_default)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
    LoadDirectStriped<BLOCK_THREADS>(linear_tid, block_itr, items, valid_items);
}
enum BlockLoadAlgorithm {
    BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED
};

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockLoad {
    using exchange = nn_cuda_cpu_detail::BlockExchangeOf<T, BLOCK_DIM_X, ITEMS_PER_THREAD, BLOCK_DIM_Y, BLOCK_DIM_Z,
                                                         ALGORITHM == BLOCK_LOAD_TRANSPOSE ? 0
                                                         : ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE ||
                                                                 ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED
                                                             ? 1 : -1>;
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

public:
    struct TempStorage : nn_cuda_cpu_detail::raw_storage<typename exchange::layout> {};

    explicit BlockLoad(TempStorage& storage) : storage_(storage.get()) {}
    // CUB's private TempStorage, a __shared__ one of the collective's own
    BlockLoad() : storage_(private_storage()) {}

    template <typename InputIteratorT>
    void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD]) { load(block_itr, items, -1); }
    template <typename InputIteratorT>
    void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        load(block_itr, items, valid_items);
    }
    template <typename InputIteratorT, typename DefaultT>
    void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items, DefaultT oob_default)
    {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
        load(block_itr, items, valid_items);
    }

private:
    static typename exchange::layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }

    // valid_items -1: all of them
    template <typename InputIteratorT>
    void load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        const int valid = valid_items < 0 ? BLOCK_THREADS * ITEMS_PER_THREAD : valid_items;
        if (exchange::kind < 0) {  // no exchange: the thread's own items, CUB's rank of it
            const int rank = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
            if (ALGORITHM == BLOCK_LOAD_STRIPED) {
                LoadDirectStriped<BLOCK_THREADS>(rank, block_itr, items, valid);
            } else {
                LoadDirectBlocked(rank, block_itr, items, valid);
            }
            return;
        }
        const int rank = nn_cuda_cpu_detail::block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockLoad");
        exchange::load_striped(rank, block_itr, items, valid);
        exchange::striped_to_blocked(storage_, rank, items);
    }

    typename exchange::layout& storage_;
};

}  // namespace cub
