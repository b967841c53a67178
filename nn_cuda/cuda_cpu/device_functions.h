// CUDA's device functions and types on the CPU, after runtime.h: what kernels call besides the
// built-in variables and __syncthreads. Each one computes what the GPU computes, in the CPU's own
// arithmetic (a fast-math intrinsic here is the exact libm function: a GPU's __expf is less exact).
//
// A function the runner lacks stops the build at the call with "the CPU runner does not support"
// (NN_CUDA_CPU_UNSUPPORTED, at the end).
#pragma once

#include <atomic>
#include <cfenv>
#include <chrono>
#include <limits>

// ---- vector types: the layout and alignment of CUDA's -------------------------------------------

#define NN_CUDA_CPU_VECTOR2(name, T, align)                                                     \
    struct alignas(align) name {                                                                 \
        T x, y;                                                                                  \
    };                                                                                           \
    inline name make_##name(T x, T y) { return name{x, y}; }
#define NN_CUDA_CPU_VECTOR3(name, T)                                                            \
    struct name {                                                                                \
        T x, y, z;                                                                               \
    };                                                                                           \
    inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define NN_CUDA_CPU_VECTOR4(name, T, align)                                                     \
    struct alignas(align) name {                                                                 \
        T x, y, z, w;                                                                            \
    };                                                                                           \
    inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

NN_CUDA_CPU_VECTOR2(char2, signed char, 2)
NN_CUDA_CPU_VECTOR4(char4, signed char, 4)
NN_CUDA_CPU_VECTOR2(uchar2, unsigned char, 2)
NN_CUDA_CPU_VECTOR4(uchar4, unsigned char, 4)
NN_CUDA_CPU_VECTOR2(short2, short, 4)
NN_CUDA_CPU_VECTOR4(short4, short, 8)
NN_CUDA_CPU_VECTOR2(ushort2, unsigned short, 4)
NN_CUDA_CPU_VECTOR4(ushort4, unsigned short, 8)
NN_CUDA_CPU_VECTOR2(int2, int, 8)
NN_CUDA_CPU_VECTOR3(int3, int)
NN_CUDA_CPU_VECTOR4(int4, int, 16)
NN_CUDA_CPU_VECTOR2(uint2, unsigned int, 8)
NN_CUDA_CPU_VECTOR4(uint4, unsigned int, 16)
NN_CUDA_CPU_VECTOR2(longlong2, long long, 16)
NN_CUDA_CPU_VECTOR2(ulonglong2, unsigned long long, 16)
NN_CUDA_CPU_VECTOR2(float2, float, 8)
NN_CUDA_CPU_VECTOR3(float3, float)
NN_CUDA_CPU_VECTOR4(float4, float, 16)
NN_CUDA_CPU_VECTOR2(double2, double, 16)
NN_CUDA_CPU_VECTOR3(double3, double)
NN_CUDA_CPU_VECTOR4(double4, double, 16)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// The rest of CUDA's 48 (vector_types.h on a 64-bit host): the one- and three-component ones aligned as
// their element; long and unsigned long are 64-bit (LP64), so long2 and long4 are aligned to 16 as
// longlong2 and longlong4 are.
#define NN_CUDA_CPU_VECTOR1(name, T)                                                            \
    struct name {                                                                                \
        T x;                                                                                     \
    };                                                                                           \
    inline name make_##name(T x) { return name{x}; }
NN_CUDA_CPU_VECTOR1(char1, signed char)
NN_CUDA_CPU_VECTOR3(char3, signed char)
NN_CUDA_CPU_VECTOR1(uchar1, unsigned char)
NN_CUDA_CPU_VECTOR3(uchar3, unsigned char)
NN_CUDA_CPU_VECTOR1(short1, short)
NN_CUDA_CPU_VECTOR3(short3, short)
NN_CUDA_CPU_VECTOR1(ushort1, unsigned short)
NN_CUDA_CPU_VECTOR3(ushort3, unsigned short)
NN_CUDA_CPU_VECTOR1(int1, int)
NN_CUDA_CPU_VECTOR1(uint1, unsigned int)
NN_CUDA_CPU_VECTOR1(long1, long)
NN_CUDA_CPU_VECTOR2(long2, long, 2 * sizeof(long))
NN_CUDA_CPU_VECTOR3(long3, long)
NN_CUDA_CPU_VECTOR4(long4, long, 16)
NN_CUDA_CPU_VECTOR1(ulong1, unsigned long)
NN_CUDA_CPU_VECTOR2(ulong2, unsigned long, 2 * sizeof(unsigned long))
NN_CUDA_CPU_VECTOR3(ulong3, unsigned long)
NN_CUDA_CPU_VECTOR4(ulong4, unsigned long, 16)
NN_CUDA_CPU_VECTOR1(longlong1, long long)
NN_CUDA_CPU_VECTOR3(longlong3, long long)
NN_CUDA_CPU_VECTOR4(longlong4, long long, 16)
NN_CUDA_CPU_VECTOR1(ulonglong1, unsigned long long)
NN_CUDA_CPU_VECTOR3(ulonglong3, unsigned long long)
NN_CUDA_CPU_VECTOR4(ulonglong4, unsigned long long, 16)
NN_CUDA_CPU_VECTOR1(float1, float)
NN_CUDA_CPU_VECTOR1(double1, double)

// ---- min and max: CUDA's global overloads, exactly that set ------------------------------------------
// Each integer width (int, long, long long) with itself, its unsigned twin with itself, and the
// mixed signed and unsigned pairs (in the unsigned type); float, double and the mixed pair (in
// double). A call that fits none or more than one best is an error here as under NVRTC: min(-5LL, 3)
// ("more than one instance of overloaded function min", seen on an H100's NVRTC) does not build.

#define NN_CUDA_CPU_INTEGER_MIN_MAX(S, U)                                  \
    inline S min(S a, S b) { return a < b ? a : b; }                       \
    inline S max(S a, S b) { return a < b ? b : a; }                       \
    inline U min(U a, U b) { return a < b ? a : b; }                       \
    inline U max(U a, U b) { return a < b ? b : a; }                       \
    inline U min(S a, U b) { return min(static_cast<U>(a), b); }           \
    inline U max(S a, U b) { return max(static_cast<U>(a), b); }           \
    inline U min(U a, S b) { return min(a, static_cast<U>(b)); }           \
    inline U max(U a, S b) { return max(a, static_cast<U>(b)); }
NN_CUDA_CPU_INTEGER_MIN_MAX(int, unsigned int)
NN_CUDA_CPU_INTEGER_MIN_MAX(long, unsigned long)
NN_CUDA_CPU_INTEGER_MIN_MAX(long long, unsigned long long)
#undef NN_CUDA_CPU_INTEGER_MIN_MAX

// as fminf and fmin: a NaN loses to a number
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }

// The integer ones of CUDA's math API, each in its own type.
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

// ---- the fast-math intrinsics: here the exact functions ------------------------------------------

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x), *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }  // the Math API's name of it
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }  // NaN -> 0

// ---- IEEE operations rounded as their name says: _rn to nearest, _rz toward zero, _rd down, _ru up ----

inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }

namespace nn_cuda_cpu {

template <typename T>
inline T read_once(T value)  // through a volatile copy: read where the program says, not earlier
{
    volatile T copy = value;
    return copy;
}

// One operation in the host's rounding mode `mode` (FE_DOWNWARD, ...), restored after it: the
// operands are read and the result stored through volatile copies, so that the compiler computes
// the operation between the two changes of the mode, not before or after them.
template <typename T, typename Operation, typename... Operands>
inline T rounded(int mode, Operation operation, Operands... operands)
{
    const int previous = fegetround();
    fesetround(mode);
    volatile T result = operation(read_once(operands)...);
    fesetround(previous);
    return result;
}

}  // namespace nn_cuda_cpu

// __fadd_rz, __dadd_rz, ...: the operations of CUDA's float (prefix f) or double (d) names, rounded
// in `mode`; std::sqrt and std::fma round in the type they are given.
#define NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(T, prefix, suffix, mode)                                         \
    inline T __##prefix##add_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x + y; }, a, b); } \
    inline T __##prefix##sub_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x - y; }, a, b); } \
    inline T __##prefix##mul_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x * y; }, a, b); } \
    inline T __##prefix##div_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x / y; }, a, b); } \
    inline T __##prefix##rcp_##suffix(T a) { return nn_cuda_cpu::rounded<T>(mode, [](T x) { return T(1) / x; }, a); } \
    inline T __##prefix##sqrt_##suffix(T a) { return nn_cuda_cpu::rounded<T>(mode, [](T x) { return std::sqrt(x); }, a); }
// ... and the fused multiply-adds, whose names do not follow the pattern (__fmaf_rz, __fma_rz)
#define NN_CUDA_CPU_ROUNDED_OPERATIONS(suffix, mode)                                                       \
    NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(float, f, suffix, mode)                                              \
    NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(double, d, suffix, mode)                                             \
    inline float __fmaf_##suffix(float a, float b, float c)                                                \
    {                                                                                                      \
        return nn_cuda_cpu::rounded<float>(mode, [](float x, float y, float z) { return std::fma(x, y, z); }, a, b, c); \
    }                                                                                                      \
    inline double __fma_##suffix(double a, double b, double c)                                             \
    {                                                                                                      \
        return nn_cuda_cpu::rounded<double>(mode, [](double x, double y, double z) { return std::fma(x, y, z); }, a, b, c); \
    }
NN_CUDA_CPU_ROUNDED_OPERATIONS(rz, FE_TOWARDZERO)
NN_CUDA_CPU_ROUNDED_OPERATIONS(rd, FE_DOWNWARD)
NN_CUDA_CPU_ROUNDED_OPERATIONS(ru, FE_UPWARD)

// rsqrt and rsqrtf: glibc 2.42 and later declare C23's, which then serve (a definition here would
// conflict with their declaration)
#if defined(__GLIBC__)
#if __GLIBC_PREREQ(2, 42)
#define NN_CUDA_CPU_HOST_HAS_RSQRT
#endif
#endif
#if !defined(NN_CUDA_CPU_HOST_HAS_RSQRT)
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
#endif
inline float rsqrt(float x) { return rsqrtf(x); }  // C++'s float overload, as CUDA's

// ---- CUDA's math API beyond the C library's ----------------------------------------------------------
// Each computes in long double (x86's 64-bit significand, arm64 Linux's 113-bit) and rounds once to
// double or float: within half an ulp and a thousandth (tests/test_cuda_cpu_math_and_vectors.py measures
// each; a GPU's are within the few ulps CUDA's Math API documents, so last bits may differ; where long
// double is double, as on Apple's ARM, they would lose an ulp or two). C++ code also finds the float
// overloads CUDA declares (erfinv(float), sinpi(float), cyl_bessel_i0(float), rsqrt(float), ...; the
// norms and rhypot have none), so that erfinv(1) is ambiguous here as under NVRTC.

namespace nn_cuda_cpu {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.141592653589793;
constexpr double kSqrtHalf = 0.7071067811865476, kSqrtHalfLow = -4.833646656726457e-17;  // 1 / sqrt(2)
constexpr double kSqrtPi = 1.772453850905516;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // erf'(0); erf'(x) = kTwoOverSqrtPi exp(-x^2)
constexpr long double kPiLong = 3.14159265358979323846264338327950288L;
constexpr long double kSqrt2Long = 1.41421356237309504880168872420969808L;
constexpr long double kSqrtPiLong = 1.77245385090551602729816748334114518L;

// exp(x^2) erfc(x): exp of the exact square x^2 = s + e as exp(s) (1 + e), times erfc, below 12;
// beyond, erfc's asymptotic series sum_k (-1)^k (2k-1)!! / (2x^2)^k / (x sqrt(pi)), whose terms fall
// below 1e-21 of the sum within 15 terms from x = 12 on.
inline double scaled_erfc(double x)
{
    if (x < -27.0) {
        return kInfinity;  // 2 exp(x^2) overflows from -26.63 on
    }
    const long double v = x;
    if (x < 12.0) {
        const long double s = v * v, e = std::fma(v, v, -s);
        return static_cast<double>(std::exp(s) * (1.0L + e) * std::erfc(v));
    }
    if (x == kInfinity) {
        return 0.0;
    }
    const long double q = 0.5L / (v * v);
    long double term = 1.0L, sum = 1.0L;
    for (int k = 1; k < 40 && std::fabs(term) > 1e-21L * sum; ++k) {
        term *= -(2 * k - 1) * q;
        sum += term;
    }
    return static_cast<double>(sum / (v * kSqrtPiLong));  // NaN stays NaN
}

// erfinv(y) for |y| <= 1/2: erfinv's Maclaurin series in z = sqrt(pi) y / 2 to z^9 (relative error
// below 1e-4 there), then Newton's steps on erf(x) = y until a step is below 1e-18 of x (the error
// squares at each step: three or four steps), in long double, which the caller rounds.
inline long double inverse_erf_central(double y)
{
    const double z = y * (0.5 * kSqrtPi), z2 = z * z;
    long double x = z * (1.0 + z2 * (1.0 / 3 + z2 * (7.0 / 30 + z2 * (127.0 / 630 + z2 * (4369.0 / 22680)))));
    for (int step = 0; step < 8; ++step) {
        const long double correction = (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
        x -= correction;
        if (std::fabs(correction) <= 1e-18L * std::fabs(x)) {
            break;
        }
    }
    return x;
}

// erfcinv(y) for 0 < y < 1/2 (x > 0.47): Winitzki's approximation of erfinv(1 - y) (a = 0.147,
// relative error below 2e-3; with 1 - (1 - y)^2 as y (2 - y), so that it holds for the tiniest y),
// then Newton's steps on erfc(x) = y, as above. Where erfc(x) nears the subnormals (y < 1e-290,
// x > 25.8) the steps solve log erfc(x) = log y instead, with log erfc(x) = log erfcx(x) - x^2,
// which stays finite: accurate down to y = 5e-324 (x = 27.2).
inline long double inverse_erfc_tail(double y)
{
    const double a = 0.147, l = std::log(y * (2.0 - y)), b = 2.0 / (kPi * a) + 0.5 * l;
    long double x = std::sqrt(std::sqrt(b * b - l / a) - b);
    for (int step = 0; step < 8; ++step) {
        long double correction;
        if (y > 1e-290) {
            correction = (std::erfc(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));  // over -erfc'(x)
        } else {
            const long double scaled = scaled_erfc(static_cast<double>(x));
            const long double residual = std::log(scaled) - std::log(static_cast<long double>(y)) - x * x;
            correction = residual * scaled / kTwoOverSqrtPi;  // over minus its derivative, 2/sqrt(pi)/erfcx(x)
        }
        x += correction;
        if (std::fabs(correction) <= 1e-18L * x) {
            break;
        }
    }
    return x;
}

inline long double inverse_erfc(double y)
{
    if (!(y > 0.0 && y < 2.0)) {  // erfcinv(0) = +inf, erfcinv(2) = -inf, NaN outside [0, 2]
        return y == 0.0 ? kInfinity : y == 2.0 ? -kInfinity : kNaN;
    }
    if (y > 1.0) {
        return -inverse_erfc(2.0 - y);  // exact
    }
    return y >= 0.5 ? inverse_erf_central(1.0 - y) : inverse_erfc_tail(y);  // 1 - y exact
}

inline long double inverse_erf(double y)
{
    const double magnitude = std::fabs(y);
    if (!(magnitude < 1.0)) {  // erfinv(+-1) = +-inf, NaN beyond
        return magnitude == 1.0 ? std::copysign(kInfinity, y) : kNaN;
    }
    return magnitude <= 0.5 ? inverse_erf_central(y) : std::copysign(inverse_erfc_tail(1.0 - magnitude), y);
}

// sin(pi x), or cos(pi x): x - 2k exactly (remainder), split as n/2 + f with |f| <= 1/4, and the sine
// or cosine of pi f. An integer x gives +0 or -0 by its sign (sinpi), a half-integer +0 (cospi), as
// IEEE 754's sinPi and cosPi.
inline double sin_or_cos_pi(double x, bool cosine)
{
    const double r = std::remainder(x, 2.0);  // in [-1, 1]; NaN for an infinite x
    const double n = std::nearbyint(2.0 * r), f = r - 0.5 * n;
    const long double angle = kPiLong * f;
    long double value = 0.0L;
    switch ((static_cast<int>(n) + (cosine ? 1 : 0)) & 3) {  // sin(pi f + quarter turns)
    case 0: value = std::sin(angle); break;
    case 1: value = std::cos(angle); break;
    case 2: value = -std::sin(angle); break;
    default: value = -std::cos(angle); break;
    }
    return value != 0.0L ? static_cast<double>(value) : cosine ? 0.0 : std::copysign(0.0, x);
}

// 0.5 erfc(-x / sqrt(2)), with the rounding of t = -x / sqrt(2) (its error d, from fma and sqrt(2)'s
// own) put back to first order, erfc(t + d) = erfc(t) - d erf'(t): without it the lower tail (x = -37,
// 1e-300) loses 700 ulps to the argument's rounding.
inline double normal_cdf(double x)
{
    if (std::isinf(x)) {
        return x > 0.0 ? 1.0 : 0.0;
    }
    const double product = x * kSqrtHalf, d = -(std::fma(x, kSqrtHalf, -product) + x * kSqrtHalfLow);
    const long double t = -product;
    return static_cast<double>(0.5L * (std::erfc(t) - d * kTwoOverSqrtPi * std::exp(-t * t)));
}

// -sqrt(2) erfcinv(2p), of erfcinv's long double (2p is exact).
inline double inverse_normal_cdf(double p)
{
    const long double e = inverse_erfc(2.0 * p);
    return e == 0.0L ? 0.0 : static_cast<double>(-kSqrt2Long * e);  // normcdfinv(0.5) = +0
}

// The modified Bessel functions I0 and I1 (nu = 0, 1), summed in long double, whose own rounding stays
// far below double's last place: below 25 the power series
// sum_k (x/2)^(2k+nu) / (k! (k+nu)!), all of whose terms are positive; beyond, the asymptotic series
// e^x / sqrt(2 pi x) sum_k (-1)^k a_k / x^k with a_k = a_(k-1) (4 nu^2 - (2k-1)^2) / (8k), down to its
// smallest term (about e^(-2x), below 1e-21 there). I1 is odd.
inline double modified_bessel(int nu, double x)
{
    const long double a = std::fabs(x);
    long double value;
    if (!(a < 25.0L)) {
        if (std::isinf(a) || std::isnan(a)) {
            value = a;
        } else {
            const long double mu = 4.0L * nu * nu;
            long double term = 1.0L, sum = 1.0L;
            for (int k = 1; k < 100; ++k) {
                const long double next = -term * (mu - (2.0L * k - 1.0L) * (2.0L * k - 1.0L)) / (8.0L * k * a);
                if (std::fabs(next) >= std::fabs(term) || std::fabs(next) < 1e-22L * std::fabs(sum)) {
                    break;
                }
                term = next;
                sum += term;
            }
            value = std::exp(a) * (sum / std::sqrt(2.0L * kPiLong * a));
        }
    } else {
        const long double q = 0.25L * a * a;
        long double term = nu == 0 ? 1.0L : 0.5L * a, sum = term;
        for (int k = 1; k < 200 && term > 1e-22L * sum; ++k) {
            term *= q / (static_cast<long double>(k) * (k + nu));
            sum += term;
        }
        value = sum;
    }
    return static_cast<double>(nu == 1 && std::signbit(x) ? -value : value);  // +inf past 713.98
}

// 1 / cbrt(x), rounded once: +-inf at +-0, +-0 at +-inf
inline double reciprocal_cbrt(double x) { return static_cast<double>(1.0L / std::cbrt(static_cast<long double>(x))); }

// sqrt(p[0]^2 + ... + p[n-1]^2), or its reciprocal: each scaled by the same power of 2 so that no square
// overflows or underflows, summed in long double (fma), so that the one rounding to double is the last:
// +inf (+0) when any is infinite, even beside a NaN, as CUDA's norms. p[0] is read whatever n, as a
// GPU's norm reads it: norm(0, nullptr) ended in "unspecified launch failure" on an H200.
template <typename T>
inline double euclidean_norm(int n, const T* p, bool reciprocal)
{
    static_cast<void>(*static_cast<const volatile T*>(p));
    double largest = 0.0;
    bool nan = false;
    for (int i = 0; i < n; ++i) {
        const double a = std::fabs(static_cast<double>(p[i]));
        if (a == kInfinity) {
            return reciprocal ? 0.0 : kInfinity;
        }
        nan = nan || a != a;
        largest = a > largest ? a : largest;
    }
    if (nan || largest == 0.0) {
        return nan ? kNaN : reciprocal ? kInfinity : 0.0;
    }
    const int exponent = std::ilogb(largest);
    long double sum = 0.0L;
    for (int i = 0; i < n; ++i) {
        const long double scaled = std::scalbn(static_cast<double>(p[i]), -exponent);
        sum = std::fma(scaled, scaled, sum);
    }
    const long double root = std::sqrt(sum);
    return static_cast<double>(reciprocal ? std::scalbn(1.0L / root, -exponent) : std::scalbn(root, exponent));
}

}  // namespace nn_cuda_cpu

// Each function in double, as the f-suffixed one in float, and as C++'s float overload: the
// implementation's double or long double rounded once to either.
#define NN_CUDA_CPU_MATH_FUNCTION(name, implementation)                                       \
    inline double name(double x) { return static_cast<double>(implementation(x)); }           \
    inline float name##f(float x) { return static_cast<float>(implementation(x)); }           \
    inline float name(float x) { return name##f(x); }
NN_CUDA_CPU_MATH_FUNCTION(erfinv, nn_cuda_cpu::inverse_erf)
NN_CUDA_CPU_MATH_FUNCTION(erfcinv, nn_cuda_cpu::inverse_erfc)
NN_CUDA_CPU_MATH_FUNCTION(erfcx, nn_cuda_cpu::scaled_erfc)
NN_CUDA_CPU_MATH_FUNCTION(normcdf, nn_cuda_cpu::normal_cdf)
NN_CUDA_CPU_MATH_FUNCTION(normcdfinv, nn_cuda_cpu::inverse_normal_cdf)
NN_CUDA_CPU_MATH_FUNCTION(rcbrt, nn_cuda_cpu::reciprocal_cbrt)
NN_CUDA_CPU_MATH_FUNCTION(cyl_bessel_i0, [](double v) { return nn_cuda_cpu::modified_bessel(0, v); })
NN_CUDA_CPU_MATH_FUNCTION(cyl_bessel_i1, [](double v) { return nn_cuda_cpu::modified_bessel(1, v); })
#undef NN_CUDA_CPU_MATH_FUNCTION

// sinpi and cospi: glibc 2.41 and later declare C23's double and float ones, which then serve
#if defined(__GLIBC__)
#if __GLIBC_PREREQ(2, 41)
#define NN_CUDA_CPU_HOST_HAS_SINPI
#endif
#endif
#if !defined(NN_CUDA_CPU_HOST_HAS_SINPI)
inline double sinpi(double x) { return nn_cuda_cpu::sin_or_cos_pi(x, false); }
inline double cospi(double x) { return nn_cuda_cpu::sin_or_cos_pi(x, true); }
inline float sinpif(float x) { return static_cast<float>(nn_cuda_cpu::sin_or_cos_pi(x, false)); }
inline float cospif(float x) { return static_cast<float>(nn_cuda_cpu::sin_or_cos_pi(x, true)); }
#endif
inline float sinpi(float x) { return sinpif(x); }
inline float cospi(float x) { return cospif(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x), *c = cospi(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x), *c = cospif(x); }
inline void sincospi(float x, float* s, float* c) { sincospif(x, s, c); }
// CUDA's float overload of sincos (the C library has sincos for double and sincosf)
inline void sincos(float x, float* s, float* c) { sincosf(x, s, c); }

// 1 / hypot and the norms of 3, 4 and dim numbers, and their reciprocals (euclidean_norm): in double and
// as f-suffixed float functions only, as CUDA's (no float overloads).
inline double rhypot(double x, double y) { return static_cast<double>(1.0L / std::hypot(static_cast<long double>(x), y)); }
inline float rhypotf(float x, float y) { return static_cast<float>(1.0 / std::hypot(static_cast<double>(x), y)); }
#define NN_CUDA_CPU_NORMS(T, suffix)                                                                          \
    inline T norm3d##suffix(T a, T b, T c)                                                                    \
    {                                                                                                         \
        const T p[] = {a, b, c};                                                                              \
        return static_cast<T>(nn_cuda_cpu::euclidean_norm(3, p, false));                                      \
    }                                                                                                         \
    inline T rnorm3d##suffix(T a, T b, T c)                                                                   \
    {                                                                                                         \
        const T p[] = {a, b, c};                                                                              \
        return static_cast<T>(nn_cuda_cpu::euclidean_norm(3, p, true));                                       \
    }                                                                                                         \
    inline T norm4d##suffix(T a, T b, T c, T d)                                                               \
    {                                                                                                         \
        const T p[] = {a, b, c, d};                                                                           \
        return static_cast<T>(nn_cuda_cpu::euclidean_norm(4, p, false));                                      \
    }                                                                                                         \
    inline T rnorm4d##suffix(T a, T b, T c, T d)                                                              \
    {                                                                                                         \
        const T p[] = {a, b, c, d};                                                                           \
        return static_cast<T>(nn_cuda_cpu::euclidean_norm(4, p, true));                                       \
    }                                                                                                         \
    inline T norm##suffix(int dim, const T* p) { return static_cast<T>(nn_cuda_cpu::euclidean_norm(dim, p, false)); } \
    inline T rnorm##suffix(int dim, const T* p) { return static_cast<T>(nn_cuda_cpu::euclidean_norm(dim, p, true)); }
NN_CUDA_CPU_NORMS(double, )
NN_CUDA_CPU_NORMS(float, f)
#undef NN_CUDA_CPU_NORMS

// 1 / sqrt(x) rounded to nearest once: the double quotient's float, moved to its neighbour where the
// exact value lies past the midpoint m between them (1/sqrt(x) < m exactly when m^2 x > 1: m^2 is
// exact in double, and fma gives the sign of m^2 x - 1 where the product rounds to 1).
inline float __frsqrt_rn(float x)
{
    if (!(x > 0.0f) || std::isinf(x)) {
        return 1.0f / std::sqrt(x);  // NaN below 0, +-inf at +-0, +0 at +inf
    }
    const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
    const auto above = [x](float a, float b) {  // whether 1/sqrt(x) lies below the midpoint of a and b
        const double m = 0.5 * (static_cast<double>(a) + b), square = m * m, product = square * x;
        return product != 1.0 ? product > 1.0 : std::fma(square, static_cast<double>(x), -product) > 0.0;
    };
    const float up = std::nextafter(r, 2.0f * r), down = std::nextafter(r, 0.0f);
    return !above(r, up) ? up : above(down, r) ? down : r;
}

// ---- bits --------------------------------------------------------------------------------------------

template <typename To, typename From>
inline To nn_cuda_cpu_bit_cast(From value)
{
    static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
    To result;
    memcpy(&result, &value, sizeof(To));
    return result;
}
inline int __float_as_int(float x) { return nn_cuda_cpu_bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return nn_cuda_cpu_bit_cast<unsigned int>(x); }
inline float __int_as_float(int x) { return nn_cuda_cpu_bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return nn_cuda_cpu_bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return nn_cuda_cpu_bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return nn_cuda_cpu_bit_cast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(nn_cuda_cpu_bit_cast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(nn_cuda_cpu_bit_cast<unsigned long long>(x)); }
inline double __hiloint2double(int hi, int lo)
{
    return nn_cuda_cpu_bit_cast<double>(static_cast<unsigned long long>(static_cast<unsigned int>(hi)) << 32 |
                                        static_cast<unsigned int>(lo));
}

// ---- conversions rounded as their name says (_rn, _rz, _rd, _ru: the type casting intrinsics) ----------
// A float or double to an integer: rounded to an integer in the host's mode, set around it (nearbyint),
// then clamped to the integer's range, as a GPU's cvt instruction clamps; NaN gives 0, or 1 << (bits - 1)
// from a double or into 64 bits (the PTX ISA's cvt): __float2int_rn(NaN) is 0, __double2int_rn(NaN)
// INT_MIN, __float2ull_rn(NaN) 2^63. An integer to a float, or a double to a float, converted in the mode.

namespace nn_cuda_cpu {

template <typename I, typename F>
inline I to_integer(int mode, F x)
{
    if (x != x) {
        return sizeof(F) == 8 || sizeof(I) == 8 ? static_cast<I>(1ull << (8 * sizeof(I) - 1)) : I(0);
    }
    const F r = rounded<F>(mode, [](F v) { return std::nearbyint(v); }, x);
    const F end = static_cast<F>(std::numeric_limits<I>::max() / 2 + 1) * F(2);  // 2^31, 2^32, 2^63 or 2^64
    if (r >= end) {
        return std::numeric_limits<I>::max();
    }
    if (r < (std::is_signed<I>::value ? -end : F(0))) {
        return std::numeric_limits<I>::min();
    }
    return static_cast<I>(r);
}

template <typename To, typename From>
inline To converted(int mode, From x)
{
    return rounded<To>(mode, [](From v) { return static_cast<To>(v); }, x);
}

}  // namespace nn_cuda_cpu

#define NN_CUDA_CPU_CONVERSION(name, operation, To, From)                                             \
    inline To __##name##_rn(From x) { return nn_cuda_cpu::operation<To>(FE_TONEAREST, x); }          \
    inline To __##name##_rz(From x) { return nn_cuda_cpu::operation<To>(FE_TOWARDZERO, x); }         \
    inline To __##name##_rd(From x) { return nn_cuda_cpu::operation<To>(FE_DOWNWARD, x); }           \
    inline To __##name##_ru(From x) { return nn_cuda_cpu::operation<To>(FE_UPWARD, x); }
NN_CUDA_CPU_CONVERSION(float2int, to_integer, int, float)
NN_CUDA_CPU_CONVERSION(float2uint, to_integer, unsigned int, float)
NN_CUDA_CPU_CONVERSION(float2ll, to_integer, long long, float)
NN_CUDA_CPU_CONVERSION(float2ull, to_integer, unsigned long long, float)
NN_CUDA_CPU_CONVERSION(double2int, to_integer, int, double)
NN_CUDA_CPU_CONVERSION(double2uint, to_integer, unsigned int, double)
NN_CUDA_CPU_CONVERSION(double2ll, to_integer, long long, double)
NN_CUDA_CPU_CONVERSION(double2ull, to_integer, unsigned long long, double)
NN_CUDA_CPU_CONVERSION(int2float, converted, float, int)
NN_CUDA_CPU_CONVERSION(uint2float, converted, float, unsigned int)
NN_CUDA_CPU_CONVERSION(ll2float, converted, float, long long)
NN_CUDA_CPU_CONVERSION(ull2float, converted, float, unsigned long long)
NN_CUDA_CPU_CONVERSION(ll2double, converted, double, long long)
NN_CUDA_CPU_CONVERSION(ull2double, converted, double, unsigned long long)
NN_CUDA_CPU_CONVERSION(double2float, converted, float, double)
#undef NN_CUDA_CPU_CONVERSION
inline double __int2double_rn(int x) { return x; }  // exact: only _rn exists
inline double __uint2double_rn(unsigned int x) { return x; }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x)
{
    unsigned int reversed = 0;
    for (int bit = 0; bit < 32; ++bit, x >>= 1) {
        reversed = (reversed << 1) | (x & 1u);
    }
    return reversed;
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b)
{
    return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int nn_cuda_cpu_low24(int x) { return static_cast<int>(static_cast<unsigned int>(x) << 8) >> 8; }
inline int __mul24(int a, int b) { return nn_cuda_cpu_low24(a) * nn_cuda_cpu_low24(b); }  // signed
inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }

// ---- memory: loads, fences, a clock --------------------------------------------------------------------

template <typename T>
inline T __ldg(const T* address) { return *address; }
// The loads and stores with a cache hint (streaming, L2 only, last use, volatile, write-back,
// write-through): one cache here, so each is a plain load or store.
template <typename T>
inline T __ldcs(const T* address) { return *address; }
template <typename T>
inline T __ldcg(const T* address) { return *address; }
template <typename T>
inline T __ldca(const T* address) { return *address; }
template <typename T>
inline T __ldlu(const T* address) { return *address; }
template <typename T>
inline T __ldcv(const T* address) { return *address; }
template <typename T>
inline void __stcs(T* address, T value) { *address = value; }
template <typename T>
inline void __stcg(T* address, T value) { *address = value; }
template <typename T>
inline void __stwb(T* address, T value) { *address = value; }
template <typename T>
inline void __stwt(T* address, T value) { *address = value; }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
// The clock: nanoseconds (it only has to grow, as a GPU's cycle counter does), or in the checking mode
// 1000 per read of the thread's in its block (runtime.h, counted_clock). CUDA's clock() is the device's
// counter too, where the host's <time.h> one would count the process's CPU time.
inline long long clock64()
{
    if (nn_cuda_cpu::counted_clock) {
        return static_cast<long long>(1000 * ++nn_cuda_cpu::current->clock_reads);
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}
#define clock() (static_cast<clock_t>(clock64()))

// A thread that sleeps, typically in a loop waiting for another thread: here it lets the other
// threads of its block (and, in the checking mode, the other resident blocks) run first.
inline void __nanosleep(unsigned) { nn_cuda_cpu::yield_thread(); }
inline void __prof_trigger(int) {}  // a profiler's counter, which changes no result

// ---- named barriers (bar.sync id): every thread of the block, as __syncthreads() ------------------

// __barrier_sync(id) (CUDA's crt/sm_30_intrinsics.h; nvFuser's block_sync_default.cu waits so) is a
// __syncthreads() on barrier `id`; __barrier_sync_count(id, n) waits for n threads, and only a count
// of the whole block is one here: a barrier of part of the block ends the launch, naming it.
inline void __barrier_sync(unsigned) { __syncthreads(); }
inline void __barrier_sync_count(unsigned id, unsigned count)
{
    const size_t threads = nn_cuda_cpu::threads_in_block();  // a GPU counts a partial last warp whole
    if (count != threads && count != (threads + 31) / 32 * 32) {
        const uint3 thread = nn_cuda_cpu::current->thread_idx;
        nn_cuda_cpu::report("%s: __barrier_sync_count(%u, %u) in thread (%u, %u, %u) of block (%u, %u, %u): the CPU "
                            "runner does not support a named barrier of part of a block (%zu threads); a count of the "
                            "whole block is __syncthreads()", nn_cuda_cpu::launch.kernel, id, count, thread.x, thread.y,
                            thread.z, nn_cuda_cpu::block_idx.x, nn_cuda_cpu::block_idx.y, nn_cuda_cpu::block_idx.z,
                            threads);
        nn_cuda_cpu::end_launch_reported();
    }
    __syncthreads();
}

// ---- barriers that count ---------------------------------------------------------------------------

inline int __syncthreads_count(int predicate) { return nn_cuda_cpu::barrier_count(predicate != 0); }
inline int __syncthreads_and(int predicate)
{
    return nn_cuda_cpu::barrier_count(predicate != 0) == static_cast<int>(nn_cuda_cpu::threads_in_block());
}
inline int __syncthreads_or(int predicate) { return nn_cuda_cpu::barrier_count(predicate != 0) != 0; }

// ---- atomics ----------------------------------------------------------------------------------------
// Real atomic operations (GCC's __atomic builtins), though the threads of a block take turns. Each
// says that the launch used one (nn_cuda_cpu::atomics_used): a floating-point sum made with atomics
// rounds in the order the threads come, so the checking mode then compares its two thread orders up
// to that rounding instead of bit for bit.

namespace nn_cuda_cpu {

template <typename T, typename Update>
T atomic_update(T* address, Update update)  // compare-and-swap on the value's bits until it holds
{
    using Bits = typename std::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type;
    static_assert(sizeof(T) == sizeof(Bits), "atomics on 4- and 8-byte values");
    Bits* bits = reinterpret_cast<Bits*>(address);
    Bits expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        const T old = nn_cuda_cpu_bit_cast<T>(expected);
        const Bits desired = nn_cuda_cpu_bit_cast<Bits>(static_cast<T>(update(old)));
        if (__atomic_compare_exchange_n(bits, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return old;
        }
    }
}

// A thread that waits for another one by spinning on an atomic (`while (atomicCAS(&lock, 0, 1) != 0);`,
// `while (atomicAdd(&flag, 0) == 0);`, as a single-pass scan waits for the block before it) finds the
// same value at the same address again and again. The threads of a block take turns here (and in the
// checking mode its blocks too), so the one it waits for runs only if it lets it: after
// kSpinningAtomics such atomics in a row it yields, as __nanosleep does. An atomic that finds another
// value (a histogram's, a ticket's) costs one comparison more.
constexpr unsigned kSpinningAtomics = 16;

// An atomic of `bytes` at `address`, in one of the checking mode's spans before an array: the first
// is noted. Not the aligned word that holds the array's first bytes: a byte's or a half's atomic done as
// an atomicCAS on the 32-bit word around it (PyTorch's, pytorch_scatter's) takes that word, which on a
// GPU starts where the array does (at a 256-byte boundary) and here, where a checked array ends at a
// guard page, may start before it.
inline void note_atomic_before(const void* address, size_t bytes)
{
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    for (size_t i = 0; i < watched_span_count && atomic_before_address == 0; ++i) {
        const uintptr_t start = watched_spans[2 * i + 1];
        if (watched_spans[2 * i] <= at && at < start && !(at % bytes == 0 && at + bytes > start)) {
            atomic_before_address = at;
            snprintf(atomic_before_thread, sizeof atomic_before_thread, "thread (%u, %u, %u) of block (%u, %u, %u)",
                     current->thread_idx.x, current->thread_idx.y, current->thread_idx.z, block_idx.x, block_idx.y,
                     block_idx.z);
        }
    }
}

// An atomic at `address`, past the end of a checked launch's extern __shared__ memory: the first is noted.
inline void note_atomic_past_dynamic_shared(const void* address)
{
    const uintptr_t at = reinterpret_cast<uintptr_t>(address), start = reinterpret_cast<uintptr_t>(dynamic_shared);
    if (start + atomic_watch_from <= at && at < start + kDynamicSharedBytes &&
        atomic_past_dynamic_shared == kDynamicSharedBytes) {
        atomic_past_dynamic_shared = at - start;
        snprintf(atomic_past_thread, sizeof atomic_past_thread, "thread (%u, %u, %u) of block (%u, %u, %u)",
                 current->thread_idx.x, current->thread_idx.y, current->thread_idx.z, block_idx.x, block_idx.y,
                 block_idx.z);
    }
}

template <typename T>
inline T found_by_atomic(const T* address, T old)
{
    if (!atomics_used.load(std::memory_order_relaxed)) {  // read first: host threads share the line
        atomics_used.store(true, std::memory_order_relaxed);
    }
    if (watched_span_count != 0) {
        note_atomic_before(address, sizeof(T));
    }
    if (atomic_watch_from != kDynamicSharedBytes) {
        note_atomic_past_dynamic_shared(address);
    }
    if (lanes_take_turns_at_shared_atomics(address)) {
        return old;  // its spin count starts after the turn
    }
    unsigned long long bits = 0;
    memcpy(&bits, &old, sizeof(T));
    Fiber* const thread = current;
    if (thread->atomic_address != address || thread->atomic_found != bits) {
        thread->atomic_address = address;
        thread->atomic_found = bits;
        thread->atomic_repeats = 0;
    } else if (++thread->atomic_repeats == kSpinningAtomics) {
        thread->atomic_repeats = 0;
        yield_thread();
    }
    return old;
}

// An atomicCAS of `old` to `value` at `address`, in a floating-point array of the checking mode of its
// size (float_spans): their magnitudes as floats (or doubles) go to atomic_sum_magnitude, as an
// atomicAdd's do, so that a sum made by a CAS loop is compared up to its order's rounding. Integers
// swapped anywhere else (locks, counters, hash keys) are not taken for floats.
template <typename T>
inline void note_float_swap(const T* address, T old, T value)
{
#if !defined(NN_CUDA_CPU_WORKERS)
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    for (size_t i = 0; i < float_span_count; ++i) {
        if (float_spans[3 * i] <= at && at < float_spans[3 * i + 1] && float_spans[3 * i + 2] == sizeof(T)) {
            using Float = typename std::conditional<sizeof(T) == 8, double, float>::type;
            for (const T bits : {old, value}) {
                const double magnitude = std::fabs(static_cast<double>(nn_cuda_cpu_bit_cast<Float>(bits)));
                if (std::isfinite(magnitude) && magnitude > atomic_sum_magnitude) {
                    atomic_sum_magnitude = magnitude;
                }
            }
            return;
        }
    }
#else
    (void)address, (void)old, (void)value;
#endif
}

}  // namespace nn_cuda_cpu

#define NN_CUDA_CPU_FOUND(a, old) nn_cuda_cpu::found_by_atomic(a, old)
#define NN_CUDA_CPU_ATOMIC_INTEGER(T)                                                                 \
    inline T atomicAdd(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_add(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicAnd(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_and(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicOr(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_or(a, v, __ATOMIC_RELAXED)); }   \
    inline T atomicXor(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_xor(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicExch(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_exchange_n(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicMin(T* a, T v)                                                                     \
    {                                                                                                 \
        return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](T old) { return v < old ? v : old; })); \
    }                                                                                                 \
    inline T atomicMax(T* a, T v)                                                                     \
    {                                                                                                 \
        return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](T old) { return v > old ? v : old; })); \
    }                                                                                                 \
    inline T atomicCAS(T* a, T compare, T v)                                                          \
    {                                                                                                 \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);       \
        nn_cuda_cpu::note_float_swap(a, compare, v);                                                  \
        return NN_CUDA_CPU_FOUND(a, compare); /* the old value, whether or not it was swapped */      \
    }
NN_CUDA_CPU_ATOMIC_INTEGER(int)
NN_CUDA_CPU_ATOMIC_INTEGER(unsigned int)
NN_CUDA_CPU_ATOMIC_INTEGER(unsigned long long)
inline long long atomicMin(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](long long old) { return v < old ? v : old; }));
}
inline long long atomicMax(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](long long old) { return v > old ? v : old; }));
}
// sm_32_atomic_functions.h's bitwise ones of long long (cudf's device_atomics.cuh, in MinkowskiEngine)
inline long long atomicAnd(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, __atomic_fetch_and(a, v, __ATOMIC_RELAXED));
}
inline long long atomicOr(long long* a, long long v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_or(a, v, __ATOMIC_RELAXED)); }
inline long long atomicXor(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, __atomic_fetch_xor(a, v, __ATOMIC_RELAXED));
}
inline int atomicSub(int* a, int v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_sub(a, v, __ATOMIC_RELAXED)); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v)
{
    return NN_CUDA_CPU_FOUND(a, __atomic_fetch_sub(a, v, __ATOMIC_RELAXED));
}
inline unsigned int atomicInc(unsigned int* a, unsigned int limit)  // wraps to 0 past limit
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [limit](unsigned int old) { return old >= limit ? 0u : old + 1; }));
}
inline unsigned int atomicDec(unsigned int* a, unsigned int limit)  // wraps to limit below 0
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [limit](unsigned int old) {
        return old == 0 || old > limit ? limit : old - 1;
    }));
}
namespace nn_cuda_cpu {
template <typename T>
inline T noted_sum(T old, T v)  // atomic_sum_magnitude (runtime.h) of a float atomicAdd, then `old`
{
#if !defined(NN_CUDA_CPU_WORKERS)
    const double largest = std::fmax(std::fabs(static_cast<double>(old)), std::fabs(static_cast<double>(v)));
    if (largest > atomic_sum_magnitude) {  // NaN compares false
        atomic_sum_magnitude = largest;
    }
#endif
    return old;
}
}  // namespace nn_cuda_cpu
inline float atomicAdd(float* a, float v)
{
    return nn_cuda_cpu::noted_sum(
        NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](float old) { return old + v; })), v);
}
inline double atomicAdd(double* a, double v)
{
    return nn_cuda_cpu::noted_sum(
        NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](double old) { return old + v; })), v);
}
inline float atomicExch(float* a, float v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](float) { return v; }));
}
// The scoped variants (_block, _system) of every atomic: on one core every scope is the same.
#define NN_CUDA_CPU_SCOPED_ATOMIC(name)                                \
    template <typename... A>                                           \
    inline auto name##_block(A... a) { return name(a...); }            \
    template <typename... A>                                           \
    inline auto name##_system(A... a) { return name(a...); }
NN_CUDA_CPU_SCOPED_ATOMIC(atomicAdd)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicSub)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicExch)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicMin)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicMax)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicInc)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicDec)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicCAS)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicAnd)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicOr)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicXor)

// ---- warps: shuffles, votes, __syncwarp ----------------------------------------------------------------
// The lanes of a mask meet at the call (runtime.h warp_sync) and hand their values over, as a
// GPU's warp does in one instruction. Code that relies on a warp running in lockstep without these
// (a legacy "warp-synchronous" reduction on volatile __shared__ memory) does not work here: its
// lanes take turns between syncs; the checking mode reports such a race.

// CUDA's built-in variable, which code may shadow with a variable or parameter of its own (Kaldi's `int warpSize`)
constexpr int warpSize = 32;

inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { nn_cuda_cpu::warp_sync(mask); }

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int source, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id(), group = lane & ~static_cast<unsigned>(width - 1);
    return nn_cuda_cpu::warp_exchange(mask, var, group + (static_cast<unsigned>(source) & (width - 1)));
}

template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id();
    return nn_cuda_cpu::warp_exchange(mask, var, lane % width >= delta ? lane - delta : lane);
}

template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id();
    return nn_cuda_cpu::warp_exchange(mask, var, lane % width + delta < static_cast<unsigned>(width) ? lane + delta : lane);
}

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id(), source = lane ^ static_cast<unsigned>(lane_mask);
    // a lane of a later group of `width` lanes is out of reach: the caller's own value
    return nn_cuda_cpu::warp_exchange(mask, var, source / width > lane / width ? lane : source);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) { return nn_cuda_cpu::warp_ballot(mask, predicate != 0); }
inline int __any_sync(unsigned mask, int predicate) { return nn_cuda_cpu::warp_ballot(mask, predicate != 0) != 0; }
inline int __all_sync(unsigned mask, int predicate)  // over the lanes of the mask that took part
{
    const unsigned votes = nn_cuda_cpu::warp_ballot(mask, predicate != 0);
    return votes == nn_cuda_cpu::current->warp_participants;
}
// The votes of CUDA 8 and before, without a mask: CUDA's headers still declare them, and ptxas
// refuses a vote without .sync for sm_70 and later where a call of one is compiled; so does the host
// compiler here (build.py names it in one line). A template that nothing instantiates, an inline
// function that nothing calls, builds (moderngpu's ctascan.cuh, which warp-ctc includes, has both).
#define NN_CUDA_CPU_LEGACY_VOTE "a warp vote without a mask, removed for GPUs of sm_70 and later"
int __any(int) __attribute__((error(NN_CUDA_CPU_LEGACY_VOTE)));
int __all(int) __attribute__((error(NN_CUDA_CPU_LEGACY_VOTE)));
unsigned __ballot(int) __attribute__((error(NN_CUDA_CPU_LEGACY_VOTE)));
#undef NN_CUDA_CPU_LEGACY_VOTE

// The lanes of the warp that run this call together: on a GPU those that took the same branch to
// it; here those that reach the same call (runtime.cpp, active_lanes).
inline unsigned __activemask() { return nn_cuda_cpu::active_lanes(); }

// Match (sm_70 and later): the lanes of `mask` whose value has the same bits as this lane's; or all
// of `mask` when every lane's value is the same (and *pred says which).
template <typename T>
inline unsigned __match_any_sync(unsigned mask, T value)
{
    static_assert(std::is_arithmetic<T>::value && sizeof(T) >= 4, "a 32- or 64-bit value, as on a GPU");
    unsigned same = 0;
    nn_cuda_cpu::warp_gather(mask, value, [&](unsigned lane, T other) {
        same |= memcmp(&other, &value, sizeof(T)) == 0 ? 1u << lane : 0u;
    });
    return same;
}

template <typename T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred)
{
    const unsigned same = __match_any_sync(mask, value);
    *pred = same == nn_cuda_cpu::current->warp_participants;  // the lanes of the mask that took part
    return *pred ? same : 0u;
}

// Reduce (sm_80 and later): every lane of `mask` gets the sum, minimum, maximum, and, or or xor of
// the lanes' values; add, min and max take int or unsigned, and, or and xor unsigned, as on a GPU.
template <typename T, typename Combine>
inline T nn_cuda_cpu_warp_reduce(unsigned mask, T value, Combine combine)
{
    bool first = true;
    T total = value;
    nn_cuda_cpu::warp_gather(mask, value, [&](unsigned, T other) {
        total = first ? other : combine(total, other);
        first = false;
    });
    return total;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a + b; }); }
inline int __reduce_add_sync(unsigned mask, int v) { return static_cast<int>(__reduce_add_sync(mask, static_cast<unsigned>(v))); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a < b ? a : b; }); }
inline int __reduce_min_sync(unsigned mask, int v) { return nn_cuda_cpu_warp_reduce(mask, v, [](int a, int b) { return a < b ? a : b; }); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a > b ? a : b; }); }
inline int __reduce_max_sync(unsigned mask, int v) { return nn_cuda_cpu_warp_reduce(mask, v, [](int a, int b) { return a > b ? a : b; }); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a & b; }); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a | b; }); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a ^ b; }); }

// ---- what the CPU runner cannot run yet: the build stops at the call, saying so --------------------------

// Declared with GCC's error attribute: a call the build compiles stops it, and one in a function no
// kernel calls does not, as on a GPU, whose build leaves such a function out (Ginkgo's memory helpers
// convert addresses with __cvta_generic_to_shared in a function its SpMV kernels never call; a
// static_assert stopped their build until 2026-11-27).
template <typename... A>
constexpr bool nn_cuda_cpu_unsupported = false;
#define NN_CUDA_CPU_UNSUPPORTED(function, what)                                                      \
    template <typename... A>                                                                         \
    __attribute__((error("the CPU runner does not support " #function " (" what ")"))) int function(A...);
NN_CUDA_CPU_UNSUPPORTED(__isGlobal, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__isShared, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__cvta_generic_to_shared, "address space conversions, which inline PTX takes")
NN_CUDA_CPU_UNSUPPORTED(__cvta_generic_to_global, "address space conversions, which inline PTX takes")
NN_CUDA_CPU_UNSUPPORTED(__cvta_shared_to_generic, "address space conversions, which inline PTX takes")
NN_CUDA_CPU_UNSUPPORTED(__cvta_global_to_generic, "address space conversions, which inline PTX takes")
NN_CUDA_CPU_UNSUPPORTED(__isLocal, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__isConstant, "address space queries")

// Textures and surfaces: a texture object's handle is a number, as CUDA's, so a kernel that takes
// one compiles, and a fetch or a surface access stops the build at its line. Both forms: the value
// returned (tex2D<float>(tex, x, y)) and written through a pointer (tex2D(&v, tex, x, y)).
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
// texture_types.h's modes, which NVRTC and nvcc declare too (a texture reference names its read mode:
// Parboil's `texture<unsigned short, 2, cudaReadModeElementType>`)
enum cudaTextureAddressMode {
    cudaAddressModeWrap = 0,
    cudaAddressModeClamp = 1,
    cudaAddressModeMirror = 2,
    cudaAddressModeBorder = 3
};
enum cudaTextureFilterMode { cudaFilterModePoint = 0, cudaFilterModeLinear = 1 };
enum cudaTextureReadMode { cudaReadModeElementType = 0, cudaReadModeNormalizedFloat = 1 };
#define NN_CUDA_CPU_UNSUPPORTED_TEXTURE(function)                                                    \
    template <typename T, typename... A>                                                             \
    __attribute__((error("the CPU runner does not support " #function " (textures and surfaces)")))  \
    T function(A...);                                                                                \
    template <typename... A>                                                                         \
    __attribute__((error("the CPU runner does not support " #function " (textures and surfaces)")))  \
    void function(A...);
// Texture references (`texture<float> tex;` with tex1Dfetch(tex, i)), which CUDA 12 removed: refused
// where one is declared.
template <typename T, int dimensions = 1, cudaTextureReadMode read_mode = cudaReadModeElementType>
struct texture {
    static_assert(nn_cuda_cpu_unsupported<T>, "the CPU runner does not support texture references (texture<T>, "
                                              "which CUDA 12 removed; texture objects neither: read the array "
                                              "through a pointer)");
};
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1Dfetch)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex3D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1DLayered)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DLayered)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DLod)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DGather)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(texCubemap)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf1Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf2Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf3Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf1Dwrite)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf2Dwrite)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf3Dwrite)

// ---- integer intrinsics (CUDA Math API, "Integer Intrinsics") ------------------------------------------
// Each as CUDA documents it, on the exact value in a wider type: the halving adds on 33 bits, the
// 64-bit high products on 128, the funnel shifts on the 64-bit pair hi:lo.

inline unsigned long long __brevll(unsigned long long x)
{
    return static_cast<unsigned long long>(__brev(static_cast<unsigned int>(x))) << 32 | __brev(static_cast<unsigned int>(x >> 32));
}
// byte n of the result: byte s<4n+2:4n> of the eight bytes y:x (x the low four); s<31:16> unused
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s)
{
    const unsigned long long bytes = static_cast<unsigned long long>(y) << 32 | x;
    unsigned int result = 0;
    for (int n = 0; n < 4; ++n) {
        const unsigned int selector = (s >> (4 * n)) & 7u;
        result |= static_cast<unsigned int>((bytes >> (8 * selector)) & 0xFFu) << (8 * n);
    }
    return result;
}
// sm_20_intrinsics.h's byte swaps (xgboost's compressed ELLPACK reads; not declared until 2026-11-27)
inline unsigned short __nv_bswap16(unsigned short x) { return __builtin_bswap16(x); }
inline unsigned int __nv_bswap32(unsigned int x) { return __builtin_bswap32(x); }
inline unsigned long long __nv_bswap64(unsigned long long x) { return __builtin_bswap64(x); }
inline long long __mul64hi(long long a, long long b)
{
    return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
// |x - y| + z, the difference exact (up to 2^32 - 1), the sum modulo 2^32
inline unsigned int __sad(int x, int y, unsigned int z)
{
    const long long d = static_cast<long long>(x) - y;
    return static_cast<unsigned int>(d < 0 ? -d : d) + z;
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
// hi:lo shifted left by shift & 31 (_l) or by min(shift, 32) (_lc): its high 32 bits; shifted right: its low 32
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return static_cast<unsigned int>(((static_cast<unsigned long long>(hi) << 32 | lo) << (shift & 31u)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return static_cast<unsigned int>(((static_cast<unsigned long long>(hi) << 32 | lo) << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return static_cast<unsigned int>((static_cast<unsigned long long>(hi) << 32 | lo) >> (shift & 31u));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return static_cast<unsigned int>((static_cast<unsigned long long>(hi) << 32 | lo) >> (shift < 32u ? shift : 32u));
}
// The averages: (x + y) >> 1 and (x + y + 1) >> 1 without overflow. int __hadd(int, int) is an exact
// match beside cuda_fp16.h's __hadd(__half, __half) and cuda_bf16.h's, as on a GPU, so __hadd(3, 5) is
// not ambiguous with them included.
inline int __hadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y) >> 1); }
inline int __rhadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) { return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y) >> 1); }
inline unsigned int __urhadd(unsigned int x, unsigned int y) { return static_cast<unsigned int>((static_cast<unsigned long long>(x) + y + 1) >> 1); }
// The position of the offset-th set bit of mask from bit `base` on, upwards (offset > 0) or downwards
// (offset < 0); offset 0: base itself if set. 0xFFFFFFFF where there is none (PTX's fns).
inline unsigned int __fns(unsigned int mask, unsigned int base, int offset)
{
    if (offset == 0) {
        return base < 32u && (mask >> base & 1u) ? base : 0xFFFFFFFFu;
    }
    const int step = offset > 0 ? 1 : -1;
    long long count = offset > 0 ? static_cast<long long>(offset) - 1 : -static_cast<long long>(offset) - 1;
    for (long long position = base; position >= 0 && position < 32; position += step) {
        if (mask >> position & 1u) {
            if (count == 0) {
                return static_cast<unsigned int>(position);
            }
            --count;
        }
    }
    return 0xFFFFFFFFu;
}

// The dot products: four bytes of a times four of b (__dp4a), or two halfwords of a times the low two
// (__dp2a_lo) or the high two (__dp2a_hi) bytes of b, plus c; signed in the int forms, unsigned in the
// unsigned ones, modulo 2^32; and the forms on char4/uchar4 and short2/ushort2, as CUDA declares them.
namespace nn_cuda_cpu {
template <int Bits, bool Signed>
inline long long lane_of(unsigned int x, int i)  // lane i of `Bits` bits, sign- or zero-extended
{
    const unsigned int mask = Bits == 32 ? 0xFFFFFFFFu : (1u << Bits) - 1u;
    const unsigned int v = (x >> (Bits * i)) & mask;
    return Signed && (v >> (Bits - 1)) ? static_cast<long long>(v) - (1LL << Bits) : static_cast<long long>(v);
}
template <bool Signed>
inline unsigned int dot2(unsigned int a, unsigned int b, int first_byte, unsigned int c)
{
    const long long sum = lane_of<16, Signed>(a, 0) * lane_of<8, Signed>(b, first_byte) +
                          lane_of<16, Signed>(a, 1) * lane_of<8, Signed>(b, first_byte + 1);
    return static_cast<unsigned int>(sum) + c;
}
template <bool Signed>
inline unsigned int dot4(unsigned int a, unsigned int b, unsigned int c)
{
    long long sum = 0;
    for (int i = 0; i < 4; ++i) {
        sum += lane_of<8, Signed>(a, i) * lane_of<8, Signed>(b, i);
    }
    return static_cast<unsigned int>(sum) + c;
}
template <typename V>
inline unsigned int packed(V v)  // the bits of a 4-byte vector
{
    return nn_cuda_cpu_bit_cast<unsigned int>(v);
}
}  // namespace nn_cuda_cpu
inline int __dp4a(int a, int b, int c) { return static_cast<int>(nn_cuda_cpu::dot4<true>(a, b, c)); }
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu::dot4<false>(a, b, c); }
inline int __dp4a(char4 a, char4 b, int c) { return __dp4a(static_cast<int>(nn_cuda_cpu::packed(a)), static_cast<int>(nn_cuda_cpu::packed(b)), c); }
inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) { return __dp4a(nn_cuda_cpu::packed(a), nn_cuda_cpu::packed(b), c); }
inline int __dp2a_lo(int a, int b, int c) { return static_cast<int>(nn_cuda_cpu::dot2<true>(a, b, 0, c)); }
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu::dot2<false>(a, b, 0, c); }
inline int __dp2a_hi(int a, int b, int c) { return static_cast<int>(nn_cuda_cpu::dot2<true>(a, b, 2, c)); }
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu::dot2<false>(a, b, 2, c); }
inline int __dp2a_lo(short2 a, char4 b, int c) { return __dp2a_lo(static_cast<int>(nn_cuda_cpu::packed(a)), static_cast<int>(nn_cuda_cpu::packed(b)), c); }
inline unsigned int __dp2a_lo(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_lo(nn_cuda_cpu::packed(a), nn_cuda_cpu::packed(b), c); }
inline int __dp2a_hi(short2 a, char4 b, int c) { return __dp2a_hi(static_cast<int>(nn_cuda_cpu::packed(a)), static_cast<int>(nn_cuda_cpu::packed(b)), c); }
inline unsigned int __dp2a_hi(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_hi(nn_cuda_cpu::packed(a), nn_cuda_cpu::packed(b), c); }

// fma that ignores -ftz (single precision intrinsics): here as __fmaf_rn and its directed-rounding
// twins, which never flush subnormals either
inline float __fmaf_ieee_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
inline float __fmaf_ieee_rz(float a, float b, float c) { return __fmaf_rz(a, b, c); }
inline float __fmaf_ieee_rd(float a, float b, float c) { return __fmaf_rd(a, b, c); }
inline float __fmaf_ieee_ru(float a, float b, float c) { return __fmaf_ru(a, b, c); }

// 16-bit atomicCAS (compute capability 7.x and later), counted as the atomics above; its scoped
// variants here as non-templates (the templates above were declared before it)
inline unsigned short int atomicCAS(unsigned short int* a, unsigned short int compare, unsigned short int v)
{
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return NN_CUDA_CPU_FOUND(a, compare);
}
inline unsigned short int atomicCAS_block(unsigned short int* a, unsigned short int compare, unsigned short int v) { return atomicCAS(a, compare, v); }
inline unsigned short int atomicCAS_system(unsigned short int* a, unsigned short int compare, unsigned short int v) { return atomicCAS(a, compare, v); }

// ---- SIMD video intrinsics (CUDA Math API, "SIMD Intrinsics"): the halfwords (name2) or bytes (name4)
// of an unsigned int, lane by lane ------------------------------------------------------------------------
// Each lane is sign- or zero-extended, the lane's expression computed exactly in long long, and its
// low bits kept: wrap-around where CUDA says so, saturated where the expression saturates.

namespace nn_cuda_cpu {
template <int Bits, bool Signed, typename Operation>
inline unsigned int simd(unsigned int a, unsigned int b, Operation operation)
{
    const unsigned int mask = (1u << Bits) - 1u;
    unsigned int result = 0;
    for (int i = 0; i < 32 / Bits; ++i) {
        const long long value = operation(lane_of<Bits, Signed>(a, i), lane_of<Bits, Signed>(b, i));
        result |= (static_cast<unsigned int>(value) & mask) << (Bits * i);
    }
    return result;
}
template <int Bits, bool Signed>
inline long long saturated(long long v)  // clamped to the lane's range
{
    const long long low = Signed ? -(1LL << (Bits - 1)) : 0, high = Signed ? (1LL << (Bits - 1)) - 1 : (1LL << Bits) - 1;
    return v < low ? low : v > high ? high : v;
}
inline long long magnitude(long long v) { return v < 0 ? -v : v; }
template <int Bits, bool Signed>
inline unsigned int simd_sad(unsigned int a, unsigned int b)  // the sum of the lanes' |a - b|
{
    long long sum = 0;
    for (int i = 0; i < 32 / Bits; ++i) {
        sum += magnitude(lane_of<Bits, Signed>(a, i) - lane_of<Bits, Signed>(b, i));
    }
    return static_cast<unsigned int>(sum);
}
}  // namespace nn_cuda_cpu

// name##2 on halfwords and name##4 on bytes: `expression` of the lanes x and y, with `S(v)` the value
// saturated to the lane's range
#define NN_CUDA_CPU_SIMD_OF(name, bits, is_signed, expression)                                           \
    inline unsigned int name(unsigned int a, unsigned int b)                                             \
    {                                                                                                    \
        return nn_cuda_cpu::simd<bits, is_signed>(a, b, [](long long x, long long y) -> long long {     \
            auto S = [](long long v) { return nn_cuda_cpu::saturated<bits, is_signed>(v); };             \
            (void)S, (void)x, (void)y;                                                                   \
            return expression;                                                                           \
        });                                                                                              \
    }
#define NN_CUDA_CPU_SIMD(name, is_signed, expression)            \
    NN_CUDA_CPU_SIMD_OF(name##2, 16, is_signed, expression)      \
    NN_CUDA_CPU_SIMD_OF(name##4, 8, is_signed, expression)
// the one-operand ones: a lane of a, as x
#define NN_CUDA_CPU_SIMD_UNARY(name, expression)                                                           \
    NN_CUDA_CPU_SIMD_OF(nn_cuda_cpu_##name##2, 16, true, expression)                                      \
    NN_CUDA_CPU_SIMD_OF(nn_cuda_cpu_##name##4, 8, true, expression)                                       \
    inline unsigned int name##2(unsigned int a) { return nn_cuda_cpu_##name##2(a, 0u); }                  \
    inline unsigned int name##4(unsigned int a) { return nn_cuda_cpu_##name##4(a, 0u); }

NN_CUDA_CPU_SIMD(__vadd, false, x + y)
NN_CUDA_CPU_SIMD(__vsub, false, x - y)
NN_CUDA_CPU_SIMD(__vaddss, true, S(x + y))
NN_CUDA_CPU_SIMD(__vaddus, false, S(x + y))
NN_CUDA_CPU_SIMD(__vsubss, true, S(x - y))
NN_CUDA_CPU_SIMD(__vsubus, false, S(x - y))
NN_CUDA_CPU_SIMD(__vabsdiffs, true, nn_cuda_cpu::magnitude(x - y))
NN_CUDA_CPU_SIMD(__vabsdiffu, false, nn_cuda_cpu::magnitude(x - y))
NN_CUDA_CPU_SIMD(__vavgs, true, x + y < 0 ? (x + y) >> 1 : (x + y + 1) >> 1)  // halves away from 0
NN_CUDA_CPU_SIMD(__vavgu, false, (x + y + 1) >> 1)
NN_CUDA_CPU_SIMD(__vhaddu, false, (x + y) >> 1)
NN_CUDA_CPU_SIMD(__vmaxs, true, x > y ? x : y)
NN_CUDA_CPU_SIMD(__vmaxu, false, x > y ? x : y)
NN_CUDA_CPU_SIMD(__vmins, true, x < y ? x : y)
NN_CUDA_CPU_SIMD(__vminu, false, x < y ? x : y)
// comparisons: __vcmp* all ones in a lane where true, __vset* 1
#define NN_CUDA_CPU_SIMD_COMPARISON(suffix, is_signed, comparison)             \
    NN_CUDA_CPU_SIMD(__vcmp##suffix, is_signed, (x comparison y) ? -1 : 0)      \
    NN_CUDA_CPU_SIMD(__vset##suffix, is_signed, (x comparison y) ? 1 : 0)
NN_CUDA_CPU_SIMD_COMPARISON(eq, false, ==)
NN_CUDA_CPU_SIMD_COMPARISON(ne, false, !=)
NN_CUDA_CPU_SIMD_COMPARISON(ges, true, >=)
NN_CUDA_CPU_SIMD_COMPARISON(geu, false, >=)
NN_CUDA_CPU_SIMD_COMPARISON(gts, true, >)
NN_CUDA_CPU_SIMD_COMPARISON(gtu, false, >)
NN_CUDA_CPU_SIMD_COMPARISON(les, true, <=)
NN_CUDA_CPU_SIMD_COMPARISON(leu, false, <=)
NN_CUDA_CPU_SIMD_COMPARISON(lts, true, <)
NN_CUDA_CPU_SIMD_COMPARISON(ltu, false, <)
NN_CUDA_CPU_SIMD_UNARY(__vabs, nn_cuda_cpu::magnitude(x))
NN_CUDA_CPU_SIMD_UNARY(__vabsss, S(nn_cuda_cpu::magnitude(x)))
NN_CUDA_CPU_SIMD_UNARY(__vneg, -x)
NN_CUDA_CPU_SIMD_UNARY(__vnegss, S(-x))
#undef NN_CUDA_CPU_SIMD_COMPARISON
#undef NN_CUDA_CPU_SIMD_UNARY
#undef NN_CUDA_CPU_SIMD
#undef NN_CUDA_CPU_SIMD_OF
inline unsigned int __vsads2(unsigned int a, unsigned int b) { return nn_cuda_cpu::simd_sad<16, true>(a, b); }
inline unsigned int __vsads4(unsigned int a, unsigned int b) { return nn_cuda_cpu::simd_sad<8, true>(a, b); }
inline unsigned int __vsadu2(unsigned int a, unsigned int b) { return nn_cuda_cpu::simd_sad<16, false>(a, b); }
inline unsigned int __vsadu4(unsigned int a, unsigned int b) { return nn_cuda_cpu::simd_sad<8, false>(a, b); }

// The DPX ones (CUDA 12, same section): maximum and minimum of two or three, after an addition
// (__viaddmax: max(a + b, c), the sum wrapping), with a ReLU (_relu: and 0), or telling which operand
// won (__vibmax: *pred = a >= b; __vibmin: *pred = a <= b); on int (_s32), unsigned int (_u32), or the
// two halfwords of an unsigned int (_s16x2, _u16x2; the predicates of the high and the low halfword).
namespace nn_cuda_cpu {
template <int Bits, bool Signed, typename Operation>
inline unsigned int simd3(unsigned int a, unsigned int b, unsigned int c, Operation operation)
{
    const unsigned int mask = Bits == 32 ? 0xFFFFFFFFu : (1u << Bits) - 1u;
    unsigned int result = 0;
    for (int i = 0; i < 32 / Bits; ++i) {
        const long long value = operation(lane_of<Bits, Signed>(a, i), lane_of<Bits, Signed>(b, i), lane_of<Bits, Signed>(c, i));
        result |= (static_cast<unsigned int>(value) & mask) << (Bits * i);
    }
    return result;
}
inline long long larger(long long x, long long y) { return x > y ? x : y; }
inline long long smaller(long long x, long long y) { return x < y ? x : y; }
template <int Bits, bool Signed>
inline long long wrapped(long long v)  // v in the lane's type, modulo 2^Bits
{
    return lane_of<Bits, Signed>(static_cast<unsigned int>(v), 0);
}
}  // namespace nn_cuda_cpu
#define NN_CUDA_CPU_DPX3(name, bits, is_signed, expression)                                                       \
    inline unsigned int nn_cuda_cpu_##name(unsigned int a, unsigned int b, unsigned int c)                         \
    {                                                                                                              \
        return nn_cuda_cpu::simd3<bits, is_signed>(a, b, c, [](long long x, long long y, long long z) -> long long { \
            using nn_cuda_cpu::larger;                                                                             \
            using nn_cuda_cpu::smaller;                                                                            \
            auto W = [](long long v) { return nn_cuda_cpu::wrapped<bits, is_signed>(v); };                         \
            (void)W, (void)x, (void)y, (void)z;                                                                    \
            return expression;                                                                                     \
        });                                                                                                        \
    }
// each of the three-operand (or two-operand, z unused) operations on the four lane types
#define NN_CUDA_CPU_DPX_ALL(stem, expression)                                                              \
    NN_CUDA_CPU_DPX3(stem##_s32, 32, true, expression)                                                    \
    NN_CUDA_CPU_DPX3(stem##_u32, 32, false, expression)                                                   \
    NN_CUDA_CPU_DPX3(stem##_s16x2, 16, true, expression)                                                  \
    NN_CUDA_CPU_DPX3(stem##_u16x2, 16, false, expression)
#define NN_CUDA_CPU_DPX_SIGNED(stem, expression)                                                           \
    NN_CUDA_CPU_DPX3(stem##_s32, 32, true, expression)                                                    \
    NN_CUDA_CPU_DPX3(stem##_s16x2, 16, true, expression)
NN_CUDA_CPU_DPX_ALL(__vimax3, larger(larger(x, y), z))
NN_CUDA_CPU_DPX_ALL(__vimin3, smaller(smaller(x, y), z))
NN_CUDA_CPU_DPX_SIGNED(__vimax3_relu, larger(larger(larger(x, y), z), 0))
NN_CUDA_CPU_DPX_SIGNED(__vimin3_relu, larger(smaller(smaller(x, y), z), 0))
NN_CUDA_CPU_DPX_SIGNED(__vimax_relu, larger(larger(x, y), 0))
NN_CUDA_CPU_DPX_SIGNED(__vimin_relu, larger(smaller(x, y), 0))
NN_CUDA_CPU_DPX_ALL(__viaddmax, larger(W(x + y), z))
NN_CUDA_CPU_DPX_ALL(__viaddmin, smaller(W(x + y), z))
NN_CUDA_CPU_DPX_SIGNED(__viaddmax_relu, larger(larger(W(x + y), z), 0))
NN_CUDA_CPU_DPX_SIGNED(__viaddmin_relu, larger(smaller(W(x + y), z), 0))
#undef NN_CUDA_CPU_DPX_SIGNED
#undef NN_CUDA_CPU_DPX_ALL
#undef NN_CUDA_CPU_DPX3
// CUDA's names and types: int for _s32, unsigned int for the others
#define NN_CUDA_CPU_DPX_NAMES(stem)                                                                                    \
    inline int stem##_s32(int a, int b, int c) { return static_cast<int>(nn_cuda_cpu_##stem##_s32(a, b, c)); }                 \
    inline unsigned int stem##_u32(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu_##stem##_u32(a, b, c); } \
    inline unsigned int stem##_s16x2(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu_##stem##_s16x2(a, b, c); } \
    inline unsigned int stem##_u16x2(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu_##stem##_u16x2(a, b, c); } \
    inline int stem##_s32_relu(int a, int b, int c) { return static_cast<int>(nn_cuda_cpu_##stem##_relu_s32(a, b, c)); }       \
    inline unsigned int stem##_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) { return nn_cuda_cpu_##stem##_relu_s16x2(a, b, c); }
NN_CUDA_CPU_DPX_NAMES(__vimax3)
NN_CUDA_CPU_DPX_NAMES(__vimin3)
NN_CUDA_CPU_DPX_NAMES(__viaddmax)
NN_CUDA_CPU_DPX_NAMES(__viaddmin)
#undef NN_CUDA_CPU_DPX_NAMES
inline int __vimax_s32_relu(int a, int b) { return static_cast<int>(nn_cuda_cpu___vimax_relu_s32(a, b, 0u)); }
inline unsigned int __vimax_s16x2_relu(unsigned int a, unsigned int b) { return nn_cuda_cpu___vimax_relu_s16x2(a, b, 0u); }
inline int __vimin_s32_relu(int a, int b) { return static_cast<int>(nn_cuda_cpu___vimin_relu_s32(a, b, 0u)); }
inline unsigned int __vimin_s16x2_relu(unsigned int a, unsigned int b) { return nn_cuda_cpu___vimin_relu_s16x2(a, b, 0u); }
inline int __vibmax_s32(int a, int b, bool* pred) { return *pred = a >= b, a >= b ? a : b; }
inline unsigned int __vibmax_u32(unsigned int a, unsigned int b, bool* pred) { return *pred = a >= b, a >= b ? a : b; }
inline int __vibmin_s32(int a, int b, bool* pred) { return *pred = a <= b, a <= b ? a : b; }
inline unsigned int __vibmin_u32(unsigned int a, unsigned int b, bool* pred) { return *pred = a <= b, a <= b ? a : b; }
namespace nn_cuda_cpu {
template <bool Signed, bool Maximum>
inline unsigned int chosen16x2(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo)
{
    unsigned int result = 0;
    bool* const preds[2] = {pred_lo, pred_hi};
    for (int i = 0; i < 2; ++i) {
        const long long x = lane_of<16, Signed>(a, i), y = lane_of<16, Signed>(b, i);
        const bool first = Maximum ? x >= y : x <= y;
        *preds[i] = first;
        result |= (static_cast<unsigned int>(first ? x : y) & 0xFFFFu) << (16 * i);
    }
    return result;
}
}  // namespace nn_cuda_cpu
inline unsigned int __vibmax_s16x2(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo) { return nn_cuda_cpu::chosen16x2<true, true>(a, b, pred_hi, pred_lo); }
inline unsigned int __vibmax_u16x2(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo) { return nn_cuda_cpu::chosen16x2<false, true>(a, b, pred_hi, pred_lo); }
inline unsigned int __vibmin_s16x2(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo) { return nn_cuda_cpu::chosen16x2<true, false>(a, b, pred_hi, pred_lo); }
inline unsigned int __vibmin_u16x2(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo) { return nn_cuda_cpu::chosen16x2<false, false>(a, b, pred_hi, pred_lo); }

// ---- CUDA 12.8's built-in atomic functions (__nv_atomic_*; CUDA C++ Programming Guide, "Atomic
// Functions") --------------------------------------------------------------------------------------------
// With the memory orders and thread scopes of the guide's enums. Each is one of GCC's atomics in
// sequential consistency, the strongest order, which serves every order asked for (and every scope:
// the blocks share one memory here); each counts as an atomic as atomicAdd does (NN_CUDA_CPU_FOUND),
// so that the checking mode treats them alike. The types are the guide's: a call on another stops the
// build. A 16-byte exchange, compare-and-exchange, load or store (sm_90 on a GPU) holds a lock of the
// runner's own for its one operation.

enum {
    __NV_ATOMIC_RELAXED,
    __NV_ATOMIC_CONSUME,
    __NV_ATOMIC_ACQUIRE,
    __NV_ATOMIC_RELEASE,
    __NV_ATOMIC_ACQ_REL,
    __NV_ATOMIC_SEQ_CST
};
enum {
    __NV_THREAD_SCOPE_THREAD,
    __NV_THREAD_SCOPE_BLOCK,
    __NV_THREAD_SCOPE_CLUSTER,
    __NV_THREAD_SCOPE_DEVICE,
    __NV_THREAD_SCOPE_SYSTEM
};

namespace nn_cuda_cpu {

template <typename T>
struct same_type {  // a parameter that takes T's type from the pointer alone (1 converts to the pointee's)
    using type = T;
};
template <typename T, typename... Allowed>
constexpr bool one_of = (std::is_same<typename std::remove_cv<T>::type, Allowed>::value || ...);

// the value an atomic found, as found_by_atomic (8 bytes at most) takes it: 16 bytes folded to 8
template <typename T>
inline T found_by_built_in(const T* address, T old)
{
    if constexpr (sizeof(T) <= 8) {
        return found_by_atomic(address, old);
    } else {
        unsigned long long halves[sizeof(T) / 8];
        memcpy(halves, &old, sizeof(T));
        unsigned long long folded = 0;
        for (unsigned long long half : halves) {
            folded = folded * 0x9E3779B97F4A7C15ull ^ half;
        }
        found_by_atomic(reinterpret_cast<const unsigned long long*>(address), folded);
        return old;
    }
}

inline std::atomic_flag wide_atomic_lock = ATOMIC_FLAG_INIT;  // the 16-byte ones
struct WideAtomic {
    WideAtomic()
    {
        while (wide_atomic_lock.test_and_set(std::memory_order_acquire)) {
        }
    }
    ~WideAtomic() { wide_atomic_lock.clear(std::memory_order_release); }
};

template <typename T>
inline T load(const T* address)
{
    T value;
    if constexpr (sizeof(T) == 16) {
        WideAtomic held;
        memcpy(&value, address, sizeof(T));
    } else {
        __atomic_load(const_cast<T*>(address), &value, __ATOMIC_SEQ_CST);
    }
    return value;
}
template <typename T>
inline void store(T* address, T value)
{
    if constexpr (sizeof(T) == 16) {
        WideAtomic held;
        memcpy(static_cast<void*>(address), &value, sizeof(T));
    } else {
        __atomic_store(address, &value, __ATOMIC_SEQ_CST);
    }
}
template <typename T>
inline T exchange(T* address, T value)
{
    T old;
    if constexpr (sizeof(T) == 16) {
        WideAtomic held;
        memcpy(&old, address, sizeof(T));
        memcpy(static_cast<void*>(address), &value, sizeof(T));
    } else {
        __atomic_exchange(address, &value, &old, __ATOMIC_SEQ_CST);
    }
    return old;
}
template <typename T>
inline bool compare_exchange(T* address, T* expected, T desired)  // bit for bit, as a GPU compares
{
    if constexpr (sizeof(T) == 16) {
        WideAtomic held;
        if (memcmp(address, expected, sizeof(T)) == 0) {
            memcpy(static_cast<void*>(address), &desired, sizeof(T));
            return true;
        }
        memcpy(static_cast<void*>(expected), address, sizeof(T));
        return false;
    } else {
        return __atomic_compare_exchange(address, expected, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

}  // namespace nn_cuda_cpu

// fetch_add, fetch_sub: int, unsigned, unsigned long long, float, double; and, or, xor: an integral type of
// 4 or 8 bytes; min, max: int, unsigned, long long, unsigned long long. Each with its form that returns
// nothing (__nv_atomic_add, ...).
#define NN_CUDA_CPU_NV_ATOMIC(operation, allowed, update, ...)                                                 \
    template <typename T>                                                                                     \
    inline T __nv_atomic_fetch_##operation(T* address, typename nn_cuda_cpu::same_type<T>::type value, int order, \
                                           int scope = __NV_THREAD_SCOPE_SYSTEM)                              \
    {                                                                                                         \
        static_assert(allowed, "__nv_atomic_fetch_" #operation " takes " __VA_ARGS__ " (CUDA C++ Programming Guide)"); \
        (void)order, (void)scope;                                                                             \
        const T old = NN_CUDA_CPU_FOUND(address, nn_cuda_cpu::atomic_update(address, [value](T old) { return update; })); \
        if constexpr (std::is_floating_point<T>::value) {                                                      \
            nn_cuda_cpu::noted_sum(old, value); /* as a floating-point atomicAdd */                           \
        }                                                                                                     \
        return old;                                                                                           \
    }                                                                                                         \
    template <typename T>                                                                                     \
    inline void __nv_atomic_##operation(T* address, typename nn_cuda_cpu::same_type<T>::type value, int order,  \
                                        int scope = __NV_THREAD_SCOPE_SYSTEM)                                 \
    {                                                                                                         \
        __nv_atomic_fetch_##operation(address, value, order, scope);                                          \
    }
#define NN_CUDA_CPU_NV_ARITHMETIC nn_cuda_cpu::one_of<T, int, unsigned int, unsigned long long, float, double>
#define NN_CUDA_CPU_NV_BITWISE (std::is_integral<T>::value && (sizeof(T) == 4 || sizeof(T) == 8))
#define NN_CUDA_CPU_NV_ORDERED nn_cuda_cpu::one_of<T, int, unsigned int, long long, unsigned long long>
NN_CUDA_CPU_NV_ATOMIC(add, NN_CUDA_CPU_NV_ARITHMETIC, static_cast<T>(old + value), "int, unsigned, unsigned long long, float or double")
NN_CUDA_CPU_NV_ATOMIC(sub, NN_CUDA_CPU_NV_ARITHMETIC, static_cast<T>(old - value), "int, unsigned, unsigned long long, float or double")
NN_CUDA_CPU_NV_ATOMIC(and, NN_CUDA_CPU_NV_BITWISE, static_cast<T>(old & value), "an integral type of 4 or 8 bytes")
NN_CUDA_CPU_NV_ATOMIC(or, NN_CUDA_CPU_NV_BITWISE, static_cast<T>(old | value), "an integral type of 4 or 8 bytes")
NN_CUDA_CPU_NV_ATOMIC(xor, NN_CUDA_CPU_NV_BITWISE, static_cast<T>(old ^ value), "an integral type of 4 or 8 bytes")
NN_CUDA_CPU_NV_ATOMIC(min, NN_CUDA_CPU_NV_ORDERED, value < old ? value : old, "int, unsigned, long long or unsigned long long")
NN_CUDA_CPU_NV_ATOMIC(max, NN_CUDA_CPU_NV_ORDERED, value > old ? value : old, "int, unsigned, long long or unsigned long long")
#undef NN_CUDA_CPU_NV_ARITHMETIC
#undef NN_CUDA_CPU_NV_BITWISE
#undef NN_CUDA_CPU_NV_ORDERED
#undef NN_CUDA_CPU_NV_ATOMIC

// exchange: any type of 4, 8 or 16 bytes; compare-and-exchange 2, 4, 8 or 16 (weak is ignored, as the
// guide says); load and store 1, 2, 4, 8 or 16
#define NN_CUDA_CPU_NV_SIZES(name, ...)                                                                        \
    static_assert(std::is_trivially_copyable<T>::value && nn_cuda_cpu::one_of<std::integral_constant<size_t, sizeof(T)>, __VA_ARGS__>, \
                  #name " takes a type of a size the CUDA C++ Programming Guide lists for it")
#define NN_CUDA_CPU_BYTES(n) std::integral_constant<size_t, n>
template <typename T>
inline T __nv_atomic_exchange_n(T* address, typename nn_cuda_cpu::same_type<T>::type value, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    NN_CUDA_CPU_NV_SIZES(__nv_atomic_exchange_n, NN_CUDA_CPU_BYTES(4), NN_CUDA_CPU_BYTES(8), NN_CUDA_CPU_BYTES(16));
    (void)order, (void)scope;
    return nn_cuda_cpu::found_by_built_in(address, nn_cuda_cpu::exchange(address, value));
}
template <typename T>
inline void __nv_atomic_exchange(T* address, const typename nn_cuda_cpu::same_type<T>::type* value, T* ret, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    NN_CUDA_CPU_NV_SIZES(__nv_atomic_exchange, NN_CUDA_CPU_BYTES(4), NN_CUDA_CPU_BYTES(8), NN_CUDA_CPU_BYTES(16));
    (void)order, (void)scope;
    const T old = nn_cuda_cpu::found_by_built_in(address, nn_cuda_cpu::exchange(address, *value));
    memcpy(static_cast<void*>(ret), &old, sizeof(T));
}
template <typename T>
inline bool __nv_atomic_compare_exchange_n(T* address, T* expected, typename nn_cuda_cpu::same_type<T>::type desired, bool weak,
                                           int success_order, int failure_order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    NN_CUDA_CPU_NV_SIZES(__nv_atomic_compare_exchange_n, NN_CUDA_CPU_BYTES(2), NN_CUDA_CPU_BYTES(4), NN_CUDA_CPU_BYTES(8),
                         NN_CUDA_CPU_BYTES(16));
    (void)weak, (void)success_order, (void)failure_order, (void)scope;
    const bool swapped = nn_cuda_cpu::compare_exchange(address, expected, desired);
    nn_cuda_cpu::found_by_built_in(address, *expected);  // the old value, whether or not it was swapped
    return swapped;
}
template <typename T>
inline bool __nv_atomic_compare_exchange(T* address, T* expected, const typename nn_cuda_cpu::same_type<T>::type* desired, bool weak, int success_order, int failure_order,
                                         int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    return __nv_atomic_compare_exchange_n(address, expected, *desired, weak, success_order, failure_order, scope);
}
template <typename T>
inline T __nv_atomic_load_n(const T* address, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    NN_CUDA_CPU_NV_SIZES(__nv_atomic_load_n, NN_CUDA_CPU_BYTES(1), NN_CUDA_CPU_BYTES(2), NN_CUDA_CPU_BYTES(4), NN_CUDA_CPU_BYTES(8),
                         NN_CUDA_CPU_BYTES(16));
    (void)order, (void)scope;
    return nn_cuda_cpu::found_by_built_in(address, nn_cuda_cpu::load(address));
}
template <typename T>
inline void __nv_atomic_load(const T* address, T* ret, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    const T value = __nv_atomic_load_n(address, order, scope);
    memcpy(static_cast<void*>(ret), &value, sizeof(T));
}
template <typename T>
inline void __nv_atomic_store_n(T* address, typename nn_cuda_cpu::same_type<T>::type value, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    NN_CUDA_CPU_NV_SIZES(__nv_atomic_store_n, NN_CUDA_CPU_BYTES(1), NN_CUDA_CPU_BYTES(2), NN_CUDA_CPU_BYTES(4), NN_CUDA_CPU_BYTES(8),
                         NN_CUDA_CPU_BYTES(16));
    (void)order, (void)scope;
    nn_cuda_cpu::store(address, value);
    nn_cuda_cpu::found_by_built_in(address, value);
}
template <typename T>
inline void __nv_atomic_store(T* address, const typename nn_cuda_cpu::same_type<T>::type* value, int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    __nv_atomic_store_n(address, *value, order, scope);
}
inline void __nv_atomic_thread_fence(int order, int scope = __NV_THREAD_SCOPE_SYSTEM)
{
    (void)order, (void)scope;
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
#undef NN_CUDA_CPU_BYTES
#undef NN_CUDA_CPU_NV_SIZES
