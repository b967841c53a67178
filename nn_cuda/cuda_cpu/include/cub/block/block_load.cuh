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
class BlockLoad
    : public nn_cuda_cpu_detail::BlockMove<
          BlockLoad<T, BLOCK_DIM_X, ITEMS_PER_THREAD, ALGORITHM, BLOCK_DIM_Y, BLOCK_DIM_Z, LEGACY_PTX_ARCH>, T,
          BLOCK_DIM_X, ITEMS_PER_THREAD, BLOCK_DIM_Y, BLOCK_DIM_Z, ALGORITHM> {
    using move = typename BlockLoad::BlockMove;

public:
    using move::move;

    template <typename InputIteratorT>
    void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
    {
        load(block_itr, items, move::BLOCK_THREADS * ITEMS_PER_THREAD);
    }
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
    // the items before valid_items (none where it is 0 or less: a block past the end of the input)
    template <typename InputIteratorT>
    void load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        const int rank = move::rank("cub::BlockLoad");
        if (move::exchange::kind >= 0) {
            move::exchange::load_striped(rank, block_itr, items, valid_items);
            move::exchange::striped_to_blocked(this->storage_, rank, items);
        } else if (move::striped) {
            LoadDirectStriped<move::BLOCK_THREADS>(rank, block_itr, items, valid_items);
        } else {
            LoadDirectBlocked(rank, block_itr, items, valid_items);
        }
    }
};

}  // namespace cub
