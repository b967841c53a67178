"""Reads of __shared__ memory that no thread of the block wrote, where the checking mode's NaN fill
does not reach an output: fmaxf, fminf and comparisons drop a NaN, and an integer read as an index
or a count takes -1 from 0xFF bytes. The mirrored run fills __shared__ memory with 0x7F bytes
(3.4e38 as a float, 2,139,062,143 as an int) instead, so such a read changes the result or ends
the launch, and the report names the array.

Each report here was missed before (both runs gave the right maximum, or read x[0] for the unwritten
index, with no report). Last, what is filled: a device function's `static` tables with an
initializer are no __shared__ memory.
"""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule

pytestmark = pytest.mark.slow  # each test builds a library (about a second)

BLOCK_MAX = r"""
// The maximum of n values by one block of 64 threads: each thread stores one value, then a tree of
// fmaxf halves the array. Without IDENTITY the slots n..63 are never written: a GPU reads whatever
// they held, here the checking mode's fills. With IDENTITY they hold minus infinity, which a max ignores.
#include <math_constants.h>

extern "C" __global__ void block_max(const float* x, float* out, int n)
{
    __shared__ float s[64];
    const int t = threadIdx.x;
#ifdef IDENTITY
    s[t] = t < n ? x[t] : -CUDART_INF_F;
#else
    if (t < n) {
        s[t] = x[t];
    }
#endif
    __syncthreads();
    for (int stride = 32; stride > 0; stride /= 2) {
        if (t < stride) {
#ifdef COMPARE
            s[t] = s[t + stride] > s[t] ? s[t + stride] : s[t];
#else
            s[t] = fmaxf(s[t], s[t + stride]);
#endif
        }
        __syncthreads();
    }
    if (t == 0) {
        out[0] = s[0];
    }
}
"""


@pytest.mark.parametrize("options", [(), ("-DCOMPARE",)], ids=["fmaxf", "comparison"])
def test_a_max_over_slots_no_thread_wrote_is_reported_though_it_drops_the_nan(options):
    x = np.linspace(-3.0, 2.0, 40, dtype=np.float32)
    out = np.full(1, np.nan, np.float32)
    kernel = RawModule(code=BLOCK_MAX, options=options, check=True).get_function("block_max")
    with pytest.raises(KernelError, match=r"block_max: the result depends on what __shared__ memory held before "
                                          r"the launch: args\[1\]\[0\] is 2 with the first fill and 3\.39\d*e\+38 "
                                          r"with the second .* the kernel read __shared__ `s` \(in block_max\) where "
                                          r"no thread of the block had written it"):
        kernel((1,), (64,), (x, out, np.int32(40)))
    # the plain mode fills __shared__ memory with zeros, which this maximum (2) also drops
    RawModule(code=BLOCK_MAX, options=options, check=False).get_function("block_max")(
        (1,), (64,), (x, out, np.int32(40)))
    assert out[0] == 2.0


def test_the_max_with_its_identity_in_the_unused_slots_passes_both_modes():
    x = np.linspace(-5.0, -1.0, 40, dtype=np.float32)  # all negative: a zero in a slot would win
    for check in (False, True):
        out = np.full(1, np.nan, np.float32)
        RawModule(code=BLOCK_MAX, options=("-DIDENTITY",), check=check).get_function("block_max")(
            (1,), (64,), (x, out, np.int32(40)))
        assert out[0] == np.float32(-1.0)


GATHER = r"""
// Each thread gathers x at an index that thread t of the block stored in a __shared__ table; threads
// at or past n store none, and clamping at 0 turns the first run's -1 (0xFF bytes) into x[0].
extern "C" __global__ void gather(const float* x, float* out, int n)
{
    __shared__ int index[32];
    const int t = threadIdx.x;
    if (t < n) {
        index[t] = n - 1 - t;
    }
    __syncthreads();
    out[t] = x[max(index[t], 0)];
}
"""


def test_an_index_no_thread_wrote_is_named_when_only_the_other_fill_ends_the_launch():
    x = np.arange(32, dtype=np.float32)
    out = np.full(32, np.nan, np.float32)
    kernel = RawModule(code=GATHER, check=True).get_function("gather")
    with pytest.raises(KernelError, match=r"gather: .*; with __shared__ memory filled with 0xFF bytes instead of "
                                          r"0x7F bytes .* the launch ends without it: the kernel read __shared__ "
                                          r"`index` \(in gather\) where no thread of the block had written it and "
                                          r"took the value as an index or a count"):
        kernel((1,), (32,), (x, out, np.int32(24)))
    kernel((1,), (32,), (x, out, np.int32(32)))  # every slot written: no report
    np.testing.assert_array_equal(out, x[::-1])


TABLES = r"""
// Tables that device functions keep in `static` arrays with an initializer (instant-ngp's Sobol
// directions in an inline function of random_val.cuh): global memory, initialised once, which no
// __shared__ variable can be (it takes no initializer)
__device__ inline unsigned from_constant_table(unsigned i)
{
    static constexpr unsigned table[4] = {1u, 2u, 4u, 8u};
    return table[i & 3];
}
template <int K> __device__ unsigned from_table(unsigned i)
{
    static unsigned table[4] = {3u, 5u, 7u, 9u};
    return K * table[i & 3];
}
extern "C" __global__ void look_up(unsigned* out)
{
    out[threadIdx.x] = from_constant_table(threadIdx.x) + from_table<10>(threadIdx.x);
}
extern "C" __global__ void unrelated(unsigned* out)
{
    out[threadIdx.x] = 2u * threadIdx.x;
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_device_functions_static_tables_are_no_shared_memory(check):
    # taken for __shared__ arrays in the checking mode until 2026-11-27: the fill of the constexpr
    # table (read-only memory) faulted in every kernel of the module, and the writable one read the fill
    module = RawModule(code=TABLES, check=check)
    out = np.zeros(8, np.uint32)
    module.get_function("look_up")((1,), (8,), (out,))
    assert out.tolist() == [31, 52, 74, 98] * 2
    module.get_function("unrelated")((1,), (8,), (out,))
    assert out.tolist() == list(range(0, 16, 2))
