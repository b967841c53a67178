// What cuda_fp16.h (__half, binary16) and cuda_bf16.h (__nv_bfloat16, bfloat16) share on the CPU:
// a 16-bit float is its bits, converted from a double or a float by rounding in software (ties to
// even unless the function names another mode, a NaN's bits as NanBits says, overflow to infinity),
// widened to a float exactly. Arithmetic widens to float, computes there and rounds once: a float
// carries more than twice the bits of either format plus two, so + - * / and sqrt give the correctly
// rounded result, as a GPU's instructions do; fma is computed in double, rounded to odd
// (fma_rounded_to_odd), for the same reason. The math
// functions (hexp, hlog, ...) round the float function's value, where a GPU's are approximations
// of their own: the two can differ in the last bit.
#pragma once

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>

// The host's uint64_t, also after code that declares its own under NVRTC (nvrtc_headers.own_integer_types)
#pragma push_macro("uint64_t")
#undef uint64_t

namespace nn_cuda_cpu {

enum class Rounding { nearest_even, toward_zero, down, up };
// The NaN a conversion gives: the quiet NaN with the payload's top bits (what __double2half gives),
// or the one NaN 0x7FFF (what a GPU's conversion from float and its 16-bit arithmetic give, measured
// on an H100 in both formats).
enum class NanBits { payload, canonical };

// The bits of `value` in a binary format of ExponentBits exponent bits and FractionBits fraction bits
// (binary16: 5, 10; bfloat16: 8, 7), rounded as `mode` says. (Long names: a code built with -DE=... or
// -DM=... would turn one-letter ones into its values.)
template <int ExponentBits, int FractionBits>
uint16_t narrow_bits(double value, Rounding mode, NanBits nan_bits = NanBits::canonical)
{
    constexpr int bias = (1 << (ExponentBits - 1)) - 1;
    constexpr uint64_t infinity = ((uint64_t{1} << ExponentBits) - 1) << FractionBits;
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    const uint16_t sign = static_cast<uint16_t>((bits >> 63) << 15);
    const bool negative = sign != 0;
    const uint64_t magnitude = bits & 0x7FFFFFFFFFFFFFFFull;
    if (magnitude > 0x7FF0000000000000ull && nan_bits == NanBits::canonical) {
        return 0x7FFF;
    }
    if (magnitude >= 0x7FF0000000000000ull) {  // infinity, or a NaN made quiet with its payload's top bits
        const uint64_t nan = magnitude > 0x7FF0000000000000ull
                                 ? (uint64_t{1} << (FractionBits - 1)) |
                                       ((magnitude >> (52 - FractionBits)) & ((uint64_t{1} << FractionBits) - 1))
                                 : 0;
        return static_cast<uint16_t>(sign | infinity | nan);
    }
    // value = significand 2^(exponent - 52); the format's numbers are s 2^(e - FractionBits) with e >= 1 - bias
    // (below that, the subnormals' fixed unit)
    const int biased = static_cast<int>(magnitude >> 52);
    const int exponent = (biased == 0 ? 1 : biased) - 1023;
    const uint64_t significand = (magnitude & ((uint64_t{1} << 52) - 1)) | (biased == 0 ? 0 : uint64_t{1} << 52);
    const int scale = std::max(exponent, 1 - bias);
    const int dropped = std::min(52 - FractionBits + scale - exponent, 54);  // bits below the format's unit
    uint64_t kept = significand >> dropped;
    const uint64_t rest = significand & ((uint64_t{1} << dropped) - 1), halfway = uint64_t{1} << (dropped - 1);
    switch (mode) {
    case Rounding::nearest_even: kept += rest > halfway || (rest == halfway && (kept & 1)); break;
    case Rounding::toward_zero: break;
    case Rounding::down: kept += rest != 0 && negative; break;
    case Rounding::up: kept += rest != 0 && !negative; break;
    }
    // a normal number's leading bit, 2^FractionBits in `kept`, adds the 1 its exponent field lacks (a carry of the
    // rounding too); a subnormal's field is 0
    uint64_t field = (static_cast<uint64_t>(scale + bias - 1) << FractionBits) + kept;
    if (field >= infinity) {
        const bool to_infinity = mode == Rounding::nearest_even || (mode == Rounding::up && !negative) ||
                                 (mode == Rounding::down && negative);
        field = to_infinity ? infinity : infinity - 1;  // else the largest finite number
    }
    return static_cast<uint16_t>(sign | field);
}

// A 64-bit integer as a double rounded to odd (the bits a double cannot hold make its last bit 1), so
// that narrow_bits rounds it once, as a GPU's conversion does: rounded to nearest first, a tie of the
// 16-bit format could come out of the double's own rounding (bfloat16 holds 2^63).
template <typename Integer>
double odd_rounded_double(Integer value)
{
    const bool negative = value < 0;
    uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
    const int shift = magnitude >> 53 != 0 ? 64 - __builtin_clzll(magnitude) - 53 : 0;  // the bits past 53
    const uint64_t kept = (magnitude >> shift) | ((magnitude & ((uint64_t{1} << shift) - 1)) != 0);
    const double rounded = std::ldexp(static_cast<double>(kept), shift);
    return negative ? -rounded : rounded;
}

// The float of the bits of a number of that format (exact: a float holds every one of them). A
// binary16 NaN widens to the float NaN 0x7FFFFFFF, a bfloat16 NaN keeps its bits, as on an H100.
template <int ExponentBits, int FractionBits>
float widen(uint16_t bits)
{
    constexpr int bias = (1 << (ExponentBits - 1)) - 1;
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits & 0x7FFFu) >> FractionBits, fraction = bits & ((1u << FractionBits) - 1);
    uint32_t wide;
    if (exponent == (1u << ExponentBits) - 1) {
        wide = ExponentBits < 8 && fraction != 0 ? 0x7FFFFFFFu : sign | 0x7F800000u | (fraction << (23 - FractionBits));
    } else if (exponent == 0 && ExponentBits < 8) {  // a subnormal of a narrower range: a normal float
        const float magnitude = std::ldexp(static_cast<float>(fraction), 1 - bias - FractionBits);
        return sign ? -magnitude : magnitude;
    } else {  // with ExponentBits == 8 (bfloat16) the exponent field is the float's
        wide = sign | ((exponent + (ExponentBits == 8 ? 0 : 127 - bias)) << 23) | (fraction << (23 - FractionBits));
    }
    float result;
    memcpy(&result, &wide, sizeof(result));
    return result;
}

// a * b + c in double, rounded to odd: the product of two floats is exact in a double, and the sum's
// error (two-sum, exact) decides a last bit of 1 when the double is not exact. Rounded again to 16
// bits, that gives the exact result rounded once, as a GPU's __hfma does: a plain double sum loses a
// c far below the product, and a product on a tie then rounds to even where a GPU rounds away (seen
// on an H100 in 9 of 4,000 bfloat16 fmas).
inline double fma_rounded_to_odd(float a, float b, float c)
{
    const double product = static_cast<double>(a) * b, sum = product + c;
    const double c_part = sum - product, error = (product - (sum - c_part)) + (c - c_part);
    uint64_t bits;
    memcpy(&bits, &sum, sizeof(bits));
    if (error == 0 || !std::isfinite(sum) || (bits & 1)) {
        return sum;
    }
    return std::nextafter(sum, error > 0 ? __builtin_inf() : -__builtin_inf());
}

// A 16-bit atomic update by compare-and-swap (a GPU's atomicAdd on __half and __nv_bfloat16).
template <typename T, typename Update>
T atomic_update16(T* address, Update update)
{
    static_assert(sizeof(T) == 2, "a 16-bit value");
    uint16_t* bits = reinterpret_cast<uint16_t*>(address);
    uint16_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        T old;
        memcpy(&old, &expected, 2);
        const T updated = update(old);
        uint16_t desired;
        memcpy(&desired, &updated, 2);
        if (__atomic_compare_exchange_n(bits, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return old;
        }
    }
}

}  // namespace nn_cuda_cpu

// The members of a 16-bit float type T with bits __x (protected, as in NVIDIA's headers, where NVRTC
// refuses code that reads h.__x; the runner's own functions read nn_cuda_cpu_bits()): from and to
// its raw struct Raw, from_bits, and (NN_CUDA_CPU_NARROW_FLOAT_CONVERSIONS, unless a header's
// __CUDA_NO_*_CONVERSIONS__ says not) the implicit conversions from the numbers, rounded to nearest
// even, and to float.
#define NN_CUDA_CPU_NARROW_FLOAT_MEMBERS(T, Raw)                                                          \
  protected:                                                                                            \
    unsigned short __x;                                                                                 \
                                                                                                        \
  public:                                                                                               \
    unsigned short nn_cuda_cpu_bits() const { return __x; }                                             \
    T() = default;                                                                                      \
    T(const Raw& raw) : __x(raw.x) {}                                                                   \
    T& operator=(const Raw& raw)                                                                        \
    {                                                                                                   \
        __x = raw.x;                                                                                    \
        return *this;                                                                                   \
    }                                                                                                   \
    operator Raw() const { return Raw{__x}; }                                                           \
    static T from_bits(unsigned short bits) { return T(Raw{bits}); }
#define NN_CUDA_CPU_NARROW_FLOAT_CONVERSIONS(T, E, M)                                                     \
    T(double v) : __x(nn_cuda_cpu::narrow_bits<E, M>(v, nn_cuda_cpu::Rounding::nearest_even,            \
                                                     nn_cuda_cpu::NanBits::payload)) {}                  \
    T(float v) : __x(nn_cuda_cpu::narrow_bits<E, M>(v, nn_cuda_cpu::Rounding::nearest_even)) {}          \
    T(short v) : T(static_cast<double>(v)) {}                                                           \
    T(unsigned short v) : T(static_cast<double>(v)) {}                                                  \
    T(int v) : T(static_cast<double>(v)) {}                                                             \
    T(unsigned int v) : T(static_cast<double>(v)) {}                                                    \
    T(long long v) : T(nn_cuda_cpu::odd_rounded_double(v)) {}                                           \
    T(unsigned long long v) : T(nn_cuda_cpu::odd_rounded_double(v)) {}                                  \
    operator float() const { return nn_cuda_cpu::widen<E, M>(__x); }

// The pair type T2 of T (members x and y), with its raw struct Raw2, and its name in signatures and
// T's: "__half2", "__half".
#define NN_CUDA_CPU_NARROW_FLOAT_PAIR(T, T2, Raw, Raw2)                                                   \
    struct alignas(4) T2 {                                                                              \
        T x, y;                                                                                         \
        T2() = default;                                                                                 \
        T2(T a, T b) : x(a), y(b) {}                                                                    \
        T2(const Raw2& raw) : x(Raw{raw.x}), y(Raw{raw.y}) {}                                           \
        operator Raw2() const { return Raw2{x.nn_cuda_cpu_bits(), y.nn_cuda_cpu_bits()}; }              \
    };                                                                                                  \
    namespace nn_cuda_cpu {                                                                             \
    template <>                                                                                         \
    struct narrow_float_name<T> {                                                                       \
        static constexpr const char* value = #T;                                                        \
    };                                                                                                  \
    template <>                                                                                         \
    struct narrow_float_name<T2> {                                                                      \
        static constexpr const char* value = #T2;                                                       \
    };                                                                                                  \
    }

// The conversions between the 16-bit float T (named N: half, bfloat16) and the integer I (named
// name: int, ull, ...) in the four rounding modes (__int2half_rn, __half2ull_rz, ...): to T rounded
// once; to I as a GPU's cvt converts, clamped to I's range, NaN giving 0 (2^63 into 64 bits), by
// device_functions.h's to_integer.
#define NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, name, I)                                                   \
    inline T __##name##2##N##_rn(I v) { return NN_CUDA_CPU_FROM_INTEGER(N, v, nearest_even); }           \
    inline T __##name##2##N##_rz(I v) { return NN_CUDA_CPU_FROM_INTEGER(N, v, toward_zero); }            \
    inline T __##name##2##N##_rd(I v) { return NN_CUDA_CPU_FROM_INTEGER(N, v, down); }                   \
    inline T __##name##2##N##_ru(I v) { return NN_CUDA_CPU_FROM_INTEGER(N, v, up); }                     \
    inline I __##N##2##name##_rn(T h) { return nn_cuda_cpu::to_integer<I>(FE_TONEAREST, __##N##2float(h)); } \
    inline I __##N##2##name##_rz(T h) { return nn_cuda_cpu::to_integer<I>(FE_TOWARDZERO, __##N##2float(h)); } \
    inline I __##N##2##name##_rd(T h) { return nn_cuda_cpu::to_integer<I>(FE_DOWNWARD, __##N##2float(h)); } \
    inline I __##N##2##name##_ru(T h) { return nn_cuda_cpu::to_integer<I>(FE_UPWARD, __##N##2float(h)); }
#define NN_CUDA_CPU_FROM_INTEGER(N, v, mode) \
    nn_cuda_cpu_rounded_##N(nn_cuda_cpu::odd_rounded_double(v), nn_cuda_cpu::Rounding::mode)

// CUDA's functions named after the format, N = half or bfloat16 (__float2half_rn,
// __float2bfloat16_rn, __half2float, __bfloat162float, __halves2half2, ...), for T of E and M bits.
#define NN_CUDA_CPU_NARROW_FLOAT_NAMED(N, T, T2, E, M)                                                    \
    inline T nn_cuda_cpu_rounded_##N(double v, nn_cuda_cpu::Rounding mode,                              \
                                     nn_cuda_cpu::NanBits nan_bits = nn_cuda_cpu::NanBits::canonical)   \
    {                                                                                                   \
        return T::from_bits(nn_cuda_cpu::narrow_bits<E, M>(v, mode, nan_bits));                          \
    }                                                                                                   \
    inline T __float2##N##_rn(float v) { return nn_cuda_cpu_rounded_##N(v, nn_cuda_cpu::Rounding::nearest_even); } \
    inline T __float2##N(float v) { return __float2##N##_rn(v); }                                        \
    inline T __float2##N##_rz(float v) { return nn_cuda_cpu_rounded_##N(v, nn_cuda_cpu::Rounding::toward_zero); } \
    inline T __float2##N##_rd(float v) { return nn_cuda_cpu_rounded_##N(v, nn_cuda_cpu::Rounding::down); } \
    inline T __float2##N##_ru(float v) { return nn_cuda_cpu_rounded_##N(v, nn_cuda_cpu::Rounding::up); }  \
    inline T __double2##N(double v)                                                                     \
    {                                                                                                   \
        return nn_cuda_cpu_rounded_##N(v, nn_cuda_cpu::Rounding::nearest_even, nn_cuda_cpu::NanBits::payload); \
    }                                                                                                   \
    inline float __##N##2float(T h) { return nn_cuda_cpu_wide(h); }                                     \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, short, short)                                                \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, ushort, unsigned short)                                      \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, int, int)                                                    \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, uint, unsigned int)                                          \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, ll, long long)                                               \
    NN_CUDA_CPU_NARROW_FLOAT_INTEGER(N, T, ull, unsigned long long)                                     \
    inline signed char __##N##2char_rz(T h) { return nn_cuda_cpu::to_integer<signed char>(FE_TOWARDZERO, __##N##2float(h)); } \
    inline unsigned char __##N##2uchar_rz(T h) { return nn_cuda_cpu::to_integer<unsigned char>(FE_TOWARDZERO, __##N##2float(h)); } \
    inline short __##N##_as_short(T h) { return static_cast<short>(h.nn_cuda_cpu_bits()); }             \
    inline unsigned short __##N##_as_ushort(T h) { return h.nn_cuda_cpu_bits(); }                       \
    inline T __short_as_##N(short bits) { return T::from_bits(static_cast<unsigned short>(bits)); }     \
    inline T __ushort_as_##N(unsigned short bits) { return T::from_bits(bits); }                        \
    inline T2 make_##N##2(T a, T b) { return T2(a, b); }                                                \
    inline T2 __halves2##N##2(T a, T b) { return T2(a, b); }                                            \
    inline T2 __##N##2##N##2(T a) { return T2(a, a); }                                                  \
    inline T2 __float2##N##2_rn(float v) { return __##N##2##N##2(__float2##N##_rn(v)); }                \
    inline T2 __floats2##N##2_rn(float a, float b) { return T2(__float2##N##_rn(a), __float2##N##_rn(b)); } \
    inline T2 __float22##N##2_rn(float2 v) { return __floats2##N##2_rn(v.x, v.y); }                     \
    inline float2 __##N##22float2(T2 h) { return nn_cuda_cpu_wide2(h); }                                \
    inline T __low2##N(T2 h) { return h.x; }                                                            \
    inline T2 __low2##N##2(T2 h) { return T2(h.x, h.x); }                                               \
    inline T2 __high2##N##2(T2 h) { return T2(h.y, h.y); }                                              \
    inline T __high2##N(T2 h) { return h.y; }                                                           \
    inline float __low2float(T2 h) { return __##N##2float(h.x); }                                       \
    inline float __high2float(T2 h) { return __##N##2float(h.y); }                                      \
    inline T2 __lows2##N##2(T2 a, T2 b) { return T2(a.x, b.x); }                                        \
    inline T2 __highs2##N##2(T2 a, T2 b) { return T2(a.y, b.y); }                                       \
    inline T2 __lowhigh2highlow(T2 h) { return T2(h.y, h.x); }

// A value rounded to the nearest 16-bit float of type T (each format's header defines its own).
template <typename T>
T nn_cuda_cpu_narrow(double value);

// 1 or 0 in a 16-bit float T (a pair comparison's lane); a sum clamped to [0, 1], NaN to +0 (the _sat
// functions); a negative result as 0, a NaN as the canonical one (the _relu ones), as CUDA's say.
template <typename T>
T nn_cuda_cpu_one_if(bool set)
{
    return nn_cuda_cpu_narrow<T>(set ? 1.0 : 0.0);
}
template <typename T>
T nn_cuda_cpu_saturated(T a)
{
    const float v = nn_cuda_cpu_wide(a);
    return !(v > 0.0f) ? T::from_bits(0) : v >= 1.0f ? nn_cuda_cpu_narrow<T>(1.0) : a;
}
template <typename T>
T nn_cuda_cpu_relu(T a)
{
    const float v = nn_cuda_cpu_wide(a);
    return v != v ? T::from_bits(0x7FFF) : v < 0.0f ? T::from_bits(0) : a;
}

// A function of pairs T2 that applies `scalar` to each lane
#define NN_CUDA_CPU_LANEWISE(T2, name, scalar) \
    inline T2 name(T2 a) { return T2(scalar(a.x), scalar(a.y)); }

// The rest of CUDA's functions of both formats: the unordered comparisons (true where a NaN is), the
// comparisons of pairs (lane by lane as 1 or 0, of both lanes as a bool, as a mask of 16 bits a lane),
// the NaN-propagating, saturating and relu forms, and the math functions of pairs.
#define NN_CUDA_CPU_NARROW_FLOAT_MORE(T, T2)                                                                        \
    inline bool __hequ(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) == nn_cuda_cpu_wide(b); } \
    inline bool __hneu(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) != nn_cuda_cpu_wide(b); } \
    inline bool __hltu(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) < nn_cuda_cpu_wide(b); } \
    inline bool __hleu(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) <= nn_cuda_cpu_wide(b); } \
    inline bool __hgtu(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) > nn_cuda_cpu_wide(b); } \
    inline bool __hgeu(T a, T b) { return __hisnan(a) || __hisnan(b) || nn_cuda_cpu_wide(a) >= nn_cuda_cpu_wide(b); } \
    inline T2 __heq2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__heq(a.x, b.x)), nn_cuda_cpu_one_if<T>(__heq(a.y, b.y))); } \
    inline bool __hbeq2(T2 a, T2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); }                                  \
    inline unsigned __heq2_mask(T2 a, T2 b) { return (__heq(a.x, b.x) ? 0xFFFFu : 0u) | (__heq(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hne2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hne(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hne(a.y, b.y))); } \
    inline bool __hbne2(T2 a, T2 b) { return __hne(a.x, b.x) && __hne(a.y, b.y); }                                  \
    inline unsigned __hne2_mask(T2 a, T2 b) { return (__hne(a.x, b.x) ? 0xFFFFu : 0u) | (__hne(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hlt2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hlt(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hlt(a.y, b.y))); } \
    inline bool __hblt2(T2 a, T2 b) { return __hlt(a.x, b.x) && __hlt(a.y, b.y); }                                  \
    inline unsigned __hlt2_mask(T2 a, T2 b) { return (__hlt(a.x, b.x) ? 0xFFFFu : 0u) | (__hlt(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hle2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hle(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hle(a.y, b.y))); } \
    inline bool __hble2(T2 a, T2 b) { return __hle(a.x, b.x) && __hle(a.y, b.y); }                                  \
    inline unsigned __hle2_mask(T2 a, T2 b) { return (__hle(a.x, b.x) ? 0xFFFFu : 0u) | (__hle(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hgt2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hgt(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hgt(a.y, b.y))); } \
    inline bool __hbgt2(T2 a, T2 b) { return __hgt(a.x, b.x) && __hgt(a.y, b.y); }                                  \
    inline unsigned __hgt2_mask(T2 a, T2 b) { return (__hgt(a.x, b.x) ? 0xFFFFu : 0u) | (__hgt(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hge2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hge(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hge(a.y, b.y))); } \
    inline bool __hbge2(T2 a, T2 b) { return __hge(a.x, b.x) && __hge(a.y, b.y); }                                  \
    inline unsigned __hge2_mask(T2 a, T2 b) { return (__hge(a.x, b.x) ? 0xFFFFu : 0u) | (__hge(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hequ2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hequ(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hequ(a.y, b.y))); } \
    inline bool __hbequ2(T2 a, T2 b) { return __hequ(a.x, b.x) && __hequ(a.y, b.y); }                               \
    inline unsigned __hequ2_mask(T2 a, T2 b) { return (__hequ(a.x, b.x) ? 0xFFFFu : 0u) | (__hequ(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hneu2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hneu(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hneu(a.y, b.y))); } \
    inline bool __hbneu2(T2 a, T2 b) { return __hneu(a.x, b.x) && __hneu(a.y, b.y); }                               \
    inline unsigned __hneu2_mask(T2 a, T2 b) { return (__hneu(a.x, b.x) ? 0xFFFFu : 0u) | (__hneu(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hltu2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hltu(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hltu(a.y, b.y))); } \
    inline bool __hbltu2(T2 a, T2 b) { return __hltu(a.x, b.x) && __hltu(a.y, b.y); }                               \
    inline unsigned __hltu2_mask(T2 a, T2 b) { return (__hltu(a.x, b.x) ? 0xFFFFu : 0u) | (__hltu(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hleu2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hleu(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hleu(a.y, b.y))); } \
    inline bool __hbleu2(T2 a, T2 b) { return __hleu(a.x, b.x) && __hleu(a.y, b.y); }                               \
    inline unsigned __hleu2_mask(T2 a, T2 b) { return (__hleu(a.x, b.x) ? 0xFFFFu : 0u) | (__hleu(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hgtu2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hgtu(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hgtu(a.y, b.y))); } \
    inline bool __hbgtu2(T2 a, T2 b) { return __hgtu(a.x, b.x) && __hgtu(a.y, b.y); }                               \
    inline unsigned __hgtu2_mask(T2 a, T2 b) { return (__hgtu(a.x, b.x) ? 0xFFFFu : 0u) | (__hgtu(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hgeu2(T2 a, T2 b) { return T2(nn_cuda_cpu_one_if<T>(__hgeu(a.x, b.x)), nn_cuda_cpu_one_if<T>(__hgeu(a.y, b.y))); } \
    inline bool __hbgeu2(T2 a, T2 b) { return __hgeu(a.x, b.x) && __hgeu(a.y, b.y); }                               \
    inline unsigned __hgeu2_mask(T2 a, T2 b) { return (__hgeu(a.x, b.x) ? 0xFFFFu : 0u) | (__hgeu(a.y, b.y) ? 0xFFFF0000u : 0u); } \
    inline T2 __hisnan2(T2 a) { return T2(nn_cuda_cpu_one_if<T>(__hisnan(a.x)), nn_cuda_cpu_one_if<T>(__hisnan(a.y))); } \
    inline T __hmax_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T::from_bits(0x7FFF) : __hmax(a, b); }      \
    inline T __hmin_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T::from_bits(0x7FFF) : __hmin(a, b); }      \
    inline T __hadd_sat(T a, T b) { return nn_cuda_cpu_saturated(__hadd(a, b)); }                                   \
    inline T __hsub_sat(T a, T b) { return nn_cuda_cpu_saturated(__hsub(a, b)); }                                   \
    inline T __hmul_sat(T a, T b) { return nn_cuda_cpu_saturated(__hmul(a, b)); }                                   \
    inline T __hfma_sat(T a, T b, T c) { return nn_cuda_cpu_saturated(__hfma(a, b, c)); }                           \
    inline T __hfma_relu(T a, T b, T c) { return nn_cuda_cpu_relu(__hfma(a, b, c)); }                               \
    inline T2 __hmax2_nan(T2 a, T2 b) { return T2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }                    \
    inline T2 __hmin2_nan(T2 a, T2 b) { return T2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }                    \
    inline T2 __hadd2_sat(T2 a, T2 b) { return T2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); }                    \
    inline T2 __hsub2_sat(T2 a, T2 b) { return T2(__hsub_sat(a.x, b.x), __hsub_sat(a.y, b.y)); }                    \
    inline T2 __hmul2_sat(T2 a, T2 b) { return T2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); }                    \
    inline T2 __hfma2_sat(T2 a, T2 b, T2 c) { return T2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); }    \
    inline T2 __hfma2_relu(T2 a, T2 b, T2 c) { return T2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); } \
    inline T2 __hadd2_rn(T2 a, T2 b) { return __hadd2(a, b); }                                                      \
    inline T2 __hsub2_rn(T2 a, T2 b) { return __hsub2(a, b); }                                                      \
    inline T2 __hmul2_rn(T2 a, T2 b) { return __hmul2(a, b); }                                                      \
    inline T2 __hcmadd(T2 a, T2 b, T2 c) /* (a.x + i a.y)(b.x + i b.y) + c.x + i c.y, each part rounded once */     \
    {                                                                                                               \
        const float ax = nn_cuda_cpu_wide(a.x), ay = nn_cuda_cpu_wide(a.y), bx = nn_cuda_cpu_wide(b.x), by = nn_cuda_cpu_wide(b.y); \
        return T2(nn_cuda_cpu_narrow<T>(static_cast<double>(ax) * bx - static_cast<double>(ay) * by + nn_cuda_cpu_wide(c.x)), \
                  nn_cuda_cpu_narrow<T>(static_cast<double>(ax) * by + static_cast<double>(ay) * bx + nn_cuda_cpu_wide(c.y))); \
    }                                                                                                               \
    inline T hexp10(T a) { return nn_cuda_cpu_narrow<T>(exp10f(nn_cuda_cpu_wide(a))); }                             \
    NN_CUDA_CPU_LANEWISE(T2, h2exp2, hexp2) NN_CUDA_CPU_LANEWISE(T2, h2exp10, hexp10)                               \
    NN_CUDA_CPU_LANEWISE(T2, h2log2, hlog2) NN_CUDA_CPU_LANEWISE(T2, h2log10, hlog10)                               \
    NN_CUDA_CPU_LANEWISE(T2, h2rsqrt, hrsqrt) NN_CUDA_CPU_LANEWISE(T2, h2rcp, hrcp)                                 \
    NN_CUDA_CPU_LANEWISE(T2, h2sin, hsin) NN_CUDA_CPU_LANEWISE(T2, h2cos, hcos)                                     \
    NN_CUDA_CPU_LANEWISE(T2, h2tanh, htanh) NN_CUDA_CPU_LANEWISE(T2, h2tanh_approx, htanh_approx)                   \
    NN_CUDA_CPU_LANEWISE(T2, h2floor, hfloor)                                                                       \
    NN_CUDA_CPU_LANEWISE(T2, h2ceil, hceil) NN_CUDA_CPU_LANEWISE(T2, h2trunc, htrunc)                               \
    NN_CUDA_CPU_LANEWISE(T2, h2rint, hrint)

// What both formats have, for a scalar type T of E exponent and M fraction bits and its pair T2
// (members x and y): the operators (unless __CUDA_NO_HALF_OPERATORS__ or
// __CUDA_NO_BFLOAT16_OPERATORS__, as `no_operators` says), CUDA's functions of one name for both
// (__hadd, __hfma, __heq, hexp, __hadd2, ...), atomicAdd and __ldg of the pair.
#define NN_CUDA_CPU_NARROW_FLOAT_FUNCTIONS(T, T2, E, M)                                                        \
    inline float nn_cuda_cpu_wide(T a) { return nn_cuda_cpu::widen<E, M>(a.nn_cuda_cpu_bits()); }              \
    template <>                                                                                                \
    inline T nn_cuda_cpu_narrow<T>(double v)                                                                   \
    {                                                                                                          \
        return T::from_bits(nn_cuda_cpu::narrow_bits<E, M>(v, nn_cuda_cpu::Rounding::nearest_even));          \
    }                                                                                                          \
    inline T __hadd(T a, T b) { return nn_cuda_cpu_narrow<T>(nn_cuda_cpu_wide(a) + nn_cuda_cpu_wide(b)); }         \
    inline T __hsub(T a, T b) { return nn_cuda_cpu_narrow<T>(nn_cuda_cpu_wide(a) - nn_cuda_cpu_wide(b)); }         \
    inline T __hmul(T a, T b) { return nn_cuda_cpu_narrow<T>(nn_cuda_cpu_wide(a) * nn_cuda_cpu_wide(b)); }         \
    inline T __hdiv(T a, T b) { return nn_cuda_cpu_narrow<T>(nn_cuda_cpu_wide(a) / nn_cuda_cpu_wide(b)); }         \
    inline T __hfma(T a, T b, T c)                                                                             \
    {                                                                                                          \
        return nn_cuda_cpu_narrow<T>(nn_cuda_cpu::fma_rounded_to_odd(nn_cuda_cpu_wide(a), nn_cuda_cpu_wide(b), nn_cuda_cpu_wide(c))); \
    }                                                                                                          \
    inline T __hadd_rn(T a, T b) { return __hadd(a, b); }                                                      \
    inline T __hsub_rn(T a, T b) { return __hsub(a, b); }                                                      \
    inline T __hmul_rn(T a, T b) { return __hmul(a, b); }                                                      \
    inline T __hneg(T a) { return T::from_bits(static_cast<unsigned short>(a.nn_cuda_cpu_bits() ^ 0x8000u)); }  \
    inline T __habs(T a) { return T::from_bits(static_cast<unsigned short>(a.nn_cuda_cpu_bits() & 0x7FFFu)); }  \
    inline bool __hisnan(T a) { return std::isnan(nn_cuda_cpu_wide(a)); }                                     \
    inline int __hisinf(T a) { return std::isinf(nn_cuda_cpu_wide(a)) ? (a.nn_cuda_cpu_bits() & 0x8000u ? -1 : 1) : 0; } \
    inline T __hmax(T a, T b) { return nn_cuda_cpu_narrow<T>(fmaxf(nn_cuda_cpu_wide(a), nn_cuda_cpu_wide(b))); }  \
    inline T __hmin(T a, T b) { return nn_cuda_cpu_narrow<T>(fminf(nn_cuda_cpu_wide(a), nn_cuda_cpu_wide(b))); }  \
    inline bool __heq(T a, T b) { return nn_cuda_cpu_wide(a) == nn_cuda_cpu_wide(b); }                         \
    inline bool __hne(T a, T b) { return !__hisnan(a) && !__hisnan(b) && nn_cuda_cpu_wide(a) != nn_cuda_cpu_wide(b); } \
    inline bool __hlt(T a, T b) { return nn_cuda_cpu_wide(a) < nn_cuda_cpu_wide(b); }                          \
    inline bool __hle(T a, T b) { return nn_cuda_cpu_wide(a) <= nn_cuda_cpu_wide(b); }                         \
    inline bool __hgt(T a, T b) { return nn_cuda_cpu_wide(a) > nn_cuda_cpu_wide(b); }                          \
    inline bool __hge(T a, T b) { return nn_cuda_cpu_wide(a) >= nn_cuda_cpu_wide(b); }                         \
    inline T hsqrt(T a) { return nn_cuda_cpu_narrow<T>(sqrtf(nn_cuda_cpu_wide(a))); }                             \
    inline T hrsqrt(T a) { return nn_cuda_cpu_narrow<T>(1.0f / sqrtf(nn_cuda_cpu_wide(a))); }                     \
    inline T hrcp(T a) { return nn_cuda_cpu_narrow<T>(1.0f / nn_cuda_cpu_wide(a)); }                              \
    inline T hexp(T a) { return nn_cuda_cpu_narrow<T>(expf(nn_cuda_cpu_wide(a))); }                               \
    inline T hexp2(T a) { return nn_cuda_cpu_narrow<T>(exp2f(nn_cuda_cpu_wide(a))); }                             \
    inline T hlog(T a) { return nn_cuda_cpu_narrow<T>(logf(nn_cuda_cpu_wide(a))); }                               \
    inline T hlog2(T a) { return nn_cuda_cpu_narrow<T>(log2f(nn_cuda_cpu_wide(a))); }                             \
    inline T hlog10(T a) { return nn_cuda_cpu_narrow<T>(log10f(nn_cuda_cpu_wide(a))); }                           \
    inline T hsin(T a) { return nn_cuda_cpu_narrow<T>(sinf(nn_cuda_cpu_wide(a))); }                               \
    inline T hcos(T a) { return nn_cuda_cpu_narrow<T>(cosf(nn_cuda_cpu_wide(a))); }                               \
    inline T htanh(T a) { return nn_cuda_cpu_narrow<T>(tanhf(nn_cuda_cpu_wide(a))); }                             \
    inline T htanh_approx(T a) { return htanh(a); } /* a GPU's approximation may differ in the last bit */        \
    inline T hfloor(T a) { return nn_cuda_cpu_narrow<T>(floorf(nn_cuda_cpu_wide(a))); }                           \
    inline T hceil(T a) { return nn_cuda_cpu_narrow<T>(ceilf(nn_cuda_cpu_wide(a))); }                             \
    inline T htrunc(T a) { return nn_cuda_cpu_narrow<T>(truncf(nn_cuda_cpu_wide(a))); }                           \
    inline T hrint(T a) { return nn_cuda_cpu_narrow<T>(rintf(nn_cuda_cpu_wide(a))); }                             \
    inline T2 __hadd2(T2 a, T2 b) { return T2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                           \
    inline T2 __hsub2(T2 a, T2 b) { return T2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                           \
    inline T2 __hmul2(T2 a, T2 b) { return T2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                           \
    inline T2 __h2div(T2 a, T2 b) { return T2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                           \
    inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }           \
    inline T2 __hneg2(T2 a) { return T2(__hneg(a.x), __hneg(a.y)); }                                           \
    inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                                           \
    inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                           \
    inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                           \
    inline T2 h2sqrt(T2 a) { return T2(hsqrt(a.x), hsqrt(a.y)); }                                              \
    inline T2 h2exp(T2 a) { return T2(hexp(a.x), hexp(a.y)); }                                                 \
    inline T2 h2log(T2 a) { return T2(hlog(a.x), hlog(a.y)); }                                                 \
    inline float2 nn_cuda_cpu_wide2(T2 a) { return make_float2(nn_cuda_cpu_wide(a.x), nn_cuda_cpu_wide(a.y)); } \
    inline T atomicAdd(T* address, T value)                                                                    \
    {                                                                                                          \
        nn_cuda_cpu::atomics_used.store(true, std::memory_order_relaxed);                                     \
        return nn_cuda_cpu::atomic_update16(address, [value](T old) { return __hadd(old, value); });           \
    }                                                                                                          \
    inline T2 atomicAdd(T2* address, T2 value) /* each half atomically, as a GPU's */                          \
    {                                                                                                          \
        return T2(atomicAdd(&address->x, value.x), atomicAdd(&address->y, value.y));                           \
    }                                                                                                          \
    NN_CUDA_CPU_NARROW_FLOAT_MORE(T, T2)

// The operators of a scalar type T and its pair T2, through the functions above.
#define NN_CUDA_CPU_NARROW_FLOAT_OPERATORS(T, T2)                                                              \
    inline T operator+(const T& a, const T& b) { return __hadd(a, b); }                                       \
    inline T operator-(const T& a, const T& b) { return __hsub(a, b); }                                       \
    inline T operator*(const T& a, const T& b) { return __hmul(a, b); }                                       \
    inline T operator/(const T& a, const T& b) { return __hdiv(a, b); }                                       \
    inline T& operator+=(T& a, const T& b) { return a = __hadd(a, b); }                                       \
    inline T& operator-=(T& a, const T& b) { return a = __hsub(a, b); }                                       \
    inline T& operator*=(T& a, const T& b) { return a = __hmul(a, b); }                                       \
    inline T& operator/=(T& a, const T& b) { return a = __hdiv(a, b); }                                       \
    inline T operator+(const T& a) { return a; }                                                              \
    inline T operator-(const T& a) { return __hneg(a); }                                                      \
    inline bool operator==(const T& a, const T& b) { return __heq(a, b); }                                    \
    inline bool operator!=(const T& a, const T& b) { return __hneu(a, b); }                                   \
    inline bool operator<(const T& a, const T& b) { return __hlt(a, b); }                                     \
    inline bool operator<=(const T& a, const T& b) { return __hle(a, b); }                                    \
    inline bool operator>(const T& a, const T& b) { return __hgt(a, b); }                                     \
    inline bool operator>=(const T& a, const T& b) { return __hge(a, b); }                                    \
    inline T2 operator+(const T2& a, const T2& b) { return __hadd2(a, b); }                                   \
    inline T2 operator-(const T2& a, const T2& b) { return __hsub2(a, b); }                                   \
    inline T2 operator*(const T2& a, const T2& b) { return __hmul2(a, b); }                                   \
    inline T2 operator/(const T2& a, const T2& b) { return __h2div(a, b); }                                   \
    inline T2& operator+=(T2& a, const T2& b) { return a = __hadd2(a, b); }                                   \
    inline T2& operator-=(T2& a, const T2& b) { return a = __hsub2(a, b); }                                   \
    inline T2& operator*=(T2& a, const T2& b) { return a = __hmul2(a, b); }                                   \
    inline T2 operator-(const T2& a) { return __hneg2(a); }                                                   \
    inline T2& operator/=(T2& a, const T2& b) { return a = __h2div(a, b); }                                   \
    inline T2 operator+(const T2& a) { return a; }                                                            \
    inline bool operator==(const T2& a, const T2& b) { return __hbeq2(a, b); }                                \
    inline bool operator!=(const T2& a, const T2& b) { return __hbneu2(a, b); }                               \
    inline bool operator<(const T2& a, const T2& b) { return __hblt2(a, b); }                                 \
    inline bool operator<=(const T2& a, const T2& b) { return __hble2(a, b); }                                \
    inline bool operator>(const T2& a, const T2& b) { return __hbgt2(a, b); }                                 \
    inline bool operator>=(const T2& a, const T2& b) { return __hbge2(a, b); }                                \
    inline T& operator++(T& a) { return a = __hadd(a, nn_cuda_cpu_narrow<T>(1.0)); }                          \
    inline T& operator--(T& a) { return a = __hsub(a, nn_cuda_cpu_narrow<T>(1.0)); }                          \
    inline T operator++(T& a, int) { const T old = a; ++a; return old; }                                     \
    inline T operator--(T& a, int) { const T old = a; --a; return old; }

#pragma pop_macro("uint64_t")
