// CUDA's pipeline primitives (cuda_pipeline_primitives.h) on the CPU runner. __pipeline_memcpy_async
// copies size_and_align - zfill bytes and fills the last zfill bytes of the destination with zeros at
// once, so __pipeline_commit and __pipeline_wait_prior have nothing to wait for (a kernel that reads
// the destination before its wait reads the data here, garbage on a GPU: the runner cannot tell).
// The requirements CUDA states (4, 8 or 16 bytes, zfill not more, both addresses aligned to the
// size) fail as an assert, naming the line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

inline void __pipeline_memcpy_async(void* destination, const void* source, std::size_t size_and_align,
                                    std::size_t zfill = 0)
{
    assert(size_and_align == 4 || size_and_align == 8 || size_and_align == 16);
    assert(zfill <= size_and_align);
    assert(reinterpret_cast<std::uintptr_t>(destination) % size_and_align == 0);
    assert(reinterpret_cast<std::uintptr_t>(source) % size_and_align == 0);
    memcpy(destination, source, size_and_align - zfill);
    memset(static_cast<char*>(destination) + (size_and_align - zfill), 0, zfill);
}

inline void __pipeline_commit() {}

inline void __pipeline_wait_prior(std::size_t) {}
