// CUDA's complex numbers (cuComplex.h, which nvcc has and CuPy puts on NVRTC's path): the CPU runner's
// own, on its vector types (device_functions.h, included before the code): cuFloatComplex is float2
// (real part x, imaginary y), cuDoubleComplex double2, cuComplex cuFloatComplex, so an array of them
// is a NumPy complex64 or complex128 array.
#pragma once

typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;

// The operations of a precision T with the function name suffix `f` (float) or none (double).
// Division scales both operands by 1 / (|c| + |d|) first, so that |c|^2 + |d|^2 neither overflows nor
// underflows where the quotient is representable; the absolute value is hypot, and the multiply-add
// x * y + d rounds once per part's two products (fma), as a GPU's contracted code does.
#define NN_CUDA_CPU_COMPLEX(T, C, f)                                                                 \
    inline T cuCreal##f(C z) { return z.x; }                                                         \
    inline T cuCimag##f(C z) { return z.y; }                                                         \
    inline C cuConj##f(C z) { return C{z.x, -z.y}; }                                                \
    inline C cuCadd##f(C a, C b) { return C{a.x + b.x, a.y + b.y}; }                                 \
    inline C cuCsub##f(C a, C b) { return C{a.x - b.x, a.y - b.y}; }                                 \
    inline C cuCmul##f(C a, C b) { return C{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x}; }         \
    inline C cuCdiv##f(C a, C b)                                                                     \
    {                                                                                                \
        const T scale = T(1) / (std::fabs(b.x) + std::fabs(b.y));                                    \
        const T ar = a.x * scale, ai = a.y * scale, br = b.x * scale, bi = b.y * scale;              \
        const T inverse = T(1) / (br * br + bi * bi);                                                \
        return C{(ar * br + ai * bi) * inverse, (ai * br - ar * bi) * inverse};                      \
    }                                                                                                \
    inline T cuCabs##f(C z) { return std::hypot(z.x, z.y); }                                         \
    inline C cuCfma##f(C a, C b, C d)                                                                \
    {                                                                                                \
        return C{std::fma(-a.y, b.y, std::fma(a.x, b.x, d.x)), std::fma(a.y, b.x, std::fma(a.x, b.y, d.y))}; \
    }
NN_CUDA_CPU_COMPLEX(float, cuFloatComplex, f)
NN_CUDA_CPU_COMPLEX(double, cuDoubleComplex, )
#undef NN_CUDA_CPU_COMPLEX

inline cuFloatComplex make_cuFloatComplex(float r, float i) { return cuFloatComplex{r, i}; }
inline cuDoubleComplex make_cuDoubleComplex(double r, double i) { return cuDoubleComplex{r, i}; }
inline cuComplex make_cuComplex(float r, float i) { return cuComplex{r, i}; }

inline cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex z)
{
    return cuDoubleComplex{static_cast<double>(z.x), static_cast<double>(z.y)};
}
inline cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex z)
{
    return cuFloatComplex{static_cast<float>(z.x), static_cast<float>(z.y)};
}
