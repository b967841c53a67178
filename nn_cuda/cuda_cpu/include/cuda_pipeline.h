// CUDA's cuda_pipeline.h on the CPU runner: its primitives (cuda_pipeline_primitives.h).
#pragma once

#include <cuda_pipeline_primitives.h>
