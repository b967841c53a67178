// CUDA's runtime API header (cuda_runtime.h includes it): its host API is not here, as in the
// runner's cuda_runtime.h, which says why.
#pragma once
