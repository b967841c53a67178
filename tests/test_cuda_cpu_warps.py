"""Warps on the CPU runner: the *_sync shuffles and votes, __syncwarp and warpSize through RawModule,
against NumPy, in the plain and the checking mode (shuffled thread orders must not change a warp's
result); a warp sync that a lane never reaches is a KernelError; legacy warp-synchronous code without
__syncwarp is reported by the checking mode. The kernels are written here."""

import re

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule

pytestmark = pytest.mark.slow  # each module is a build (about two seconds)

WARPS = r"""
// Each warp sums its 32 values with a butterfly of __shfl_xor_sync: every lane ends with the sum.
extern "C" __global__ void warp_sums(const float* x, float* out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    out[i] = v;
}

// A softmax of each row of 32 values by one warp: the maximum by __shfl_down_sync, broadcast from
// lane 0 by __shfl_sync, then the sum the same way.
extern "C" __global__ void warp_softmax(const double* z, double* out)
{
    const int row = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    const int lane = threadIdx.x % warpSize;
    const double v = z[row * warpSize + lane];
    double m = v;
    for (int offset = 16; offset > 0; offset /= 2) {
        m = fmax(m, __shfl_down_sync(0xffffffffu, m, offset));
    }
    m = __shfl_sync(0xffffffffu, m, 0);
    const double e = exp(v - m);
    double sum = e;
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    out[row * warpSize + lane] = e / __shfl_sync(0xffffffffu, sum, 0);
}

// An inclusive scan within each warp by __shfl_up_sync; groups of `width` lanes with width < 32:
// xor within groups of 8, and a broadcast from lane 3 of each group of 16.
extern "C" __global__ void scans_and_groups(const int* x, int* scan, int* xor8, int* from3)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    int v = x[i];
    for (int offset = 1; offset < warpSize; offset *= 2) {
        const int up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) {
            v += up;
        }
    }
    scan[i] = v;
    xor8[i] = __shfl_xor_sync(0xffffffffu, x[i], 5, 8);
    from3[i] = __shfl_sync(0xffffffffu, x[i], 3, 16);
}

// Votes of each lane's x[i] > 0, and __syncwarp around __shared__ memory: lane l reads lane 31 - l.
extern "C" __global__ void votes_and_syncwarp(const int* x, unsigned* ballots, int* any_all, int* mirrored)
{
    __shared__ int seen[64];
    const unsigned active = __activemask();  // before any lane can have returned
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const unsigned ballot = __ballot_sync(0xffffffffu, x[i] > 0);
    const int any = __any_sync(0xffffffffu, x[i] > 0), all = __all_sync(0xffffffffu, x[i] > 0);
    if (lane == 0) {
        ballots[warp] = ballot;
        any_all[2 * warp] = any;
        any_all[2 * warp + 1] = all;
    }
    seen[threadIdx.x] = x[i];
    __syncwarp();
    mirrored[i] = seen[warp * warpSize + (warpSize - 1 - lane)];
    if (lane == 0) {
        ballots[2 + warp] = active;
    }
}

// Match and reduce: each lane's group of equal keys (and whether the whole warp agrees), and the warp's
// sum, minimum, maximum, and, or and xor, over every lane and over the even lanes alone.
extern "C" __global__ void match_and_reduce(const int* key, const double* real, const unsigned* bits,
                                            unsigned* groups, int* agreed, int* sums, unsigned* logic)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % warpSize;
    const int warp = i / warpSize;
    groups[i] = __match_any_sync(0xffffffffu, key[i]);
    groups[64 + i] = __match_any_sync(0xffffffffu, real[i]);
    int all = -1;
    const unsigned whole = __match_all_sync(0xffffffffu, key[i] / 100, &all);
    if (lane == 0) {
        agreed[2 * warp] = all;
        agreed[2 * warp + 1] = static_cast<int>(whole);
    }
    const int sum = __reduce_add_sync(0xffffffffu, key[i]), low = __reduce_min_sync(0xffffffffu, key[i]);
    const int high = __reduce_max_sync(0xffffffffu, key[i]);
    const unsigned u_sum = __reduce_add_sync(0xffffffffu, bits[i]), u_max = __reduce_max_sync(0xffffffffu, bits[i]);
    const unsigned both = __reduce_and_sync(0xffffffffu, bits[i]), either = __reduce_or_sync(0xffffffffu, bits[i]);
    const unsigned odd = __reduce_xor_sync(0xffffffffu, bits[i]);
    int even_sum = -1;
    if (lane % 2 == 0) {
        even_sum = __reduce_add_sync(0x55555555u, key[i]);
    }
    if (lane == 0) {
        int* mine = sums + 4 * warp;
        mine[0] = sum, mine[1] = low, mine[2] = high, mine[3] = even_sum;
        unsigned* out = logic + 5 * warp;
        out[0] = u_sum, out[1] = u_max, out[2] = both, out[3] = either, out[4] = odd;
    }
}

// Lanes 16-31 return before the warp syncs of lanes 0-15, whose mask is the full warp: those that
// returned do not hold them up (the CUDA C++ guide asks every non-exited lane of the mask to come).
// out[lane] = the ballot of lanes 0-15 (a returned lane's bit is 0), with bit 31 set when all of
// them vote yes, and the sum of their lanes by
// shuffles within the half; with `read_returned`, lanes 0-15 read lanes 16-31, which is undefined.
extern "C" __global__ void half_warp_returns(unsigned* out, int read_returned)
{
    if (threadIdx.x >= 16) {
        return;
    }
    __syncwarp();
    out[threadIdx.x] = __ballot_sync(0xffffffff, threadIdx.x % 2 == 0) | __all_sync(0xffffffff, 1) << 31;
    unsigned sum = threadIdx.x;
    for (int offset = 8; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffff, sum, offset, 16);
    }
    out[16 + threadIdx.x] = read_returned ? __shfl_down_sync(0xffffffff, sum, 16) : sum;
}

// Lanes 0-15 wait at a warp sync that lanes 16-31, waiting at __syncthreads, never reach.
extern "C" __global__ void half_warp_at_the_barrier(int* out)
{
    if (threadIdx.x < 16) {
        __syncwarp();
    }
    __syncthreads();
    out[threadIdx.x] = 1;
}

// A legacy warp-synchronous sum: the lanes of one warp add halves of volatile __shared__ memory with
// no __syncwarp, relying on lockstep (wrong since Volta, and here).
extern "C" __global__ void legacy_warp_sum(const float* x, float* out)
{
    __shared__ float s[64];
    const int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    if (t < 32) {
        volatile float* v = s;
        v[t] += v[t + 32];
        v[t] += v[t + 16];
        v[t] += v[t + 8];
        v[t] += v[t + 4];
        v[t] += v[t + 2];
        v[t] += v[t + 1];
    }
    __syncthreads();
    if (t == 0) {
        out[0] = s[0];
    }
}

// The last step of a block reduction whose first 8 lanes shuffle down from lanes 16, 8, 4, ...
// that their mask 0xff leaves out (a GPU gives undefined values; a planted bug).
extern "C" __global__ void shuffle_outside_the_mask(const float* x, float* out)
{
    float v = x[threadIdx.x];
    if (threadIdx.x < 8) {
        for (int offset = 16; offset > 0; offset /= 2) {
            v += __shfl_down_sync(0xffu, v, offset);
        }
    }
    out[threadIdx.x] = v;
}

// The usual port of CUDA 8's mask-less shuffles, __shfl_xor_sync(__activemask(), ...), in a branch of 16
// lanes: the butterfly by 16 reads the other half, which that mask leaves out (a planted bug).
extern "C" __global__ void shuffle_with_the_active_mask(const float* x, float* out)
{
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) {
        v += __shfl_xor_sync(__activemask(), v, 16);
    }
    out[threadIdx.x] = v;
}

// Lane 5 syncs with a mask of lane 0 alone.
extern "C" __global__ void own_lane_left_out(float* out)
{
    if (threadIdx.x == 5) {
        __syncwarp(1u);
    }
    out[threadIdx.x] = 1.0f;
}

// A full-mask shuffle down by 16 in a block of 48 threads: the second warp's lanes 0-15 read lanes
// 16-31, which the block does not have.
extern "C" __global__ void shuffle_beyond_the_block(const float* x, float* out)
{
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, x[threadIdx.x], 16);
}

// Each group of 4 lanes sums a row of a (rows x 4), as a sparse matrix-vector product with 4 threads a
// row does; the lanes past the last row return. The full-mask shuffles down let lanes near the end
// read returned lanes, whose values are undefined and never reach a stored sum.
extern "C" __global__ void row_sums(const float* a, float* sums, int rows)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 4, lane = threadIdx.x % 4;
    if (row >= rows) {
        return;
    }
    float sum = a[row * 4 + lane];
    sum += __shfl_down_sync(0xffffffffu, sum, 2);
    sum += __shfl_down_sync(0xffffffffu, sum, 1);
    if (lane == 0) {
        sums[row] = sum;
    }
}
"""


@pytest.fixture(params=[False, True], ids=["plain", "checking"])
def warps(request):
    return RawModule(code=WARPS, check=request.param)


def test_shuffle_xor_sums_each_warp(warps):
    x = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    warps.get_function("warp_sums")((2,), (64,), (x, out))
    expected = np.repeat(x.reshape(4, 32).astype(np.float64).sum(axis=1), 32)
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-6  # float32 sums of 32 terms


def test_a_softmax_by_shuffles_matches_numpy(warps):
    z = np.random.default_rng(1).standard_normal((6, 32)) * 5
    out = np.full((6, 32), np.nan)
    warps.get_function("warp_softmax")((3,), (64,), (z, out))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    reference = e / e.sum(axis=1, keepdims=True)
    assert np.linalg.norm(out - reference) / np.linalg.norm(reference) < 1e-14


def test_shuffle_up_scans_and_widths_below_32(warps):
    x = np.random.default_rng(2).integers(-50, 50, 64).astype(np.int32)
    scan, xor8, from3 = (np.full(64, -999, np.int32) for _ in range(3))
    warps.get_function("scans_and_groups")((1,), (64,), (x, scan, xor8, from3))
    np.testing.assert_array_equal(scan, np.cumsum(x.reshape(2, 32), axis=1).reshape(-1))
    lanes = np.arange(64)
    np.testing.assert_array_equal(xor8, x[(lanes & ~7) | ((lanes & 7) ^ 5)])
    np.testing.assert_array_equal(from3, x[(lanes & ~15) + 3])


def test_votes_activemask_and_syncwarp(warps):
    x = np.where(np.arange(64) % 3 == 0, 5, -5).astype(np.int32)
    x[32:] = 7  # the second warp: every lane votes yes
    ballots = np.zeros(4, np.uint32)
    any_all = np.full(4, -1, np.int32)
    mirrored = np.zeros(64, np.int32)
    warps.get_function("votes_and_syncwarp")((1,), (64,), (x, ballots, any_all, mirrored))
    first = sum(1 << lane for lane in range(32) if lane % 3 == 0)
    assert ballots.tolist() == [first, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF]
    assert any_all.tolist() == [1, 0, 1, 1]
    np.testing.assert_array_equal(mirrored, x.reshape(2, 32)[:, ::-1].reshape(-1))


def test_match_and_reduce_match_numpy(warps):
    rng = np.random.default_rng(5)
    key = rng.integers(-3, 4, 64).astype(np.int32) * 7  # key / 100 is 0 in every lane of the first warp
    key[32:] += 690  # the second's: 6 or 7
    real = rng.choice([0.5, -0.0, 0.0, 2.0], 64)  # -0.0 and 0.0: equal numbers, different bits
    bits = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    groups = np.zeros(128, np.uint32)
    agreed = np.full(4, -7, np.int32)
    sums = np.full(8, -7, np.int32)
    logic = np.zeros(10, np.uint32)
    warps.get_function("match_and_reduce")((2,), (32,), (key, real, bits, groups, agreed, sums, logic))

    def same_bits(values):
        raw = values.view(np.uint64 if values.itemsize == 8 else np.uint32).reshape(2, 32)
        return [sum(1 << m for m in range(32) if raw[w, m] == raw[w, lane]) for w in range(2) for lane in range(32)]

    assert groups[:64].tolist() == same_bits(key) and groups[64:].tolist() == same_bits(real)
    assert agreed.tolist() == [1, -1, 0, 0]  # warp 0 agrees (-1: the full mask, as an int), warp 1 not
    assert len(set((key[:32] / 100).astype(int))) == 1 and len(set((key[32:] / 100).astype(int))) == 2
    for warp, k in enumerate(key.reshape(2, 32)):
        assert sums[4 * warp: 4 * warp + 4].tolist() == [k.sum(), k.min(), k.max(), k[::2].sum()]
        b = bits.reshape(2, 32)[warp].astype(np.uint64)
        expected = [int(b.sum()) % 2**32, int(b.max()), int(np.bitwise_and.reduce(b)),
                    int(np.bitwise_or.reduce(b)), int(np.bitwise_xor.reduce(b))]
        assert logic[5 * warp: 5 * warp + 5].tolist() == expected


def test_lanes_that_returned_do_not_hold_up_a_warp_sync_but_hand_nothing_over(warps):
    out = np.zeros(32, np.uint32)
    warps.get_function("half_warp_returns")((1,), (32,), (out, np.int32(0)))
    assert out[:16].tolist() == [0x80005555] * 16  # the even lanes of 0-15 (returned lanes vote 0), and all
    assert out[16:].tolist() == [sum(range(16))] * 16
    # a GPU gives an undefined value for a lane that returned: all-ones bytes here, which the checking
    # mode (zeros in its second run) reports when they reach a result, as here
    if warps.check:
        with pytest.raises(KernelError, match=r"half_warp_returns: thread \(\d+, 0, 0\) of block \(0, 0, 0\), lane \d+ "
                                              r"of its warp, shuffles with mask 0xffffffff from lane (1[6-9]|2\d|3[01]), "
                                              r"which returned before it, whose value is undefined on a GPU, and the "
                                              r"value changes the result \(args\[0\]\[16\] is 4294967295 with "
                                              r"all-ones bytes read there and 0 with zeros\)"):
            warps.get_function("half_warp_returns")((1,), (32,), (out, np.int32(1)))
    else:
        warps.get_function("half_warp_returns")((1,), (32,), (out, np.int32(1)))
        assert out[16:].tolist() == [0xFFFFFFFF] * 16


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_shuffle_from_returned_lanes_whose_value_no_result_uses_runs(check, capfd):
    """Lanes past the last row return and the others shuffle with the full mask (Liu-xiandong's SpMV
    with THREADS_PER_VECTOR lanes a row, whenever rows x lanes is no multiple of 32): a GPU's
    undefined values reach no stored sum, and the result is right. Until 2026-11-27 any such read was
    a KernelError; the plain mode now says once that it happened, the checking mode finds that it
    does not matter."""
    a = np.random.default_rng(5).standard_normal((5, 4)).astype(np.float32)
    sums = np.full(5, np.nan, np.float32)
    RawModule(code=WARPS, check=check).get_function("row_sums")((1,), (32,), (a, sums, 5))
    np.testing.assert_allclose(sums, a.astype(np.float64).sum(axis=1), rtol=1e-6)  # four float32 terms
    said = capfd.readouterr().err
    assert ("row_sums: thread (18, 0, 0) of block (0, 0, 0), lane 18 of its warp, shuffles with mask 0xffffffff "
            "from lane 20, which returned before it: a GPU gives an undefined value there" in said) == (not check)


RACE_BESIDE_A_RETURNED_LANE = r"""
// Block 0 races: warp 1's lane 0 overwrites s[1] while warp 0 reads it (no barrier between). Block 1's
// lanes past n return, and the others shuffle from them with the full mask, a value nothing uses
// (LightGBM's weighted EvalKernel has both).
extern "C" __global__ void race_beside(int n, double* out)
{
    __shared__ double s[2];
    if (blockIdx.x == 0) {
        if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = 1.0;
        __syncthreads();
        double v = s[1];
        if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = 100.0;
        if (threadIdx.x == 0) out[0] = v;
        return;
    }
    if (threadIdx.x >= n) return;
    double unused = __shfl_down_sync(0xffffffff, 1.0, 16);
    (void)unused;
    if (threadIdx.x == 0) out[1] = 2.0;
}
"""


def test_a_race_beside_a_shuffle_from_returned_lanes_is_reported_as_the_race():
    # the two runs differ by the race; until 2026-11-27 the shuffle, whose value reaches nothing, was
    # named as the cause, "the value reaches args[1][0]": a rerun in the first order with the other
    # lanes' bytes now tells whether it does
    kernel = RawModule(code=RACE_BESIDE_A_RETURNED_LANE, check=True).get_function("race_beside")
    with pytest.raises(KernelError, match=r"race_beside: the result depends on the order in which the threads of a "
                                          r"block, or the blocks, run between barriers \(args\[1\]\[0\] is") as raised:
        kernel((2,), (64,), (np.int32(20), np.zeros(2)))
    assert "shuffles" not in str(raised.value)

def test_a_warp_sync_that_a_lane_never_reaches_is_a_kernel_error(warps):
    out = np.zeros(32, np.int32)
    with pytest.raises(KernelError, match=r"half_warp_at_the_barrier: in block \(0, 0, 0\), thread \(\d+, 0, 0\) waits "
                                          r"at a warp sync .* mask 0xffffffff\) for lane 16 of its warp, which waits at "
                                          r"__syncthreads\(\) instead"):
        warps.get_function("half_warp_at_the_barrier")((1,), (32,), (out,))


def test_legacy_warp_synchronous_code_is_reported_in_the_checking_mode():
    kernel = RawModule(code=WARPS, check=True).get_function("legacy_warp_sum")
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    with pytest.raises(KernelError, match=r"legacy_warp_sum: the result depends on the order .* a __syncwarp\(\)"):
        kernel((1,), (64,), (x, np.zeros(1, np.float32)))


@pytest.mark.parametrize("kernel, threads, message", [
    ("shuffle_outside_the_mask", 32, r"lane [0-7] of its warp, shuffles with mask 0x000000ff from lane \d+, which is not "
                                     r"in the mask, whose value is undefined on a GPU, and the value changes the result "
                                     r"\(args\[1\]"),
    ("shuffle_beyond_the_block", 48, r"lane \d+ of its warp, shuffles with mask 0xffffffff from lane "
                                     r"(1[6-9]|2\d|3[01]), which the block does not have \(its last warp is partial\)"),
])
def test_a_shuffle_outside_its_mask_gives_an_undefined_value_the_checking_mode_follows(warps, kernel, threads, message):
    """A shuffle that reads a lane outside its mask, or one the block does not have, reads an undefined
    value on a GPU: all-ones bytes here (NaN), and the checking mode names the read when its value
    reaches a result (cuda-samples' reduce7 reads lanes outside its mask 0xff and used to give 157.9
    for 63.1 from a stale value)."""
    x = np.ones(threads, np.float32)
    out = np.zeros(threads, np.float32)
    if warps.check:
        with pytest.raises(KernelError, match=f"{kernel}: thread .*" + message):
            warps.get_function(kernel)((1,), (threads,), (x, out))
    else:
        warps.get_function(kernel)((1,), (threads,), (x, out))
        assert np.isnan(out).any()


def test_a_shuffle_outside_a_mask_of_activemask_says_what_that_mask_promises(warps, capfd):
    # CUDA by Example's and Professional CUDA C's shuffles ported so: the report blamed a mask that the source
    # shows nowhere (0x0000aaaa, where GCC had copied the call into two paths), with no word of __activemask()
    x, out = np.ones(32, np.float32), np.zeros(32, np.float32)
    said = (r"lane \d+ of its warp, shuffles with mask 0x0000ffff from lane (1[6-9]|2\d|3[01]), which is not in the "
            r"mask \(the mask __activemask\(\) gave it: the lanes that run the call together, which CUDA does not "
            r"promise are those the source shows together; NVIDIA's guide warns against __activemask\(\) as a "
            r"shuffle's mask: .*__ballot_sync\(0xffffffff, condition\) before a branch\)")
    if warps.check:
        with pytest.raises(KernelError, match=said + ", whose value is undefined on a GPU"):
            warps.get_function("shuffle_with_the_active_mask")((1,), (32,), (x, out))
    else:
        warps.get_function("shuffle_with_the_active_mask")((1,), (32,), (x, out))
        assert np.isnan(out[:16]).all() and (out[16:] == 1).all()
        assert re.search(said + ": a GPU gives an undefined value there", capfd.readouterr().err)


def test_a_warp_sync_whose_mask_leaves_out_its_own_lane_is_a_kernel_error(warps):
    with pytest.raises(KernelError, match=r"own_lane_left_out: thread \(5, 0, 0\) of block \(0, 0, 0\), lane 5 of its "
                                          r"warp, calls a warp sync .* with mask 0x00000001 that leaves out its own lane"):
        warps.get_function("own_lane_left_out")((1,), (32,), (np.zeros(32, np.float32),))


# A block sum as reductions often write it: each warp sums by shuffles, lane 0 stores the warp's sum
# in a __shared__ array, the block meets, and the first warp sums those (thread 0 gets the total).
# Called twice (a sum, then a sum of squares), the second call's lane 0 of warp 1 may store before
# the first warp has read the first call's value, on a GPU, where warps run on their own: a
# __syncthreads() is missing between the calls. Until 2026-11-27 the checking mode let every thread
# of a phase reach its first warp sync before any warp went on, so the first warp always read first
# and the race went unreported.
BLOCK_SUM_TWICE = r"""
__device__ float block_sum(float v, float* warp_sums)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    if (warp == 0) {
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    BETWEEN_THE_CALLS
    return v;
}

extern "C" __global__ void sum_and_square_sum(const float* x, float* out)
{
    __shared__ float warp_sums[32];
    const float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    const float sum = block_sum(v, warp_sums);
    const float squares = block_sum(v * v, warp_sums);
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = sum;
        out[2 * blockIdx.x + 1] = squares;
    }
}
"""


@pytest.mark.parametrize("barrier", [False, True], ids=["no-barrier-between-calls", "barrier"])
def test_a_block_reduction_called_twice_without_a_barrier_between_is_reported(barrier):
    x = np.random.default_rng(14).random(8 * 128).astype(np.float32)
    code = BLOCK_SUM_TWICE.replace("BETWEEN_THE_CALLS", "__syncthreads();" if barrier else "")
    kernel = RawModule(code=code, check=True).get_function("sum_and_square_sum")
    out = np.full(16, np.nan, np.float32)
    if barrier:
        kernel((8,), (128,), (x, out))
        rows = x.astype(np.float64).reshape(8, 128)
        # 128 positive float32 terms by a tree of 5 levels, then one of 2: 7 roundings, 7 * 2^-24 =
        # 4.2e-7 relative (the squares one more each); measured 3.5e-8 and 3.9e-8
        for got, want in ((out[0::2], rows.sum(1)), (out[1::2], (rows ** 2).sum(1))):
            assert np.linalg.norm(got - want) / np.linalg.norm(want) < 5e-7
    else:
        with pytest.raises(KernelError, match=r"sum_and_square_sum: the result depends on the order in which "
                                              r"the threads of a block, or the blocks, run between barriers.*"
                                              r"__syncthreads\(\) is "
                                              r"missing"):
            kernel((8,), (128,), (x, out))


COALESCED_ATOMICS = r"""
// nvdiffrast's coalesced atomics: the lanes of one key find each other (__match_any_sync), the lowest
// zeroes a __shared__ slot, every lane adds to it, the lowest adds the slot to out[key]. FIXED puts
// __syncwarp(group) between the steps, which CUDA's rules ask for since Volta
extern "C" __global__ void coalesced(const int* key, const float* x, float* out)
{
    __shared__ float slot[32];
    const int lane = threadIdx.x, k = key[lane];
    const unsigned group = __match_any_sync(0xffffffffu, k);
    const int leader = __ffs(group) - 1;
    if (lane == leader) slot[leader] = 0.0f;
#ifdef FIXED
    __syncwarp(group);
#endif
    atomicAdd(&slot[leader], x[lane]);
#ifdef FIXED
    __syncwarp(group);
#endif
    if (lane == leader) atomicAdd(&out[k], slot[leader]);
}
"""


def test_lanes_that_rely_on_running_together_between_warp_syncs_are_reported():
    # Each lane ran to its next warp sync before the next lane started, so the leader flushed its slot
    # before the others had added: 1 instead of 8, in every order, with no report. At an atomic on
    # __shared__ memory a thread now lets the others run first (once between two syncs)
    key, x = (np.arange(32) % 4).astype(np.int32), np.ones(32, np.float32)
    with pytest.raises(KernelError, match=r"coalesced: the result depends on the order in which the threads of a "
                                          r"block run .*a __syncwarp\(\): lanes do not run in lockstep here"):
        RawModule(code=COALESCED_ATOMICS, check=True).get_function("coalesced")(
            (1,), (32,), (key, x, np.zeros(4, np.float32)))
    for check in (False, True):
        out = np.zeros(4, np.float32)
        RawModule(code=COALESCED_ATOMICS, options=("-DFIXED",), check=check).get_function("coalesced")(
            (1,), (32,), (key, x, out))
        assert out.tolist() == [8, 8, 8, 8]


PARTIAL_THEN_FULL = r"""
// Lanes 0-7 of each warp meet at a sync of their own, then every lane at a ballot and a shuffle of
// the whole warp (PyTorch's radix select counts digits so, after its lanes past the data sat out)
extern "C" __global__ void partial_then_full(const int* x, unsigned* ballots, int* shuffled)
{
    const int lane = threadIdx.x % 32;
    if (lane < 8) {
        PARTIAL;
    }
    ballots[threadIdx.x] = __ballot_sync(0xffffffffu, x[threadIdx.x] > 0);
    shuffled[threadIdx.x] = __shfl_sync(0xffffffffu, x[threadIdx.x], (lane + 1) % 32);
}
"""


@pytest.mark.parametrize("partial", ["(void)__ballot_sync(0xffu, 1)", "__syncwarp(0xffu)",
                                     "(void)__shfl_sync(0xffu, lane, 0, 8)"], ids=["ballot", "syncwarp", "shuffle"])
@pytest.mark.parametrize("check", [False, True])
def test_a_sync_of_part_of_a_warp_leaves_the_next_sync_of_the_whole_warp_whole(partial, check):
    # the lanes at the sync of 8 counted as arrived at the whole warp's, which went on without them, and
    # values were read from the other of two slots: lanes 0-7 got a ballot of 0xff (until 2026-11-27)
    x = np.random.default_rng(21).integers(-5, 5, 64).astype(np.int32)
    ballots, shuffled = np.zeros(64, np.uint32), np.zeros(64, np.int32)
    RawModule(code=PARTIAL_THEN_FULL.replace("PARTIAL", partial), check=check).get_function("partial_then_full")(
        (1,), (64,), (x, ballots, shuffled))
    for warp in range(2):
        lanes = slice(32 * warp, 32 * warp + 32)
        expected = sum(1 << i for i, v in enumerate(x[lanes]) if v > 0)
        assert ballots[lanes].tolist() == [expected] * 32
        np.testing.assert_array_equal(shuffled[lanes], np.roll(x[lanes], -1))
