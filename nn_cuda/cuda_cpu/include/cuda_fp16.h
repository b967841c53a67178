// CUDA's half precision (binary16: __half, __half2, the types `half` and `half2`) on the CPU: the
// bits of each number, conversions rounded in software and arithmetic that rounds once, as a GPU's
// instructions round (nn_cuda_cpu_narrow_float.h says how and holds what both formats share).
// Conversions to and from float and the integers are implicit, and the operators defined, unless
// __CUDA_NO_HALF_CONVERSIONS__ or __CUDA_NO_HALF_OPERATORS__ is defined, as with NVIDIA's header; a
// float and a __half in one expression (h * 2.0f) are ambiguous there as here.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

struct __half_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};

struct alignas(2) __half {
    NN_CUDA_CPU_NARROW_FLOAT_MEMBERS(__half, __half_raw)
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
    NN_CUDA_CPU_NARROW_FLOAT_CONVERSIONS(__half, 5, 10)
#endif
};
NN_CUDA_CPU_NARROW_FLOAT_PAIR(__half, __half2, __half_raw, __half2_raw)

typedef __half half;
typedef __half2 half2;

NN_CUDA_CPU_NARROW_FLOAT_FUNCTIONS(__half, __half2, 5, 10)
#if !defined(__CUDA_NO_HALF_OPERATORS__)
NN_CUDA_CPU_NARROW_FLOAT_OPERATORS(__half, __half2)
#endif
NN_CUDA_CPU_NARROW_FLOAT_NAMED(half, __half, __half2, 5, 10)

#define CUDART_INF_FP16 __ushort_as_half(0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half(0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half(0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half(0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half(0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half(0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half(0x3C00U)

#ifdef NN_CUDA_CPU_RESTORE_FOR_cuda_header  // an NVRTC build: the limits macros CUDA's headers bring (nvrtc_headers.py)
NN_CUDA_CPU_RESTORE_FOR_cuda_header
#endif
