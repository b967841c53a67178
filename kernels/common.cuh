// Device helpers shared by the kernels of this directory (#include "common.cuh").
//
// Every file that includes this is compiled with kernels/ on the include path: by NVRTC (the CuPy
// backend and the compile checks) and by the host C++ compiler (the cuda-cpu backend).
#pragma once

// Element (r, c) of op(X), an op_rows x op_cols matrix. X is stored op_rows x op_cols (row-major),
// or op_cols x op_rows when TRANSPOSED. 64-bit offsets: M * K may exceed 2^31.
template <typename T, bool TRANSPOSED>
__device__ __forceinline__ T op_element(const T* __restrict__ X, int r, int c, int op_rows, int op_cols)
{
    return TRANSPOSED ? X[static_cast<long long>(c) * op_rows + r]
                      : X[static_cast<long long>(r) * op_cols + c];
}
