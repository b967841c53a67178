// CUDA's runtime header, which kernel files include first for nvcc: the device side of it (the
// built-in variables, __syncthreads, the vector types, the device functions) comes with the CPU
// runner's runtime (runtime.h and device_functions.h), which every CPU build includes first, and
// the runtime API's types (cudaError_t, cudaStream_t, ...) with cuda_runtime_api.h. Its host API
// (cudaMalloc, streams, launches) is not here: a RawModule holds device code only, as CuPy's does.
#pragma once

#include "cuda_runtime_api.h"
