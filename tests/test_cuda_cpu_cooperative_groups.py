"""Cooperative groups on the CPU runner (<cooperative_groups.h>, its reduce.h, scan.h and
memcpy_async.h): the block, static and run-time tiles, the grid's ranks, binary and labeled
partitions, and cg::reduce and the scans, through RawModule against NumPy in the plain and the
checking mode. What needs the lanes a branch leaves active stops the build naming itself; a tile the
runner cannot make is a KernelError. A cooperative launch (enable_cooperative_groups=True) syncs its
whole grid, and a grid.sync() it cannot complete is a KernelError. Then threads that wait for others:
libcu++'s cuda::barrier with cuda::memcpy_async, and __nanosleep in a spin loop, within a block and
between blocks. The kernels are written here."""

import warnings

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build (about two seconds)

GROUPS = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

// One warp per row: the row's maximum and the sum of its exponentials by cg::reduce over the warp.
extern "C" __global__ void row_softmax(const float* x, float* y, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) {
        return;
    }
    const float* in = x + row * cols;
    float m = __int_as_float(0xff800000);  // -inf
    for (int i = warp.thread_rank(); i < cols; i += warp.size()) {
        m = fmaxf(m, in[i]);
    }
    m = cg::reduce(warp, m, cg::greater<float>());
    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < cols; i += warp.size()) {
        sum += expf(in[i] - m);
    }
    sum = cg::reduce(warp, sum, cg::plus<float>());
    for (int i = warp.thread_rank(); i < cols; i += warp.size()) {
        y[row * cols + i] = expf(in[i] - m) / sum;
    }
}

// Each block's sum and minimum: tiles of 16 reduce, their first threads meet in shared memory after
// block.sync(), and the first tile reduces those.
extern "C" __global__ void block_sums(const int* x, int* sums, int* minima)
{
    __shared__ int partial[64], smallest[64];
    auto block = cg::this_thread_block();
    auto tile = cg::tiled_partition<16>(block);
    const int v = x[blockIdx.x * block.size() + block.thread_rank()];
    const int tile_sum = cg::reduce(tile, v, cg::plus<int>()), tile_min = cg::reduce(tile, v, cg::less<int>());
    if (tile.thread_rank() == 0) {
        partial[tile.meta_group_rank()] = tile_sum;
        smallest[tile.meta_group_rank()] = tile_min;
    }
    cg::sync(block);
    if (tile.meta_group_rank() == 0) {
        const bool mine = tile.thread_rank() < tile.meta_group_size();
        const int total = cg::reduce(tile, mine ? partial[tile.thread_rank()] : 0, cg::plus<int>());
        const int low = cg::reduce(tile, mine ? smallest[tile.thread_rank()] : INT_MAX, cg::less<int>());
        if (tile.thread_rank() == 0) {
            sums[blockIdx.x] = total;
            minima[blockIdx.x] = low;
        }
    }
}

// Scans over tiles of 16, a tile of 8 carved from a tile of 16 (its sum and odd-value ballot), a
// tile of 4 sized at run time, and the tile's shuffles.
extern "C" __global__ void scans_and_tiles(const int* x, int* inclusive, int* exclusive, int* sum8,
                                           unsigned* odd8, int* rank4, int* shuffled, int* meta)
{
    auto block = cg::this_thread_block();
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
    const int i = block.thread_rank(), v = x[i];
    inclusive[i] = cg::inclusive_scan(t16, v);
    exclusive[i] = cg::exclusive_scan(t16, v, cg::plus<int>());
    auto t8 = cg::tiled_partition<8>(t16);
    sum8[i] = cg::reduce(t8, v, cg::plus<int>());
    odd8[i] = t8.ballot(v % 2);
    // which tile of its parent each is, and of how many: a tile of 8 of a tile of 16 in its parent (kept by
    // the type without a parent), a tile of 16 in the block
    const cg::thread_block_tile<8> t8_alone = t8;
    meta[2 * i] = static_cast<int>(t8_alone.meta_group_rank() * 100 + t8_alone.meta_group_size());
    meta[2 * i + 1] = static_cast<int>(t16.meta_group_rank() * 100 + t16.meta_group_size());
    cg::thread_group t4 = cg::tiled_partition(block, 4);
    t4.sync();
    rank4[i] = static_cast<int>(t4.thread_rank() * 100 + t4.size());
    // from the lane above (the last lane keeps its own), the lane 3 of the tile, the lane xor 1
    shuffled[3 * i] = t16.shfl_down(v, 1);
    shuffled[3 * i + 1] = t16.shfl(v, 3);
    shuffled[3 * i + 2] = t16.shfl_xor(v, 1);
}

// Odd and even values of a warp: each partition counts and sums its own (binary_partition); each
// label's largest value (labeled_partition).
extern "C" __global__ void partitions(const int* x, const int* label, int* counts, int* sums, int* largest)
{
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    const int i = blockIdx.x * blockDim.x + threadIdx.x, v = x[i];
    const bool odd = v % 2 != 0;
    auto same_parity = cg::binary_partition(warp, odd);
    const int sum = cg::reduce(same_parity, v, cg::plus<int>());
    if (same_parity.thread_rank() == 0) {
        atomicAdd(&counts[odd], static_cast<int>(same_parity.size()));
        atomicAdd(&sums[odd], sum);
    }
    auto same_label = cg::labeled_partition(warp, label[i]);
    const int top = cg::reduce(same_label, v, cg::greater<int>());
    if (same_label.thread_rank() == 0) {
        atomicMax(&largest[label[i]], top);
    }
}

// The grid's view of each thread: its rank, its block's rank and the sizes; CUDA's free functions
// cg::thread_rank(g) and cg::group_size(g) of the grid, the block and a tile, as Ginkgo takes them.
extern "C" __global__ void grid_ranks(unsigned long long* rank, unsigned long long* block_rank, unsigned long long* sizes)
{
    cg::grid_group grid = cg::this_grid();
    const unsigned long long r = cg::thread_rank(grid);
    rank[r] = r;
    block_rank[r] = grid.block_rank();
    if (r == 0) {
        sizes[0] = cg::group_size(grid);
        sizes[1] = grid.num_blocks();
        sizes[2] = cg::group_size(cg::this_thread_block());
        sizes[3] = cg::group_size(cg::tiled_partition<4>(cg::this_thread_block()));
    }
    if (cg::thread_rank(cg::this_thread_block()) != threadIdx.x + blockDim.x * threadIdx.y) {
        sizes[4] = 1;
    }
}

// A tile's and a partition's shuffles move values of any type: a uint4 from the lane xor 1, and a
// double2 from the next thread of the same parity.
extern "C" __global__ void shuffle_structs(unsigned* words, double* pairs)
{
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    const unsigned i = threadIdx.x;
    const uint4 mine = make_uint4(i, 2 * i, 3 * i, 4 * i);
    const uint4 other = warp.shfl_xor(mine, 1);
    words[4 * i] = other.x, words[4 * i + 1] = other.y, words[4 * i + 2] = other.z, words[4 * i + 3] = other.w;
    auto same_parity = cg::binary_partition(warp, i % 2 == 1);
    const double2 next = same_parity.shfl_down(make_double2(i, -0.5 * i), 1);
    pairs[2 * i] = next.x, pairs[2 * i + 1] = next.y;
}

// A tile of 64 threads: larger than a warp, which the runner's tiles cannot be.
extern "C" __global__ void wide_tile(int* out)
{
    cg::thread_group tile = cg::tiled_partition(cg::this_thread_block(), 64);
    out[threadIdx.x] = tile.thread_rank();
}
"""


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "checking"])
def groups(request):
    return RawModule(code=GROUPS, check=request.param)


def test_a_softmax_by_warp_reduce_matches_numpy(groups):
    rows, cols = 10, 70  # 4 warps per block, 3 blocks; the last warps have no row
    x = (np.random.default_rng(0).standard_normal((rows, cols)) * 4).astype(np.float32)
    y = np.full_like(x, np.nan)
    groups.get_function("row_softmax")((3,), (128,), (x, y, np.int32(rows), np.int32(cols)))
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    reference = e / e.sum(1, keepdims=True)
    # float32 exp, sum of 70 terms and a division: a few units of 2^-24 (measured 1.1e-7)
    assert np.linalg.norm(y - reference) / np.linalg.norm(reference) < 1e-6


def test_tiles_reduce_a_block_through_shared_memory(groups):
    blocks, threads = 3, 256
    x = np.random.default_rng(1).integers(-1000, 1000, blocks * threads).astype(np.int32)
    sums, minima = np.full(blocks, -1, np.int32), np.full(blocks, -1, np.int32)
    groups.get_function("block_sums")((blocks,), (threads,), (x, sums, minima))
    assert sums.tolist() == x.reshape(blocks, threads).sum(1).tolist()
    assert minima.tolist() == x.reshape(blocks, threads).min(1).tolist()


def test_scans_nested_tiles_and_shuffles_match_numpy(groups):
    n = 64
    x = np.random.default_rng(2).integers(0, 10, n).astype(np.int32)
    outputs = [np.full(n, -1, np.int32) for _ in range(3)] + [np.zeros(n, np.uint32), np.full(n, -1, np.int32),
                                                             np.full(3 * n, -1, np.int32), np.full(2 * n, -1, np.int32)]
    groups.get_function("scans_and_tiles")((1,), (n,), (x, *outputs))
    inclusive, exclusive, sum8, odd8, rank4, shuffled, meta = outputs
    # the tile of 8 counted in the block (rank i // 8 of 8) until 2026-11-28: Ansorge's cgwarp.cu
    assert meta.reshape(n, 2).tolist() == [[(i % 16) // 8 * 100 + 2, i // 16 * 100 + 4] for i in range(n)]
    by16 = x.reshape(-1, 16)
    assert inclusive.tolist() == np.cumsum(by16, 1).ravel().tolist()
    assert exclusive.tolist() == (np.cumsum(by16, 1) - by16).ravel().tolist()
    assert sum8.tolist() == np.repeat(x.reshape(-1, 8).sum(1), 8).tolist()
    assert odd8.tolist() == np.repeat(((x.reshape(-1, 8) % 2) << np.arange(8)).sum(1), 8).tolist()
    assert rank4.tolist() == [(i % 4) * 100 + 4 for i in range(n)]
    lane = np.arange(n) % 16
    down = np.where(lane < 15, np.roll(x, -1), x)
    assert shuffled.reshape(n, 3).tolist() == np.stack([down, np.repeat(by16[:, 3], 16), x[np.arange(n) ^ 1]],
                                                       1).tolist()


def test_binary_and_labeled_partitions_match_numpy(groups):
    blocks, threads = 2, 64
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, blocks * threads).astype(np.int32)
    label = rng.integers(0, 5, blocks * threads).astype(np.int32)
    counts, sums, largest = np.zeros(2, np.int32), np.zeros(2, np.int32), np.full(5, -1, np.int32)
    groups.get_function("partitions")((blocks,), (threads,), (x, label, counts, sums, largest))
    odd = x % 2 == 1
    assert counts.tolist() == [int((~odd).sum()), int(odd.sum())]
    assert sums.tolist() == [int(x[~odd].sum()), int(x[odd].sum())]
    assert largest.tolist() == [int(x[label == k].max()) for k in range(5)]


def test_a_group_shuffles_values_of_any_type(groups):
    words, pairs = np.zeros(4 * 32, np.uint32), np.zeros(2 * 32)
    groups.get_function("shuffle_structs")((1,), (32,), (words, pairs))
    partner = np.arange(32) ^ 1
    assert words.reshape(32, 4).tolist() == (partner[:, None] * np.arange(1, 5)).tolist()
    # the next thread of the same parity: i + 2, or i itself for the last of each parity
    source = np.where(np.arange(32) + 2 < 32, np.arange(32) + 2, np.arange(32))
    assert pairs.reshape(32, 2).tolist() == np.stack([source, -0.5 * source], 1).tolist()


def test_the_grid_group_ranks_every_thread(groups):
    grid, block = (3, 2), (8, 2)
    n = 3 * 2 * 8 * 2
    rank, block_rank = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    sizes = np.zeros(5, np.uint64)
    groups.get_function("grid_ranks")(grid, block, (rank, block_rank, sizes))
    assert rank.tolist() == list(range(n))
    assert block_rank.tolist() == [r // 16 for r in range(n)]
    assert sizes.tolist() == [n, 6, 16, 4, 0]


def test_a_tile_wider_than_a_warp_is_a_kernel_error(groups):
    with pytest.raises(KernelError, match=r"wide_tile: tiled_partition\(group, 64\) in thread \(\d+, 0, 0\) of block "
                                          r"\(0, 0, 0\): the CPU runner takes tiles of 1, 2, 4, 8, 16 or 32 threads"):
        groups.get_function("wide_tile")((1,), (128,), (np.zeros(128, np.int32),))


def test_the_lanes_a_branch_leaves_active_stop_the_build_naming_them():
    code = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
            'extern "C" __global__ void uses(float* out)\n{\n    cg::coalesced_threads().sync();\n    out[0] = 1;\n}\n')
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):5: the CPU runner does not support "
                                               r"coalesced_threads \(the lanes a branch leaves active"):
        RawModule(code=code).get_function("uses")
    # in a template the kernel calls (DeepSpeed's lamb): named at its use, not at the line that
    # instantiates the kernel, nor in the runner's instance table
    template = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
                "template <typename T>\n__device__ T warp_size_of(T) {\n    return cg::coalesced_threads().size();\n}\n"
                "template <typename T>\n__global__ void sizes(T* out) { out[0] = warp_size_of(out[0]); }\n")
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):5: the CPU runner does not support coalesced"):
        RawModule(code=template, name_expressions=("sizes<float>",)).get_function("sizes<float>")


OWN_NAMES = r"""
#include <cooperative_groups.h>
using namespace cooperative_groups;

// A sum over a group through shared memory, a functor and a scan of the code's own, named as CUDA
// names its collectives: <cooperative_groups.h> alone declares none of these (OLCF's training hw9).
__device__ int reduce(thread_group g, int* x, int val)
{
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        x[lane] = val;
        g.sync();
        if (lane < i) {
            val += x[lane + i];
        }
        g.sync();
    }
    return val;
}

template <typename T>
struct plus {
    __device__ T operator()(T a, T b) const { return a + b; }
};

template <typename G>
__device__ int inclusive_scan(const G& g, int v)
{
    for (int o = 1; o < g.size(); o <<= 1) {
        int t = g.shfl_up(v, o);
        if (g.thread_rank() >= o) {
            v = plus<int>()(v, t);
        }
    }
    return v;
}

extern "C" __global__ void own_names(const int* in, int* sums, int* scans)
{
    __shared__ int x[64];
    thread_block_tile<16> tile = tiled_partition<16>(this_thread_block());
    int* mine = x + 16 * (threadIdx.x / 16);
    int sum = reduce(tile, mine, in[threadIdx.x]);
    if (tile.thread_rank() == 0) {
        sums[threadIdx.x / 16] = sum;
    }
    scans[threadIdx.x] = inclusive_scan(tile, in[threadIdx.x]);
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_code_may_name_its_own_reduce_plus_and_scan_beside_cooperative_groups_h(check):
    # the runner's <cooperative_groups.h> declared cg::reduce, the scans and cg::plus itself: the
    # code's own reduce lost the overload to it and the build stopped inside the runner's header
    # ("'op' cannot be used as a function"), its plus was ambiguous; NVRTC builds this
    values = np.random.default_rng(3).integers(-50, 50, 64).astype(np.int32)
    sums, scans = np.full(4, -1, np.int32), np.full(64, -1, np.int32)
    RawModule(code=OWN_NAMES, check=check).get_function("own_names")((1,), (64,), (values, sums, scans))
    tiles = values.reshape(4, 16).astype(np.int64)
    assert sums.tolist() == tiles.sum(axis=1).tolist()
    assert scans.tolist() == np.cumsum(tiles, axis=1).ravel().tolist()


# ---- a cooperative launch: grid_group::sync -------------------------------------------------------

GRID = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Two passes over the grid, a grid.sync() between them (a cooperative launch): each block sums its
// grid-stride share of x into partial[block] through __shared__ memory, then every thread of every
// block reads all the partial sums and scales its elements of x by their total.
extern "C" __global__ void normalise(const float* x, float* partial, float* out, int n)
{
    __shared__ float sums[128];
    cg::grid_group grid = cg::this_grid();
    float mine = 0.0f;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) {
        mine += x[i];
    }
    sums[threadIdx.x] = mine;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            sums[threadIdx.x] += sums[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sums[0];
    }
    grid.sync();
    float total = 0.0f;
    for (int b = 0; b < gridDim.x; ++b) {
        total += partial[b];
    }
    for (int i = grid.thread_rank(); i < n; i += grid.size()) {
        out[i] = x[i] / total;
    }
}

// valid[thread] = whether the grid can sync (a cooperative launch)
extern "C" __global__ void validity(int* valid) { valid[threadIdx.x] = cg::this_grid().is_valid(); }

// Thread 0 of block 1 returns before the grid.sync() the others wait at.
extern "C" __global__ void leaves_early(float* out)
{
    if (blockIdx.x == 1 && threadIdx.x == 0) {
        return;
    }
    cg::this_grid().sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_cooperative_launch_syncs_the_whole_grid(check):
    module = RawModule(code=GRID, enable_cooperative_groups=True, check=check)
    x = np.random.default_rng(3).random(1000).astype(np.float32)
    partial, out = np.full(4, np.nan, np.float32), np.full(1000, np.nan, np.float32)
    module.get_function("normalise")((4,), (128,), (x, partial, out, np.int32(1000)))
    # every block read every other block's partial sum, written before the grid.sync(); each block's
    # __shared__ sums stayed its own while the four took turns (float32 sums of 1,000 values: 1e-6)
    np.testing.assert_allclose(partial.sum(), x.sum(dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(out, x / x.sum(dtype=np.float64), rtol=1e-6)
    valid = np.full(2, -1, np.int32)
    module.get_function("validity")((1,), (2,), (valid,))
    assert valid.tolist() == [1, 1]


WARP_SUMS_AROUND_A_GRID_SYNC = r"""
#include <cooperative_groups.h>
// a warp sum, a grid sync, a warp sum, a barrier, a warp sum (ggml's soft_max_f32_parallelize_cols):
// 32, 1024 and 32768 in every thread
__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}
extern "C" __global__ void sums(float* out)
{
    float v = warp_sum(1.0f);
    cooperative_groups::this_grid().sync();
    v = warp_sum(v);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = warp_sum(v);
}
"""


@pytest.mark.parametrize("seed", ["0", "1", "2"])
@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_warp_syncs_around_a_grid_sync_and_a_barrier(check, seed, monkeypatch):
    # The checking mode left the lane that completed its warp's sync after a grid sync out of the
    # next phase once the whole block reached a __syncthreads(): the others went on without it, and
    # a false "waits at a warp sync for lane 31 ..., which waits at __syncthreads()" followed
    monkeypatch.setenv("NN_CUDA_CPU_SEED", seed)
    out = np.full(128, np.nan, np.float32)
    RawModule(code=WARP_SUMS_AROUND_A_GRID_SYNC, enable_cooperative_groups=True, check=check).get_function("sums")(
        (2,), (64,), (out,))
    assert (out == 32768).all()

def test_a_grid_sync_outside_a_cooperative_launch_is_a_kernel_error():
    module = RawModule(code=GRID)
    valid = np.full(2, -1, np.int32)
    module.get_function("validity")((1,), (2,), (valid,))
    assert valid.tolist() == [0, 0]  # as on a GPU: the grid of an ordinary launch cannot sync
    out = np.zeros(1000, np.float32)
    with pytest.raises(KernelError, match=r"normalise: grid_group::sync\(\) in thread \(\d+, 0, 0\) of block "
                                          r"\(\d, 0, 0\) of a launch that is not cooperative.*"
                                          r"enable_cooperative_groups=True"):
        module.get_function("normalise")((2,), (128,), (out, np.zeros(2, np.float32), out.copy(), np.int32(1000)))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_cooperative_grid_too_large_is_reduced_or_refused_as_cupy_does(check):
    """CuPy reduces a 1-D cooperative grid larger than the device holds to what it holds, with a
    warning, and refuses a 2-D or 3-D one (cupy/cuda/function.pyx, _launch): the runner holds as many
    blocks as its stacks do, 4100 // (threads + 1): 31 of 128 threads."""
    normalise = RawModule(code=GRID, enable_cooperative_groups=True, check=check).get_function("normalise")
    x = np.random.default_rng(4).random(5000).astype(np.float32)
    partial, out = np.full(32, np.nan, np.float32), np.full(5000, np.nan, np.float32)
    with pytest.warns(UserWarning, match=r"The grid size will be reduced from 32 to 31, as the specified grid size "
                                         r"exceeds the limit"):
        normalise((32,), (128,), (x, partial, out, np.int32(5000)))
    # 31 blocks ran, their grid-stride loops covering x; the last partial sum was never written
    np.testing.assert_allclose(partial[:31].sum(), x.sum(dtype=np.float64), rtol=1e-6)
    assert np.isnan(partial[31])
    np.testing.assert_allclose(out, x / x.sum(dtype=np.float64), rtol=1e-6)
    with pytest.raises(ValueError, match=r"The specified grid size \(16 \* 2 \* 1\) exceeds the limit \(31\)"):
        normalise((16, 2), (128,), (x, partial, out, np.int32(5000)))


ONE_ELEMENT_A_THREAD = r"""
#include <cooperative_groups.h>
// CuPy's TestRawPicklable kernel, compiled with enable_cooperative_groups: each thread doubles its
// own element, once, with no grid-stride loop, so every block of the grid must run
extern "C" __global__ void twice(const float* x, float* y)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_cooperative_grid_of_small_blocks_runs_whole(check):
    """10 blocks of 10 threads were reduced to 4 blocks, as for blocks of 1024 threads, leaving 60 of
    the 100 outputs unwritten with only CuPy's warning; a GPU runs the whole grid, as the runner now
    does, as many blocks resident as its stacks hold."""
    x = np.arange(100, dtype=np.float32)
    y = np.full(100, np.nan, np.float32)
    twice = RawModule(code=ONE_ELEMENT_A_THREAD, enable_cooperative_groups=True, check=check).get_function("twice")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no grid reduced
        twice((10,), (10,), (x, y))
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_thread_that_skips_the_grid_sync_is_a_kernel_error(check):
    module = RawModule(code=GRID, enable_cooperative_groups=True, check=check)
    with pytest.raises(KernelError, match=r"leaves_early: thread \(\d+, 0, 0\) of block \(\d, 0, 0\) waits at "
                                          r"grid_group::sync\(\) for 1 threads of the grid that returned before "
                                          r"reaching it"):
        module.get_function("leaves_early")((2,), (32,), (np.zeros(64, np.float32),))


WAITING = r"""
#include <cuda/barrier>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

// Each block stages its values of x in shared memory by cuda::memcpy_async on a block barrier, writes
// them reversed, and its sum: every thread arrives at a second barrier, and thread 0 waits for the
// phase to end (the others' arrivals) before it adds the tile up.
extern "C" __global__ void staged_reverse(const float* x, float* out, float* sums)
{
    __shared__ float tile[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> copied, read;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) {
        init(&copied, block.size());
        init(&read, block.size());
    }
    block.sync();
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    cuda::memcpy_async(&tile[t], &x[base + t], cuda::aligned_size_t<4>(sizeof(float)), copied);
    copied.arrive_and_wait();
    out[base + t] = tile[blockDim.x - 1 - t];
    auto token = read.arrive();
    if (t == 0) {
        read.wait(std::move(token));
        float total = 0.0f;
        for (int i = 0; i < static_cast<int>(blockDim.x); ++i) {
            total += tile[i];
        }
        sums[blockIdx.x] = total;
    }
}

// The same staging by the group's cg::memcpy_async and cg::wait.
extern "C" __global__ void group_copy(const float* x, float* out)
{
    __shared__ float tile[64];
    auto block = cg::this_thread_block();
    const int base = blockIdx.x * blockDim.x;
    cg::memcpy_async(block, tile, x + base, sizeof(float) * blockDim.x);
    cg::wait(block);
    out[base + threadIdx.x] = 2.0f * tile[blockDim.x - 1 - threadIdx.x];
}

// Thread 0 spins, with __nanosleep, until the block's last thread sets a flag (no barrier between).
extern "C" __global__ void wait_for_the_last_thread(int* out)
{
    __shared__ volatile int flag;
    if (threadIdx.x == 0) {
        flag = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        while (flag == 0) {
            __nanosleep(100);
        }
        out[0] = flag;
    }
    if (threadIdx.x == blockDim.x - 1) {
        flag = 42;
    }
}

// Lanes 1-31 of warp 0 wait at a shuffle while lane 0 sleeps until thread 32 has set a flag: the
// block yields with lanes waiting at a warp sync, and other resident blocks take turns meanwhile.
extern "C" __global__ void shuffle_after_a_wait(const int* x, int* out)
{
    __shared__ volatile int flag;
    if (threadIdx.x == 0) {
        flag = 0;
    }
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            while (flag == 0) {
                __nanosleep(10);
            }
        }
        out[i] = __shfl_xor_sync(0xffffffffu, x[i], 1);
    } else if (threadIdx.x == 32) {
        flag = 1;
    }
}

// Block 0 spins until block 1 sets a flag in global memory: on a GPU, where both are resident, it ends.
extern "C" __global__ void wait_for_the_next_block(volatile int* flags, int* out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        while (flags[1] == 0) {
            __nanosleep(100);
        }
        out[0] = flags[1];
    } else if (threadIdx.x == 0) {
        flags[1] = 7;
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_block_barrier_with_async_copies_stages_and_sums_each_tile(check):
    module = RawModule(code=WAITING, check=check)
    x = np.random.default_rng(4).standard_normal(3 * 64).astype(np.float32)
    out, sums = np.full_like(x, np.nan), np.full(3, np.nan, np.float32)
    module.get_function("staged_reverse")((3,), (64,), (x, out, sums))
    np.testing.assert_array_equal(out, x.reshape(3, 64)[:, ::-1].reshape(-1))
    expected = x.reshape(3, 64).astype(np.float64).sum(1)
    # 64 float32 additions in order: within 64 units of float32's 6e-8 of the float64 sums
    assert np.abs(sums - expected).max() <= 64 * 6e-8 * np.abs(x).reshape(3, 64).sum(1).max()
    out[:] = np.nan
    module.get_function("group_copy")((3,), (64,), (x, out))
    np.testing.assert_array_equal(out, 2 * x.reshape(3, 64)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_thread_that_sleeps_while_it_waits_lets_the_others_run(check):
    out = np.zeros(1, np.int32)
    RawModule(code=WAITING, check=check).get_function("wait_for_the_last_thread")((1,), (64,), (out,))
    assert out.tolist() == [42]


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_lanes_waiting_at_a_shuffle_keep_their_values_while_other_blocks_take_turns(check):
    x = np.arange(16 * 64, dtype=np.int32)
    out = np.full(x.size, -1, np.int32)
    RawModule(code=WAITING, check=check).get_function("shuffle_after_a_wait")((16,), (64,), (x, out))
    first_warps = (np.arange(x.size) % 64) < 32
    assert out[first_warps].tolist() == (x ^ 1)[first_warps].tolist()


def test_a_block_that_waits_for_a_later_one_ends_where_blocks_take_turns_or_run_at_once(monkeypatch):
    # the checking mode keeps up to 4 blocks resident, as a GPU does: block 0's wait ends
    out = np.zeros(1, np.int32)
    RawModule(code=WAITING, check=True).get_function("wait_for_the_next_block")((2,), (32,), (np.zeros(2, np.int32), out))
    assert out.tolist() == [7]
    # the plain mode on two host threads runs both blocks at once: block 0's wait ends too
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "2")
    out[:] = 0
    RawModule(code=WAITING, check=False).get_function("wait_for_the_next_block")((2,), (32,), (np.zeros(2, np.int32), out))
    assert out.tolist() == [7]
    # on one host thread it runs one block after another: block 0 would wait forever, the watchdog
    # ends it
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "1")
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1")
    with pytest.raises(KernelError, match=r"wait_for_the_next_block: still running after 1 s .* in thread \(0, 0, 0\) "
                                          r"of block \(0, 0, 0\)"):
        RawModule(code=WAITING, check=False).get_function("wait_for_the_next_block")(
            (2,), (32,), (np.zeros(2, np.int32), out))


PIPELINES = r"""
#include <cuda/pipeline>
#include <cuda_pipeline.h>

// out[i] = x[i] + x[i + n]: both halves staged in shared memory through the thread's own pipeline,
// one stage each, committed one after the other and waited for together.
extern "C" __global__ void staged(const float* x, float* out, int n)
{
    __shared__ float stage[2][64];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    for (int s = 0; s < 2; ++s) {
        pipe.producer_acquire();
        cuda::memcpy_async(&stage[s][threadIdx.x], &x[s * n + threadIdx.x], sizeof(float), pipe);
        pipe.producer_commit();
    }
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    pipe.consumer_release();
    out[threadIdx.x] = stage[0][threadIdx.x] + stage[1][threadIdx.x];
}

// The primitives: each thread stages 16 bytes, of which the last `zfill` are zeros.
extern "C" __global__ void primitives(const float4* x, float4* out, int zfill)
{
    __shared__ float4 tile[32];
    __pipeline_memcpy_async(&tile[threadIdx.x], &x[threadIdx.x], sizeof(float4), zfill);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[threadIdx.x] = tile[threadIdx.x];
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_threads_own_pipeline_and_the_pipeline_primitives_stage_copies(check):
    module = RawModule(code=PIPELINES, check=check)
    x, out = np.arange(128, dtype=np.float32), np.full(64, np.nan, np.float32)
    module.get_function("staged")((1,), (64,), (x, out, np.int32(64)))
    np.testing.assert_array_equal(out, x[:64] + x[64:])
    x4, out4 = np.arange(1, 129, dtype=np.float32), np.full(128, np.nan, np.float32)
    module.get_function("primitives")((1,), (32,), (x4, out4, np.int32(4)))
    expected = x4.reshape(32, 4).copy()
    expected[:, 3] = 0  # the last 4 bytes of each 16
    np.testing.assert_array_equal(out4.reshape(32, 4), expected)
    # CUDA's requirements on the sizes fail as an assert
    with pytest.raises(KernelError, match=r"primitives: assertion `zfill <= size_and_align` failed"):
        module.get_function("primitives")((1,), (32,), (x4, out4, np.int32(20)))


def test_a_pipeline_shared_by_a_block_stops_the_build_naming_it():
    code = ("#include <cuda/pipeline>\n#include <cooperative_groups.h>\n"
            'extern "C" __global__ void shared_pipeline(float* out)\n{\n'
            "    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;\n"
            "    auto pipe = cuda::make_pipeline(cooperative_groups::this_thread_block(), &state);\n"
            "    out[0] = 1.0f;\n}\n")
    with pytest.raises(KernelBuildError, match=r"the CPU runner does not support a cuda::pipeline shared by the "
                                               r"threads of a group \(cuda::pipeline_shared_state\)"):
        RawModule(code=code).get_function("shared_pipeline")


CUDA_12_CALLS = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// CUDA 12's group calls (cudf's hash joins, the programming guide's examples). Each warp takes a
// ticket by one atomicAdd of its lane 0 and hands it to every lane (invoke_one_broadcast), whose lanes
// then say whether they all hold one of the two tickets; lane 0 of
// each warp counts its warp by invoke_one; each warp stores the sum of its lanes' indices
// (reduce_store_async); each thread writes its index, and after the split barrier reads its mirror's;
// this_thread() is every thread's tile of one.
extern "C" __global__ void calls(unsigned* counter, unsigned* tickets, unsigned* warps, int* sums, int* mirrored,
                                 int* alone)
{
    __shared__ int values[64];
    const cg::thread_block block = cg::this_thread_block();
    const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const unsigned ticket = cg::invoke_one_broadcast(warp, [&]() { return atomicAdd(counter, 1u); });
    tickets[threadIdx.x] = ticket < 2 && ticket == warp.shfl(ticket, 7);  // which warp has which: either
    cg::invoke_one(warp, [](unsigned* count) { atomicAdd(count, 1u); }, warps);
    cg::reduce_store_async(warp, &sums[warp.meta_group_rank()], (int)threadIdx.x, cg::plus<int>());
    values[threadIdx.x] = (int)threadIdx.x;
    auto token = block.barrier_arrive();
    block.barrier_wait(std::move(token));
    mirrored[threadIdx.x] = values[63 - threadIdx.x];
    const auto self = cg::this_thread();
    alone[threadIdx.x] = (int)(self.size() * 100 + self.thread_rank());
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_cuda_12s_group_calls_match_numpy(check):
    # this_thread, invoke_one, invoke_one_broadcast, reduce_store_async and barrier_arrive/barrier_wait
    # each stopped the build ("is not a member of 'cg'")
    counter, warps = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    tickets = np.full(64, 99, np.uint32)
    sums, mirrored, alone = np.full(2, -1, np.int32), np.full(64, -1, np.int32), np.full(64, -1, np.int32)
    RawModule(code=CUDA_12_CALLS, check=check).get_function("calls")(
        (1,), (64,), (counter, tickets, warps, sums, mirrored, alone))
    assert counter[0] == 2 and warps[0] == 2
    assert tickets.tolist() == [1] * 64  # one ticket a warp, the same in all its lanes
    assert sums.tolist() == [sum(range(32)), sum(range(32, 64))]
    assert mirrored.tolist() == list(range(63, -1, -1))
    assert alone.tolist() == [100] * 64


GRID_SPLIT_BARRIER = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each block writes its index, arrives at the grid's barrier, waits, and reads the next block's; each
// thread says whether the grid's 3-D indices and sizes (CUDA 12's) are what they must be.
extern "C" __global__ void next_block(int* slots, int* seen, int* indices_right)
{
    const cg::grid_group grid = cg::this_grid();
    const dim3 index = grid.thread_index(), threads = grid.dim_threads(), blocks = grid.group_dim();
    indices_right[blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x] =
        index.x == blockIdx.x * blockDim.x + threadIdx.x && index.y == blockIdx.y && index.z == 0 &&
        threads.x == gridDim.x * blockDim.x && threads.y == gridDim.y && blocks.x == gridDim.x;
    if (threadIdx.x == 0) {
        slots[blockIdx.x] = (int)blockIdx.x * 10;
    }
    auto token = grid.barrier_arrive();
    grid.barrier_wait(std::move(token));
    if (threadIdx.x == 0) {
        seen[blockIdx.x] = slots[(blockIdx.x + 1) % gridDim.x];
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_the_grids_split_barrier_and_3_d_indices_in_a_cooperative_launch(check):
    slots, seen, right = np.full(4, -1, np.int32), np.full(4, -1, np.int32), np.zeros(4 * 32, np.int32)
    RawModule(code=GRID_SPLIT_BARRIER, enable_cooperative_groups=True, check=check).get_function("next_block")(
        (4,), (32,), (slots, seen, right))
    assert seen.tolist() == [10, 20, 30, 0]
    assert right.tolist() == [1] * right.size
