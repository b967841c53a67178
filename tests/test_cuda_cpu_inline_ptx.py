"""The inline PTX the CPU runner translates (nn_cuda/cuda_cpu/inline_ptx.py): the lane's id and masks,
64-bit values split into and made of 32-bit halves (OpenMM's shuffle of a double), float <->
binary16 conversions in each rounding (MXNet's half-inl.h), and atomic adds that keep no old value
(tiny-cuda-nn's red.add), against NumPy, in both modes. Every
other asm statement still stops the build in one line (test_cuda_cpu_wrapper_code.py)."""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule

MODES = pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])

LANES_AND_HALVES = r"""
// the lane's id through a macro continued on a second line, as warp code writes it, as a signed value
// (RAFT's laneId(): ptxas takes .s32 as .u32 here; the runner refused it until 2026-11-28)
#define LANE_OF(x) asm volatile("mov.s32 %0, %%laneid;" \
                                : "=r"(x))

// OpenMM's real_shfl of a double: its two halves shuffled, then put together again
__device__ double shuffled(double v, int source)
{
    int low, high;
    asm volatile("mov.b64 {%0,%1}, %2;" : "=r"(low), "=r"(high) : "d"(v));
    low = __shfl_sync(0xffffffff, low, source);
    high = __shfl_sync(0xffffffff, high, source);
    asm volatile("mov.b64 %0, {%1,%2};" : "=d"(v) : "r"(low), "r"(high));
    return v;
}

extern "C" __global__ void lanes_and_halves(const double* x, double* from_next, unsigned* lanes, unsigned* masks)
{
    unsigned lane;
    LANE_OF(lane);
    lanes[threadIdx.x] = lane;
    unsigned lt, le, eq, ge, gt;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(le));
    asm("mov.u32 %0, %%lanemask_eq;" : "=r"(eq));
    asm("mov.s32 %0, %%lanemask_ge;" : "=r"(ge));
    asm("mov.u32 %0, %%lanemask_gt;" : "=r"(gt));
    unsigned* mine = masks + 5 * threadIdx.x;
    mine[0] = lt, mine[1] = le, mine[2] = eq, mine[3] = ge, mine[4] = gt;
    from_next[threadIdx.x] = shuffled(x[threadIdx.x], (lane + 1) % 32);
}

// float -> binary16 bits in each of PTX's roundings, and the bits back to float
extern "C" __global__ void to_half(const float* x, unsigned short* bits, float* back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        unsigned short h;
        asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(h) : "f"(v));
        bits[4 * i] = h;
        asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        bits[4 * i + 1] = h;
        asm("cvt.rm.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        bits[4 * i + 2] = h;
        asm("cvt.rp.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        bits[4 * i + 3] = h;
        float w;
        asm("cvt.f32.f16 %0, %1;" : "=f"(w) : "h"(bits[4 * i]));
        back[i] = w;
    }
}
"""


@MODES
def test_the_lane_its_masks_and_a_double_in_two_halves_are_as_on_a_gpu(check):
    module = RawModule(code=LANES_AND_HALVES, check=check)
    x = np.random.default_rng(0).standard_normal(64)
    from_next, lanes = np.full(64, np.nan), np.full(64, 99, np.uint32)
    masks = np.zeros((64, 5), np.uint32)
    module.get_function("lanes_and_halves")((1,), (64,), (x, from_next, lanes, masks))
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(lanes, lane)
    below = (1 << lane.astype(np.uint64)) - 1  # lanemask_lt
    up_to = (1 << (lane.astype(np.uint64) + 1)) - 1  # lanemask_le
    expected = np.stack([below, up_to, below + 1, ~below, ~up_to], axis=1).astype(np.uint32)
    np.testing.assert_array_equal(masks, expected)
    warp_start = np.arange(64) // 32 * 32
    np.testing.assert_array_equal(from_next, x[warp_start + (lane + 1) % 32])  # bit for bit


def _directed(x: np.ndarray, toward) -> np.ndarray:
    """x rounded to binary16 toward `toward` (0, -inf or +inf): NumPy rounds to nearest only."""
    nearest = x.astype(np.float64).astype(np.float16)
    wrong_side = {0: np.abs(nearest.astype(np.float64)) > np.abs(x),
                  -np.inf: nearest.astype(np.float64) > x, np.inf: nearest.astype(np.float64) < x}[toward]
    stepped = np.nextafter(nearest, np.float16(toward if toward else 0) * np.sign(x).astype(np.float16)
                           if toward == 0 else np.float16(toward))
    return np.where(wrong_side, stepped, nearest)


@MODES
def test_a_float_to_binary16_in_each_rounding_and_back(check):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(60) * 100, [0.0, -0.0, 1e-6, 70000.0, -1.0 / 3]]).astype(np.float32)
    n = x.size
    bits, back = np.zeros((n, 4), np.uint16), np.full(n, np.nan, np.float32)
    RawModule(code=LANES_AND_HALVES, check=check).get_function("to_half")((2,), (64,), (x, bits, back, np.int32(n)))
    with np.errstate(over="ignore"):
        nearest = x.astype(np.float16)  # float32 -> binary16: rounded to nearest even, as cvt.rn
        expected = np.stack([nearest, _directed(x, 0), _directed(x, -np.inf), _directed(x, np.inf)], axis=1)
    np.testing.assert_array_equal(bits, expected.view(np.uint16))
    np.testing.assert_array_equal(back, nearest.astype(np.float32))  # exact: a float holds every binary16


INTEGER_PTX = r"""
// hashcat's inc_common.cl on NVIDIA: byte swaps and permutes, three-input logic, bit fields, funnel
// shifts; immediates and registers as operands
extern "C" __global__ void integer_ptx(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = c[i], r;
    unsigned* o = out + 12 * i;
    asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(r) : "r"(x));
    o[0] = r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    o[1] = r;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    o[2] = r;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // the majority of three
    o[3] = r;
    asm("bfe.u32 %0, %1, 8, 8;" : "=r"(r) : "r"(x));
    o[4] = r;
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y & 63u), "r"(z & 63u));
    o[5] = r;
    int s;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(x), "r"(y & 63u), "r"(z & 63u));
    o[6] = (unsigned)s;
    asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    o[7] = r;
    asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    o[8] = r;
    asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z & 63u));
    o[9] = r;
    asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z & 63u));
    o[10] = r;
    o[11] = 0;
}
"""


def _prmt(a, b, c):
    """PTX's prmt.b32 in its default mode, from the ISA's text: each byte of the result is the byte
    of {b, a} its selector nibble names, or that byte's sign where the nibble's bit 3 is set."""
    both = (b << 32) | a
    result = 0
    for i in range(4):
        nibble = (c >> (4 * i)) & 0xF
        byte = (both >> (8 * (nibble & 7))) & 0xFF
        result |= ((0xFF if byte & 0x80 else 0) if nibble & 8 else byte) << (8 * i)
    return result


def _bfe(a, position, length, signed):
    """PTX's bfe.u32 / bfe.s32 from the ISA's pseudocode (msb 31)."""
    position, length = position & 0xFF, length & 0xFF
    sign = 0 if not signed or length == 0 else (a >> min(31, position + length - 1)) & 1
    bits = [((a >> (position + k)) & 1) if k < length and position + k <= 31 else sign for k in range(32)]
    return sum(bit << k for k, bit in enumerate(bits))


def _shf(a, b, c, left, clamp):
    n = min(c, 32) if clamp else c & 31
    both = (b << 32) | a
    return ((both << n) >> 32) & 0xFFFFFFFF if left else (both >> n) & 0xFFFFFFFF


@MODES
def test_integer_instructions_of_inline_ptx_are_as_the_isa_defines_them(check):
    rng = np.random.default_rng(7)
    n = 40
    a, b, c = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    a[:4], b[:4], c[:4] = [0x80FF017F, 0, 0xFFFFFFFF, 1], [0x12345678, 0xFFFFFFFF, 0, 2], [0x89AB, 0xF0F0, 31, 32]
    out = np.full((n, 12), 0xDEADBEEF, np.uint32)
    RawModule(code=INTEGER_PTX, check=check).get_function("integer_ptx")((2,), (32,), (a, b, c, out, np.int32(n)))
    for i in range(n):
        x, y, z = int(a[i]), int(b[i]), int(c[i])
        expected = [_prmt(x, 0, 0x0123), _prmt(x, y, z), x ^ y ^ z, (x & y) | (x & z) | (y & z),
                    (x >> 8) & 0xFF, _bfe(x, y & 63, z & 63, False), _bfe(x, y & 63, z & 63, True),
                    _shf(x, y, z, True, False), _shf(x, y, z, False, False),
                    _shf(x, y, z & 63, True, True), _shf(x, y, z & 63, False, True), 0]
        assert out[i].tolist() == expected, (i, out[i].tolist(), expected)


def test_a_trap_in_inline_ptx_ends_the_launch_as_trap_does():
    """Paddle's PADDLE_ENFORCE ends in asm("trap;") on the device: the build stopped on inline PTX."""
    code = ('extern "C" __global__ void enforce(const int* index, int n, float* out)\n{\n'
            '    if (index[threadIdx.x] >= n) { asm("trap;"); }\n    out[threadIdx.x] = 1.0f;\n}\n')
    kernel = RawModule(code=code).get_function("enforce")
    out = np.zeros(2, np.float32)
    kernel((1,), (2,), (np.array([0, 1], np.int32), np.int32(2), out))
    assert out.tolist() == [1.0, 1.0]
    with pytest.raises(KernelError, match=r"enforce: .*in thread \(1, 0, 0\) of block \(0, 0, 0\)"):
        kernel((1,), (2,), (np.array([0, 5], np.int32), np.int32(2), out))


@MODES
def test_code_that_declares_its_own_uint64_t_translates_its_inline_ptx(check):
    """nvFuser's generated kernels declare `using uint64_t = unsigned long long int;` (NVRTC has no
    <cstdint>): the name is then a macro for the code's own type, which the runtime's translations of
    inline PTX saw ("'nn_cuda_cpu_code_uint64_t' was not declared"), and every nvFuser kernel stopped."""
    code = r"""
    namespace nvf {
    using uint64_t = unsigned long long int;
    __device__ unsigned lane() { unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
    }
    extern "C" __global__ void lanes(unsigned* out) { out[threadIdx.x] = nvf::lane(); }
    """
    out = np.zeros(32, np.uint32)
    RawModule(code=code, check=check).get_function("lanes")((1,), (32,), (out,))
    assert out.tolist() == list(range(32))


RED_ADD = r"""
#include <cuda_fp16.h>

// tiny-cuda-nn's vec.h adds gradients so on sm_70 and later: the float's bits as an "r" operand
__device__ inline void add_f32(float* address, float value)
{
    int bits = *((int*)&value);
    asm("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(address), "r"(bits));
}
__device__ inline void add_h2(__half2* address, __half2 value)
{
    int bits = *((int*)&value);
    asm("red.relaxed.gpu.global.add.noftz.f16x2 [%0], %1;" ::"l"(address), "r"(bits));
}

// Each thread adds its value to a slot of its index: floats, half pairs (the value and 1), and a
// count by an immediate
extern "C" __global__ void scatter(const int* slots, const float* values, float* sums, __half2* pairs,
                                   unsigned* counts, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        add_f32(sums + slots[i], values[i]);
        add_h2(pairs + slots[i], __floats2half2_rn(values[i], 1.0f));
        asm volatile("red.global.add.u32 [%0], 1;" ::"l"(counts + slots[i]));
    }
}
"""


@pytest.mark.slow  # a build of cuda_fp16.h's code in each mode (seconds): the fast loop keeps the others
@MODES
def test_red_add_of_floats_half_pairs_and_integers_is_atomicadd(check):
    # refused until 2026-11-28 ("does not support inline PTX"), which stopped every gradient scatter of
    # tiny-cuda-nn; small integers as floats, so every order of the additions gives the exact sum
    rng = np.random.default_rng(5)
    n, m = 300, 7
    slots = rng.integers(0, m, n).astype(np.int32)
    values = rng.integers(-8, 9, n).astype(np.float32)
    sums, pairs, counts = np.zeros(m, np.float32), np.zeros(2 * m, np.float16), np.zeros(m, np.uint32)
    RawModule(code=RED_ADD, check=check).get_function("scatter")(
        (3,), (128,), (slots, values, sums, pairs, counts, np.int32(n)))
    expected = np.zeros(m)
    np.add.at(expected, slots, values)
    np.testing.assert_array_equal(sums, expected)
    np.testing.assert_array_equal(pairs.reshape(m, 2), np.stack([expected, np.bincount(slots, minlength=m)], axis=1))
    np.testing.assert_array_equal(counts, np.bincount(slots, minlength=m))
