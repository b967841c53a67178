// cg::memcpy_async, cg::wait and cg::wait_prior on the CPU runner: the group's first thread copies at
// once, and waiting is the group's sync (every thread of the group sees the copy after it).
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

template <typename Group>
void memcpy_async(const Group& group, void* destination, const void* source, size_t bytes)
{
    if (group.thread_rank() == 0) {
        memcpy(destination, source, bytes);
    }
}

template <typename Group, typename T>
void memcpy_async(const Group& group, T* destination, size_t destination_count, const T* source, size_t source_count)
{
    if (group.thread_rank() == 0) {
        memcpy(destination, source, (destination_count < source_count ? destination_count : source_count) * sizeof(T));
    }
}

template <typename Group>
void wait(const Group& group)
{
    group.sync();
}

template <unsigned Stages, typename Group>
void wait_prior(const Group& group)
{
    group.sync();
}

}  // namespace cooperative_groups
