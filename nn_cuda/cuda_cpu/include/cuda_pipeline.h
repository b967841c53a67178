// CUDA's cuda_pipeline.h on the CPU runner: its primitives (cuda_pipeline_primitives.h).
#pragma once

#include <cuda_pipeline_primitives.h>

#ifdef NN_CUDA_CPU_RESTORE_FOR_cuda_header  // an NVRTC build: the limits macros CUDA's headers bring (nvrtc_headers.py)
NN_CUDA_CPU_RESTORE_FOR_cuda_header
#endif
