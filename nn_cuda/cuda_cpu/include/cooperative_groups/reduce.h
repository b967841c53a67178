// cg::reduce and cg::reduce_store_async on the CPU runner, over the rest of cooperative groups
// (../cooperative_groups.h).
#pragma once
#include "../cooperative_groups.h"
#include "details/functional.h"

namespace cooperative_groups {

// ---- collectives over a tile ------------------------------------------------------------------------

// Every lane of the tile gets op applied over the tile's values (a butterfly of shfl_xor, so each
// lane combines the values in the same tree, as a GPU's does).
template <unsigned Size, typename Parent, typename T, typename Op>
T reduce(const thread_block_tile<Size, Parent>& tile, T value, Op op)
{
    for (unsigned offset = Size / 2; offset > 0; offset /= 2) {
        value = op(value, tile.shfl_xor(value, offset));
    }
    return value;
}

// Every thread of the group gets op applied over the group's values, in the order of their ranks.
template <typename T, typename Op>
T reduce(const coalesced_group& group, T value, Op op)
{
    bool first = true;
    T total = value;
    nn_cuda_cpu::warp_gather(group.mask(), value, [&](unsigned, T other) {
        total = first ? other : op(total, other);
        first = false;
    });
    return total;
}

// The value of reduce, stored to *destination by the group's thread of rank 0 (CUDA 12's
// reduce_store_async of a pointer: visible to the group after its next sync).
template <typename Group, typename T, typename Op>
void reduce_store_async(const Group& group, T* destination, T value, Op op)
{
    const T total = reduce(group, value, op);
    if (group.thread_rank() == 0) {
        *destination = total;
    }
}

}  // namespace cooperative_groups
