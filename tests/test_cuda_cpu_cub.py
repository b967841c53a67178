"""CUB's block and warp primitives on the CPU runner (nn_cuda/cuda_cpu/include/cub/, the runner's own
headers, written for it): cub::BlockReduce, BlockScan, WarpReduce and WarpScan with cub::Sum, Max,
Min, ArgMax and cuda::std::plus, through RawModule against NumPy in the plain and the checking mode,
for blocks of 32, 96 (not a power of 2) and 256 threads and a 2-D block of 16 x 12; partial blocks by
num_valid; a TempStorage reused without __syncthreads() reported as a race by the checking mode, as
CUB needs the barrier; a block of other dimensions than the template's a KernelError; what the runner
refuses (BlockRadixSort, DeviceReduce, a header of CUB's it lacks) stops the build in one line; a
block reduction as HeCBench's attention benchmark writes it; the further overloads of CUB's
documentation (prefix callbacks over items, scans with and without initial values, default
constructors); a block of fewer than 32 threads; CCCL 3's WarpReduce Max, Min and reductions of
items; and BlockLoad and BlockStore with every algorithm against NumPy's arrangement of the items. The
kernels are written here."""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build (a few seconds)

# One kernel per block shape (BX x BY threads): each block reduces and scans its own BX * BY values.
# Outputs per block: 0 float sum, 1 double sum, 2 int sum, 3 int max (Reduce), 4 int sum of the first
# num_valid threads, 5 float sum of 4 items per thread, 6 ArgMax's key, 7 int sum by cuda::std::plus,
# 8 int min of the first num_valid threads; per thread: exclusive and inclusive int sums, the block's
# int total (from every thread), a float inclusive sum, a double running maximum from an initial
# value, and the exclusive sums of 4 int items per thread.
BLOCKS = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>

#define BLOCK_KERNELS(NAME, BX, BY)                                                                        \
extern "C" __global__ void NAME##_reduce(const float* xf, const double* xd, const int* xi, int num_valid,   \
                                         float* of, double* od, int* oi)                                    \
{                                                                                                          \
    typedef cub::BlockReduce<float, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY> ReduceF;                    \
    typedef cub::BlockReduce<double, BX, cub::BLOCK_REDUCE_RAKING, BY> ReduceD;                            \
    typedef cub::BlockReduce<int, BX, cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BY> ReduceI;              \
    typedef cub::BlockReduce<cub::KeyValuePair<int, float>, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY> ReduceKV; \
    __shared__ typename ReduceF::TempStorage tf;                                                           \
    __shared__ typename ReduceD::TempStorage td;                                                           \
    __shared__ union { typename ReduceI::TempStorage i; typename ReduceKV::TempStorage kv; } tu;           \
    const int n = BX * BY, t = threadIdx.y * BX + threadIdx.x, i = blockIdx.x * n + t;                     \
    const float f = ReduceF(tf).Sum(xf[i]);                                                                \
    const double d = ReduceD(td).Sum(xd[i]);                                                               \
    const int s = ReduceI(tu.i).Sum(xi[i]);                                                                \
    __syncthreads();                                                                                       \
    const int m = ReduceI(tu.i).Reduce(xi[i], cub::Max());                                                 \
    __syncthreads();                                                                                       \
    const int partial = ReduceI(tu.i).Sum(t < num_valid ? xi[i] : 1000000, num_valid);                     \
    __syncthreads();                                                                                       \
    float items[4];                                                                                        \
    for (int k = 0; k < 4; ++k) items[k] = xf[i * 4 % (gridDim.x * n)] * (k + 1);                        \
    __syncthreads();                                                                                       \
    const float f4 = ReduceF(tf).Sum(items);                                                               \
    const cub::KeyValuePair<int, float> best = ReduceKV(tu.kv).Reduce(cub::KeyValuePair<int, float>(t, xf[i]), cub::ArgMax()); \
    __syncthreads();                                                                                       \
    const int plus = ReduceI(tu.i).Reduce(xi[i], cuda::std::plus<int>());                                  \
    __syncthreads();                                                                                       \
    const int low = ReduceI(tu.i).Reduce(xi[i], cub::Min(), num_valid);                                    \
    if (t == 0) {                                                                                          \
        of[2 * blockIdx.x] = f;                                                                            \
        of[2 * blockIdx.x + 1] = f4;                                                                       \
        od[blockIdx.x] = d;                                                                                \
        int* o = oi + 6 * blockIdx.x;                                                                      \
        o[0] = s, o[1] = m, o[2] = partial, o[3] = best.key, o[4] = plus, o[5] = low;                      \
    }                                                                                                      \
}                                                                                                          \
extern "C" __global__ void NAME##_scan(const float* xf, const double* xd, const int* xi, int* ex, int* in,   \
                                       int* total, float* inf, double* runmax, int* ex4)                    \
{                                                                                                          \
    typedef cub::BlockScan<int, BX, cub::BLOCK_SCAN_RAKING, BY> ScanI;                                     \
    typedef cub::BlockScan<float, BX, cub::BLOCK_SCAN_WARP_SCANS, BY> ScanF;                               \
    typedef cub::BlockScan<double, BX, cub::BLOCK_SCAN_RAKING_MEMOIZE, BY> ScanD;                          \
    __shared__ typename ScanI::TempStorage ti;                                                             \
    __shared__ typename ScanF::TempStorage tf;                                                             \
    __shared__ typename ScanD::TempStorage td;                                                             \
    const int n = BX * BY, t = threadIdx.y * BX + threadIdx.x, i = blockIdx.x * n + t;                     \
    ScanI(ti).ExclusiveSum(xi[i], ex[i]);                                                                  \
    __syncthreads();                                                                                       \
    int aggregate;                                                                                         \
    ScanI(ti).InclusiveSum(xi[i], in[i], aggregate);                                                       \
    total[i] = aggregate;                                                                                  \
    ScanF(tf).InclusiveSum(xf[i], inf[i]);                                                                 \
    ScanD(td).ExclusiveScan(xd[i], runmax[i], -1.0, cub::Max());                                           \
    int items[4], out[4];                                                                                  \
    for (int k = 0; k < 4; ++k) items[k] = xi[i * 4 % (gridDim.x * n) + k];                               \
    __syncthreads();                                                                                       \
    ScanI(ti).ExclusiveSum(items, out);                                                                    \
    for (int k = 0; k < 4; ++k) ex4[4 * i + k] = out[k];                                                   \
}
BLOCK_KERNELS(b32, 32, 1)
BLOCK_KERNELS(b96, 96, 1)
BLOCK_KERNELS(b256, 256, 1)
BLOCK_KERNELS(b2d, 16, 12)

// Logical warps of 32 and 16 lanes and of 8: sums, a partial sum of valid_items lanes, scans.
extern "C" __global__ void warps(const float* xf, const int* xi, int valid_items, float* sum32, int* sum16,
                                 int* inclusive, int* exclusive, int* aggregate, int* exmax8)
{
    typedef cub::WarpReduce<float> Reduce32;
    typedef cub::WarpReduce<int, 16> Reduce16;
    typedef cub::WarpScan<int> Scan32;
    typedef cub::WarpScan<int, 8> Scan8;
    __shared__ typename Reduce32::TempStorage r32[4];
    __shared__ typename Reduce16::TempStorage r16[8];
    __shared__ typename Scan32::TempStorage s32[4];
    __shared__ typename Scan8::TempStorage s8[16];
    const int i = blockIdx.x * blockDim.x + threadIdx.x, warp = threadIdx.x / 32, half = threadIdx.x / 16;
    const float f = Reduce32(r32[warp]).Sum(xf[i]);
    const int h = Reduce16(r16[half]).Sum(xi[i], valid_items);
    if (threadIdx.x % 32 == 0) sum32[i / 32] = f;
    if (threadIdx.x % 16 == 0) sum16[i / 16] = h;
    int agg;
    Scan32(s32[warp]).InclusiveSum(xi[i], inclusive[i]);
    Scan32(s32[warp]).ExclusiveSum(xi[i], exclusive[i], agg);
    aggregate[i] = agg;
    Scan8(s8[threadIdx.x / 8]).ExclusiveScan(xi[i], exmax8[i], -7, cub::Max());
}

// Two reductions through one TempStorage without the __syncthreads() CUB needs between them: the
// second one's threads store their values while the first warp may still read the first one's.
extern "C" __global__ void reused_without_sync(const int* x, int* out)
{
    typedef cub::BlockReduce<int, 128> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    const int v = x[threadIdx.x];
    const int sum = Reduce(temp).Sum(v);
    const int largest = Reduce(temp).Reduce(2 * v + 1, cub::Max());
    if (threadIdx.x == 0) {
        out[0] = sum;
        out[1] = largest;
    }
}
"""

SHAPES = {"b32": (32, 1), "b96": (96, 1), "b256": (256, 1), "b2d": (16, 12)}


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "checking"])
def blocks(request):
    return RawModule(code=BLOCKS, check=request.param)


def _inputs(blocks_, n, seed):
    rng = np.random.default_rng(seed)
    xf = rng.random(blocks_ * n).astype(np.float32)  # positive: the sums do not cancel
    xd = rng.random(blocks_ * n)
    xi = rng.integers(-1000, 1000, blocks_ * n).astype(np.int32)
    return xf, xd, xi


def _rel(got, want):
    return np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want)


@pytest.mark.parametrize("shape", SHAPES)
def test_block_reduce_sums_maxima_and_partial_blocks_match_numpy(blocks, shape):
    grid, (bx, by) = 3, SHAPES[shape]
    n = bx * by
    num_valid = n - 5 if n > 32 else 17  # a partial last warp, or part of the only one
    xf, xd, xi = _inputs(grid, n, 10 + n)
    of, od, oi = np.full(2 * grid, np.nan, np.float32), np.full(grid, np.nan), np.full(6 * grid, -1, np.int32)
    blocks.get_function(f"{shape}_reduce")((grid,), (bx, by), (xf, xd, xi, np.int32(num_valid), of, od, oi))
    f64, i64 = xf.astype(np.float64).reshape(grid, n), xi.astype(np.int64).reshape(grid, n)
    oi = oi.reshape(grid, 6)
    assert oi[:, 0].tolist() == i64.sum(1).tolist()
    assert oi[:, 1].tolist() == i64.max(1).tolist()
    assert oi[:, 2].tolist() == i64[:, :num_valid].sum(1).tolist()
    assert oi[:, 3].tolist() == f64.argmax(1).tolist()  # the first position of the largest value
    assert oi[:, 4].tolist() == i64.sum(1).tolist()
    assert oi[:, 5].tolist() == i64[:, :num_valid].min(1).tolist()
    # float: each warp sums its lanes by a tree of 5 levels, then the first warp the warps' sums by a
    # tree of up to 3 (8 warps), so each sum rounds at most 8 times, 8 * 2^-24 = 4.8e-7 relative for
    # positive terms (measured <= 6.2e-8 for every shape); double likewise 8 * 2^-53 = 8.9e-16
    # (measured <= 1.3e-16)
    assert _rel(of[0::2], f64.sum(1)) < 1e-6
    assert _rel(od, xd.reshape(grid, n).sum(1)) < 2e-15
    # 4 items per thread: element 4t mod size times 1, 2, 3 and 4 (x * 3 rounds), 3 more roundings
    # in the thread: 12 * 2^-24 = 7.2e-7 (measured <= 5.5e-8)
    base = xf.astype(np.float64)[(np.arange(grid * n) * 4) % (grid * n)].reshape(grid, n)
    assert _rel(of[1::2], base.sum(1) * 10) < 1.2e-6


@pytest.mark.parametrize("shape", SHAPES)
def test_block_scans_match_numpy(blocks, shape):
    grid, (bx, by) = 2, SHAPES[shape]
    n = bx * by
    xf, xd, xi = _inputs(grid, n, 20 + n)
    ex, inc, total = (np.full(grid * n, -1, np.int32) for _ in range(3))
    inf, runmax = np.full(grid * n, np.nan, np.float32), np.full(grid * n, np.nan)
    ex4 = np.full(4 * grid * n, -1, np.int32)
    blocks.get_function(f"{shape}_scan")((grid,), (bx, by), (xf, xd, xi, ex, inc, total, inf, runmax, ex4))
    i64 = xi.astype(np.int64).reshape(grid, n)
    cum = np.cumsum(i64, 1)
    assert inc.tolist() == cum.ravel().tolist()
    assert ex.tolist() == (cum - i64).ravel().tolist()
    assert total.tolist() == np.repeat(cum[:, -1], n).tolist()
    # each prefix of up to 256 positive terms: a segment's total (7 roundings), the scan of the
    # segments' totals (5), the prefix added (1) and the segment's values before it (7): 20 * 2^-24 =
    # 1.2e-6 (measured <= 6.4e-8)
    assert _rel(inf, np.cumsum(xf.astype(np.float64).reshape(grid, n), 1).ravel()) < 1.5e-6
    d = xd.reshape(grid, n)
    want = np.concatenate([np.full((grid, 1), -1.0), np.maximum.accumulate(np.maximum(d, -1.0), 1)[:, :-1]], 1)
    assert runmax.tolist() == want.ravel().tolist()  # a maximum is exact
    items = xi.astype(np.int64)[((np.arange(grid * n) * 4) % (grid * n))[:, None] + np.arange(4)].reshape(grid, 4 * n)
    assert ex4.tolist() == (np.cumsum(items, 1) - items).ravel().tolist()


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_warp_reduce_and_scan_over_logical_warps_match_numpy(blocks, check):
    module = blocks if blocks.check == check else RawModule(code=BLOCKS, check=check)
    grid, threads, valid = 2, 128, 11
    rng = np.random.default_rng(5)
    xf = rng.random(grid * threads).astype(np.float32)
    xi = rng.integers(-50, 50, grid * threads).astype(np.int32)
    sum32, sum16 = np.full(grid * 4, np.nan, np.float32), np.full(grid * 8, -1, np.int32)
    inclusive, exclusive, aggregate, exmax8 = (np.full(grid * threads, -1, np.int32) for _ in range(4))
    module.get_function("warps")((grid,), (threads,), (xf, xi, np.int32(valid), sum32, sum16, inclusive,
                                                         exclusive, aggregate, exmax8))
    by32, by16, by8 = xi.reshape(-1, 32).astype(np.int64), xi.reshape(-1, 16), xi.reshape(-1, 8)
    assert sum16.tolist() == by16[:, :valid].sum(1).tolist()
    assert inclusive.tolist() == np.cumsum(by32, 1).ravel().tolist()
    assert exclusive.tolist() == (np.cumsum(by32, 1) - by32).ravel().tolist()
    assert aggregate.tolist() == np.repeat(by32.sum(1), 32).tolist()
    running = np.maximum.accumulate(np.maximum(by8, -7), 1)
    assert exmax8.tolist() == np.concatenate([np.full((len(by8), 1), -7), running[:, :-1]], 1).ravel().tolist()
    # a tree of 5 levels over 32 positive floats: 5 * 2^-24 = 3e-7 (measured 3.2e-8)
    assert _rel(sum32, xf.astype(np.float64).reshape(-1, 32).sum(1)) < 4e-7


def test_block_reduce_measured_errors_are_those_the_tolerances_allow(blocks):
    """The figures the tolerances above quote, for the record: 256 floats a block, 40 blocks."""
    grid, n = 40, 256
    xf, xd, xi = _inputs(grid, n, 99)
    of, od, oi = np.full(2 * grid, np.nan, np.float32), np.full(grid, np.nan), np.full(6 * grid, -1, np.int32)
    blocks.get_function("b256_reduce")((grid,), (n,), (xf, xd, xi, np.int32(n), of, od, oi))
    assert _rel(of[0::2], xf.astype(np.float64).reshape(grid, n).sum(1)) < 3e-7
    assert _rel(od, xd.reshape(grid, n).sum(1)) < 5e-16


def test_a_temp_storage_reused_without_syncthreads_is_reported_as_a_race():
    x = np.random.default_rng(6).integers(0, 100, 128).astype(np.int32)
    out = np.full(2, -1, np.int32)
    RawModule(code=BLOCKS).get_function("reused_without_sync")((1,), (128,), (x, out))  # runs in order here
    with pytest.raises(KernelError, match=r"reused_without_sync: the result depends on the order in which the "
                                          r"threads of a block run between barriers.*__syncthreads\(\) is missing"):
        RawModule(code=BLOCKS, check=True).get_function("reused_without_sync")((1,), (128,), (x, out))


def test_a_block_of_other_dimensions_than_the_templates_is_a_kernel_error(blocks):
    xf, xd, xi = _inputs(1, 128, 7)
    args = (xf, xd, xi, np.int32(96), np.zeros(2, np.float32), np.zeros(1), np.zeros(6, np.int32))
    with pytest.raises(KernelError, match=r"b96_reduce: cub::BlockReduce with BLOCK_DIM_X = 96, BLOCK_DIM_Y = 1, "
                                          r"BLOCK_DIM_Z = 1 in thread \(\d+, 0, 0\) of block \(0, 0, 0\), a block of "
                                          r"\(128, 1, 1\) threads: CUB's block collectives take the block's dimensions"):
        blocks.get_function("b96_reduce")((1,), (128,), args)


@pytest.mark.parametrize("use, message", [
    ("typedef cub::BlockRadixSort<int, 128, 4> Sort;\n    __shared__ typename Sort::TempStorage temp;",
     "the CPU runner does not support cub::BlockRadixSort (CUB's block radix sort)"),
    ("typedef cub::BlockExchange<int, 128, 4> Exchange;\n    Exchange::TempStorage* temp = 0;",
     "the CPU runner does not support cub::BlockExchange (CUB's block exchanges)"),
    ("size_t bytes = 0;\n    cub::DeviceReduce::Sum(nullptr, bytes, out, out, 4);",
     "the CPU runner does not support cub::DeviceReduce (CUB's device-wide algorithms, which host code launches"),
    # xgboost's LDGIterator: a CUB template used as a type, which gave the compiler's errors
    ("typedef cub::UnitWord<int>::DeviceWord Word;\n    Word w{};\n    (void)w;",
     "the CPU runner does not support cub::UnitWord (its CUB is a subset of CUB's"),
])
def test_what_the_runner_lacks_of_cub_stops_the_build_in_one_line(use, message):
    code = ('#include <cub/cub.cuh>\nextern "C" __global__ void uses(int* out)\n{\n    ' + use
            + "\n    out[0] = 1;\n}\n")
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code).get_function("uses")
    said = str(error.value)
    assert "\n" not in said
    assert said.startswith("(RawModule code):") and message in said


def test_cubs_headers_the_runner_has_build_and_one_it_lacks_names_cub():
    body = 'extern "C" __global__ void k(int* out) { out[0] = 1; }\n'
    # the headers of primitives the runner lacks build too, and a use stops the build (bitsandbytes includes
    # block_radix_sort.cuh and block_discontinuity.cuh in every kernel file, using neither): until 2026-11-28
    # their #include did
    for header in ("cub/cub.cuh", "cub/block/block_reduce.cuh", "cub/block/block_scan.cuh", "cub/warp/warp_reduce.cuh",
                   "cub/warp/warp_scan.cuh", "cub/thread/thread_operators.cuh", "cub/thread/thread_search.cuh",
                   "cub/util_type.cuh", "cub/block/block_load.cuh", "cub/block/block_store.cuh",
                   "cub/block/block_radix_sort.cuh", "cub/block/block_discontinuity.cuh",
                   "cub/block/block_exchange.cuh", "cub/warp/warp_load.cuh"):
        out = np.zeros(1, np.int32)
        RawModule(code=f"#include <{header}>\n" + body).get_function("k")((1,), (1,), (out,))
        assert out.tolist() == [1]
    code = "#include <cub/device/device_radix_sort.cuh>\n" + body
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code).get_function("k")
    assert str(error.value) == (
        "(RawModule code):1: the CPU runner does not support this part of CUB (it has CUB's block and warp "
        "reductions and scans, its block loads and stores, and its binary searches, only): "
        "#include <cub/device/device_radix_sort.cuh> has no counterpart here (a GPU build finds it among CUDA's or "
        "CuPy's headers where it is one of them; NVRTC says \"cannot open source file\" where it is none)")


# cub::BlockLoad and BlockStore with each algorithm: 64 threads of 4 items, `valid` of a block's 256 items
# loaded (the others -1), each thread's items as loaded going to `seen`; then the other block's items
# loaded and stored doubled. REUSE_WITHOUT_BARRIER loads the second time through the TempStorage with no
# __syncthreads() after the first, which CUB forbids.
BLOCK_LOADS = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

template <cub::BlockLoadAlgorithm LOAD, cub::BlockStoreAlgorithm STORE>
__global__ void load_store(const float* in, float* out, float* seen, int valid)
{
    using Load = cub::BlockLoad<float, 64, 4, LOAD>;
    using Store = cub::BlockStore<float, 64, 4, STORE>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
    } temp;
    float items[4];
    const int offset = blockIdx.x * 256, other = (1 - blockIdx.x) * 256;
    Load(temp.load).Load(in + offset, items, valid, -1.0f);
    for (int i = 0; i < 4; ++i) {
        seen[offset + threadIdx.x * 4 + i] = items[i];
    }
    if (!REUSE_WITHOUT_BARRIER) {
        __syncthreads();
    }
    Load(temp.load).Load(in + other, items, valid, -1.0f);
    for (int i = 0; i < 4; ++i) {
        items[i] *= 2.0f;
    }
    __syncthreads();
    Store(temp.store).Store(out + offset, items, valid);
}
"""
ALGORITHMS = ["DIRECT", "STRIPED", "VECTORIZE", "TRANSPOSE", "WARP_TRANSPOSE", "WARP_TRANSPOSE_TIMESLICED"]


@pytest.mark.parametrize("check", [False, True])
def test_block_loads_and_stores_give_cubs_arrangements_with_every_algorithm(check):
    # refused until 2026-11-28: bitsandbytes' quantize kernels load with BLOCK_LOAD_WARP_TRANSPOSE
    names = [f"load_store<cub::BLOCK_LOAD_{a}, cub::BLOCK_STORE_{a}>" for a in ALGORITHMS]
    module = RawModule(code=BLOCK_LOADS, options=("-DREUSE_WITHOUT_BARRIER=0",), name_expressions=names, check=check)
    x = np.random.default_rng(11).standard_normal(512).astype(np.float32)
    for algorithm, name in zip(ALGORITHMS, names):
        out, seen = np.full(512, np.nan, np.float32), np.full(512, np.nan, np.float32)
        module.get_function(name)((2,), (64,), (x, out, seen, np.int32(250)))
        loaded = np.where(np.arange(256) < 250, x.reshape(2, 256), -1.0).astype(np.float32)
        # thread t holds items 4t .. 4t + 3 (blocked), or t, t + 64, ... (striped)
        held = loaded.reshape(2, 4, 64).transpose(0, 2, 1) if algorithm == "STRIPED" else loaded.reshape(2, 64, 4)
        np.testing.assert_array_equal(seen.reshape(2, 64, 4), held, err_msg=algorithm)
        stored = out.reshape(2, 256)
        np.testing.assert_array_equal(stored[:, :250], 2 * x.reshape(2, 256)[::-1, :250], err_msg=algorithm)
        assert np.isnan(stored[:, 250:]).all(), algorithm  # past valid_items: not written
        # a block past the end of the input (valid = n - blockIdx.x * 256 < 0): nothing loaded nor stored;
        # until 2026-11-28 a negative count moved the whole tile
        out, seen = np.full(512, np.nan, np.float32), np.full(512, np.nan, np.float32)
        module.get_function(name)((2,), (64,), (x, out, seen, np.int32(-6)))
        assert (seen == -1).all() and np.isnan(out).all(), algorithm


# HOOMD-blue's WarpTools.cuh sizes its warps by CUB's architecture macros (util_arch.cuh's, which every
# CUB header brings): a build error until 2026-11-28
ARCH_MACROS = r"""
#include <cub/warp/warp_reduce.cuh>
template <typename T, int WARP = CUB_PTX_WARP_THREADS, int ARCH = CUB_PTX_ARCH>
__device__ T warp_sum(T x)
{
    typename cub::WarpReduce<T, WARP, ARCH>::TempStorage storage;
    return cub::WarpReduce<T, WARP, ARCH>(storage).Sum(x);
}
extern "C" __global__ void sums(float* out)
{
    const float total = warp_sum(1.0f);
    if (threadIdx.x == 0) out[0] = total + 1000 * CUB_PTX_ARCH + CUB_WARP_THREADS(0) * CUB_PTX_LOG_SMEM_BANKS;
}
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_cubs_architecture_macros_are_sm_80s(backend):
    out = np.zeros(1, np.float32)
    RawModule(code=ARCH_MACROS, backend=backend).get_function("sums")((1,), (32,), (out,))
    assert out[0] == 32 + 800_000 + 32 * 5


WARP_SCANS = r"""
#include <cub/warp/warp_scan.cuh>

// WarpScan's Scan with an initial value, both outputs, on logical warps of WARP lanes
template <int WARP>
__global__ void both_scans(const int* x, int* inclusive, int* exclusive, int initial)
{
    __shared__ typename cub::WarpScan<int, WARP>::TempStorage storage[64 / WARP];
    cub::WarpScan<int, WARP>(storage[threadIdx.x / WARP]).Scan(x[threadIdx.x], inclusive[threadIdx.x],
                                                              exclusive[threadIdx.x], initial, cub::Sum());
}
"""


@pytest.mark.parametrize("warp", [32, 8])
def test_warp_scans_initial_value_seeds_both_outputs_as_cubs(warp):
    # CUB's GPU code adds the initial value to the inclusive output too (its catch2_test_warp_scan.cu
    # expects so); it was left out of it until 2026-11-28
    name = f"both_scans<{warp}>"
    x = np.random.default_rng(2).integers(-50, 50, 64).astype(np.int32)
    inclusive, exclusive = np.full(64, -999, np.int32), np.full(64, -999, np.int32)
    RawModule(code=WARP_SCANS, name_expressions=(name,)).get_function(name)((1,), (64,), (x, inclusive, exclusive,
                                                                                          np.int32(10)))
    sums = np.cumsum(x.reshape(-1, warp), axis=1)
    np.testing.assert_array_equal(inclusive, (10 + sums).reshape(-1))
    np.testing.assert_array_equal(exclusive, (10 + sums - x.reshape(-1, warp)).reshape(-1))


def test_a_transposing_load_and_store_sharing_storage_without_a_barrier_is_reported():
    # the second load's exchange overwrites what slower threads still read of the first: CUB needs the barrier
    name = "load_store<cub::BLOCK_LOAD_TRANSPOSE, cub::BLOCK_STORE_TRANSPOSE>"
    module = RawModule(code=BLOCK_LOADS, options=("-DREUSE_WITHOUT_BARRIER=1",), name_expressions=(name,), check=True)
    x = np.arange(512, dtype=np.float32)
    with pytest.raises(KernelError, match=r"load_store<.*>: the result depends on the order .*args\[2\]"):
        module.get_function(name)((2,), (64,), (x, np.zeros(512, np.float32), np.zeros(512, np.float32),
                                                np.int32(256)))


# As HeCBench's attention benchmark (src/attention-cuda/kernels.h, zjin-lcf/HeCBench at f27000a5)
# reduces a row's dot product, written here after it: one block of 256 threads per key row, a strided
# partial dot product per thread, cub::BlockReduce<float, 256>'s Sum, thread 0 storing the row's
# score and adding its exponential to a global sum.
ATTENTION = r"""
#include <cub/cub.cuh>

__global__ void row_scores(const float* __restrict__ key, const float* __restrict__ query,
                           float* __restrict__ dot_product, float* __restrict__ exp_sum, const int n, const int d)
{
    const int row = blockIdx.x;
    float partial = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        partial += key[row * d + j] * query[j];
    }
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage temp_storage;
    partial = BlockReduce(temp_storage).Sum(partial);
    if (threadIdx.x == 0) {
        dot_product[row] = partial;
        atomicAdd(exp_sum, __expf(partial));
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_an_attention_row_reduction_as_hecbench_writes_it(check):
    n, d = 40, 1000
    rng = np.random.default_rng(8)
    key = (rng.random((n, d)) * 0.01).astype(np.float32)
    query = rng.random(d).astype(np.float32)
    dot, total = np.full(n, np.nan, np.float32), np.zeros(1, np.float32)
    kernel = RawModule(code=ATTENTION, check=check, name_expressions=["row_scores"]).get_function("row_scores")
    kernel((n,), (256,), (key, query, dot, total, np.int32(n), np.int32(d)))
    want = key.astype(np.float64) @ query.astype(np.float64)
    # up to 4 float products and adds per thread, a tree of 5 over a warp's lanes and one of 3 over
    # the 8 warps: at most 16 roundings of positive terms, 16 * 2^-24 = 9.5e-7 (measured 4.5e-8); the
    # exponentials' sum, atomically in any order: 40 more (measured 5.5e-8)
    assert _rel(dot, want) < 1.5e-6
    assert abs(total[0] - np.exp(want).sum()) / np.exp(want).sum() < 3e-6


# The overloads of CUB's documentation and examples the runner gained on 2026-11-27 (each a build
# error before): BlockScan over 2 items per thread with a running prefix callback across 3 tiles (CUB's
# example_block_scan), ExclusiveScan over items without an initial value, InclusiveScan over items
# with one, the single-item ExclusiveScan(x, y, op, aggregate), the default constructors with CUB's
# private TempStorage, and WarpScan's ExclusiveScan(x, y, op, aggregate) and InclusiveScan with an
# initial value. Outputs per thread and tile: 0-1 the exclusive sums with the running prefix, 2-3
# the exclusive running maximum (thread 0's first left out: undefined in CUB), 4-5 the inclusive
# maximum from -1000, 6 the single-item exclusive maximum, 7 its aggregate, 8 a block sum by a
# default-constructed BlockReduce (thread 0), 9 a block inclusive sum by a default-constructed
# BlockScan, 10 the warp's exclusive maximum, 11 the warp's aggregate, 12 the warp's inclusive max
# from -1000.
OVERLOADS = r"""
#include <cub/cub.cuh>

struct RunningTotal {  // CUB's example: the prefix of each tile is the total of the tiles before it
    int total;
    __device__ int operator()(int tile_total) { const int before = total; total += tile_total; return before; }
};

extern "C" __global__ void overloads(const int* x, int* out, int tiles)
{
    using Scan = cub::BlockScan<int, 64>;
    using WarpScan = cub::WarpScan<int>;
    __shared__ typename Scan::TempStorage scan_storage;
    __shared__ typename WarpScan::TempStorage warp_storage[2];
    RunningTotal prefix{0};
    for (int tile = 0; tile < tiles; ++tile) {
        const int* in = x + tile * 128;
        int* o = out + (tile * 64 + threadIdx.x) * 13;
        int items[2] = {in[2 * threadIdx.x], in[2 * threadIdx.x + 1]}, sums[2], maxima[2], from[2];
        Scan(scan_storage).ExclusiveSum(items, sums, prefix);
        __syncthreads();
        Scan(scan_storage).ExclusiveScan(items, maxima, cub::Max());
        __syncthreads();
        Scan(scan_storage).InclusiveScan(items, from, -1000, cub::Max());
        __syncthreads();
        int single, aggregate;
        Scan(scan_storage).ExclusiveScan(items[0], single, cub::Max(), aggregate);
        const int block_sum = cub::BlockReduce<int, 64>().Sum(items[1]);
        __syncthreads();
        int inclusive;
        cub::BlockScan<int, 64>().InclusiveSum(items[1], inclusive);
        int warp_max, warp_total, warp_from;
        WarpScan(warp_storage[threadIdx.x / 32]).ExclusiveScan(items[0], warp_max, cub::Max(), warp_total);
        WarpScan(warp_storage[threadIdx.x / 32]).InclusiveScan(items[0], warp_from, -1000, cub::Max());
        const int values[13] = {sums[0], sums[1], maxima[0], maxima[1], from[0], from[1], single, aggregate,
                                block_sum, inclusive, warp_max, warp_total, warp_from};
        for (int k = 0; k < 13; ++k) o[k] = values[k];
        __syncthreads();
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_the_overloads_of_cubs_documentation_match_numpy(check):
    tiles = 3
    x = np.random.default_rng(11).integers(-50, 50, tiles * 128).astype(np.int32)
    out = np.full((tiles, 64, 13), -7777, np.int32)
    RawModule(code=OVERLOADS, check=check).get_function("overloads")((1,), (64,), (x, out, np.int32(tiles)))
    for tile in range(tiles):
        items = x[tile * 128:(tile + 1) * 128]
        got = out[tile]
        exclusive_sum = np.concatenate([[0], np.cumsum(items)[:-1]]) + x[:tile * 128].sum()
        np.testing.assert_array_equal(got[:, 0:2].reshape(-1), exclusive_sum)
        running_max = np.maximum.accumulate(items)
        np.testing.assert_array_equal(got[:, 2:4].reshape(-1)[1:], running_max[:-1])
        np.testing.assert_array_equal(got[:, 4:6].reshape(-1), np.maximum.accumulate(np.maximum(items, -1000)))
        firsts, seconds = items[0::2], items[1::2]
        np.testing.assert_array_equal(got[1:, 6], np.maximum.accumulate(firsts)[:-1])
        assert (got[:, 7] == firsts.max()).all()
        assert got[0, 8] == seconds.sum()
        np.testing.assert_array_equal(got[:, 9], np.cumsum(seconds))
        for warp in range(2):
            lanes = firsts[32 * warp:32 * (warp + 1)]
            np.testing.assert_array_equal(got[32 * warp + 1:32 * (warp + 1), 10], np.maximum.accumulate(lanes)[:-1])
            assert (got[32 * warp:32 * (warp + 1), 11] == lanes.max()).all()
            np.testing.assert_array_equal(got[32 * warp:32 * (warp + 1), 12], np.maximum.accumulate(lanes))


def test_a_block_reduction_in_a_block_of_fewer_than_32_threads_reads_no_absent_lane(capfd):
    # the runner's own reduction shuffled down from lanes 16-31, which a block of 16 has not: a note
    # of an undefined lane read, blaming the kernel, where the result was right
    code = ('#include <cub/cub.cuh>\nextern "C" __global__ void k(const int* x, int* out)\n{\n'
            '    using Reduce = cub::BlockReduce<int, 16>;\n    __shared__ typename Reduce::TempStorage temp;\n'
            '    const int sum = Reduce(temp).Sum(x[threadIdx.x]);\n    if (threadIdx.x == 0) out[0] = sum;\n}\n')
    x, out = np.arange(16, dtype=np.int32), np.zeros(1, np.int32)
    RawModule(code=code, check=False).get_function("k")((1,), (16,), (x, out))
    assert out[0] == 120
    assert "lane" not in capfd.readouterr().err


# CCCL 3's WarpReduce Max and Min (of a value, and of the first valid_items lanes) and its reductions
# of a thread's items (Sum, Max, Min, Reduce over an array, folded in the thread first), in logical
# warps of 32 and 16 lanes; a build error before 2026-11-27. Outputs per logical warp of 32: 0 max,
# 1 min, 2 max of the first 20 lanes, 3 sum of 3 items per lane, 4 max of them, 5 min of them by
# Reduce with cub::Min; per logical warp of 16: 6 min of the first 9 lanes.
WARP_EXTREMES = r"""
#include <cub/cub.cuh>

extern "C" __global__ void warp_extremes(const int* x, int* out)
{
    using Warp32 = cub::WarpReduce<int>;
    using Warp16 = cub::WarpReduce<int, 16>;
    __shared__ typename Warp32::TempStorage w32[2];
    __shared__ typename Warp16::TempStorage w16[4];
    const int i = blockIdx.x * blockDim.x + threadIdx.x, warp = threadIdx.x / 32;
    const int items[3] = {x[i], 2 * x[i] - 5, -x[i]};
    const int values[6] = {Warp32(w32[warp]).Max(x[i]), Warp32(w32[warp]).Min(x[i]),
                           Warp32(w32[warp]).Max(x[i], 20), Warp32(w32[warp]).Sum(items),
                           Warp32(w32[warp]).Max(items), Warp32(w32[warp]).Reduce(items, cub::Min())};
    const int low16 = Warp16(w16[threadIdx.x / 16]).Min(x[i], 9);
    if (threadIdx.x % 32 == 0) for (int k = 0; k < 6; ++k) out[8 * (i / 32) + k] = values[k];
    if (threadIdx.x % 16 == 0) out[8 * (i / 32) + 6 + (i / 16) % 2] = low16;
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_warp_reduce_maxima_minima_and_items_match_numpy(check):
    x = np.random.default_rng(12).integers(-1000, 1000, 128).astype(np.int32)
    out = np.full((4, 8), -7777, np.int32)
    RawModule(code=WARP_EXTREMES, check=check).get_function("warp_extremes")((2,), (64,), (x, out))
    lanes = x.astype(np.int64).reshape(4, 32)
    items = np.stack([lanes, 2 * lanes - 5, -lanes], axis=2)
    np.testing.assert_array_equal(out[:, 0], lanes.max(1))
    np.testing.assert_array_equal(out[:, 1], lanes.min(1))
    np.testing.assert_array_equal(out[:, 2], lanes[:, :20].max(1))
    np.testing.assert_array_equal(out[:, 3], items.sum((1, 2)))
    np.testing.assert_array_equal(out[:, 4], items.max((1, 2)))
    np.testing.assert_array_equal(out[:, 5], items.min((1, 2)))
    np.testing.assert_array_equal(out[:, 6:8], lanes.reshape(4, 2, 16)[:, :, :9].min(2))


def test_a_block_reduce_in_dynamic_shared_memory_sized_as_cub_sizes_it():
    # CUB's example_block_reduce_dyn_smem places the TempStorage in dynamic shared memory sized on
    # the host; CUB's warp reductions of 128 ints keep a value per warp, about 24 bytes. Until
    # 2026-11-27 the runner's TempStorage held a value per thread (512 bytes), and the checking mode
    # reported a write past the launch's shared memory at that size.
    code = ('#include <cub/block/block_reduce.cuh>\nextern "C" __global__ void k(const int* x, int* out)\n{\n'
            '    using Reduce = cub::BlockReduce<int, 128>;\n    extern __shared__ __align__(16) char smem[];\n'
            '    const int sum = Reduce(reinterpret_cast<Reduce::TempStorage&>(smem)).Sum(x[threadIdx.x]);\n'
            '    if (threadIdx.x == 0) out[0] = sum;\n}\n')
    x = np.random.default_rng(15).integers(-1000, 1000, 128).astype(np.int32)
    for check in (False, True):
        out = np.zeros(1, np.int32)
        RawModule(code=code, check=check).get_function("k")((1,), (128,), (x, out), shared_mem=24)
        assert out[0] == x.sum()


ROW_SUM_IN_A_SMALLER_BLOCK = r"""
#include <cub/cub.cuh>
// vLLM's rms_norm: a BlockReduce of 1024 threads in a block of the row's size, its num_valid that size
extern "C" __global__ void row_sums(const float* x, float* sums, int columns)
{
    using Reduce = cub::BlockReduce<float, 1024>;
    __shared__ Reduce::TempStorage storage;
    const float total = Reduce(storage).Reduce(x[blockIdx.x * columns + threadIdx.x], cub::Sum{}, blockDim.x);
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_block_reduce_of_num_valid_threads_runs_in_a_smaller_block(check):
    # CUB's warp reductions read the values of the warps that exist only: the sum is exact on a GPU,
    # where the runner reported "a GPU leaves the result undefined"
    x = np.random.default_rng(2).standard_normal((3, 40)).astype(np.float32)
    sums = np.full(3, np.nan, np.float32)
    RawModule(code=ROW_SUM_IN_A_SMALLER_BLOCK, check=check).get_function("row_sums")((3,), (40,), (x, sums, 40))
    want = x.astype(np.float64).sum(axis=1)
    assert np.linalg.norm(sums - want) / np.linalg.norm(want) < 1e-6  # 40 float32 additions: 1.3e-7 measured
    with pytest.raises(KernelError, match=r"a block of \(40, 2, 1\) threads"):  # a 2-D block is no such one
        RawModule(code=ROW_SUM_IN_A_SMALLER_BLOCK, check=check).get_function("row_sums")((1,), (40, 2), (x, sums, 40))


CUSTOM_SUMS = r"""
#include <cub/cub.cuh>
// A struct with operator+ and no constructor from an int: CUB's exclusive sums start from T{}
struct Pair {
    int a, b;
    __device__ Pair operator+(const Pair& other) const { return Pair{a + other.a, b + other.b}; }
};
extern "C" __global__ void exclusive_pairs(const int* x, int* block_out, int* warp_out)
{
    __shared__ cub::BlockScan<Pair, 64>::TempStorage block_storage;
    __shared__ cub::WarpScan<Pair>::TempStorage warp_storage[2];
    const Pair mine{x[threadIdx.x], 2 * x[threadIdx.x]};
    Pair block_prefix, warp_prefix;
    cub::BlockScan<Pair, 64>(block_storage).ExclusiveSum(mine, block_prefix);
    cub::WarpScan<Pair>(warp_storage[threadIdx.x / 32]).ExclusiveSum(mine, warp_prefix);
    block_out[threadIdx.x] = block_prefix.a + 1000 * block_prefix.b;
    warp_out[threadIdx.x] = warp_prefix.a + 1000 * warp_prefix.b;
}
// CUB's WarpReduce::Sum without valid_items in a partial last warp reads lanes the block has not
extern "C" __global__ void warp_sums(const int* x, int* out)
{
    __shared__ cub::WarpReduce<int>::TempStorage storage[2];
    const int warp = threadIdx.x / 32;
    const int sum = VALID ? cub::WarpReduce<int>(storage[warp]).Sum(x[threadIdx.x], blockDim.x - 32 * warp)
                          : cub::WarpReduce<int>(storage[warp]).Sum(x[threadIdx.x]);
    if (threadIdx.x % 32 == 0) out[warp] = sum;
}
// CUB's warp aggregate is the last lane's inclusive value: lane 31, which a partial warp has not
extern "C" __global__ void warp_totals(const int* x, int* out)
{
    __shared__ cub::WarpScan<int>::TempStorage storage[2];
    int inclusive, total;
    cub::WarpScan<int>(storage[threadIdx.x / 32]).InclusiveSum(x[threadIdx.x], inclusive, total);
    if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = total;
}
// CCCL's block tests rank threads by cub::RowMajorTid; CUB_MAX is CUB 2.x's macro
extern "C" __global__ void ranks(int* out)
{
    out[cub::RowMajorTid(blockDim.x, blockDim.y, 1)] = CUB_MAX(threadIdx.y, threadIdx.x);
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_exclusive_sums_of_a_struct_without_a_constructor_from_int_build_and_match_numpy(check):
    # the runner's CUB started them from T(0), which no such struct has (until 2026-11-27); so did a
    # -D macro named as one of its own identifiers (SEGMENT, Items, Layout, ...) stop its headers
    options = ("-DVALID=1", "-DSEGMENT=4", "-DItems=2", "-DLayout=3", "-DPrefix=4", "-DShuffle=5")
    module = RawModule(code=CUSTOM_SUMS, options=options, check=check)
    x = np.arange(1, 65, dtype=np.int32)
    block_out, warp_out = np.zeros(64, np.int32), np.zeros(64, np.int32)
    module.get_function("exclusive_pairs")((1,), (64,), (x, block_out, warp_out))
    prefix = np.concatenate([[0], np.cumsum(x)[:-1]])
    warp_prefix = np.concatenate([prefix[:32], prefix[32:] - prefix[32]])
    np.testing.assert_array_equal(block_out, prefix + 1000 * 2 * prefix)
    np.testing.assert_array_equal(warp_out, warp_prefix + 1000 * 2 * warp_prefix)
    out = np.zeros(2, np.int32)
    module.get_function("warp_sums")((1,), (40,), (np.ones(40, np.int32), out))  # with valid_items: right
    assert out.tolist() == [32, 8]
    ranks = np.full(32, -1, np.int32)
    module.get_function("ranks")((1,), (8, 4), (ranks,))
    np.testing.assert_array_equal(ranks, np.maximum.outer(np.arange(4), np.arange(8)).reshape(-1))


def test_a_warp_reduce_without_valid_items_in_a_partial_warp_reads_absent_lanes_as_a_gpu_does():
    # the runner's CUB added the lane's own value there, 32 where 8 lanes hold 1, with no report, until
    # 2026-11-27; CUB's shuffles read lanes the block has not, undefined on a GPU
    module = RawModule(code=CUSTOM_SUMS, options=("-DVALID=0",), check=True)
    with pytest.raises(KernelError, match=r"warp_sums: thread \(\d+, 0, 0\) of block \(0, 0, 0\), lane \d+ of its "
                                          r"warp, shuffles with mask 0x000000ff from lane \d+, which the block does "
                                          r"not have .* changes the result \(args\[1\]\[1\] is"):
        module.get_function("warp_sums")((1,), (40,), (np.ones(40, np.int32), np.zeros(2, np.int32)))
    # and so does WarpScan's aggregate there (the sum of the 8 lanes the block has, until 2026-11-27)
    with pytest.raises(KernelError, match=r"warp_totals: thread \(\d+, 0, 0\) of block \(0, 0, 0\), lane \d+ of its "
                                          r"warp, shuffles with mask 0x000000ff from lane 31, which the block does "
                                          r"not have"):
        module.get_function("warp_totals")((1,), (40,), (np.ones(40, np.int32), np.zeros(2, np.int32)))
    totals = np.zeros(2, np.int32)
    module.get_function("warp_totals")((1,), (64,), (np.ones(64, np.int32), totals))  # whole warps: right
    assert totals.tolist() == [32, 32]


def test_a_name_of_cubs_the_runner_lacks_stops_the_build_in_one_line():
    # g++'s "is not a member of 'cub'" alone until 2026-11-27
    code = ('#include <cub/cub.cuh>\nextern "C" __global__ void k(int* out)\n'
            '{\n    out[0] = cub::ThreadReduce(out, cub::Sum());\n}\n')
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):4: the CPU runner does not support "
                                               r"cub::ThreadReduce \(its CUB is a subset of CUB's"):
        RawModule(code=code).get_function("k")


BOUNDS = r"""
#include <cub/thread/thread_search.cuh>
// Each thread finds where its query goes among the sorted keys, as DGL's row-wise sampling with
// replacement picks an edge from a prefix sum of weights with cub::UpperBound
extern "C" __global__ void bounds(const float* keys, int n, const float* queries, int* lower, long long* upper)
{
    int i = threadIdx.x;
    lower[i] = cub::LowerBound(keys, n, queries[i]);
    upper[i] = cub::UpperBound(keys, (long long)n, queries[i]);
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_lower_and_upper_bounds_match_numpys_searchsorted(check):
    # cub::UpperBound stopped the build of DGL's sampling kernel until 2026-11-27
    keys = np.array([0.5, 1.0, 1.0, 1.0, 2.5, 4.0, 4.0], np.float32)
    queries = np.array([-1.0, 0.5, 0.7, 1.0, 2.5, 3.0, 4.0, 9.0], np.float32)
    lower, upper = np.full(8, -1, np.int32), np.full(8, -1, np.int64)
    RawModule(code=BOUNDS, check=check).get_function("bounds")((1,), (8,), (keys, np.int32(7), queries, lower, upper))
    assert lower.tolist() == np.searchsorted(keys, queries, side="left").tolist()
    assert upper.tolist() == np.searchsorted(keys, queries, side="right").tolist()
    for n in (0, 1):  # no keys, one key: the ends of the search
        RawModule(code=BOUNDS, check=check).get_function("bounds")((1,), (8,), (keys, np.int32(n), queries, lower, upper))
        assert lower.tolist() == np.searchsorted(keys[:n], queries, side="left").tolist()
        assert upper.tolist() == np.searchsorted(keys[:n], queries, side="right").tolist()

SCAN_IN_DYNAMIC_SHARED = r"""
#include <cub/block/block_scan.cuh>
// A block scan in dynamic shared memory of the size CUB's TempStorage has on a GPU (32 bytes for
// ints over 128 threads with warp scans)
extern "C" __global__ void scan_in_dynamic(const int* x, int* out, unsigned* size)
{
    typedef cub::BlockScan<int, 128, cub::BLOCK_SCAN_WARP_SCANS> Scan;
    extern __shared__ __align__(16) unsigned char smem[];
    int inclusive;
    Scan(*reinterpret_cast<Scan::TempStorage*>(smem)).InclusiveSum(x[threadIdx.x], inclusive);
    out[threadIdx.x] = inclusive;
    if (threadIdx.x == 0) size[0] = sizeof(Scan::TempStorage);
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_block_scans_storage_fits_in_the_shared_memory_cub_sizes_for_it(check):
    # the runner's scan kept a value per thread (516 bytes here): CUB-sized memory was reported as
    # written past its end, and a tile of 46 KiB beside a scan of 1024 threads passed the 48 KiB limit
    # (until 2026-11-27); it keeps a value per warp now, as CUB's warp scans do
    x = np.random.default_rng(8).integers(-9, 9, 128).astype(np.int32)
    out, size = np.zeros(128, np.int32), np.zeros(1, np.uint32)
    RawModule(code=SCAN_IN_DYNAMIC_SHARED, check=check).get_function("scan_in_dynamic")(
        (1,), (128,), (x, out, size), shared_mem=32)
    np.testing.assert_array_equal(out, np.cumsum(x))
    assert size[0] <= 32
