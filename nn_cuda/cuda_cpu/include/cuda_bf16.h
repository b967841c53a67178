// CUDA's bfloat16 (__nv_bfloat16, __nv_bfloat162, the types `nv_bfloat16` and `nv_bfloat162`) on
// the CPU: the top 16 bits of a float, conversions rounded in software and arithmetic that rounds
// once, as a GPU's instructions round (nn_cuda_cpu_narrow_float.h says how and holds what both
// formats share). Conversions and operators as cuda_fp16.h's, unless __CUDA_NO_BFLOAT16_CONVERSIONS__
// or __CUDA_NO_BFLOAT16_OPERATORS__ is defined.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

struct alignas(2) __nv_bfloat16 {
    NN_CUDA_CPU_NARROW_FLOAT_MEMBERS(__nv_bfloat16, __nv_bfloat16_raw)
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
    NN_CUDA_CPU_NARROW_FLOAT_CONVERSIONS(__nv_bfloat16, 8, 7)
#endif
};
NN_CUDA_CPU_NARROW_FLOAT_PAIR(__nv_bfloat16, __nv_bfloat162, __nv_bfloat16_raw, __nv_bfloat162_raw)

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

NN_CUDA_CPU_NARROW_FLOAT_FUNCTIONS(__nv_bfloat16, __nv_bfloat162, 8, 7)
#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
NN_CUDA_CPU_NARROW_FLOAT_OPERATORS(__nv_bfloat16, __nv_bfloat162)
#endif
NN_CUDA_CPU_NARROW_FLOAT_NAMED(bfloat16, __nv_bfloat16, __nv_bfloat162, 8, 7)

#define CUDART_INF_BF16 __ushort_as_bfloat16(0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16(0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16(0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16(0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16(0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16(0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16(0x3F80U)

#ifdef NN_CUDA_CPU_RESTORE_FOR_cuda_header  // an NVRTC build: the limits macros CUDA's headers bring (nvrtc_headers.py)
NN_CUDA_CPU_RESTORE_FOR_cuda_header
#endif
