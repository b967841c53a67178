// CUDA's driver_functions.h: the helpers that make the descriptions of a 3-D copy (their types are
// driver_types.h's). Host code calls them; kernel files include the header beside cuda_runtime.h (every
// kernel file of CS149's assignment 3 does), so it is here for them to build.
#pragma once

#include "driver_types.h"

inline cudaPitchedPtr make_cudaPitchedPtr(void* ptr, size_t pitch, size_t xsize, size_t ysize)
{
    return cudaPitchedPtr{ptr, pitch, xsize, ysize};
}

inline cudaPos make_cudaPos(size_t x, size_t y, size_t z) { return cudaPos{x, y, z}; }

inline cudaExtent make_cudaExtent(size_t width, size_t height, size_t depth) { return cudaExtent{width, height, depth}; }
