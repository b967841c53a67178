// CUDA's runtime API header (cuda_runtime.h includes it): its types (driver_types.h), which a
// declaration may name, and not its host API, as in the runner's cuda_runtime.h, which says why.
#pragma once

#include "driver_types.h"
