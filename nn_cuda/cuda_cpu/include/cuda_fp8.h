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

// the conversions, each of CUDA's result type, so that the call compiles to its refusal (the int of a
// generic refusal stopped `__half_raw r = __nv_cvt_fp8_to_halfraw(...)` on a type error until 2026-11-27)
#define NN_CUDA_CPU_FP8_CONVERSION(function, result)                                                  \
    template <typename... A>                                                                         \
    __attribute__((error("the CPU runner does not support 8-bit floats (cuda_fp8.h: " #function ")"))) \
    result function(A...);
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_float_to_fp8, __nv_fp8_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_double_to_fp8, __nv_fp8_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_halfraw_to_fp8, __nv_fp8_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_bfloat16raw_to_fp8, __nv_fp8_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_float2_to_fp8x2, __nv_fp8x2_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_double2_to_fp8x2, __nv_fp8x2_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_halfraw2_to_fp8x2, __nv_fp8x2_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_bfloat16raw2_to_fp8x2, __nv_fp8x2_storage_t)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_fp8_to_halfraw, __half_raw)
NN_CUDA_CPU_FP8_CONVERSION(__nv_cvt_fp8x2_to_halfraw2, __half2_raw)
#undef NN_CUDA_CPU_FP8_CONVERSION
