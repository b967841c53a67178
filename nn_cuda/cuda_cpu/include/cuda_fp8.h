// CUDA's 8-bit floats (cuda_fp8.h: __nv_fp8_e4m3, __nv_fp8_e5m2 and their pairs and quads) are not
// supported by the CPU runner. The header builds, as it does with NVRTC and nvcc, so that code that
// includes it without using them (LeetCUDA includes it in most of its kernel files) runs; a variable
// of one of the types, or a call of a conversion, stops the build at its line in one message.
#pragma once

#include "cuda_bf16.h"
#include "cuda_fp16.h"

template <int Kind>
struct nn_cuda_cpu_fp8 {
    static_assert(Kind < 0, "the CPU runner does not support 8-bit floats (cuda_fp8.h)");
};
typedef nn_cuda_cpu_fp8<0> __nv_fp8_e4m3;
typedef nn_cuda_cpu_fp8<1> __nv_fp8_e5m2;
typedef nn_cuda_cpu_fp8<2> __nv_fp8x2_e4m3;
typedef nn_cuda_cpu_fp8<3> __nv_fp8x2_e5m2;
typedef nn_cuda_cpu_fp8<4> __nv_fp8x4_e4m3;
typedef nn_cuda_cpu_fp8<5> __nv_fp8x4_e5m2;
// their bits, which are plain integers in CUDA too
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_float_to_fp8, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_double_to_fp8, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_halfraw_to_fp8, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_bfloat16raw_to_fp8, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_float2_to_fp8x2, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_fp8_to_halfraw, "8-bit floats, cuda_fp8.h")
NN_CUDA_CPU_UNSUPPORTED(__nv_cvt_fp8x2_to_halfraw2, "8-bit floats, cuda_fp8.h")
