// cg::inclusive_scan and cg::exclusive_scan on the CPU runner, over the rest of cooperative groups
// (../cooperative_groups.h).
#pragma once
#include "../cooperative_groups.h"
#include "details/functional.h"

namespace cooperative_groups {

// Lane r gets op over the values of lanes 0..r of its tile (Hillis-Steele, by shfl_up).
template <unsigned Size, typename Parent, typename T, typename Op>
T inclusive_scan(const thread_block_tile<Size, Parent>& tile, T value, Op op)
{
    const unsigned rank = static_cast<unsigned>(tile.thread_rank());
    for (unsigned offset = 1; offset < Size; offset *= 2) {
        const T below = tile.shfl_up(value, offset);
        if (rank >= offset) {
            value = op(below, value);
        }
    }
    return value;
}

template <unsigned Size, typename Parent, typename T>
T inclusive_scan(const thread_block_tile<Size, Parent>& tile, T value)
{
    return inclusive_scan(tile, value, plus<T>());
}

// Lane r gets op over the values of lanes 0..r-1 (lane 0: T(), as CUDA's for plus).
template <unsigned Size, typename Parent, typename T, typename Op>
T exclusive_scan(const thread_block_tile<Size, Parent>& tile, T value, Op op)
{
    const T inclusive = inclusive_scan(tile, value, op);
    const T previous = tile.shfl_up(inclusive, 1);
    return tile.thread_rank() == 0 ? T() : previous;
}

template <unsigned Size, typename Parent, typename T>
T exclusive_scan(const thread_block_tile<Size, Parent>& tile, T value)
{
    return exclusive_scan(tile, value, plus<T>());
}

}  // namespace cooperative_groups
