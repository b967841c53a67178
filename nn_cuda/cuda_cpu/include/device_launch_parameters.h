// threadIdx, blockIdx, blockDim, gridDim and warpSize come with the CPU runner's runtime (runtime.h),
// which every CPU build includes first: nothing to add here.
#pragma once
