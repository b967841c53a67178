// CUB's binary searches on the CPU runner (written for it; see cub/cub.cuh), as CUB's
// cub/thread/thread_search.cuh names them: in the sorted input[0, num_items), cub::LowerBound gives
// the first offset whose item is not less than val, cub::UpperBound the first whose item is greater
// than val (num_items where there is none). Each thread searches alone, as there.
#pragma once

namespace cub {

template <typename InputIteratorT, typename OffsetT, typename T>
OffsetT LowerBound(InputIteratorT input, OffsetT num_items, T val)
{
    OffsetT first = 0;
    while (num_items > 0) {  // the items before `first` are less than val; num_items are left to look at
        OffsetT half = num_items >> 1;
        if (input[first + half] < val) {
            first = first + half + 1;
            num_items = num_items - (half + 1);
        } else {
            num_items = half;
        }
    }
    return first;
}

template <typename InputIteratorT, typename OffsetT, typename T>
OffsetT UpperBound(InputIteratorT input, OffsetT num_items, T val)
{
    OffsetT first = 0;
    while (num_items > 0) {  // the items before `first` are not greater than val
        OffsetT half = num_items >> 1;
        if (val < input[first + half]) {
            num_items = half;
        } else {
            first = first + half + 1;
            num_items = num_items - (half + 1);
        }
    }
    return first;
}

}  // namespace cub
