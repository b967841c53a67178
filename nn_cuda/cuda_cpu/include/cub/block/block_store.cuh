// <cub/block/block_store.cuh> on the CPU runner (written for it; see cub/cub.cuh): the direct blocked and
// striped stores, and cub::BlockStore. Every algorithm takes CUB's arrangement of the items: blocked
// (thread t holds items t * ITEMS_PER_THREAD ...) but for BLOCK_STORE_STRIPED (items t, t + BLOCK_THREADS,
// ...). The transposing ones move the items through the TempStorage as CUB's do (the blocked items, a
// barrier, then a striped store), so they must be called by every thread of the block, and a second
// collective on the same TempStorage needs a __syncthreads() before it.
#pragma once
#include "block_load.cuh"

namespace cub {

template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
void StoreDirectBlocked(int linear_tid, OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) block_itr[linear_tid * ITEMS_PER_THREAD + i] = items[i];
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
void StoreDirectBlocked(int linear_tid, OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (linear_tid * ITEMS_PER_THREAD + i < valid_items) block_itr[linear_tid * ITEMS_PER_THREAD + i] = items[i];
    }
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
void StoreDirectStriped(int linear_tid, OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) block_itr[linear_tid + i * BLOCK_THREADS] = items[i];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
void StoreDirectStriped(int linear_tid, OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
{
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (linear_tid + i * BLOCK_THREADS < valid_items) block_itr[linear_tid + i * BLOCK_THREADS] = items[i];
    }
}

enum BlockStoreAlgorithm {
    BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE, BLOCK_STORE_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED
};

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockStore
    : public nn_cuda_cpu_detail::BlockMove<
          BlockStore<T, BLOCK_DIM_X, ITEMS_PER_THREAD, ALGORITHM, BLOCK_DIM_Y, BLOCK_DIM_Z, LEGACY_PTX_ARCH>, T,
          BLOCK_DIM_X, ITEMS_PER_THREAD, BLOCK_DIM_Y, BLOCK_DIM_Z, ALGORITHM> {
    using move = typename BlockStore::BlockMove;

public:
    using move::move;

    template <typename OutputIteratorT>
    void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD])
    {
        store(block_itr, items, move::BLOCK_THREADS * ITEMS_PER_THREAD);
    }
    template <typename OutputIteratorT>
    void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        store(block_itr, items, valid_items);
    }

private:
    template <typename OutputIteratorT>
    void store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        const int rank = move::rank("cub::BlockStore");
        if (move::exchange::kind >= 0) {
            T striped[ITEMS_PER_THREAD];
            move::exchange::blocked_to_striped(this->storage_, rank, items, striped);
            move::exchange::store_striped(rank, block_itr, striped, valid_items);
        } else if (move::striped) {
            StoreDirectStriped<move::BLOCK_THREADS>(rank, block_itr, items, valid_items);
        } else {
            StoreDirectBlocked(rank, block_itr, items, valid_items);
        }
    }
};

}  // namespace cub
