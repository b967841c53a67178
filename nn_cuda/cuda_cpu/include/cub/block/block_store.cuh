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
class BlockStore {
    using exchange = nn_cuda_cpu_detail::BlockExchangeOf<T, BLOCK_DIM_X, ITEMS_PER_THREAD, BLOCK_DIM_Y, BLOCK_DIM_Z,
                                                         ALGORITHM == BLOCK_STORE_TRANSPOSE ? 0
                                                         : ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE ||
                                                                 ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED
                                                             ? 1 : -1>;
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

public:
    struct TempStorage : nn_cuda_cpu_detail::raw_storage<typename exchange::layout> {};

    explicit BlockStore(TempStorage& storage) : storage_(storage.get()) {}
    // CUB's private TempStorage, a __shared__ one of the collective's own
    BlockStore() : storage_(private_storage()) {}

    template <typename OutputIteratorT>
    void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD]) { store(block_itr, items, -1); }
    template <typename OutputIteratorT>
    void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        store(block_itr, items, valid_items);
    }

private:
    static typename exchange::layout& private_storage()
    {
        __shared__ TempStorage storage;
        return storage.get();
    }

    template <typename OutputIteratorT>
    void store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items)
    {
        const int valid = valid_items < 0 ? BLOCK_THREADS * ITEMS_PER_THREAD : valid_items;
        if (exchange::kind < 0) {
            const int rank = RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z);
            if (ALGORITHM == BLOCK_STORE_STRIPED) {
                StoreDirectStriped<BLOCK_THREADS>(rank, block_itr, items, valid);
            } else {
                StoreDirectBlocked(rank, block_itr, items, valid);
            }
            return;
        }
        const int rank = nn_cuda_cpu_detail::block_rank<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockStore");
        T striped[ITEMS_PER_THREAD];
        exchange::blocked_to_striped(storage_, rank, items, striped);
        exchange::store_striped(rank, block_itr, striped, valid);
    }

    typename exchange::layout& storage_;
};

}  // namespace cub
