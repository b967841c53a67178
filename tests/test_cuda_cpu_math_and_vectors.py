"""CUDA's vector types, math API functions, type casting intrinsics and cuComplex.h on the CPU
(nn_cuda/cuda_cpu/device_functions.h and include/cuComplex.h), each through RawModule against Python's
own references: every one of the 48 vector types has CUDA's size and alignment and its make_* sets its
fields; erfinv and erfcinv round-trip through math.erf and math.erfc (converted to an error of the
result: at most 1.13 ulp in double, of which the round trip's own rounding is most: the exact error,
measured by a decimal erf, is at most 0.50 ulp), normcdfinv matches statistics.NormalDist().inv_cdf
(3.0 ulp, Python's own error; 0.50 from the exact value), normcdf and erfcx an erfc summed in up to 400
decimal digits, rcbrt, sinpi, cospi and the norms NumPy's long double, cyl_bessel_i0 np.i0 and a power
series in 50 digits, cyl_bessel_i1 the series (each within 0.51 ulp in double and in float: they compute
in long double and round once); CUDA's special values; the conversions round and saturate exactly as
CUDA documents; cuComplex.h's operations match NumPy's complex64 and complex128."""

import math
import statistics
from decimal import Decimal, getcontext, localcontext
from fractions import Fraction

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build (about two seconds)

# ---- the vector types ---------------------------------------------------------------------------------

#: CUDA's vector_types.h on a 64-bit Linux host: each base type's element and the alignments of its
#: 1-, 2-, 3- and 4-component vectors (long is 64-bit there, so long2 and long4 are 16-aligned)
VECTOR_TYPES = {
    "char": (np.int8, (1, 2, 1, 4)),
    "uchar": (np.uint8, (1, 2, 1, 4)),
    "short": (np.int16, (2, 4, 2, 8)),
    "ushort": (np.uint16, (2, 4, 2, 8)),
    "int": (np.int32, (4, 8, 4, 16)),
    "uint": (np.uint32, (4, 8, 4, 16)),
    "long": (np.int64, (8, 16, 8, 16)),
    "ulong": (np.uint64, (8, 16, 8, 16)),
    "longlong": (np.int64, (8, 16, 8, 16)),
    "ulonglong": (np.uint64, (8, 16, 8, 16)),
    "float": (np.float32, (4, 8, 4, 16)),
    "double": (np.float64, (8, 16, 8, 16)),
}


def _field_values(index, dtype, count):
    """Distinct values of the fields of vector type number `index`: negative ones in a signed type,
    halves in a floating one."""
    values = []
    for k in range(count):
        value = index + 10 * k + 1
        if np.issubdtype(dtype, np.signedinteger) and k % 2 == 1:
            value = -value
        if np.issubdtype(dtype, np.floating):
            value = -(value + 0.5) if k % 2 == 1 else value + 0.5
        values.append(value)
    return values


def _vector_kernel():
    """A kernel that writes sizeof and alignof of each of the 48 types to `layout` and one make_T(...)
    of each, byte for byte, to `fields`, one after the other."""
    lines = ['extern "C" __global__ void vector_layouts(long long* layout, unsigned char* fields)', "{",
             "    size_t offset = 0;"]
    index = 0
    for base, (dtype, _) in VECTOR_TYPES.items():
        for count in (1, 2, 3, 4):
            name = f"{base}{count}"
            arguments = ", ".join(repr(v) for v in _field_values(index, dtype, count))
            lines += [f"    layout[{2 * index}] = sizeof({name}), layout[{2 * index + 1}] = alignof({name});",
                      f"    {{ const {name} v = make_{name}({arguments}); memcpy(fields + offset, &v, sizeof v); "
                      f"offset += sizeof v; }}"]
            index += 1
    return "\n".join(lines + ["}"]) + "\n"


def test_the_48_vector_types_have_cudas_sizes_and_alignments_and_make_sets_their_fields():
    layout = np.full(2 * 48, -1, np.int64)
    fields = np.full(4096, 0xAB, np.uint8)
    RawModule(code=_vector_kernel()).get_function("vector_layouts")((1,), (1,), (layout, fields))
    offset, index = 0, 0
    for base, (dtype, alignments) in VECTOR_TYPES.items():
        for count, alignment in zip((1, 2, 3, 4), alignments):
            size = count * np.dtype(dtype).itemsize  # no padding: each size is a multiple of its alignment
            assert layout[2 * index:2 * index + 2].tolist() == [size, alignment], f"{base}{count}"
            written = fields[offset:offset + size].view(dtype)
            assert written.tolist() == _field_values(index, dtype, count), f"make_{base}{count}"
            offset, index = offset + size, index + 1
    assert (fields[offset:] == 0xAB).all()


# ---- references --------------------------------------------------------------------------------------


def _decimal_pi():
    """pi in the current decimal precision, by Machin's formula 16 atan(1/5) - 4 atan(1/239)."""
    def arctan_of_inverse(m):
        x, total, k = Decimal(1) / m, Decimal(0), 0
        power, tiny = x, Decimal(10) ** -(getcontext().prec + 2)
        while power > tiny:
            total += (power if k % 2 == 0 else -power) / (2 * k + 1)
            power *= x * x
            k += 1
        return total
    return 16 * arctan_of_inverse(5) - 4 * arctan_of_inverse(239)


def _erf_decimal(x, digits=30):
    """erf(x) for a Decimal x to `digits` significant digits: 2/sqrt(pi) exp(-x^2) sum_n x (2x^2)^n / (2n+1)!!,
    whose terms are all positive (they grow up to n = x^2, then fall)."""
    with localcontext() as context:
        context.prec = digits + 10
        q, term, n = 2 * x * x, x, 0
        total = term
        while n <= q or abs(term) > abs(total) * Decimal(10) ** -context.prec:
            n += 1
            term = term * q / (2 * n + 1)
            total += term
        return 2 / _decimal_pi().sqrt() * (-x * x).exp() * total  # in these digits, not the caller's


def _erfc_decimal(x, digits=30):
    """erfc(x) for a Decimal x (|x| < 40) to `digits` significant digits: 1 - erf(x), erf in enough more
    digits for the 0.44 x^2 that the difference cancels (2 - erfc(-x) below 0)."""
    extra = 10 + int(0.45 * float(x) ** 2)
    with localcontext() as context:
        context.prec = digits + extra
        return 2 - _erfc_decimal(-x, digits) if x < 0 else 1 - _erf_decimal(x, digits + extra)


#: the error bound of a function that rounds once, at its end, from long double (x86's 64-bit
#: significand, arm64's 113-bit: Linux's; the functions' measured maximum is 0.50): half an ulp, and the
#: long double's own error, a thousandth of one, where the reference is exact
HALF_ULP = 0.51


def _ulps(got, exact, dtype=np.float64):
    """|got - exact| in units of the last place of `got`'s type at `exact` (Decimal or float)."""
    exact_float = dtype(float(exact))
    spacing = float(np.spacing(np.abs(exact_float))) if np.isfinite(exact_float) else float("inf")
    return float(abs(Decimal(float(got)) - Decimal(exact))) / spacing


# ---- the math API: one kernel for the functions of one argument, one for the norms -----------------------

MATH = r"""
// Row r (the order of UNARY below) of out: function r of x[r * n + i] in double; of fout and overload:
// of xf[r * n + i] by the float function (erfinvf) and by C++'s float overload (erfinv(float)).
#define UNARY(F) F(erfinv) F(erfcinv) F(erfcx) F(normcdf) F(normcdfinv) F(rcbrt) F(sinpi) F(cospi) \
                 F(cyl_bessel_i0) F(cyl_bessel_i1)
extern "C" __global__ void unary(const double* x, const float* xf, double* out, float* fout, float* overload, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int row = 0;
#define APPLY(function)                                                                               \
    static_assert(sizeof(function(1.0f)) == sizeof(float), #function " has a float overload");      \
    out[row * n + i] = function(x[row * n + i]);                                                     \
    fout[row * n + i] = function##f(xf[row * n + i]);                                                \
    overload[row * n + i] = function(xf[row * n + i]);                                               \
    ++row;
    UNARY(APPLY)
}

// The norms of p = x[4i .. 4i+3]: rhypot of two, norm3d and rnorm3d of three, norm4d, rnorm4d, norm
// and rnorm of four, norm of three; and sincospi(p[0]). In double (out) and float (fout, of xf).
extern "C" __global__ void norms(const double* x, const float* xf, double* out, float* fout, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const double* p = x + 4 * i;
    const float* q = xf + 4 * i;
    double* o = out + 10 * i;
    float* f = fout + 10 * i;
    o[0] = rhypot(p[0], p[1]), f[0] = rhypotf(q[0], q[1]);
    o[1] = norm3d(p[0], p[1], p[2]), f[1] = norm3df(q[0], q[1], q[2]);
    o[2] = rnorm3d(p[0], p[1], p[2]), f[2] = rnorm3df(q[0], q[1], q[2]);
    o[3] = norm4d(p[0], p[1], p[2], p[3]), f[3] = norm4df(q[0], q[1], q[2], q[3]);
    o[4] = rnorm4d(p[0], p[1], p[2], p[3]), f[4] = rnorm4df(q[0], q[1], q[2], q[3]);
    o[5] = norm(4, p), f[5] = normf(4, q);
    o[6] = rnorm(4, p), f[6] = rnormf(4, q);
    o[7] = norm(3, p), f[7] = normf(3, q);
    sincospi(p[0], &o[8], &o[9]);
    sincospif(q[0], &f[8], &f[9]);
}
"""

UNARY = ["erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "rcbrt", "sinpi", "cospi",
         "cyl_bessel_i0", "cyl_bessel_i1"]
N = 160  # inputs per function


@pytest.fixture(scope="module")
def math_module():
    module = RawModule(code=MATH, check=False)
    module.compile()
    return module


def _inputs():
    """N inputs of each function, in double and (others) in float: its edges and hard cases, then random
    values of its domain."""
    rng = np.random.default_rng(7)
    tails = 10.0 ** -np.linspace(1, 300, 40)
    chosen = {
        "erfinv": np.concatenate([[0.0, -0.0, 1e-300, -1e-10, 0.5, np.nextafter(0.5, 1), -np.nextafter(0.5, 0)],
                                  1 - 10.0 ** -np.linspace(1, 16, 25), -(1 - 10.0 ** -np.linspace(1, 15, 10))]),
        "erfcinv": np.concatenate([[1.0, 0.5, np.nextafter(0.5, 0), 1 + 1e-12, 2 - 1e-15, 1e-310, 5e-324], tails,
                                   2 - tails[:15]]),
        "erfcx": np.concatenate([[0.0, -26.5, 12.0, np.nextafter(12.0, 0), 1e5, 3e200], np.linspace(-26, 40, 60)]),
        "normcdf": np.concatenate([[0.0, -38.4, -37.5, 8.2], np.linspace(-38, 9, 60)]),
        "normcdfinv": np.concatenate([[0.5, np.nextafter(0.5, 1), 1e-300, 5e-324], tails,
                                      1 - 10.0 ** -np.linspace(1, 16, 16)]),
        "rcbrt": np.concatenate([[1.0, -8.0, 27.0, 1e-300, -1e300, 5e-324], rng.standard_normal(30) * 1e6]),
        "sinpi": np.concatenate([[0.5, 1.0, -1.0, 2.5, -3.5, 1e-300, 2.0**52 + 1, 1e15 + 0.5, -0.25, 1e300],
                                 rng.uniform(-10, 10, 30)]),
        "cyl_bessel_i0": np.concatenate([[0.0, 24.9, 25.0, 25.1, 100.0, 700.0, 710.0, 713.0, -713.0],
                                         np.linspace(-40, 40, 50)]),
    }
    chosen["cospi"] = chosen["sinpi"]
    chosen["cyl_bessel_i1"] = chosen["cyl_bessel_i0"]
    domains = {"erfinv": (-1, 1), "erfcinv": (0, 2), "erfcx": (-9, 30), "normcdf": (-13, 9), "normcdfinv": (0, 1),
               "rcbrt": (-1e3, 1e3), "sinpi": (-100, 100), "cospi": (-100, 100), "cyl_bessel_i0": (-50, 50),
               "cyl_bessel_i1": (-50, 50)}
    x, xf = {}, {}
    for name in UNARY:
        low, high = domains[name]
        x[name] = np.concatenate([chosen[name], rng.uniform(low, high, N)])[:N]
        xf[name] = rng.uniform(low, high, N).astype(np.float32)  # in float's range, as the float function's
    xf["erfcinv"][:20] = 10.0 ** -np.linspace(1, 37, 20)
    return x, xf


@pytest.fixture(scope="module")
def unary(math_module):
    """{function: (x, its double result, xf, its float result)}, the outputs NaN until written."""
    x, xf = _inputs()
    out = np.full((len(UNARY), N), np.nan)
    fout = np.full((len(UNARY), N), np.nan, np.float32)
    overload = np.full((len(UNARY), N), np.nan, np.float32)
    math_module.get_function("unary")((N // 32,), (32,), (np.stack([x[f] for f in UNARY]),
                                                         np.stack([xf[f] for f in UNARY]), out, fout, overload,
                                                         np.int32(N)))
    np.testing.assert_array_equal(fout, overload)  # C++'s float overload is the f-suffixed function
    return {name: (x[name], out[r], xf[name], fout[r]) for r, name in enumerate(UNARY)}


def _errors(got, exact, dtype=np.float64):
    """ulps of each of `got` from `exact` (Decimal or float; an exact zero or infinity must match)."""
    errors = []
    for g, e in zip(got, exact):
        if float(e) == 0 or not np.isfinite(dtype(float(e))):
            same = g == dtype(float(e)) or (np.isnan(g) and np.isnan(float(e)))
            errors.append(0.0 if same else np.inf)
        else:
            errors.append(_ulps(g, e, dtype))
    return np.array(errors)


def _inverse_error(name, y, x, dtype=np.float64):
    """How far x = erfinv(y) or erfcinv(y) is from the exact inverse, in ulps of x, by the Newton step
    of math.erf or math.erfc at x: (F(x) - target) / F'(x). Where |x| > 0.477 (erfc(|x|) < 1/2) it is
    erfc(|x|) against the complement of y, 1 - |y| or y or 2 - y, all exact, and erf(|x|) against
    |y| or |1 - y| below: the better conditioned one (erf(x) near 1 leaves nothing of x's last bits)."""
    if x == 0 or not np.isfinite(x):
        return 0.0
    t = abs(float(x))
    if name == "erfinv":
        complement, direct = 1 - abs(y), abs(y)
    else:
        complement, direct = (y if x > 0 else 2 - y), abs(1 - y)
    residual = math.erfc(t) - complement if t > 0.477 else direct - math.erf(t)
    step = residual / (2 / math.sqrt(math.pi) * math.exp(-t * t))  # the exact inverse is about t + step
    return abs(step) / float(np.spacing(dtype(t)))


def test_erfinv_and_erfcinv_round_trip_through_erf_and_erfc(unary):
    # Measured through the round trip: 0.97 ulp (erfinv) and 1.13 ulp (erfcinv) in double, 0.50 in
    # float. The exact errors (the same Newton step of a 100-digit decimal erf) are at most 0.50 ulp:
    # the rest is math.erf's own last bit over erf'(x), up to an ulp of x where y's ulp is twice x's
    # (erfcinv(1.26) = -0.237): 1.5 bounds both. Down to erfcinv(1e-300) = 26.2 by the round trip.
    for name in ("erfinv", "erfcinv"):
        y, x, yf, xf = unary[name]
        assert np.isfinite(x[np.abs(y) < 1 if name == "erfinv" else (y > 0) & (y < 2)]).all()
        normal = y > 1e-300 if name == "erfcinv" else np.ones(N, bool)  # erfc(x) a normal number
        errors = [_inverse_error(name, a, b) for a, b in zip(y[normal], x[normal])]
        assert max(errors) < 1.5, (name, max(errors))
        float_errors = [_inverse_error(name, float(a), float(b), np.float32) for a, b in zip(yf, xf)]
        assert max(float_errors) < HALF_ULP, (name, max(float_errors))
    # the subnormal tail, against a decimal erfc (as above, the Newton step in 100 digits)
    y, x, _, _ = unary["erfcinv"]
    for a, b in zip(y[y <= 1e-300], x[y <= 1e-300]):
        with localcontext() as context:
            context.prec = 100
            t = Decimal(float(b))
            exact = t + (_erfc_decimal(t) - Decimal(float(a))) / (2 / _decimal_pi().sqrt() * (-t * t).exp())
        assert _ulps(b, exact) < HALF_ULP, (a, b)  # 1e-310 and 5e-324 (x = 27.2), subnormal


def test_normcdfinv_matches_statistics_normal_dist(unary):
    # Measured: 3.0 ulp from NormalDist().inv_cdf (Wichura's AS241, itself within a few 1e-16), and
    # 0.50 ulp from the exact value (a Newton step of a decimal erfc); down to p = 1e-300 and 5e-324.
    p, x, pf, xf = unary["normcdfinv"]
    inside = (p > 0) & (p < 1)
    reference = np.array([statistics.NormalDist().inv_cdf(float(v)) for v in p[inside]])
    assert _errors(x[inside], reference).max() <= 4
    reference = np.array([statistics.NormalDist().inv_cdf(float(v)) for v in pf])
    assert _errors(xf, reference, np.float32).max() < HALF_ULP


def test_normcdf_and_erfcx_match_a_decimal_erfc(unary):
    # NormalDist().cdf computes 0.5 (1 + erf(x / sqrt(2))), which cancels below 0 (its cdf(-10) is 0.0):
    # it serves above 0; the reference everywhere is an erfc summed in up to 400 decimal digits.
    # Measured: 0.50 ulp, normcdf down to x = -38.4 (6.4e-323: -x / sqrt(2) is put back to twice
    # double's precision, or the tail loses 700 ulps), erfcx up to 3e200 (its asymptotic series above 12).
    def exact_normcdf(v):
        with localcontext() as context:
            context.prec = 60
            return _erfc_decimal(-Decimal(float(v)) / Decimal(2).sqrt()) / 2

    def exact_erfcx(v):
        with localcontext() as context:
            context.prec = 60
            t = Decimal(float(v))
            if v > 35:  # erfc's asymptotic series, to 1e-40
                q, term, total, k = 1 / (2 * t * t), Decimal(1), Decimal(1), 0
                while abs(term) > Decimal(10) ** -40:
                    k += 1
                    term *= -(2 * k - 1) * q
                    total += term
                return total / (t * _decimal_pi().sqrt())
            context.prec = 60 + int(0.45 * v * v)
            return (t * t).exp() * _erfc_decimal(t)

    for name, exact in (("normcdf", exact_normcdf), ("erfcx", exact_erfcx)):
        x, got, xf, gotf = unary[name]
        assert _errors(got, [exact(v) for v in x]).max() < HALF_ULP, name
        assert _errors(gotf, [exact(v) for v in xf], np.float32).max() < HALF_ULP, name
    x, got, xf, gotf = unary["normcdf"]
    above = x >= 0
    reference = np.array([statistics.NormalDist().cdf(v) for v in x[above]])
    assert _errors(got[above], reference).max() <= 1  # the reference's own rounding: 1 + erf, halved


PI = np.longdouble("3.14159265358979323846264338327950288")


def _bessel_series(v, nu):
    """I0 or I1 of v: sum_k (v/2)^(2k+nu) / (k! (k+nu)!) in 50 decimal digits (all terms positive)."""
    with localcontext() as context:
        context.prec = 50
        half = Decimal(abs(float(v))) / 2
        term = half if nu else Decimal(1)
        total, k = term, 0
        while k * k <= half * half or term > total * Decimal(10) ** -45:
            k += 1
            term = term * half * half / (k * (k + nu))
            total += term
        return -total if nu and v < 0 else total


def _sin_or_cos_pi(v, cosine):
    """sin(pi v) or cos(pi v) in long double, after the exact reduction fmod(v, 2); exact at halves."""
    if not np.isfinite(v):
        return np.nan
    if (2 * v).is_integer():
        return [[0, 1, 0, -1], [1, 0, -1, 0]][cosine][int(math.fmod(2 * v, 4)) % 4]
    angle = PI * np.longdouble(math.fmod(v, 2.0))
    return Decimal(str(np.cos(angle) if cosine else np.sin(angle)))


def test_rcbrt_sinpi_cospi_and_the_bessel_functions_match_their_references(unary):
    # Long double references for rcbrt, sinpi and cospi; the power series in 50 decimal digits for I0
    # and I1, and np.i0 (Cephes' Chebyshev fits, within 2e-15). Measured: 0.50 ulp each, in double and
    # float, up to I0(713) = 6.7e307 (sinpi and cospi of 1e15 + 0.5 and 2^52 + 1 exact).
    references = {
        "rcbrt": lambda v: Decimal(str(1 / np.cbrt(np.longdouble(float(v))))),
        "sinpi": lambda v: _sin_or_cos_pi(float(v), False),
        "cospi": lambda v: _sin_or_cos_pi(float(v), True),
        "cyl_bessel_i0": lambda v: _bessel_series(v, 0),
        "cyl_bessel_i1": lambda v: _bessel_series(v, 1),
    }
    for name, reference in references.items():
        x, got, xf, gotf = unary[name]
        finite = np.isfinite(x)
        assert _errors(got[finite], [reference(v) for v in x[finite]]).max() < HALF_ULP, name
        assert _errors(gotf, [reference(v) for v in xf], np.float32).max() < HALF_ULP, name
    x, got, _, _ = unary["cyl_bessel_i0"]
    moderate = np.abs(x) < 700
    np.testing.assert_allclose(got[moderate], np.i0(x[moderate]), rtol=2e-15)  # np.i0: Cephes' Chebyshev fits


def test_the_norms_match_long_double(math_module):
    # sqrt of the sum of squares in long double, where no square overflows: measured 0.50 ulp in double
    # and float, also with 1e200 and 1e-200, whose squares double cannot hold.
    rng = np.random.default_rng(11)
    n = 64
    x = rng.standard_normal((n, 4)) * 10.0 ** rng.integers(-3, 4, (n, 4))
    x[:4] = [[1e200, 2e200, -3e200, 1e199], [1e-200, -2e-200, 3e-200, 0.0], [3.0, 4.0, 12.0, 84.0],
             [0.0, 0.0, 0.0, 0.0]]
    xf = np.concatenate([[[1e30, 2e30, -3e30, 1e29], [1e-30, -2e-30, 3e-30, 0.0]],  # squares beyond float's
                         x[2:]]).astype(np.float32)
    out = np.full((n, 10), np.nan)
    fout = np.full((n, 10), np.nan, np.float32)
    math_module.get_function("norms")((n // 32,), (32,), (x, xf, out, fout, np.int32(n)))
    for values, got, dtype in ((x, out, np.float64), (xf, fout, np.float32)):
        v = values.astype(np.longdouble)
        with np.errstate(divide="ignore"):  # the zeros' reciprocals: +inf
            length = [np.hypot(v[:, 0], v[:, 1]), np.sqrt((v[:, :3] ** 2).sum(1)), np.sqrt((v ** 2).sum(1))]
            expected = [1 / length[0], length[1], 1 / length[1], length[2], 1 / length[2], length[2],
                        1 / length[2], length[1]]
        for column, reference in enumerate(expected):
            errors = _errors(got[:, column], [Decimal(str(r)) if np.isfinite(r) else float(r) for r in reference],
                             dtype)
            assert errors.max() < HALF_ULP, column
        assert got[3, :8].tolist() == [np.inf, 0, np.inf, 0, np.inf, 0, np.inf, 0]  # all zeros
        # sincospi: sinpi and cospi at once
        for column, cosine in ((8, False), (9, True)):
            reference = [_sin_or_cos_pi(float(a), cosine) for a in values[:, 0]]
            assert _errors(got[:, column], reference, dtype).max() < HALF_ULP


#: CUDA's special values of each function (its Math API documentation), as (expression, result):
#: `inf` and `nan` are variables of the kernel
SPECIAL_VALUES = [
    ("erfinv(0.0)", 0.0), ("erfinv(-0.0)", -0.0), ("erfinv(1.0)", np.inf), ("erfinv(-1.0)", -np.inf),
    ("erfinv(1.5)", np.nan), ("erfinv(nan)", np.nan), ("erfinvf(-1.0f)", -np.inf),
    ("erfcinv(0.0)", np.inf), ("erfcinv(2.0)", -np.inf), ("erfcinv(1.0)", 0.0), ("erfcinv(-0.5)", np.nan),
    ("erfcinv(2.5)", np.nan), ("erfcinvf(0.0f)", np.inf),
    ("erfcx(-inf)", np.inf), ("erfcx(inf)", 0.0), ("erfcx(-27.0)", np.inf), ("erfcx(nan)", np.nan),
    ("erfcx(0.0)", 1.0),
    ("normcdf(inf)", 1.0), ("normcdf(-inf)", 0.0), ("normcdf(nan)", np.nan), ("normcdf(0.0)", 0.5),
    ("normcdfinv(0.0)", -np.inf), ("normcdfinv(1.0)", np.inf), ("normcdfinv(0.5)", 0.0), ("normcdfinv(-0.1)", np.nan),
    ("normcdfinv(1.1)", np.nan), ("normcdfinvf(1.0f)", np.inf),
    ("rcbrt(0.0)", np.inf), ("rcbrt(-0.0)", -np.inf), ("rcbrt(inf)", 0.0), ("rcbrt(-inf)", -0.0), ("rcbrt(-8.0)", -0.5),
    ("sinpi(0.0)", 0.0), ("sinpi(-0.0)", -0.0), ("sinpi(1.0)", 0.0), ("sinpi(-1.0)", -0.0), ("sinpi(-2.0)", -0.0),
    ("sinpi(0.5)", 1.0), ("sinpi(-1.5)", 1.0), ("sinpi(inf)", np.nan), ("sinpi(nan)", np.nan), ("sinpif(3.0f)", 0.0),
    ("cospi(0.0)", 1.0), ("cospi(-0.0)", 1.0), ("cospi(0.5)", 0.0), ("cospi(-1.5)", 0.0), ("cospi(1.0)", -1.0),
    ("cospi(-inf)", np.nan), ("cospif(2.5f)", 0.0),
    ("cyl_bessel_i0(0.0)", 1.0), ("cyl_bessel_i0(-inf)", np.inf), ("cyl_bessel_i0(714.0)", np.inf),
    ("cyl_bessel_i1(-0.0)", -0.0), ("cyl_bessel_i1(-inf)", -np.inf), ("cyl_bessel_i1(nan)", np.nan),
    ("rhypot(inf, nan)", 0.0), ("rhypot(0.0, -0.0)", np.inf), ("rhypot(3.0, 4.0)", 0.2),
    ("norm3d(nan, inf, 1.0)", np.inf), ("norm3d(nan, 1.0, 2.0)", np.nan), ("rnorm3d(1.0, -inf, nan)", 0.0),
    ("norm4d(1e300, 1e300, 1e300, 1e300)", 2e300), ("rnorm4d(0.0, 0.0, 0.0, 0.0)", np.inf),
    ("__frsqrt_rn(0.0f)", np.inf), ("__frsqrt_rn(-0.0f)", -np.inf), ("__frsqrt_rn(inf)", 0.0),
    ("__frsqrt_rn(-1.0f)", np.nan), ("__frsqrt_rn(4.0f)", 0.5),
]


def test_special_values_are_cudas():
    body = "\n".join(f"    out[{k}] = {expression};" for k, (expression, _) in enumerate(SPECIAL_VALUES))
    code = ('extern "C" __global__ void special(const double* x, double* out)\n{\n'
            "    const double inf = x[0], nan = x[1];\n" + body + "\n}\n")
    out = np.full(len(SPECIAL_VALUES), 12345.0)
    RawModule(code=code).get_function("special")((1,), (1,), (np.array([np.inf, np.nan]), out))
    for (expression, expected), got in zip(SPECIAL_VALUES, out):
        if np.isnan(expected):
            assert np.isnan(got), expression
        else:  # the value and the sign of a zero
            assert got == expected and np.signbit(got) == np.signbit(expected), (expression, got)


def test_a_norm_of_no_coordinates_reads_its_first_one_as_a_gpus_does():
    # CUDA's norm(0, nullptr) ended in "unspecified launch failure" on an H200 (CuPy 14.2), where the
    # runner returned 0 without reading (the other 69 special values above gave the same values there)
    code = ('extern "C" __global__ void empty_norm(double* out)\n'
            '{\n    out[0] = norm(0, static_cast<const double*>(nullptr));\n}\n')
    with pytest.raises(KernelError, match=r"empty_norm: an invalid memory access in thread \(0, 0, 0\)"):
        RawModule(code=code).get_function("empty_norm")((1,), (1,), (np.zeros(1),))


@pytest.mark.parametrize("call", ["erfinv(1)", "sinpi(2)", "cyl_bessel_i0(3)", "rsqrt(4)"])
def test_an_integer_argument_is_ambiguous_as_under_nvrtc(call):
    # CUDA declares these in double and float (C++ overloads): NVRTC 12.9 refuses erfinv(1), sinpi(2),
    # cyl_bessel_i0(3) and rsqrt(4) ("more than one instance of overloaded function"), and so does the runner
    code = f'extern "C" __global__ void k(double* out) {{ out[0] = {call}; }}\n'
    with pytest.raises(KernelBuildError, match=r"call of overloaded .\w+\(int\). is ambiguous"):
        RawModule(code=code).get_function("k")


# ---- the type casting intrinsics ------------------------------------------------------------------------

CONVERSIONS = r"""
// Row r of out, for source s = r / 16 (float x, then double y), target t = r / 4 % 4 (int, unsigned,
// long long, unsigned long long) and mode r % 4 (rn, rz, rd, ru); an unsigned long long's bits as a long long.
#define MODES(name, v, row)                                                                        \
    out[(row + 0) * n + i] = static_cast<long long>(__##name##_rn(v));                             \
    out[(row + 1) * n + i] = static_cast<long long>(__##name##_rz(v));                             \
    out[(row + 2) * n + i] = static_cast<long long>(__##name##_rd(v));                             \
    out[(row + 3) * n + i] = static_cast<long long>(__##name##_ru(v));
extern "C" __global__ void to_integers(const float* x, const double* y, long long* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        MODES(float2int, x[i], 0) MODES(float2uint, x[i], 4) MODES(float2ll, x[i], 8) MODES(float2ull, x[i], 12)
        MODES(double2int, y[i], 16) MODES(double2uint, y[i], 20) MODES(double2ll, y[i], 24)
        MODES(double2ull, y[i], 28)
    }
}

// Rows of f: int, unsigned, long long and unsigned long long to float, double to float; of d: long
// long and unsigned long long to double; each in the four modes; then int and unsigned to double.
#define TO(out, name, v, row)                                                                      \
    out[(row + 0) * n + i] = __##name##_rn(v); out[(row + 1) * n + i] = __##name##_rz(v);          \
    out[(row + 2) * n + i] = __##name##_rd(v); out[(row + 3) * n + i] = __##name##_ru(v);
extern "C" __global__ void to_floats(const long long* a, const unsigned long long* b, const double* y, float* f,
                                     double* d, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        TO(f, int2float, static_cast<int>(a[i]), 0) TO(f, uint2float, static_cast<unsigned>(b[i]), 4)
        TO(f, ll2float, a[i], 8) TO(f, ull2float, b[i], 12) TO(f, double2float, y[i], 16)
        TO(d, ll2double, a[i], 0) TO(d, ull2double, b[i], 4)
        d[8 * n + i] = __int2double_rn(static_cast<int>(a[i]));
        d[9 * n + i] = __uint2double_rn(static_cast<unsigned>(b[i]));
    }
}

// 1 / sqrt(x) rounded once; a double's halves and back.
extern "C" __global__ void halves_and_rsqrt(const float* x, float* r, const double* y, int* hi, int* lo, double* back,
                                            int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        r[i] = __frsqrt_rn(x[i]);
        hi[i] = __double2hiint(y[i]), lo[i] = __double2loint(y[i]);
        back[i] = __hiloint2double(hi[i], lo[i]);
    }
}
"""

#: Python's own rounding of an exact value to an integer, by mode
TO_INTEGER = {"rn": round, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}
INTEGER_TYPES = [(np.int32, 32, True), (np.uint32, 32, False), (np.int64, 64, True), (np.uint64, 64, False)]


def _expected_integer(value, mode, bits, signed, from_double):
    """CUDA's conversion: rounded (round() is half to even), then clamped to the type's range; NaN is 0,
    or 1 << (bits - 1) from a double or into 64 bits (the PTX ISA's cvt, "Integer Notes")."""
    if math.isnan(value):
        return (-1 if signed else 1) << (bits - 1) if from_double or bits == 64 else 0
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isinf(value):
        return high if value > 0 else low
    return min(max(TO_INTEGER[mode](value), low), high)


def test_float_and_double_to_integer_conversions_round_and_saturate():
    values = [2.5, 3.5, -2.5, -3.5, 0.5, -0.5, 1.5, 2.7, -2.7, 0.0, -0.0, -1.0, 1e10, -1e10, 3e9, np.inf, -np.inf,
              np.nan, 2147483520.0, 2.0**31, -2.0**31, 4294967040.0, 2.0**32, 1e19, 2e19, -1e19, 2.0**63, 1.25e-40]
    x = np.array(values, np.float32)
    y = np.array([2.5, -3.5, 0.5, -0.5, 2.7, -2.7, -0.0, -1.0, 2147483647.4, 2147483647.5, -2147483648.5,
                  -2147483648.6, 4294967295.5, 4294967294.5, 2.0**53 + 2, 9.3e18, -9.3e18, 1.9e19, np.inf,
                  -np.inf, np.nan, 1e-300, -1e-300, 1e300, 123456789.5, -7.5, 1.5, 1e10], np.float64)
    n = len(x)
    assert len(y) == n
    out = np.full(32 * n, -77, np.int64)
    RawModule(code=CONVERSIONS).get_function("to_integers")((1,), (32,), (x, y, out, np.int32(n)))
    rows = out.reshape(32, n)
    for source, inputs in enumerate((x, y)):
        for target, (dtype, bits, signed) in enumerate(INTEGER_TYPES):
            for m, mode in enumerate(("rn", "rz", "rd", "ru")):
                got = rows[16 * source + 4 * target + m].view(np.uint64 if dtype == np.uint64 else np.int64).tolist()
                expected = [_expected_integer(float(v), mode, bits, signed, source == 1) for v in inputs]
                assert got == expected, (["float", "double"][source], dtype.__name__, mode)


def _rounded(value, dtype, mode):
    """The exact value (a Fraction) rounded to float32 or float64 in the mode: its two neighbours of the
    type (the largest finite one and 2^maxexp, infinity, above the range), then the mode's choice; a tie
    to nearest goes to the even significand."""
    if value == 0:
        return dtype(0)
    info = np.finfo(dtype)
    magnitude, negative = abs(value), value < 0
    if magnitude > Fraction(float(info.max)):
        low, high = dtype(info.max), dtype(np.inf)
        high_value = Fraction(2) ** int(info.maxexp)
    else:
        low = dtype(float(magnitude))  # near it: then step to the neighbour below or at it
        while Fraction(float(low)) > magnitude:
            low = np.nextafter(low, dtype(0))
        while Fraction(float(np.nextafter(low, dtype(np.inf)))) <= magnitude:
            low = np.nextafter(low, dtype(np.inf))
        high = low if Fraction(float(low)) == magnitude else np.nextafter(low, dtype(np.inf))
        high_value = Fraction(float(high))
    below, above = magnitude - Fraction(float(low)), high_value - magnitude
    away = {"rz": False, "ru": not negative, "rd": negative,
            "rn": above < below or (above == below and int(np.array(low).view(f"u{low.itemsize}")) & 1 == 1)}[mode]
    result = high if away else low
    return -result if negative else result


def test_integer_and_double_to_float_conversions_round_as_named():
    # 2^24 + 1 lies halfway between two floats (to nearest: the even 2^24), and so on up the types
    a = np.array([0, 1, -1, 16777217, -16777217, 16777219, 2**31 - 1, -2**31, 2**53 + 1, -(2**53 + 1),
                  2**62 + 2**39, -(2**62 + 2**39 + 1), 2**63 - 1, -2**63, 123456789, -987654321], np.int64)
    b = np.array([0, 1, 2**32 - 1, 16777217, 2**31 + 1, 4294967295, 2**53 + 1, 2**63 + 1, 2**64 - 1, 2**64 - 2**39,
                  2**64 - 2**40 - 1, 12345, 2**40 + 1, 2**24 + 3, 7, 2**63], np.uint64)
    y = np.array([1 + 2.0**-24, 1 + 2.0**-24 + 2.0**-40, -(1 + 2.0**-24), 1 + 3 * 2.0**-24, 1e300, -1e300, 1e-50,
                  -1e-50, 3.4028235677973366e38, 3.4028235e38, np.inf, -np.inf, np.nan, 0.1, -0.0, 1.5e-45], np.float64)
    n = len(a)
    f = np.full(20 * n, np.nan, np.float32)
    d = np.full(10 * n, np.nan)
    RawModule(code=CONVERSIONS).get_function("to_floats")((1,), (32,), (a, b, y, f, d, np.int32(n)))
    f, d = f.reshape(20, n), d.reshape(10, n)
    sources = [(a.astype(np.int32), f, 0, np.float32), (b.astype(np.uint32), f, 4, np.float32), (a, f, 8, np.float32),
               (b, f, 12, np.float32), (y, f, 16, np.float32), (a, d, 0, np.float64), (b, d, 4, np.float64)]
    for values, out, row, dtype in sources:
        for m, mode in enumerate(("rn", "rz", "rd", "ru")):
            for value, got in zip(values.tolist(), out[row + m]):
                if isinstance(value, float) and not math.isfinite(value):
                    assert got == value or (math.isnan(value) and np.isnan(got)), (row, mode, value)
                    continue
                expected = _rounded(Fraction(value), dtype, mode) if value != 0 else dtype(value)  # -0.0 too
                assert got == expected and np.signbit(got) == np.signbit(expected), (row, mode, value, got, expected)
    assert d[8].tolist() == a.astype(np.int32).astype(float).tolist()
    assert d[9].tolist() == b.astype(np.uint32).astype(float).tolist()


SPLIT_DOUBLES = r"""
// OpenMM's mixed precision (integrateVerletPart2): a position in doubles, and its float rounding error
// kept in a float4 beside the float4 the forces are computed from
extern "C" __global__ void split(const double4* positions, float4* high, float4* low)
{
    const double4 p = positions[threadIdx.x];
    low[threadIdx.x] = make_float4(p.x - (float) p.x, p.y - (float) p.y, p.z - (float) p.z, 0.0f);
    high[threadIdx.x] = make_float4((float) p.x, (float) p.y, (float) p.z, (float) p.w);
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_doubles_float_rounding_error_is_kept(check):
    # GCC 12.2's SLP vectorizer folded p.x - (float) p.x of neighbouring fields to 0 until 2026-11-28, so
    # that OpenMM's mixed-precision integrators lost the low half of every position (2e-8 of it)
    positions = np.random.default_rng(5).uniform(-3, 3, (8, 4))
    high, low = np.full((8, 4), np.nan, np.float32), np.full((8, 4), np.nan, np.float32)
    RawModule(code=SPLIT_DOUBLES, check=check).get_function("split")((1,), (8,), (positions, high, low))
    np.testing.assert_array_equal(high, positions.astype(np.float32))
    errors = (positions - positions.astype(np.float32)).astype(np.float32)
    errors[:, 3] = 0
    np.testing.assert_array_equal(low, errors)
    assert np.all(low[:, :3] != 0)
    sums = high[:, :3].astype(np.float64) + low[:, :3].astype(np.float64)
    assert np.max(np.abs(sums - positions[:, :3])) <= 1e-14 * 3  # the two floats hold 48 bits of each


def test_frsqrt_rn_is_rounded_once_and_a_doubles_halves_go_back_together():
    rng = np.random.default_rng(13)
    x = np.concatenate([[1.0, 2.0, 4.0, 0.25, 1e-45, 3.4e38, 1.5e-38], rng.uniform(0, 1, 100) * 10.0 **
                        rng.integers(-40, 39, 100)]).astype(np.float32)
    x = x[x > 0][:96]
    n = len(x)
    y = np.concatenate([[1.0, -0.0, np.inf, np.nan, 2.0**-1074, -1e300], rng.standard_normal(n - 6)])
    r, back = np.full(n, np.nan, np.float32), np.full(n, np.nan)
    hi, lo = np.full(n, 7, np.int32), np.full(n, 7, np.int32)
    RawModule(code=CONVERSIONS).get_function("halves_and_rsqrt")((3,), (32,), (x, r, y, hi, lo, back, np.int32(n)))
    for value, got in zip(x.tolist(), r.tolist()):
        # correctly rounded: the exact 1/sqrt(x) lies between the midpoints of got and its two neighbours
        # (1/sqrt(x) < m exactly when m^2 x > 1)
        below, above = (Fraction(float(np.nextafter(np.float32(got), np.float32(t)))) for t in (0, np.inf))
        middle_low, middle_high = (below + Fraction(got)) / 2, (Fraction(got) + above) / 2
        assert middle_high ** 2 * Fraction(value) > 1 > middle_low ** 2 * Fraction(value), value
    bits = y.view(np.uint64)
    assert hi.tolist() == (bits >> np.uint64(32)).astype(np.uint32).view(np.int32).tolist()
    assert lo.tolist() == (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).tolist()
    assert back.view(np.uint64).tolist() == bits.tolist()


# ---- cuComplex.h ----------------------------------------------------------------------------------------

COMPLEX = r"""
#include <cuComplex.h>

// Rows of out: a + b, a - b, a * b, a / b, conj(a), a * b + c, (real a, imaginary b), a + scalar, in the
// precision of C (its function names end in f for float); abs_out: |a|; other: a in the other precision.
#define COMPLEX_KERNEL(kernel, C, R, f, MAKE, TO_OTHER, Other)                                     \
    extern "C" __global__ void kernel(const C* a, const C* b, const C* c, C scalar, C* out, R* abs_out, \
                                      Other* other, int n)                                         \
    {                                                                                              \
        const int i = blockIdx.x * blockDim.x + threadIdx.x;                                       \
        if (i < n) {                                                                               \
            out[0 * n + i] = cuCadd##f(a[i], b[i]);                                                \
            out[1 * n + i] = cuCsub##f(a[i], b[i]);                                                \
            out[2 * n + i] = cuCmul##f(a[i], b[i]);                                                \
            out[3 * n + i] = cuCdiv##f(a[i], b[i]);                                                \
            out[4 * n + i] = cuConj##f(a[i]);                                                      \
            out[5 * n + i] = cuCfma##f(a[i], b[i], c[i]);                                          \
            out[6 * n + i] = MAKE(cuCreal##f(a[i]), cuCimag##f(b[i]));                             \
            out[7 * n + i] = cuCadd##f(a[i], scalar);                                              \
            abs_out[i] = cuCabs##f(a[i]);                                                          \
            other[i] = TO_OTHER(a[i]);                                                             \
        }                                                                                          \
    }
COMPLEX_KERNEL(complex_float, cuComplex, float, f, make_cuComplex, cuComplexFloatToDouble, cuDoubleComplex)
COMPLEX_KERNEL(complex_double, cuDoubleComplex, double, , make_cuDoubleComplex, cuComplexDoubleToFloat,
               cuFloatComplex)

// make_cuFloatComplex is make_cuComplex; the types are CUDA's vectors.
static_assert(sizeof(cuFloatComplex) == 8 && alignof(cuFloatComplex) == 8, "float2");
static_assert(sizeof(cuDoubleComplex) == 16 && alignof(cuDoubleComplex) == 16, "double2");
extern "C" __global__ void make(cuFloatComplex* out) { out[0] = make_cuFloatComplex(1.8, 2.9); }
"""


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_cucomplex_matches_numpy(dtype):
    # Sums, differences, conjugates, parts and conversions are NumPy's bit for bit. The product, quotient
    # and fused multiply-add against long double references, normwise (|error| / |result|): measured 0.63,
    # 1.75 and 0.71 eps in float, 0.77, 1.61 and 0.70 in double (the quotient scaled by 1 / (|c| + |d|),
    # as CUDA's, also for operands near the ends of the range, where an unscaled |c|^2 + |d|^2 would
    # overflow or underflow); 1.9 eps from NumPy's own quotient (Smith's method); |a| 0.42 eps.
    rng = np.random.default_rng(17)
    n = 64
    a, b, c = ((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype) for _ in range(3))
    big = 1e30 if dtype == np.complex64 else 1e300
    a[:3], b[:3] = [big + 2j * big, 1 / big + 1j / big, 3 - 4j], [big - 1j * big, 2 / big - 1j / big, 0.5 + 0j]
    scalar = dtype(0.25 - 1.5j)
    real = np.float32 if dtype == np.complex64 else np.float64
    other = np.complex128 if dtype == np.complex64 else np.complex64
    out = np.full(8 * n, np.nan, dtype)
    abs_out = np.full(n, np.nan, real)
    converted = np.full(n, np.nan, other)
    module = RawModule(code=COMPLEX)
    kernel = module.get_function("complex_float" if dtype == np.complex64 else "complex_double")
    kernel((2,), (32,), (a, b, c, scalar, out, abs_out, converted, np.int32(n)))
    out = out.reshape(8, n)
    np.testing.assert_array_equal(out[0], a + b)
    np.testing.assert_array_equal(out[1], a - b)
    np.testing.assert_array_equal(out[4], np.conj(a))
    np.testing.assert_array_equal(out[6], a.real + 1j * b.imag)
    np.testing.assert_array_equal(out[7], a + scalar)
    with np.errstate(over="ignore"):  # 1e300 is +inf in float, as in C
        np.testing.assert_array_equal(converted, a.astype(other))
    eps = np.finfo(real).eps
    wide = np.clongdouble  # the references in long double: exact enough for float and double
    # the product and the fused multiply-add of the first two pairs overflow and underflow: left out
    for row, reference, part in ((2, a.astype(wide) * b, slice(2, None)), (3, a.astype(wide) / b, slice(None)),
                                 (5, a.astype(wide) * b + c, slice(2, None))):
        error = np.abs(out[row][part] - reference[part]) / np.abs(reference[part])
        assert error.max() < 4 * eps, (row, error.max() / eps)
    np.testing.assert_allclose(abs_out, np.abs(a.astype(wide)).astype(real), rtol=eps, atol=0)
    np.testing.assert_allclose(out[3], a / b, rtol=4 * eps, atol=0)  # NumPy's own division
    made = np.full(1, np.nan, np.complex64)
    module.get_function("make")((1,), (1,), (made,))
    assert made[0] == np.complex64(1.8 + 2.9j)


LATER_NAMES = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Names of CUDA's that stopped the build (HeCBench's): the Math API's fdividef, the profiler's
// __prof_trigger, and CUDA 12.8's tanh approximations of the 16-bit floats, alone and in pairs.
extern "C" __global__ void later_names(const float* x, const float* y, float* quotients, __half* halves,
                                       __nv_bfloat16* bfloats, int n)
{
    const int i = threadIdx.x;
    __prof_trigger(0);
    if (i < n) {
        quotients[i] = fdividef(x[i], y[i]);
        halves[i] = htanh_approx(__float2half(x[i]));
        bfloats[i] = htanh_approx(__float2bfloat16(x[i]));
    }
    if (i < n / 2) {
        const __half2 pair = h2tanh_approx(__floats2half2_rn(x[2 * i], x[2 * i + 1]));
        halves[n + 2 * i] = pair.x;
        halves[n + 2 * i + 1] = pair.y;
    }
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_fdividef_prof_trigger_and_the_tanh_approximations_of_16_bit_floats(check):
    n = 64
    x = np.linspace(-3, 3, n).astype(np.float32)
    y = np.linspace(0.5, 4, n).astype(np.float32)
    quotients, halves = np.full(n, np.nan, np.float32), np.full(2 * n, np.nan, np.float16)
    bfloats = np.zeros(n, np.uint16)
    RawModule(code=LATER_NAMES, check=check).get_function("later_names")(
        (1,), (n,), (x, y, quotients, halves, bfloats, np.int32(n)))
    np.testing.assert_array_equal(quotients, x / y)  # correctly rounded here; a GPU's is within 2 ulp
    want = np.tanh(x.astype(np.float16).astype(np.float64))
    # tanh rounded to 11 (half) and 8 (bfloat16) significant bits; a GPU's approximation may differ by one
    np.testing.assert_allclose(halves.astype(np.float64), np.concatenate([want, want]), rtol=2.0 ** -10, atol=0)
    bfloat16 = (bfloats.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    np.testing.assert_allclose(bfloat16, np.tanh(x.astype(np.float64)), rtol=2.0 ** -7, atol=1e-30)


def test_math_constants_h_has_cudas_constants_bit_for_bit_and_no_others():
    # the runner's header had 31 of CUDA's 95 (kaolin's spc_math.h uses CUDART_NORM_HUGE_F), CUDART_SQRT_2PI
    # one bit below CUDA's, and four names of its own that NVRTC calls undefined
    code = r"""
#include <math_constants.h>
extern "C" __global__ void constants(float* f, double* d, int* counts)
{
    const float floats[] = {CUDART_NORM_HUGE_F, CUDART_SQRT_TWO_F, CUDART_TWO_TO_23_F, CUDART_LNPI_F, CUDART_LG2_F,
                            CUDART_MIN_DENORM_F, CUDART_NAN_F, CUDART_3PIO4_F};
    const double doubles[] = {CUDART_LNPI, CUDART_TWO_TO_M1022, CUDART_PI_LO, CUDART_SQRT_2PI, CUDART_NAN,
                              CUDART_LN2_X_1024, CUDART_TWOTHIRD, CUDART_DBL2INT_CVT};
    for (int i = 0; i < 8; ++i) {
        f[i] = floats[i];
        d[i] = doubles[i];
    }
    counts[0] = CUDART_REMQUO_MASK_F;
#if defined(CUDART_2PI) || defined(CUDART_SQRT_PI) || defined(CUDART_SQRT_2_F) || defined(CUDART_SQRT_2_OVER_PI)
    counts[1] = 1;
#endif
}
"""
    f, d, counts = np.zeros(8, np.float32), np.zeros(8), np.zeros(2, np.int32)
    RawModule(code=code).get_function("constants")((1,), (1,), (f, d, counts))
    expected_floats = np.array([np.finfo(np.float32).max, math.sqrt(2), 2**23, math.log(math.pi), math.log10(2),
                                2.0**-149, np.nan, 3 * math.pi / 4], np.float32)
    np.testing.assert_array_equal(f[[0, 1, 2, 3, 4, 5, 7]], expected_floats[[0, 1, 2, 3, 4, 5, 7]])
    assert f[6:7].view(np.uint32)[0] == 0x7FFFFFFF  # CUDA's float NaN; its double NaN is negative
    expected_doubles = [math.log(math.pi), 2.0**-1022, math.sin(math.pi),  # pi less the double nearest to it
                        np.nextafter(math.sqrt(2 * math.pi), 3.0),  # CUDA's, one bit above the nearest double
                        np.nan, 1024 * math.log(2), 2 / 3, 2.0**52 + 2.0**51]
    np.testing.assert_array_equal(np.delete(d, 4), np.delete(np.array(expected_doubles), 4))
    assert d[4:5].view(np.uint64)[0] == 0xFFF8000000000000
    assert counts.tolist() == [7, 0]
