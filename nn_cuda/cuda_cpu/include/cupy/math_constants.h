// <cupy/math_constants.h> on the CPU runner: CuPy bundles CUDART_INF_F, CUDART_NAN_F, CUDART_INF and
// CUDART_NAN of CUDA's math_constants.h for its own kernels (cupyx's Delaunay triangulation, splines),
// which this runner's math_constants.h has. CuPy's other headers stop the build in one line (build.py,
// MISSING_LIBRARIES).
#pragma once
#include "../math_constants.h"
