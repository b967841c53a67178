// CUDA's half precision (binary16: __half, __half2, the types `half` and `half2`) on the CPU: the
// bits of each number, conversions rounded in software and arithmetic that rounds once, as a GPU's
// instructions round (nn_cuda_cpu_narrow_float.h says how). Conversions to and from float and the
// integers are implicit, and the operators defined, unless __CUDA_NO_HALF_CONVERSIONS__ or
// __CUDA_NO_HALF_OPERATORS__ is defined, as with NVIDIA's header; a float and a __half in one
// expression (h * 2.0f) are ambiguous there as here.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

struct __half_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};

#define NN_CUDA_CPU_HALF_ROUNDED(value, mode) nn_cuda_cpu::narrow_bits<5, 10>(value, nn_cuda_cpu::Rounding::mode)

struct alignas(2) __half {
    unsigned short __x;
    __half() = default;
    __half(const __half_raw& raw) : __x(raw.x) {}
    __half& operator=(const __half_raw& raw)
    {
        __x = raw.x;
        return *this;
    }
    operator __half_raw() const { return __half_raw{__x}; }
    static __half from_bits(unsigned short bits) { return __half(__half_raw{bits}); }
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
    __half(float v) : __x(NN_CUDA_CPU_HALF_ROUNDED(v, nearest_even)) {}
    __half(double v) : __x(NN_CUDA_CPU_HALF_ROUNDED(v, nearest_even)) {}
    __half(short v) : __half(static_cast<double>(v)) {}
    __half(unsigned short v) : __half(static_cast<double>(v)) {}
    __half(int v) : __half(static_cast<double>(v)) {}
    __half(unsigned int v) : __half(static_cast<double>(v)) {}
    __half(long long v) : __half(static_cast<double>(v)) {}
    __half(unsigned long long v) : __half(static_cast<double>(v)) {}
    operator float() const { return nn_cuda_cpu::widen<5, 10>(__x); }
#endif
};

struct alignas(4) __half2 {
    __half x, y;
    __half2() = default;
    __half2(__half a, __half b) : x(a), y(b) {}
    __half2(const __half2_raw& raw) : x(__half_raw{raw.x}), y(__half_raw{raw.y}) {}
    operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};

typedef __half half;
typedef __half2 half2;

template <>
struct nn_cuda_cpu::narrow_float_name<__half> {  // in signatures
    static constexpr const char* value = "__half";
};
template <>
struct nn_cuda_cpu::narrow_float_name<__half2> {
    static constexpr const char* value = "__half2";
};

NN_CUDA_CPU_NARROW_FLOAT_FUNCTIONS(__half, __half2, 5, 10)
#if !defined(__CUDA_NO_HALF_OPERATORS__)
NN_CUDA_CPU_NARROW_FLOAT_OPERATORS(__half, __half2)
#endif

inline __half __float2half_rn(float v) { return __half::from_bits(NN_CUDA_CPU_HALF_ROUNDED(v, nearest_even)); }
inline __half __float2half(float v) { return __float2half_rn(v); }
inline __half __float2half_rz(float v) { return __half::from_bits(NN_CUDA_CPU_HALF_ROUNDED(v, toward_zero)); }
inline __half __float2half_rd(float v) { return __half::from_bits(NN_CUDA_CPU_HALF_ROUNDED(v, down)); }
inline __half __float2half_ru(float v) { return __half::from_bits(NN_CUDA_CPU_HALF_ROUNDED(v, up)); }
inline __half __double2half(double v) { return __half::from_bits(NN_CUDA_CPU_HALF_ROUNDED(v, nearest_even)); }
inline __half __int2half_rn(int v) { return __double2half(v); }
inline __half __uint2half_rn(unsigned int v) { return __double2half(v); }
inline __half __ll2half_rn(long long v) { return __double2half(static_cast<double>(v)); }
inline float __half2float(__half h) { return nn_cuda_cpu_wide(h); }
inline int __half2int_rz(__half h) { return static_cast<int>(truncf(__half2float(h))); }
inline int __half2int_rn(__half h) { return static_cast<int>(rintf(__half2float(h))); }
inline int __half2int_rd(__half h) { return static_cast<int>(floorf(__half2float(h))); }
inline int __half2int_ru(__half h) { return static_cast<int>(ceilf(__half2float(h))); }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __short_as_half(short bits) { return __half::from_bits(static_cast<unsigned short>(bits)); }
inline __half __ushort_as_half(unsigned short bits) { return __half::from_bits(bits); }

inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __float2half2_rn(float v) { return __half2half2(__float2half_rn(v)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half_rn(a), __float2half_rn(b)); }
inline __half2 __float22half2_rn(float2 v) { return __floats2half2_rn(v.x, v.y); }
inline float2 __half22float2(__half2 h) { return nn_cuda_cpu_wide2(h); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return __half2float(h.x); }
inline float __high2float(__half2 h) { return __half2float(h.y); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __lowhigh2highlow(__half2 h) { return __half2(h.y, h.x); }

#define CUDART_INF_FP16 __ushort_as_half(0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half(0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half(0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half(0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half(0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half(0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half(0x3C00U)
