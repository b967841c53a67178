// CUDA's vector types (float2, float4, int4, dim3, ...) come with the CPU runner's runtime
// (runtime.h and device_functions.h), which every CPU build includes first: nothing to add here.
#pragma once
