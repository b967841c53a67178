"""CUDA's integer intrinsics, SIMD video intrinsics (with the DPX ones of CUDA 12), the 16-bit atomicCAS
and CUDA 12.8's built-in atomic functions (__nv_atomic_*) on the CPU (nn_cuda/cuda_cpu/device_functions.h),
each through RawModule against a Python model written from CUDA's documented definition (CUDA Math API,
"Integer Intrinsics" and "SIMD Intrinsics"; PTX's fns for __fns; the CUDA C++ Programming Guide's
"Atomic Functions"), compared bit for bit. Every output is poisoned first."""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build (about two seconds)

M32 = 0xFFFFFFFF
EDGES = [0, 1, M32, 0x80000000, 0x7FFFFFFF, 0x80008000, 0x7FFF7FFF, 0x80808080, 0x7F7F7F7F, 0x00FF00FF,
         0xFF00FF00, 0x01020304, 0xFFFEFDFC, 0x8001FFFF, 0x7F80017F, 0x12345678]


def _inputs(n, seed):
    """n unsigned 32-bit words: every pair of edge values first, then random ones."""
    rng = np.random.default_rng(seed)
    a = [x for x in EDGES for _ in EDGES]
    b = [y for _ in EDGES for y in EDGES]
    c = [(x * 7 + y * 13) & M32 for x, y in zip(a, b)]
    extra = n - len(a)
    a += rng.integers(0, 2**32, extra, dtype=np.uint64).tolist()
    b += rng.integers(0, 2**32, extra, dtype=np.uint64).tolist()
    c += rng.integers(0, 2**32, extra, dtype=np.uint64).tolist()
    return (np.array(v, np.uint32) for v in (a, b, c))


def signed(x, bits=32):
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def lanes(x, bits, is_signed):
    values = [(x >> (bits * i)) & ((1 << bits) - 1) for i in range(32 // bits)]
    return [signed(v, bits) for v in values] if is_signed else values


def pack(values, bits):
    return sum((v & ((1 << bits) - 1)) << (bits * i) for i, v in enumerate(values))


# ---- integer intrinsics --------------------------------------------------------------------------------

INTEGER = r"""
extern "C" __global__ void integer_intrinsics(const unsigned* a, const unsigned* b, const unsigned* c,
                                              const unsigned long long* la, const unsigned long long* lb,
                                              unsigned* out, unsigned long long* out64, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], z = c[i], shift = z % 67u;
    const int sx = (int)x, sy = (int)y, sz = (int)z;
    char4 cx, cy; uchar4 ux, uy; short2 hx; ushort2 uhx;
    memcpy(&cx, &x, 4); memcpy(&cy, &y, 4); memcpy(&ux, &x, 4); memcpy(&uy, &y, 4);
    memcpy(&hx, &x, 4); memcpy(&uhx, &x, 4);
    const unsigned results[] = {
        __byte_perm(x, y, z), __sad(sx, sy, z), __usad(x, y, z),
        __funnelshift_l(x, y, shift), __funnelshift_lc(x, y, shift),
        __funnelshift_r(x, y, shift), __funnelshift_rc(x, y, shift),
        (unsigned)__hadd(sx, sy), (unsigned)__rhadd(sx, sy), __uhadd(x, y), __urhadd(x, y),
        (unsigned)__dp4a(sx, sy, sz), __dp4a(x, y, z), (unsigned)__dp4a(cx, cy, sz), __dp4a(ux, uy, z),
        (unsigned)__dp2a_lo(sx, sy, sz), (unsigned)__dp2a_hi(sx, sy, sz), __dp2a_lo(x, y, z), __dp2a_hi(x, y, z),
        (unsigned)__dp2a_lo(hx, cy, sz), __dp2a_hi(uhx, uy, z),
        __fns(x, z % 32u, (int)(y % 71u) - 35), __fns(x, z % 32u, 0),
        __nv_bswap32(x), (unsigned)__nv_bswap16((unsigned short)x),
    };
    for (int k = 0; k < (int)(sizeof results / sizeof results[0]); ++k) out[k * n + i] = results[k];
    out64[i] = __brevll(la[i]);
    out64[n + i] = (unsigned long long)__mul64hi((long long)la[i], (long long)lb[i]);
    out64[2 * n + i] = __umul64hi(la[i], lb[i]);
    out64[3 * n + i] = __nv_bswap64(la[i]);
}
"""


def _dot(a, b, c, bits_a, pairs, is_signed):
    total = c
    for i, j in pairs:
        total += lanes(a, bits_a, is_signed)[i] * lanes(b, 8, is_signed)[j]
    return total & M32


def _fns(mask, base, offset):
    if offset == 0:
        return base if mask >> base & 1 else M32
    position, count, step = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= position < 32:
        if mask >> position & 1:
            if count == 0:
                return position
            count -= 1
        position += step
    return M32


def _integer_models(x, y, z):
    sx, sy, sz = signed(x), signed(y), signed(z)
    shift = z % 67
    pair = y << 32 | x
    byte_perm = pack([(pair >> (8 * ((z >> (4 * n)) & 7))) & 0xFF for n in range(4)], 8)
    return [
        byte_perm, (abs(sx - sy) + z) & M32, (abs(x - y) + z) & M32,
        (pair << (shift & 31)) >> 32 & M32, (pair << min(shift, 32)) >> 32 & M32,
        (pair >> (shift & 31)) & M32, (pair >> min(shift, 32)) & M32,
        ((sx + sy) >> 1) & M32, ((sx + sy + 1) >> 1) & M32, (x + y) >> 1, (x + y + 1) >> 1,
        _dot(x, y, sz, 8, [(k, k) for k in range(4)], True), _dot(x, y, z, 8, [(k, k) for k in range(4)], False),
        _dot(x, y, sz, 8, [(k, k) for k in range(4)], True), _dot(x, y, z, 8, [(k, k) for k in range(4)], False),
        _dot(x, y, sz, 16, [(0, 0), (1, 1)], True), _dot(x, y, sz, 16, [(0, 2), (1, 3)], True),
        _dot(x, y, z, 16, [(0, 0), (1, 1)], False), _dot(x, y, z, 16, [(0, 2), (1, 3)], False),
        _dot(x, y, sz, 16, [(0, 0), (1, 1)], True), _dot(x, y, z, 16, [(0, 2), (1, 3)], False),
        _fns(x, z % 32, y % 71 - 35), _fns(x, z % 32, 0),
        int.from_bytes(x.to_bytes(4, "little"), "big"), int.from_bytes((x & 0xFFFF).to_bytes(2, "little"), "big"),
    ]


def test_integer_intrinsics_match_their_documented_definitions():
    n = 512
    a, b, c = _inputs(n, 1)
    rng = np.random.default_rng(2)
    la = rng.integers(0, 2**64, n, dtype=np.uint64)
    lb = rng.integers(0, 2**64, n, dtype=np.uint64)
    la[:4], lb[:4] = [0, 2**63, 2**64 - 1, 1], [2**64 - 1, 2**63, 2**64 - 1, 2**63]
    out = np.full(25 * n, 0xDEADBEEF, np.uint32)
    out64 = np.full(4 * n, 0xDEADBEEFDEADBEEF, np.uint64)
    RawModule(code=INTEGER).get_function("integer_intrinsics")((4,), (128,), (a, b, c, la, lb, out, out64, np.int32(n)))
    got = out.reshape(25, n)
    for i in range(n):
        expected = _integer_models(int(a[i]), int(b[i]), int(c[i]))
        assert got[:, i].tolist() == expected, (i, hex(a[i]), hex(b[i]), hex(c[i]))
    for i in range(n):
        x, y = int(la[i]), int(lb[i])
        assert int(out64[i]) == int(f"{x:064b}"[::-1], 2), i
        assert int(out64[n + i]) == ((signed(x, 64) * signed(y, 64)) >> 64) & (2**64 - 1), i
        assert int(out64[2 * n + i]) == (x * y) >> 64, i
        assert int(out64[3 * n + i]) == int.from_bytes(x.to_bytes(8, "little"), "big"), i  # __nv_bswap64


FMA_IEEE = r"""
extern "C" __global__ void fma_ieee(const float* a, const float* b, const float* c, float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = a[i], y = b[i], z = c[i];
    const float r[] = {__fmaf_ieee_rn(x, y, z), __fmaf_ieee_rz(x, y, z), __fmaf_ieee_rd(x, y, z), __fmaf_ieee_ru(x, y, z)};
    for (int k = 0; k < 4; ++k) out[k * n + i] = r[k];
}
"""


def test_fmaf_ieee_rounds_the_exact_result_as_its_name_says():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    n = 256
    a, b, c = ((rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32) for _ in range(3))
    a[0], b[0], c[0] = np.float32(1e-40), np.float32(0.5), np.float32(0)  # a subnormal product: not flushed
    out = np.full(4 * n, np.nan, np.float32)
    RawModule(code=FMA_IEEE).get_function("fma_ieee")((2,), (128,), (a, b, c, out, np.int32(n)))
    nearest, toward_zero, down, up = out.reshape(4, n)
    for i in range(n):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        lo, hi = Fraction(float(down[i])), Fraction(float(up[i]))
        assert lo <= exact <= hi, i
        assert (lo == hi) if lo == exact else float(up[i]) == np.nextafter(down[i], np.float32(np.inf)), i
        assert Fraction(float(toward_zero[i])) == (lo if exact >= 0 else hi), i
        nearest_value = min((lo, hi), key=lambda v: (abs(v - exact), int(np.float32(float(v)).view(np.uint32)) & 1))
        assert Fraction(float(nearest[i])) == nearest_value, i
    assert down[0] == np.float32(5e-41) or down[0] > 0  # 1e-40 * 0.5 stays a subnormal, not 0


# ---- SIMD video intrinsics -----------------------------------------------------------------------------

def _sat(v, bits, is_signed):
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed else (0, (1 << bits) - 1)
    return min(max(v, low), high)


def _avgs(x, y):  # signed rounded average: halves away from zero
    s = x + y
    return s >> 1 if s < 0 else (s + 1) >> 1


#: name stem -> (lanes signed, operation of the two lanes and the lane width)
BINARY = {
    "__vadd": (False, lambda x, y, w: x + y), "__vsub": (False, lambda x, y, w: x - y),
    "__vaddss": (True, lambda x, y, w: _sat(x + y, w, True)), "__vaddus": (False, lambda x, y, w: _sat(x + y, w, False)),
    "__vsubss": (True, lambda x, y, w: _sat(x - y, w, True)), "__vsubus": (False, lambda x, y, w: _sat(x - y, w, False)),
    "__vabsdiffs": (True, lambda x, y, w: abs(x - y)), "__vabsdiffu": (False, lambda x, y, w: abs(x - y)),
    "__vavgs": (True, lambda x, y, w: _avgs(x, y)), "__vavgu": (False, lambda x, y, w: (x + y + 1) >> 1),
    "__vhaddu": (False, lambda x, y, w: (x + y) >> 1),
    "__vmaxs": (True, lambda x, y, w: max(x, y)), "__vmaxu": (False, lambda x, y, w: max(x, y)),
    "__vmins": (True, lambda x, y, w: min(x, y)), "__vminu": (False, lambda x, y, w: min(x, y)),
}
for _suffix, _signed, _compare in [("eq", False, lambda x, y: x == y), ("ne", False, lambda x, y: x != y),
                                   ("ges", True, lambda x, y: x >= y), ("geu", False, lambda x, y: x >= y),
                                   ("gts", True, lambda x, y: x > y), ("gtu", False, lambda x, y: x > y),
                                   ("les", True, lambda x, y: x <= y), ("leu", False, lambda x, y: x <= y),
                                   ("lts", True, lambda x, y: x < y), ("ltu", False, lambda x, y: x < y)]:
    BINARY[f"__vcmp{_suffix}"] = (_signed, lambda x, y, w, f=_compare: -1 if f(x, y) else 0)
    BINARY[f"__vset{_suffix}"] = (_signed, lambda x, y, w, f=_compare: 1 if f(x, y) else 0)
UNARY = {"__vabs": lambda x, w: abs(x), "__vabsss": lambda x, w: _sat(abs(x), w, True),
         "__vneg": lambda x, w: -x, "__vnegss": lambda x, w: _sat(-x, w, True)}
SAD = {"__vsads": True, "__vsadu": False}


def _simd_names():
    names = [(f"{stem}{k}", f"{stem}{k}(x, y)") for stem in BINARY for k in (2, 4)]
    names += [(f"{stem}{k}", f"{stem}{k}(x)") for stem in UNARY for k in (2, 4)]
    names += [(f"{stem}{k}", f"{stem}{k}(x, y)") for stem in SAD for k in (2, 4)]
    return names


def _simd_model(name, x, y):
    stem, bits = name[:-1], 16 if name.endswith("2") else 8
    if stem in BINARY:
        is_signed, operation = BINARY[stem]
        return pack([operation(p, q, bits) for p, q in zip(lanes(x, bits, is_signed), lanes(y, bits, is_signed))], bits)
    if stem in UNARY:
        return pack([UNARY[stem](p, bits) for p in lanes(x, bits, True)], bits)
    return sum(abs(p - q) for p, q in zip(lanes(x, bits, SAD[stem]), lanes(y, bits, SAD[stem]))) & M32


def test_simd_intrinsics_match_their_lanes_definitions():
    names = _simd_names()
    calls = "\n".join(f"    out[{k} * n + i] = {call};" for k, (_, call) in enumerate(names))
    code = ('extern "C" __global__ void simd(const unsigned* a, const unsigned* b, unsigned* out, int n)\n{\n'
            "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n"
            f"    const unsigned x = a[i], y = b[i];\n{calls}\n}}\n")
    n = 512
    a, b, _ = _inputs(n, 4)
    out = np.full(len(names) * n, 0xDEADBEEF, np.uint32)
    RawModule(code=code).get_function("simd")((4,), (128,), (a, b, out, np.int32(n)))
    got = out.reshape(len(names), n)
    for k, (name, _) in enumerate(names):
        expected = [_simd_model(name, int(x), int(y)) for x, y in zip(a, b)]
        mismatches = [i for i in range(n) if int(got[k, i]) != expected[i]]
        assert not mismatches, (name, [(hex(a[i]), hex(b[i]), hex(got[k, i]), hex(expected[i])) for i in mismatches[:3]])


DPX = r"""
extern "C" __global__ void dpx(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], z = c[i];
    const int sx = (int)x, sy = (int)y, sz = (int)z;
    bool p = false, hi = false, lo = false;
    unsigned r[40];
    int k = 0;
    r[k++] = __vimax3_s32(sx, sy, sz); r[k++] = __vimax3_u32(x, y, z); r[k++] = __vimax3_s16x2(x, y, z);
    r[k++] = __vimax3_u16x2(x, y, z); r[k++] = __vimax3_s32_relu(sx, sy, sz); r[k++] = __vimax3_s16x2_relu(x, y, z);
    r[k++] = __vimin3_s32(sx, sy, sz); r[k++] = __vimin3_u32(x, y, z); r[k++] = __vimin3_s16x2(x, y, z);
    r[k++] = __vimin3_u16x2(x, y, z); r[k++] = __vimin3_s32_relu(sx, sy, sz); r[k++] = __vimin3_s16x2_relu(x, y, z);
    r[k++] = __viaddmax_s32(sx, sy, sz); r[k++] = __viaddmax_u32(x, y, z); r[k++] = __viaddmax_s16x2(x, y, z);
    r[k++] = __viaddmax_u16x2(x, y, z); r[k++] = __viaddmax_s32_relu(sx, sy, sz); r[k++] = __viaddmax_s16x2_relu(x, y, z);
    r[k++] = __viaddmin_s32(sx, sy, sz); r[k++] = __viaddmin_u32(x, y, z); r[k++] = __viaddmin_s16x2(x, y, z);
    r[k++] = __viaddmin_u16x2(x, y, z); r[k++] = __viaddmin_s32_relu(sx, sy, sz); r[k++] = __viaddmin_s16x2_relu(x, y, z);
    r[k++] = __vimax_s32_relu(sx, sy); r[k++] = __vimax_s16x2_relu(x, y);
    r[k++] = __vimin_s32_relu(sx, sy); r[k++] = __vimin_s16x2_relu(x, y);
    r[k++] = __vibmax_s32(sx, sy, &p); r[k++] = p;
    r[k++] = __vibmax_u32(x, y, &p); r[k++] = p;
    r[k++] = __vibmin_s32(sx, sy, &p); r[k++] = p;
    r[k++] = __vibmin_u32(x, y, &p); r[k++] = p;
    r[k++] = __vibmax_s16x2(x, y, &hi, &lo); r[k++] = hi * 2 + lo;
    r[k++] = __vibmin_u16x2(x, y, &hi, &lo); r[k++] = hi * 2 + lo;
    for (int j = 0; j < k; ++j) out[j * n + i] = r[j];
}
"""


def _dpx_models(x, y, z):
    def per_lane(bits, is_signed, operation):
        return pack([operation(p, q, r) for p, q, r in zip(lanes(x, bits, is_signed), lanes(y, bits, is_signed),
                                                           lanes(z, bits, is_signed))], bits) & M32

    def wrap(v, bits, is_signed):
        return lanes(v & ((1 << bits) - 1), bits, is_signed)[0]

    results = []
    for three, relu3 in [(lambda p, q, r: max(p, q, r), lambda p, q, r: max(p, q, r, 0)),
                         (lambda p, q, r: min(p, q, r), lambda p, q, r: max(min(p, q, r), 0))]:
        results += [per_lane(32, True, three), per_lane(32, False, three), per_lane(16, True, three),
                    per_lane(16, False, three), per_lane(32, True, relu3), per_lane(16, True, relu3)]
    for pick in (max, min):
        def add_then(p, q, r, bits, is_signed, relu=False, pick=pick):
            value = pick(wrap(p + q, bits, is_signed), r)
            return max(value, 0) if relu else value
        results += [per_lane(32, True, lambda p, q, r: add_then(p, q, r, 32, True)),
                    per_lane(32, False, lambda p, q, r: add_then(p, q, r, 32, False)),
                    per_lane(16, True, lambda p, q, r: add_then(p, q, r, 16, True)),
                    per_lane(16, False, lambda p, q, r: add_then(p, q, r, 16, False)),
                    per_lane(32, True, lambda p, q, r: add_then(p, q, r, 32, True, True)),
                    per_lane(16, True, lambda p, q, r: add_then(p, q, r, 16, True, True))]
    results += [per_lane(32, True, lambda p, q, r: max(p, q, 0)), per_lane(16, True, lambda p, q, r: max(p, q, 0)),
                per_lane(32, True, lambda p, q, r: max(min(p, q), 0)), per_lane(16, True, lambda p, q, r: max(min(p, q), 0))]
    sx, sy = signed(x), signed(y)
    results += [max(sx, sy) & M32, int(sx >= sy), max(x, y), int(x >= y),
                min(sx, sy) & M32, int(sx <= sy), min(x, y), int(x <= y)]
    hs, ls = lanes(x, 16, True), lanes(y, 16, True)
    results += [pack([max(p, q) for p, q in zip(hs, ls)], 16), 2 * int(hs[1] >= ls[1]) + int(hs[0] >= ls[0])]
    hu, lu = lanes(x, 16, False), lanes(y, 16, False)
    results += [pack([min(p, q) for p, q in zip(hu, lu)], 16), 2 * int(hu[1] <= lu[1]) + int(hu[0] <= lu[0])]
    return results


def test_dpx_intrinsics_match_their_definitions():
    n = 512
    a, b, c = _inputs(n, 5)
    out = np.full(40 * n, 0xDEADBEEF, np.uint32)
    RawModule(code=DPX).get_function("dpx")((4,), (128,), (a, b, c, out, np.int32(n)))
    got = out.reshape(40, n)
    for i in range(n):
        expected = _dpx_models(int(a[i]), int(b[i]), int(c[i]))
        assert got[:len(expected), i].tolist() == expected, (i, hex(a[i]), hex(b[i]), hex(c[i]))


# ---- __hadd beside cuda_fp16.h ---------------------------------------------------------------------------

HADD_WITH_HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void hadds(const int* a, const int* b, int* out, float* halves)
{
    out[0] = __hadd(a[0], b[0]);  // CUDA's int __hadd(int, int): exact, so not ambiguous
    out[1] = __hadd(3, 5);
    halves[0] = __half2float(__hadd(__float2half(1.5f), __float2half(2.25f)));
    halves[1] = __bfloat162float(__hadd(__float2bfloat16(1.5f), __float2bfloat16(2.25f)));
}
"""


def test_integer_hadd_and_the_half_hadd_both_build_and_compute():
    out = np.full(2, -999, np.int32)
    halves = np.full(2, np.nan, np.float32)
    RawModule(code=HADD_WITH_HALF).get_function("hadds")((1,), (1,), (np.array([-7], np.int32), np.array([2], np.int32),
                                                                        out, halves))
    assert out.tolist() == [-3, 4]  # floor(-5 / 2), (3 + 5) / 2
    assert halves.tolist() == [3.75, 3.75]


# ---- atomics ---------------------------------------------------------------------------------------------

ATOMICS = r"""
extern "C" __global__ void atomics(unsigned short* counters, int* ints, unsigned* bits, long long* extremes,
                                   unsigned long long* big, float* f, double* d, int* olds, ulonglong2* wide,
                                   long long* seen, int n, int order_dependent)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // 16-bit atomicCAS: a CAS loop that counts, and one swap that only the first finds possible
    unsigned short old = counters[0], found;
    while ((found = atomicCAS(&counters[0], old, (unsigned short)(old + 1))) != old) old = found;
    // which thread wins depends on their order (the checking mode would rightly report it): plain mode only
    if (order_dependent) atomicCAS(&counters[1], (unsigned short)7, (unsigned short)(100 + i));
    atomicCAS_block(&counters[2], (unsigned short)0, (unsigned short)0);
    // CUDA 12.8's built-in atomics
    __nv_atomic_fetch_add(&ints[0], 1, __NV_ATOMIC_RELAXED);
    __nv_atomic_add(&ints[1], 2, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_BLOCK);
    __nv_atomic_fetch_sub(&ints[2], 1, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE);
    __nv_atomic_sub(&ints[3], 3, __NV_ATOMIC_SEQ_CST);
    if (order_dependent) olds[i] = __nv_atomic_exchange_n(&ints[4], i, __NV_ATOMIC_ACQ_REL);
    int expected = __nv_atomic_load_n(&ints[5], __NV_ATOMIC_ACQUIRE);
    while (!__nv_atomic_compare_exchange_n(&ints[5], &expected, expected + 2, false, __NV_ATOMIC_ACQ_REL,
                                           __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_SYSTEM)) {}
    __nv_atomic_fetch_or(&bits[0], 1u << (i % 32), __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_and(&bits[1], ~(1u << (i % 32)), __NV_ATOMIC_RELAXED);
    __nv_atomic_xor(&bits[2], (unsigned)i, __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_min(&extremes[0], (long long)i - 50, __NV_ATOMIC_RELAXED);
    __nv_atomic_max(&extremes[1], (long long)i - 50, __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_add(&big[0], 1ull << 40, __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_max(&big[1], (unsigned long long)i, __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_add(&f[0], 0.5f, __NV_ATOMIC_RELAXED);
    __nv_atomic_fetch_sub(&d[0], 0.25, __NV_ATOMIC_RELAXED);
    double dexp = 0.0, ddes;
    __nv_atomic_load(&d[1], &dexp, __NV_ATOMIC_RELAXED);
    do { ddes = dexp + 1.0; } while (!__nv_atomic_compare_exchange(&d[1], &dexp, &ddes, true, __NV_ATOMIC_SEQ_CST,
                                                                   __NV_ATOMIC_SEQ_CST));
    // 16 bytes: both halves in one compare-and-exchange
    ulonglong2 w, next;
    __nv_atomic_load(wide, &w, __NV_ATOMIC_RELAXED);
    do { next = make_ulonglong2(w.x + 1, w.y + i); } while (!__nv_atomic_compare_exchange(wide, &w, &next, false,
                                                                   __NV_ATOMIC_SEQ_CST, __NV_ATOMIC_SEQ_CST));
    if (order_dependent) {
        ulonglong2 mine = make_ulonglong2(i, i), previous;
        __nv_atomic_exchange(wide + 1, &mine, &previous, __NV_ATOMIC_SEQ_CST);
        seen[i] = (long long)previous.x;
    }
    __nv_atomic_thread_fence(__NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_SYSTEM);
    if (i == 0) {
        __nv_atomic_store_n(&ints[6], 42, __NV_ATOMIC_RELEASE);
        const int v = 43;
        __nv_atomic_store(&ints[7], &v, __NV_ATOMIC_RELEASE);
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_16_bit_atomic_cas_and_the_nv_atomic_builtins_match_their_definitions(check):
    n = 256
    counters = np.array([0, 7, 0, 0], np.uint16)
    ints = np.array([0, 0, 0, 0, -1, 0, 0, 0], np.int32)
    bits = np.array([0, M32, 0], np.uint32)
    extremes = np.array([10**6, -(10**6)], np.int64)
    big = np.zeros(2, np.uint64)
    f = np.zeros(1, np.float32)
    d = np.zeros(2, np.float64)
    olds = np.full(n, -999, np.int32)
    wide = np.zeros(4, np.uint64)  # two ulonglong2, 16-aligned by NumPy's allocation
    wide[2:] = [2**40, 0]
    seen = np.full(n, -999, np.int64)
    RawModule(code=ATOMICS, check=check).get_function("atomics")(
        (2,), (128,), (counters, ints, bits, extremes, big, f, d, olds, wide, seen, np.int32(n), np.int32(not check)))
    assert counters[0] == n and counters[2] == 0
    assert 100 <= counters[1] < 100 + n if not check else counters[1] == 7
    assert ints[:4].tolist() == [n, 2 * n, -n, -3 * n]
    if not check:  # each exchange saw one value: the one before it
        assert sorted(olds.tolist() + [int(ints[4])]) == [-1] + list(range(n))
        assert sorted(seen.tolist() + [int(wide[2])]) == list(range(n)) + [2**40]
    assert ints[5:].tolist() == [2 * n, 42, 43]
    expected_xor = 0
    for i in range(n):
        expected_xor ^= i
    assert bits.tolist() == [M32, 0, expected_xor]
    assert extremes.tolist() == [-50, n - 51]
    assert big.tolist() == [n << 40, n - 1]
    assert f[0] == n * 0.5 and d.tolist() == [-0.25 * n, float(n)]
    assert wide[:2].tolist() == [n, n * (n - 1) // 2]


COLUMN_SUMS = r"""
extern "C" __global__ void column_sums(const float* x, float* sums, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) __nv_atomic_fetch_add(&sums[i % cols], x[i], __NV_ATOMIC_RELAXED);
}
"""


def test_a_float_sum_of_nv_atomics_counts_as_atomics_in_the_checking_mode():
    # Its two thread orders add in different orders: within rounding, not a race, as with atomicAdd.
    rows, cols = 300, 7
    x = np.random.default_rng(6).standard_normal((rows, cols)).astype(np.float32)
    sums = np.zeros(cols, np.float32)
    RawModule(code=COLUMN_SUMS, check=True).get_function("column_sums")(
        ((rows * cols + 127) // 128,), (128,), (x, sums, np.int32(rows), np.int32(cols)))
    reference = x.astype(np.float64).sum(axis=0)
    assert np.linalg.norm(sums - reference) / np.linalg.norm(reference) < 1e-5


def test_an_nv_atomic_on_a_type_cuda_does_not_take_stops_the_build():
    code = ('extern "C" __global__ void k(long long* p)\n{\n'
            "    __nv_atomic_fetch_add(p, 1LL, __NV_ATOMIC_RELAXED);\n}\n")
    with pytest.raises(KernelBuildError, match="__nv_atomic_fetch_add takes int, unsigned, unsigned long long, "
                                               "float or double"):
        RawModule(code=code).get_function("k")


def test_the_atomic_builtins_build_behind_cuda_versions_gate():
    # HeCBench's atomicCAS/kernels.h: `#if CUDA_VERSION >= 12080`, with cuda.h's 12090
    code = r"""
#include <cuda.h>
extern "C" __global__ void k(unsigned long long* p, unsigned long long* o) {
#if CUDA_VERSION >= 12080
  o[0] = __nv_atomic_load_n(p, __NV_ATOMIC_RELAXED);
#else
  o[0] = 0;
#endif
}
"""
    p, o = np.array([123456789012], np.uint64), np.zeros(1, np.uint64)
    RawModule(code=code, backend="nvcc").get_function("k")((1,), (1,), (p, o))
    assert o[0] == 123456789012
