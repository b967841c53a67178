"""Half precision and bfloat16 on the CPU runner (cuda_fp16.h, cuda_bf16.h), against NumPy.

- every one of the 65,536 bit patterns of each format widens to the float NumPy gives;
- floats and doubles round to the nearest 16-bit float (ties to even, subnormals, overflow) as
  NumPy's float16 rounds, and toward zero, down and up as the neighbours say; a double rounds once
  (a value that rounding through float would take to a tie rounds right);
- + - * / fma sqrt and the pair type compute the correctly rounded result, as a GPU's instructions
  do (NumPy's float16 arithmetic; bfloat16 through float32 and one rounding);
- __half values move through warp shuffles and atomicAdd, and arrays of them through pointers;
  atomics on both formats are order-dependent rounding, not a race, in the checking mode; a __half
  passes by value; an #if after #include <cuda_bf16.h> is honoured by the scan for kernels.
"""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # a module build (about three seconds)

CODE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// out[i] = the float of the 16-bit pattern bits[i], in each format.
extern "C" __global__ void widen(const unsigned short* bits, float* half_out, float* bf16_out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        half_out[i] = __half2float(__ushort_as_half(bits[i]));
        bf16_out[i] = __bfloat162float(__ushort_as_bfloat16(bits[i]));
    }
}

// Row r of out: x rounded to the nearest (r = 0), toward zero, down and up, in each format; row 4
// the nearest __half of the double y.
extern "C" __global__ void narrow(const float* x, const double* y, unsigned short* half_out,
                                  unsigned short* bf16_out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        half_out[0 * n + i] = __half_as_ushort(__float2half_rn(x[i]));
        half_out[1 * n + i] = __half_as_ushort(__float2half_rz(x[i]));
        half_out[2 * n + i] = __half_as_ushort(__float2half_rd(x[i]));
        half_out[3 * n + i] = __half_as_ushort(__float2half_ru(x[i]));
        half_out[4 * n + i] = __half_as_ushort(__double2half(y[i]));
        bf16_out[0 * n + i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
        bf16_out[1 * n + i] = __bfloat16_as_ushort(__float2bfloat16_rz(x[i]));
        bf16_out[2 * n + i] = __bfloat16_as_ushort(__float2bfloat16_rd(x[i]));
        bf16_out[3 * n + i] = __bfloat16_as_ushort(__float2bfloat16_ru(x[i]));
    }
}

// Rows of out: a + b, a - b, a * b, a / b, fma(a, b, c), sqrt|a|, and the pair (a, b) times c.
template <typename T, typename T2>
__global__ void arithmetic(const T* a, const T* b, const T* c, T* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[0 * n + i] = a[i] + b[i];
        out[1 * n + i] = __hsub(a[i], b[i]);
        T product = a[i];
        product *= b[i];
        out[2 * n + i] = product;
        out[3 * n + i] = a[i] / b[i];
        out[4 * n + i] = __hfma(a[i], b[i], c[i]);
        out[5 * n + i] = hsqrt(__habs(a[i]));
        const T2 pair = T2(a[i], b[i]) * T2(c[i], c[i]);
        out[6 * n + i] = pair.x;
        out[7 * n + i] = pair.y;
    }
}

// Each warp sums its 32 halves by shuffles; lane 0 stores the sum and adds it to *total atomically.
extern "C" __global__ void warp_sums(const __half* x, __half* sums, __half* total)
{
    __half v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int offset = 16; offset > 0; offset /= 2) {
        v = v + __shfl_xor_sync(0xffffffff, v, offset);
    }
    if (threadIdx.x % 32 == 0) {
        sums[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
        atomicAdd(total, v);
    }
}
"""

INSTANCES = ("arithmetic<__half, __half2>", "arithmetic<__nv_bfloat16, __nv_bfloat162>")


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "checking"])
def module(request):
    return RawModule(code=CODE, name_expressions=INSTANCES, check=request.param)


def launch(kernel, n, *args):
    kernel(((n + 127) // 128,), (128,), (*args, np.int32(n)))


# ---- references ------------------------------------------------------------------------------------


def bf16_widened(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def bf16_nearest(x):
    """The bits of the nearest bfloat16 of the float32 array x (ties to even; NaN quiet)."""
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((u >> 16) | 0x40).astype(np.uint16), rounded)


def directed(x, nearest_bits, widen):
    """Toward zero, down and up, from the nearest: where the nearest is beyond x in the wrong
    direction, the neighbour one step toward x (a step of the magnitude's bits)."""
    x = x.astype(np.float64)
    near = widen(nearest_bits).astype(np.float64)
    sign, magnitude = nearest_bits & 0x8000, (nearest_bits & 0x7FFF).astype(np.int32)
    smaller = (sign | np.maximum(magnitude - 1, 0)).astype(np.uint16)  # one step toward zero
    larger = (sign | (magnitude + 1)).astype(np.uint16)  # one step away from zero
    finite = np.isfinite(x)
    toward_zero = np.where(finite & (np.abs(near) > np.abs(x)), smaller, nearest_bits)
    down = np.where(finite & (near > x), np.where(x >= 0, smaller, larger), nearest_bits)
    up = np.where(finite & (near < x), np.where(x >= 0, larger, smaller), nearest_bits)
    return toward_zero, down, up


def same_numbers(got_bits, want_bits, widen):
    """Equal bits, NaN for NaN (a NaN's payload is the format's own business)."""
    nan = np.isnan(widen(want_bits))
    assert (np.isnan(widen(got_bits)) == nan).all()
    mismatch = np.flatnonzero((got_bits != want_bits) & ~nan)
    assert mismatch.size == 0, [(hex(int(got_bits[i])), hex(int(want_bits[i]))) for i in mismatch[:5]]


def fma_rounded_to_odd(a, b, c):
    """a * b + c of float64 arrays whose products are exact, rounded to odd: a last bit of 1 where the
    double sum is not exact (two-sum error), so that one more rounding to 16 bits is the exact result's."""
    product = a * b
    total = product + c
    c_part = total - product
    error = (product - (total - c_part)) + (c - c_part)
    even = (total.view(np.uint64) & 1) == 0
    inexact = (error != 0) & np.isfinite(total) & even
    return np.where(inexact, np.nextafter(total, np.where(error > 0, np.inf, -np.inf)), total)


def half_widened(bits):
    return bits.view(np.float16).astype(np.float32)


def test_every_bit_pattern_widens_as_numpy_widens_it(module):
    bits = np.arange(65536, dtype=np.uint16)
    if module.check:  # NaN out of inputs that hold no float NaN is what the checking mode reports
        bits = bits[~np.isnan(half_widened(bits)) & ~np.isnan(bf16_widened(bits))]
    half_out, bf16_out = np.zeros(bits.size, np.float32), np.zeros(bits.size, np.float32)
    launch(module.get_function("widen"), bits.size, bits, half_out, bf16_out)
    for got, want in ((half_out, half_widened(bits)), (bf16_out, bf16_widened(bits))):
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all()
        np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))  # -0.0 too
    # a NaN's bits, as an H100 gives them: every binary16 NaN widens to 0x7FFFFFFF, a bfloat16 NaN
    # keeps its bits (payload and sign)
    half_nan, bf16_nan = np.isnan(half_widened(bits)), np.isnan(bf16_widened(bits))
    assert (half_out[half_nan].view(np.uint32) == 0x7FFFFFFF).all()
    np.testing.assert_array_equal(bf16_out[bf16_nan].view(np.uint32), bf16_widened(bits[bf16_nan]).view(np.uint32))


def test_floats_and_doubles_round_in_each_mode(module):
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(3000).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 20, 3000),
        half_widened(rng.integers(0, 0x7C00, 500, dtype=np.uint16)) * np.float32(1 + 2**-11),  # ties
        np.float32([0.0, -0.0, 65504, 65519.99, 65520, -65520, 1e30, -1e30, np.inf, -np.inf, np.nan,
                    2**-24, 2**-25, 1.5 * 2**-25, -(2**-25) * 1.0001, 3e38, -3e38]),
    ]).astype(np.float32)
    # 1 + 2^-11 + 2^-40 is 1 + 2^-11 in float (a tie of binary16 that rounds to 1): rounded once, 1 + 2^-10
    y = x.astype(np.float64)
    y[-2:] = [1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40)]
    n = x.size
    half_out, bf16_out = np.zeros(5 * n, np.uint16), np.zeros(4 * n, np.uint16)
    launch(module.get_function("narrow"), n, x, y, half_out, bf16_out)
    half_out, bf16_out = half_out.reshape(5, n), bf16_out.reshape(4, n)

    with np.errstate(over="ignore"):
        half_nearest = x.astype(np.float16).view(np.uint16)
        half_of_y = y.astype(np.float16).view(np.uint16)
    same_numbers(half_out[0], half_nearest, half_widened)
    for got, want in zip(half_out[1:4], directed(x, half_nearest, half_widened)):
        same_numbers(got, want, half_widened)
    same_numbers(half_out[4], half_of_y, half_widened)
    assert half_out[4, -2:].tolist() == [0x3C01, 0xBC01]  # 1 + 2^-10: one rounding, not two

    nearest = bf16_nearest(x)
    same_numbers(bf16_out[0], nearest, bf16_widened)
    for got, want in zip(bf16_out[1:4], directed(x, nearest, bf16_widened)):
        same_numbers(got, want, bf16_widened)
    # a NaN's bits, as an H100 gives them: 0x7FFF from a float in either format and mode, the quiet
    # NaN of the payload (0x7E00) from a double
    nan = np.isnan(x)
    assert (half_out[:4, nan] == 0x7FFF).all() and (bf16_out[:, nan] == 0x7FFF).all()
    assert (half_out[4, nan] == 0x7E00).all()


def test_arithmetic_is_correctly_rounded_in_both_formats(module):
    rng = np.random.default_rng(1)
    n = 4000
    def finite(top):  # bit patterns below top's, either sign; no zero (0 / 0 is NaN, which the checking mode reports)
        return rng.integers(1, top, n, dtype=np.uint16) | (rng.integers(0, 2, n, dtype=np.uint16) << 15)

    # binary16: NumPy's float16 arithmetic rounds once; fma from the double rounded to odd
    a, b, c = (finite(0x7C00).view(np.float16) for _ in range(3))
    out = np.zeros(8 * n, np.float16)
    launch(module.get_function(INSTANCES[0]), n, a, b, c, out)
    with np.errstate(all="ignore"):
        f64 = [v.astype(np.float64) for v in (a, b, c)]
        want = np.stack([a + b, a - b, a * b, a / b, fma_rounded_to_odd(*f64).astype(np.float16),
                         np.sqrt(np.abs(a)), a * c, b * c])
    for row, expected in zip(out.reshape(8, n), want):
        same_numbers(row.view(np.uint16), expected.view(np.uint16), half_widened)

    # bfloat16: through float32 and one rounding (fma: the double rounded to odd rounds once)
    a, b, c = (finite(0x7F80) for _ in range(3))
    out = np.zeros(8 * n, np.uint16)
    launch(module.get_function(INSTANCES[1]), n, a, b, c, out)
    wa, wb, wc = (bf16_widened(v) for v in (a, b, c))
    with np.errstate(all="ignore"):
        exact = fma_rounded_to_odd(wa.astype(np.float64), wb.astype(np.float64), wc.astype(np.float64))
        # a double rounded to bfloat16 directly: its bits rounded at the bfloat16's last fraction bit
        u = exact.view(np.uint64)
        once = ((u + (1 << 44) - 1 + ((u >> 45) & 1)) >> 45 << 45).view(np.float64).astype(np.float32)
        want = [bf16_nearest(v.astype(np.float32)) for v in
                (wa + wb, wa - wb, wa * wb, wa / wb, once, np.sqrt(np.abs(wa)), wa * wc, wb * wc)]
    normal_fma = np.isfinite(exact) & (np.abs(exact) > 2.0**-126)  # the reference's range
    for k, (row, expected) in enumerate(zip(out.reshape(8, n), want)):
        keep = normal_fma if k == 4 else np.ones(n, bool)
        same_numbers(row[keep], expected[keep], bf16_widened)


def test_halves_move_through_shuffles_and_atomics(module):
    x = np.random.default_rng(2).integers(-8, 9, 256).astype(np.float16)  # exact sums in any order
    sums, total = np.full(8, np.nan, np.float16), np.zeros(1, np.float16)
    module.get_function("warp_sums")((2,), (128,), (x, sums, total))
    np.testing.assert_array_equal(sums, x.reshape(8, 32).astype(np.float64).sum(axis=1))
    assert total[0] == x.astype(np.float64).sum()


ACCUMULATE = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Every thread adds its value to the totals atomically, in bfloat16, in half precision and (x, 2 x)
// as a bfloat16 pair, and scales its own element of x by `factor` (a __half by value).
extern "C" __global__ void accumulate(__nv_bfloat16* total, __half* half_total, __nv_bfloat162* pair_total,
                                      const float* x, __half* scaled, __half factor)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(total, __float2bfloat16(x[i]));
    atomicAdd(half_total, __float2half(x[i]));
    atomicAdd(pair_total, __floats2bfloat162_rn(x[i], 2.0f * x[i]));
    scaled[i] = __float2half(x[i]) * factor;
}

#if !defined(NOT_DEFINED_ANYWHERE)  // the kernel scan reads the code through the runner's headers
extern "C" __global__ void present(float* out) { out[0] = 1.0f; }
#else
extern "C" __global__ void absent(float* out) { out[0] = 2.0f; }
#endif
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_sixteen_bit_atomics_and_values_by_value(check):
    module = RawModule(code=ACCUMULATE, check=check)
    kernel = module.get_function("accumulate")
    assert kernel.signature == ("__nv_bfloat16*", "__half*", "__nv_bfloat162*", "const float*", "__half*", "__half")
    x = np.random.default_rng(3).random(256).astype(np.float32)
    total, half_total, pair_total = np.zeros(1, np.uint16), np.zeros(1, np.float16), np.zeros(2, np.uint16)
    scaled = np.zeros(256, np.float16)
    # checking: the two thread orders round the sums differently, which is not a race
    kernel((8,), (32,), (total, half_total, pair_total, x, scaled, np.float16(0.5)))
    exact = x.astype(np.float64).sum()  # about 128: 256 additions each rounding at 2^-9 (bf16), 2^-12 (half)
    assert abs(bf16_widened(total)[0] - exact) < 0.05 * exact
    assert abs(float(half_total[0]) - exact) < 0.02 * exact
    np.testing.assert_allclose(bf16_widened(pair_total), [exact, 2 * exact], rtol=0.05)
    np.testing.assert_array_equal(scaled, x.astype(np.float16) * np.float16(0.5))
    with pytest.raises(TypeError, match=r"argument 4 \(__half\*\) takes an array of 2-byte items"):
        kernel((8,), (32,), (total, half_total, pair_total, x, x, np.float16(0.5)))
    # CuPy passes a Python float as a double, of which a GPU reads the first two bytes (an H100 scaled
    # by 0.0 where 0.5 was meant): refused, naming the parameter
    with pytest.raises(TypeError, match=r"argument 5 \(__half\) takes a NumPy scalar of its size .*CuPy passes a "
                                        r"Python float as 8 bytes, of which a GPU reads the first 2"):
        kernel((8,), (32,), (total, half_total, pair_total, x, scaled, 0.5))
    out = np.zeros(1, np.float32)
    module.get_function("present")((1,), (1,), (out,))
    assert out[0] == 1.0
    with pytest.raises(LookupError, match=r"no kernel 'absent' in this RawModule; it holds 'accumulate', 'present'"):
        module.get_function("absent")  # before, the scan ignored the #if and the build failed on it


NAN_RESULTS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Rows of out: inf - inf, NaN + 1, a float -NaN converted, sqrt(-1), inf * 0, fma(NaN, NaN, NaN),
// in each format (half, then bfloat16).
__device__ unsigned short bits_of(__half h) { return __half_as_ushort(h); }
__device__ unsigned short bits_of(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
template <typename T>
__device__ void nan_results(T infinity, T nan, float negative_nan, unsigned short* out)
{
    out[0] = bits_of(__hsub(infinity, infinity));
    out[1] = bits_of(__hadd(nan, T(1.0f)));
    out[2] = bits_of(T(negative_nan));
    out[3] = bits_of(hsqrt(T(-1.0f)));
    out[4] = bits_of(__hmul(infinity, T(0.0f)));
    out[5] = bits_of(__hfma(nan, nan, nan));
}
extern "C" __global__ void nans(const unsigned short* bits, const float* negative_nan, unsigned short* out)
{
    nan_results(__ushort_as_half(bits[0]), __ushort_as_half(bits[1]), *negative_nan, out);
    nan_results(__ushort_as_bfloat16(bits[2]), __ushort_as_bfloat16(bits[3]), *negative_nan, out + 6);
}
"""


def test_every_nan_an_operation_makes_is_0x7fff_as_on_a_gpu():
    # measured on an H100 (2026-11-26): each of these gave 0x7FFF in both formats, whatever the operands'
    # payloads and signs; the host's float arithmetic would keep a payload and the sign
    out = np.zeros(12, np.uint16)
    bits = np.array([0x7C00, 0x7E55, 0x7F80, 0x7FA5], np.uint16)
    negative_nan = np.array([0xFFC12345], np.uint32).view(np.float32)
    RawModule(code=NAN_RESULTS).get_function("nans")((1,), (1,), (bits, negative_nan, out))
    assert [hex(v) for v in out] == ["0x7fff"] * 12


def test_reading_the_bits_member_does_not_build_as_under_nvrtc():
    # NVIDIA's headers keep __half's and __nv_bfloat16's __x protected: NVRTC refused a kernel that read
    # h.__x on an H100 ("member ... is inaccessible"); __half_as_ushort is the way on both
    code = '#include <cuda_fp16.h>\nextern "C" __global__ void k(unsigned short* out) { out[0] = __half(1.0f).__x; }\n'
    with pytest.raises(KernelBuildError, match=r"__x.* is protected"):
        RawModule(code=code).get_function("k")


INTEGER_CONVERSIONS = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>
// row m of the outputs: the integers v converted in mode m (rn, rz, rd, ru), as bits
extern "C" __global__ void from_integers(const long long* v, const unsigned long long* u, int n,
                                         unsigned short* half_bits, unsigned short* bf16_bits)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    half_bits[i] = __half_as_ushort(__ll2half_rn(v[i]));
    half_bits[n + i] = __half_as_ushort(__ll2half_rz(v[i]));
    half_bits[2 * n + i] = __half_as_ushort(__ll2half_rd(v[i]));
    half_bits[3 * n + i] = __half_as_ushort(__ll2half_ru(v[i]));
    half_bits[4 * n + i] = __half_as_ushort(__ull2half_rn(u[i]));
    half_bits[5 * n + i] = __half_as_ushort(__short2half_rn(static_cast<short>(v[i])));
    bf16_bits[i] = __bfloat16_as_ushort(__ll2bfloat16_rn(v[i]));
    bf16_bits[n + i] = __bfloat16_as_ushort(__ll2bfloat16_rz(v[i]));
    bf16_bits[2 * n + i] = __bfloat16_as_ushort(__ll2bfloat16_rd(v[i]));
    bf16_bits[3 * n + i] = __bfloat16_as_ushort(__ll2bfloat16_ru(v[i]));
    bf16_bits[4 * n + i] = __bfloat16_as_ushort(__ull2bfloat16_rn(u[i]));
    bf16_bits[5 * n + i] = __bfloat16_as_ushort(__ushort2bfloat16_rn(static_cast<unsigned short>(u[i])));
}

// the halves of `bits` converted to integers: int in the four modes, then the other types
extern "C" __global__ void to_integers(const unsigned short* bits, int n, int* ints, short* shorts,
                                       unsigned int* uints, long long* longs, unsigned long long* ulongs,
                                       signed char* chars)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const __half h = __ushort_as_half(bits[i]);
    ints[i] = __half2int_rn(h);
    ints[n + i] = __half2int_rz(h);
    ints[2 * n + i] = __half2int_rd(h);
    ints[3 * n + i] = __half2int_ru(h);
    shorts[i] = __half2short_rn(h);
    uints[i] = __half2uint_rd(h);
    longs[i] = __half2ll_ru(h);
    ulongs[i] = __half2ull_rz(h);
    chars[i] = __half2char_rz(h);
}
"""


def integer_rounded(value: int, exponent_bits: int, fraction_bits: int, mode: str) -> float:
    """An integer rounded once to a binary format of those bits in mode rn, rz, rd or ru (exact, in
    Python's integers), overflowing as IEEE 754 says."""
    magnitude, negative = abs(value), value < 0
    shift = max(magnitude.bit_length() - 1 - fraction_bits, 0)
    kept, rest, half = magnitude >> shift, magnitude & ((1 << shift) - 1), (1 << shift) >> 1
    up = {"rn": rest > half or (rest == half and shift > 0 and kept & 1), "rz": False,
          "rd": rest != 0 and negative, "ru": rest != 0 and not negative}[mode]
    result = (kept + up) << shift
    largest = ((1 << (fraction_bits + 1)) - 1) << ((1 << (exponent_bits - 1)) - 1 - fraction_bits)
    if result > largest:
        infinite = mode == "rn" or (mode == "ru" and not negative) or (mode == "rd" and negative)
        result = float("inf") if infinite else largest
    return -float(result) if negative else float(result)


@pytest.mark.parametrize("check", [False, True])
def test_integers_convert_to_and_from_16_bit_floats_in_every_mode_as_a_gpu_converts(check):
    # 86 of these conversions (__short2half_rn, __half2ll_rn, __ull2bfloat16_rz, ...) were build errors
    v = np.array([0, 1, -1, 7, 2049, 2051, -2051, 4097, 65504, 65519, 65520, -65520, 70000, 2**40 + 3,
                  2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 2**63 - 1, -2**63], np.int64)
    u = v.astype(np.uint64)  # 2^64 - 1 and others past 2^63 among them
    n = v.size
    half_bits, bf16_bits = np.zeros(6 * n, np.uint16), np.zeros(6 * n, np.uint16)
    module = RawModule(code=INTEGER_CONVERSIONS, check=check)
    module.get_function("from_integers")((1,), (32,), (v, u, np.int32(n), half_bits, bf16_bits))
    modes = ("rn", "rz", "rd", "ru")
    with np.errstate(over="ignore"):
        half_want = [[integer_rounded(int(x), 5, 10, m) for x in v] for m in modes]
        half_want += [[integer_rounded(int(x), 5, 10, "rn") for x in u],
                      [integer_rounded((int(x) + 2**15) % 2**16 - 2**15, 5, 10, "rn") for x in v]]  # (short)v
        bf16_want = [[integer_rounded(int(x), 8, 7, m) for x in v] for m in modes]
        bf16_want += [[integer_rounded(int(x), 8, 7, "rn") for x in u],
                      [integer_rounded(int(x) & 0xFFFF, 8, 7, "rn") for x in u]]  # (unsigned short)u
        np.testing.assert_array_equal(half_widened(half_bits.reshape(6, n)), np.float32(half_want))
        np.testing.assert_array_equal(bf16_widened(bf16_bits.reshape(6, n)), np.float32(bf16_want))
    assert bf16_widened(bf16_bits[14:15])[0] == 2**62 + 2**55  # above a tie: one rounding, not two

    # from halves: rounded in the mode, then clamped to the type's range; NaN 0 (2^63 into 64 bits)
    h = np.float16([0, 0.5, 1.5, 2.5, -2.5, -0.7, 100.9, -129.5, 65504, -65504, np.inf, -np.inf, np.nan])
    n = h.size
    ints, shorts, uints = np.zeros(4 * n, np.int32), np.zeros(n, np.int16), np.zeros(n, np.uint32)
    longs, ulongs, chars = np.zeros(n, np.int64), np.zeros(n, np.uint64), np.zeros(n, np.int8)
    module.get_function("to_integers")((1,), (32,), (h.view(np.uint16), np.int32(n), ints, shorts, uints, longs,
                                                      ulongs, chars))
    x = h.astype(np.float64)

    def clamped(rounded, dtype, nan):
        info = np.iinfo(dtype)
        return [nan if np.isnan(r) else int(min(max(r, info.min), info.max)) for r in rounded]
    assert ints.reshape(4, n).tolist() == [clamped(f(x), np.int32, 0) for f in (np.rint, np.trunc, np.floor, np.ceil)]
    assert shorts.tolist() == clamped(np.rint(x), np.int16, 0)
    assert uints.tolist() == clamped(np.floor(x), np.uint32, 0)
    assert longs.tolist() == clamped(np.ceil(x), np.int64, -2**63)
    assert ulongs.tolist() == clamped(np.trunc(x), np.uint64, 2**63)
    assert chars.tolist() == clamped(np.trunc(x), np.int8, 0)


PAIR_FUNCTIONS = r"""
#include <cuda_fp16.h>
// for each pair i of halves (a, b): the comparisons of pairs as masks and as a bool, the ordered and
// the unordered not-equal, and the NaN-propagating, saturating and relu forms of lane x
extern "C" __global__ void pair_functions(const __half2* a, const __half2* b, int n, unsigned int* masks,
                                          int* flags, unsigned short* values)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    masks[4 * i] = __hgt2_mask(a[i], b[i]);
    masks[4 * i + 1] = __hequ2_mask(a[i], b[i]);
    masks[4 * i + 2] = __hle2_mask(a[i], b[i]);
    masks[4 * i + 3] = __hneu2_mask(a[i], b[i]);
    flags[3 * i] = __hbgt2(a[i], b[i]);
    flags[3 * i + 1] = __hne(a[i].x, b[i].x);
    flags[3 * i + 2] = a[i].x != b[i].x;  // CUDA's operator!= is the unordered one
    values[4 * i] = __half_as_ushort(__hmax_nan(a[i].x, b[i].x));
    values[4 * i + 1] = __half_as_ushort(__hadd_sat(a[i].x, b[i].x));
    values[4 * i + 2] = __half_as_ushort(__hfma_relu(a[i].x, b[i].x, b[i].y));
    values[4 * i + 3] = __half_as_ushort(__low2half(__hgt2(a[i], b[i])));
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_pair_comparisons_and_the_nan_saturating_and_relu_forms_follow_cudas_definitions(check):
    # __hgt2_mask, __hbgt2, __hmax_nan, __hadd_sat, __hfma_relu and about 60 more were build errors
    rng = np.random.default_rng(5)
    a = (rng.integers(-16, 17, 400) / 4).astype(np.float16)  # quarters: ties and equal lanes happen
    b = (rng.integers(-16, 17, 400) / 4).astype(np.float16)
    a[::7], b[::11] = np.nan, np.nan
    n = a.size // 2
    masks, flags, values = np.zeros(4 * n, np.uint32), np.zeros(3 * n, np.int32), np.zeros(4 * n, np.uint16)
    RawModule(code=PAIR_FUNCTIONS, check=check).get_function("pair_functions")(
        (1,), (256,), (a, b, np.int32(n), masks, flags, values))
    x, y = a.astype(np.float64).reshape(n, 2), b.astype(np.float64).reshape(n, 2)
    nan = np.isnan(x) | np.isnan(y)

    def mask(lanes):
        return np.where(lanes[:, 0], 0xFFFF, 0) | np.where(lanes[:, 1], 0xFFFF0000, 0)
    with np.errstate(invalid="ignore"):
        want = [mask(x > y), mask((x == y) | nan), mask(x <= y), mask((x != y) | nan)]
        np.testing.assert_array_equal(masks.reshape(n, 4).T, want)
        assert flags.reshape(n, 3).T.tolist() == [(x > y).all(axis=1).tolist(), ((x[:, 0] != y[:, 0]) & ~nan[:, 0]).tolist(),
                                                  ((x[:, 0] != y[:, 0]) | nan[:, 0]).tolist()]
        halves = values.reshape(n, 4).T
        largest = np.where(nan[:, 0], np.nan, np.maximum(x[:, 0], y[:, 0]))
        assert (halves[0][nan[:, 0]] == 0x7FFF).all()  # the canonical NaN
        same_numbers(halves[0], largest.astype(np.float16).view(np.uint16), half_widened)
        saturated = np.where(nan[:, 0], 0.0, np.clip(x[:, 0] + y[:, 0], 0.0, 1.0))
        same_numbers(halves[1], saturated.astype(np.float16).view(np.uint16), half_widened)
        product = x[:, 0] * y[:, 0] + y[:, 1]  # exact in float64 for quarters
        relu = np.where(np.isnan(product), np.nan, np.maximum(product, 0.0))
        same_numbers(halves[2], relu.astype(np.float16).view(np.uint16), half_widened)
        same_numbers(halves[3], (x[:, 0] > y[:, 0]).astype(np.float16).view(np.uint16), half_widened)
