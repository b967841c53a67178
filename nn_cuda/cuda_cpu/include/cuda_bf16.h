// CUDA's bfloat16 (__nv_bfloat16, __nv_bfloat162, the types `nv_bfloat16` and `nv_bfloat162`) on
// the CPU: the top 16 bits of a float, conversions rounded in software and arithmetic that rounds
// once, as a GPU's instructions round (nn_cuda_cpu_narrow_float.h says how). Conversions and
// operators as cuda_fp16.h's, unless __CUDA_NO_BFLOAT16_CONVERSIONS__ or
// __CUDA_NO_BFLOAT16_OPERATORS__ is defined.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

#define NN_CUDA_CPU_BF16_ROUNDED(value, mode) nn_cuda_cpu::narrow_bits<8, 7>(value, nn_cuda_cpu::Rounding::mode)

struct alignas(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(const __nv_bfloat16_raw& raw) : __x(raw.x) {}
    __nv_bfloat16& operator=(const __nv_bfloat16_raw& raw)
    {
        __x = raw.x;
        return *this;
    }
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    static __nv_bfloat16 from_bits(unsigned short bits) { return __nv_bfloat16(__nv_bfloat16_raw{bits}); }
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
    __nv_bfloat16(float v) : __x(NN_CUDA_CPU_BF16_ROUNDED(v, nearest_even)) {}
    __nv_bfloat16(double v) : __x(NN_CUDA_CPU_BF16_ROUNDED(v, nearest_even)) {}
    __nv_bfloat16(short v) : __nv_bfloat16(static_cast<double>(v)) {}
    __nv_bfloat16(unsigned short v) : __nv_bfloat16(static_cast<double>(v)) {}
    __nv_bfloat16(int v) : __nv_bfloat16(static_cast<double>(v)) {}
    __nv_bfloat16(unsigned int v) : __nv_bfloat16(static_cast<double>(v)) {}
    __nv_bfloat16(long long v) : __nv_bfloat16(static_cast<double>(v)) {}
    __nv_bfloat16(unsigned long long v) : __nv_bfloat16(static_cast<double>(v)) {}
    operator float() const { return nn_cuda_cpu::widen<8, 7>(__x); }
#endif
};

struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw& raw) : x(__nv_bfloat16_raw{raw.x}), y(__nv_bfloat16_raw{raw.y}) {}
    operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

template <>
struct nn_cuda_cpu::narrow_float_name<__nv_bfloat16> {  // in signatures
    static constexpr const char* value = "__nv_bfloat16";
};
template <>
struct nn_cuda_cpu::narrow_float_name<__nv_bfloat162> {
    static constexpr const char* value = "__nv_bfloat162";
};

NN_CUDA_CPU_NARROW_FLOAT_FUNCTIONS(__nv_bfloat16, __nv_bfloat162, 8, 7)
#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
NN_CUDA_CPU_NARROW_FLOAT_OPERATORS(__nv_bfloat16, __nv_bfloat162)
#endif

inline __nv_bfloat16 __float2bfloat16_rn(float v) { return __nv_bfloat16::from_bits(NN_CUDA_CPU_BF16_ROUNDED(v, nearest_even)); }
inline __nv_bfloat16 __float2bfloat16(float v) { return __float2bfloat16_rn(v); }
inline __nv_bfloat16 __float2bfloat16_rz(float v) { return __nv_bfloat16::from_bits(NN_CUDA_CPU_BF16_ROUNDED(v, toward_zero)); }
inline __nv_bfloat16 __float2bfloat16_rd(float v) { return __nv_bfloat16::from_bits(NN_CUDA_CPU_BF16_ROUNDED(v, down)); }
inline __nv_bfloat16 __float2bfloat16_ru(float v) { return __nv_bfloat16::from_bits(NN_CUDA_CPU_BF16_ROUNDED(v, up)); }
inline __nv_bfloat16 __double2bfloat16(double v) { return __nv_bfloat16::from_bits(NN_CUDA_CPU_BF16_ROUNDED(v, nearest_even)); }
inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __double2bfloat16(v); }
inline float __bfloat162float(__nv_bfloat16 h) { return nn_cuda_cpu_wide(h); }
inline int __bfloat162int_rz(__nv_bfloat16 h) { return static_cast<int>(truncf(__bfloat162float(h))); }
inline int __bfloat162int_rn(__nv_bfloat16 h) { return static_cast<int>(rintf(__bfloat162float(h))); }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return static_cast<short>(h.__x); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline __nv_bfloat16 __short_as_bfloat16(short bits) { return __nv_bfloat16::from_bits(static_cast<unsigned short>(bits)); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16::from_bits(bits); }

inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __float2bfloat162_rn(float v) { return __bfloat162bfloat162(__float2bfloat16_rn(v)); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b)
{
    return __nv_bfloat162(__float2bfloat16_rn(a), __float2bfloat16_rn(b));
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __floats2bfloat162_rn(v.x, v.y); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return nn_cuda_cpu_wide2(h); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 h) { return __nv_bfloat162(h.y, h.x); }

#define CUDART_INF_BF16 __ushort_as_bfloat16(0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16(0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16(0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16(0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16(0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16(0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16(0x3F80U)
