"""The race check (NN_CUDA_CPU_RACECHECK=1): every load and store of a checked launch looked at, so that
races whose every order of the threads gives the same result on the CPU are reported as a GPU would show
them: lost updates (`total += x` by many threads of a phase), warps that share memory across a
__syncwarp() only, lanes of a warp without one. And no report where the code orders its accesses: a
barrier, a __syncwarp() between the lanes of a warp, a lock taken with atomicCAS, cuda::barrier, blocks
that take turns at one address of __shared__ memory, the project's GEMMs. The kernels are written here;
each result is compared with NumPy's (exact: integers, or floats whose sums are exact)."""

import re

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule, build
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build with every load and store instrumented (seconds)

RACES = r"""
#include <cooperative_groups.h>
#include <cuda/barrier>

namespace cg = cooperative_groups;

// Each thread adds its element to its column's total. Threads of one column read the same total and
// store their own sums on a GPU, losing each other's updates; here they run one after another, and the
// totals come out right in every order.
extern "C" __global__ void column_sums(const float* x, float* totals, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        totals[i % cols] += x[i];
    }
}

// The same with atomicAdd: right on a GPU.
extern "C" __global__ void column_sums_atomic(const float* x, float* totals, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        atomicAdd(&totals[i % cols], x[i]);
    }
}

// One __shared__ total that every thread of the block adds to between two barriers.
extern "C" __global__ void block_total(const int* x, int* out)
{
    __shared__ int total;
    if (threadIdx.x == 0) {
        total = 0;
    }
    __syncthreads();
    total += x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        out[blockIdx.x] = total;
    }
}

// A value handed from thread 0 to thread 1 through b[0] with no barrier, where a and b view one array
// (MIT 6.S894's run-length compression passes parts of one workspace).
extern "C" __global__ void hand_over(unsigned* a, unsigned* b)
{
    if (threadIdx.x == 0) {
        b[0] = 7;
    }
    if (threadIdx.x == 1) {
        a[1] = b[0];
    }
}

// cuSignal's sosfilt, in short: each thread reads its left neighbour's double in extern __shared__ memory,
// which that neighbour overwrites in the same phase.
extern "C" __global__ void shift_doubles(double* out)
{
    extern __shared__ double carried[];
    carried[threadIdx.x] = threadIdx.x;
    __syncthreads();
    const double left = threadIdx.x ? carried[threadIdx.x - 1] : 0.0;
    carried[threadIdx.x] = left + 1.0;
    __syncthreads();
    out[threadIdx.x] = carried[threadIdx.x];
}

// The same under a lock in __shared__ memory, taken with atomicCAS and given back with atomicExch: right
// on a GPU (each lane loops until it has added, so lanes spinning together never wait for each other).
extern "C" __global__ void locked_total(const int* x, int* out)
{
    __shared__ int lock;
    __shared__ int total;
    if (threadIdx.x == 0) {
        lock = 0;
        total = 0;
    }
    __syncthreads();
    bool added = false;
    while (!added) {
        if (atomicCAS(&lock, 0, 1) == 0) {
            total += x[blockIdx.x * blockDim.x + threadIdx.x];
            __threadfence_block();
            atomicExch(&lock, 0);
            added = true;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out[blockIdx.x] = total;
    }
}

// Each lane stores its warp's number in a slot that every warp of the block shares, syncs its own warp
// and reads its neighbour's slot: a __syncwarp() orders the lanes of one warp, not two warps.
extern "C" __global__ void shared_slots(int* out)
{
    __shared__ int slots[32];
    const int lane = threadIdx.x % 32;
    slots[lane] = threadIdx.x / 32;
    __syncwarp();
    out[threadIdx.x] = slots[(lane + 1) % 32];
}

// The same with a row of slots per warp: right.
extern "C" __global__ void slot_rows(int* out)
{
    __shared__ int slots[4][32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    slots[warp][lane] = warp;
    __syncwarp();
    out[threadIdx.x] = slots[warp][(lane + 1) % 32];
}

// Each warp sums its 32 values in __shared__ memory by halves. With `synced`, a __syncwarp() between
// each read and the write after it (right); without, legacy warp-synchronous code (a race on a GPU
// whose lanes do not run in lockstep, every GPU since Volta).
extern "C" __global__ void warp_halves(const int* x, int* out, int synced)
{
    __shared__ int s[64];
    const int lane = threadIdx.x % 32, first = threadIdx.x - lane;
    s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncwarp();
    for (int half = 16; half > 0; half /= 2) {
        int v = 0;
        if (lane < half) {
            v = s[first + lane + half];
        }
        if (synced) {
            __syncwarp();
        }
        if (lane < half) {
            s[first + lane] += v;
        }
        if (synced) {
            __syncwarp();
        }
    }
    if (lane == 0) {
        out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = s[first];
    }
}

// Each block sums its 32 values by pairs at doubling strides, a barrier before each step, in the same
// __shared__ array, whose address is every block's here, as blocks take turns: no race.
extern "C" __global__ void tree_sums(const int* x, int* out)
{
    __shared__ int s[32];
    const int t = threadIdx.x;
    s[t] = x[blockIdx.x * 32 + t];
    for (int stride = 1; stride < 32; stride *= 2) {
        __syncthreads();
        if (t % (2 * stride) == 0) {
            s[t] += s[t + stride];
        }
    }
    if (t == 0) {
        out[blockIdx.x] = s[0];
    }
}

// A block's threads stage their values through __shared__ memory with a cuda::barrier: the second warp
// stores and arrives without waiting, the first stores, arrives and waits, then reads its neighbour's.
// Right on a GPU (the barrier's own counters, which every arrival updates, are no race of the kernel's).
extern "C" __global__ void staged_neighbours(const int* x, int* out)
{
    __shared__ int s[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> ready;
    if (threadIdx.x == 0) {
        init(&ready, blockDim.x);
    }
    __syncthreads();
    s[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x >= 32) {
        (void)ready.arrive();
        return;
    }
    ready.arrive_and_wait();
    out[threadIdx.x] = s[threadIdx.x + 1];
}

// The Cooperative Groups blog's reduce_sum on a tile of 32 threads, by halves through `temp`; each
// tile's first thread then adds the tile's sum to the total atomically. With `shared_temp`, every tile
// (warp) is given the same 32 slots, and the tiles race on them: a tile's sync orders its own lanes.
__device__ int tile_sum(cg::thread_block_tile<32> tile, int* temp, int value)
{
    const int lane = tile.thread_rank();
    for (int half = tile.size() / 2; half > 0; half /= 2) {
        temp[lane] = value;
        tile.sync();
        if (lane < half) {
            value += temp[lane + half];
        }
        tile.sync();
    }
    return value;
}

extern "C" __global__ void tile_totals(const int* x, int* total, int shared_temp)
{
    __shared__ int temp[4 * 32];
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    int* mine = shared_temp ? temp : temp + 32 * (threadIdx.x / 32);
    const int sum = tile_sum(tile, mine, x[blockIdx.x * blockDim.x + threadIdx.x]);
    if (tile.thread_rank() == 0) {
        atomicAdd(total, sum);
    }
}

// Thread 0 writes a value and raises a flag after a fence; thread 1 waits for the flag by atomics and
// then reads the value: right on a GPU, in whichever order the two come.
extern "C" __global__ void flag_handoff(int* value, int* flag, int* seen)
{
    if (threadIdx.x == 0) {
        value[0] = 42;
        __threadfence();
        atomicExch(flag, 1);
    } else if (threadIdx.x == 1) {
        while (atomicAdd(flag, 0) == 0) {
        }
        seen[0] = value[0];
    }
}

// The same with a volatile flag in global memory, a fence on either side (HeCBench's sptrsv): PTX's
// memory model takes volatile accesses as relaxed atomics, so no race; `shared` hands it over through
// a volatile __shared__ flag instead, which compute-sanitizer's racecheck reports as a hazard.
extern "C" __global__ void volatile_handoff(int* value, volatile int* flag, int* seen, int shared)
{
    __shared__ volatile int shared_flag;
    volatile int* const raised = shared ? &shared_flag : flag;
    if (threadIdx.x == 0) {
        shared_flag = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        value[0] = 42;
        __threadfence();
        *raised = 1;
    } else if (threadIdx.x == 1) {
        while (*raised == 0) {
        }
        __threadfence();
        seen[0] = value[0];
    }
}

// __activemask() right after a barrier, in code every lane runs (CS149's exclusive scan takes its
// __syncwarp() mask so), then work long enough that the preemption's ticks land in the next pass
extern "C" __global__ void masks_after_a_barrier(const float* in, unsigned* masks, int passes, int work)
{
    __shared__ float s[1024];
    float f = 0.0f;
    for (int p = 0; p < passes; ++p) {
        s[threadIdx.x] = in[threadIdx.x];
        __syncthreads();
        masks[(blockIdx.x * passes + p) * blockDim.x + threadIdx.x] = __activemask();
        for (int k = 0; k < work; ++k) {
            f = f * 0.5f + s[(threadIdx.x + k) % blockDim.x];
        }
        __syncthreads();
    }
    if (f < 0.0f) {
        masks[0] = 0;
    }
}

// Particles placed in their bins: each reads its bin's next slot with a plain load, then counts it with
// atomicAdd (a CS267 student's draft), so two particles of a bin can read one slot (`racy`); or each
// takes its slot with the atomic itself
extern "C" __global__ void place(const int* bin, int* next_slot, int* ids, int racy)
{
    const int t = threadIdx.x;
    if (racy) {
        const int slot = next_slot[bin[t]];
        ids[slot] = t;
        atomicAdd(&next_slot[bin[t]], 1);
    } else {
        ids[atomicAdd(&next_slot[bin[t]], 1)] = t;
    }
}

// Thread 0 clears a total that the others add to with atomicAdd, with no barrier between
extern "C" __global__ void cleared_while_added(int* total)
{
    if (threadIdx.x == 0) {
        total[0] = 0;
    }
    atomicAdd(total, 1);
}

// CUDA's atomicAdd of double by atomicCAS, as the programming guide writes it: a plain load as the first
// guess, which each compare-and-swap checks
__device__ double add_by_swaps(double* address, double value)
{
    unsigned long long* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        old = atomicCAS(bits, assumed, __double_as_longlong(value + __longlong_as_double(assumed)));
    } while (assumed != old);
    return __longlong_as_double(old);
}
extern "C" __global__ void sum_by_swaps(const double* x, double* total)
{
    add_by_swaps(total, x[threadIdx.x]);
}
"""


@pytest.fixture(scope="module")
def races():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NN_CUDA_CPU_RACECHECK", "1")
        module = RawModule(code=RACES)
    assert module.check and module.race_check
    return module


def test_activemask_after_a_barrier_gives_the_whole_warp_though_a_tick_preempts_a_lane_on_its_way(races):
    # a lane preempted between the barrier and the call was left out of its warp's mask (0xffff7fff), under
    # the race check above all (its instrumented code is slow): CS149's scan then raced on its own
    # __syncwarp() groups, and the checking mode found masks that differ between its runs (3 runs in 3 of
    # this launch until 2026-11-28)
    x = np.ones(1024, np.float32)
    for _ in range(2):
        masks = np.zeros(2 * 3 * 1024, np.uint32)
        races.get_function("masks_after_a_barrier")((2,), (1024,), (x, masks, np.int32(3), np.int32(1000)))
        assert (masks == 0xFFFFFFFF).all(), sorted({hex(m) for m in masks if m != 0xFFFFFFFF})[:4]


def test_a_lost_update_in_global_memory_is_reported_with_both_lines(races):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    line = RACES.splitlines().index("        totals[i % cols] += x[i];") + 1
    with pytest.raises(KernelError, match=rf"column_sums: a race on args\[1\]\[\d\] \(NN_CUDA_CPU_RACECHECK=1\): "
                                          rf"thread \(\d+, 0, 0\) of block \(0, 0, 0\) wrote it at \(RawModule code\):"
                                          rf"{line}, and thread \(\d+, 0, 0\) read it at \(RawModule code\):{line}, "
                                          r"with no __syncthreads\(\).* \(a read-after-write hazard\). Threads that "
                                          r"add to one place \(s \+= x\) need atomicAdd .*a GPU reports this one "
                                          r"nowhere"):
        races.get_function("column_sums")((1,), (64,), (x, np.zeros(8, np.float32), np.int32(8), np.int32(8)))


def test_the_checking_mode_alone_passes_that_lost_update(monkeypatch):
    # every order of the threads gives the right totals here: the reason for the race check
    monkeypatch.delenv("NN_CUDA_CPU_RACECHECK", raising=False)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    totals = np.zeros(8, np.float32)
    RawModule(code=RACES, check=True).get_function("column_sums")((1,), (64,), (x, totals, np.int32(8), np.int32(8)))
    np.testing.assert_array_equal(totals, x.sum(axis=0))


def test_the_same_sums_made_with_atomic_add_pass(races):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)  # sums of small integers: exact in any order
    totals = np.zeros(8, np.float32)
    races.get_function("column_sums_atomic")((2,), (32,), (x, totals, np.int32(8), np.int32(8)))
    np.testing.assert_array_equal(totals, x.sum(axis=0))


def test_a_lost_update_of_a_shared_variable_is_named(races):
    x = np.arange(128, dtype=np.int32)
    with pytest.raises(KernelError, match=r"block_total: a race on __shared__ `total` \(in block_total\), its bytes "
                                          r"0 to 3 .*compute-sanitizer's racecheck reports this one on a GPU"):
        races.get_function("block_total")((2,), (64,), (x, np.full(2, -1, np.int32)))


def test_a_race_names_the_element_in_each_view_of_an_array_that_holds_it(races):
    # until 2026-11-28 the index was the whole array's: "args[0] / args[1][8]" for args[0][4] = args[1][0]
    workspace = np.zeros(16, np.uint32)
    with pytest.raises(KernelError, match=r"hand_over: a race on args\[0\]\[4\] / args\[1\]\[0\] \(NN_CUDA"):
        races.get_function("hand_over")((1,), (32,), (workspace[4:], workspace[8:]))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    with pytest.raises(KernelError, match=r"column_sums: a race on args\[1\]\[[0-7]\] \(NN_CUDA"):
        races.get_function("column_sums")((1,), (64,), (x, np.zeros(16, np.float32)[8:], np.int32(8), np.int32(8)))
    # a view of one element, to which the kernel adds 8 columns: the others are the whole array's
    with pytest.raises(KernelError, match=r"column_sums: a race on (args\[1\]\[0\]|the array that args\[1\] views, "
                                          r"its element \[1[3-9]\], outside that view) \(NN_CUDA"):
        races.get_function("column_sums")((1,), (64,), (x, np.zeros(24, np.float32)[12:13], np.int32(8), np.int32(8)))


def test_a_race_on_a_double_names_its_eight_bytes(races):
    # the race check keeps 4-byte words; until 2026-11-28 the report named half the double, "its bytes 0 to 3"
    with pytest.raises(KernelError, match=r"shift_doubles: a race on extern __shared__ memory, its bytes") as raised:
        races.get_function("shift_doubles")((1,), (8,), (np.zeros(8),), shared_mem=8 * 8)
    first, last = map(int, re.search(r"its bytes (\d+) to (\d+) ", str(raised.value)).groups())
    assert first % 8 == 0 and last == first + 7 < 64  # which neighbours race first depends on the threads' order


def test_a_total_under_a_lock_taken_with_atomic_cas_passes(races):
    x = np.arange(128, dtype=np.int32)
    out = np.full(2, -1, np.int32)
    races.get_function("locked_total")((2,), (64,), (x, out))
    np.testing.assert_array_equal(out, x.reshape(2, 64).sum(axis=1))


def test_a_slot_read_with_a_plain_load_then_counted_by_an_atomic_is_reported(races):
    # an atomic against a plain access of one word went unseen until 2026-11-28: two particles of a bin took
    # one slot on a GPU, and every mode passed (the checking mode took the slots for an atomic counter's)
    bins = (np.arange(64) % 4).astype(np.int32)
    ids = np.full(64, -1, np.int32)
    races.get_function("place")((1,), (64,), (bins, np.arange(0, 64, 16, dtype=np.int32), ids, np.int32(0)))
    assert sorted(ids.tolist()) == list(range(64))
    with pytest.raises(KernelError, match=r"place: a race on args\[1\]\[\d\] \(NN_CUDA_CPU_RACECHECK=1\): thread "
                                          r"\(\d+, 0, 0\) of block \(0, 0, 0\) made an atomic operation on it at "
                                          r"\(RawModule code\):\d+, and thread \(\d+, 0, 0\) read it at \(RawModule "
                                          r"code\):\d+, .*the read may come before the atomic"):
        races.get_function("place")((1,), (64,), (bins, np.arange(0, 64, 16, dtype=np.int32), ids, np.int32(1)))


def test_a_plain_store_beside_other_threads_atomics_is_reported_and_swaps_checking_a_plain_guess_pass(races):
    with pytest.raises(KernelError, match=r"cleared_while_added: a race on args\[0\]\[0\] .*: thread \(0, 0, 0\) of "
                                          r"block \(0, 0, 0\) wrote it at .*, and thread \(\d+, 0, 0\) made an atomic "
                                          r"operation on it at .*the atomic may come before the write"):
        races.get_function("cleared_while_added")((1,), (64,), (np.full(1, 7, np.int32),))
    x = np.arange(64, dtype=np.float64) / 8
    total = np.zeros(1, np.float64)
    races.get_function("sum_by_swaps")((1,), (64,), (x, total))
    assert total[0] == x.sum()  # sums of eighths below 2^52: exact in any order


def test_warps_sharing_slots_across_a_syncwarp_only_are_reported_and_rows_of_their_own_pass(races):
    # between two warps, the message names no __syncwarp(): it would not help
    with pytest.raises(KernelError, match=r"shared_slots: a race on __shared__ `slots` \(in shared_slots\).*"
                                          r"with no __syncthreads\(\) between: on a GPU"):
        races.get_function("shared_slots")((1,), (128,), (np.full(128, -1, np.int32),))
    out = np.full(128, -1, np.int32)
    races.get_function("slot_rows")((1,), (128,), (out,))
    np.testing.assert_array_equal(out, np.arange(128) // 32)


def test_lanes_without_a_syncwarp_are_reported_and_with_one_pass(races):
    x = np.arange(128, dtype=np.int32)
    with pytest.raises(KernelError, match=r"warp_halves: a race on __shared__ `s` \(in warp_halves\).* with no "
                                          r"__syncthreads\(\) nor a __syncwarp\(\) \(they are lanes of one warp\) "
                                          r"between"):
        races.get_function("warp_halves")((2,), (64,), (x, np.full(4, -1, np.int32), np.int32(0)))
    out = np.full(4, -1, np.int32)
    races.get_function("warp_halves")((2,), (64,), (x, out, np.int32(1)))
    np.testing.assert_array_equal(out, x.reshape(4, 32).sum(axis=1))


def test_blocks_taking_turns_at_one_shared_address_are_no_race(races):
    # six blocks, four resident at a time, each ending in a phase with no barrier after it: the block that
    # resumes after it reads and writes the same addresses (a false report until the race check's epoch
    # moved on at every block's turn)
    x = np.arange(6 * 32, dtype=np.int32)
    out = np.full(6, -1, np.int32)
    races.get_function("tree_sums")((6,), (32,), (x, out))
    np.testing.assert_array_equal(out, x.reshape(6, 32).sum(axis=1))


def test_a_cuda_barrier_orders_the_accesses_it_separates(races):
    x = np.arange(64, dtype=np.int32)
    out = np.full(32, -1, np.int32)
    races.get_function("staged_neighbours")((1,), (64,), (x, out))
    np.testing.assert_array_equal(out, x[1:33])


@pytest.mark.parametrize("algo", ["naive", "tiled", "regblock"])
def test_the_projects_gemms_pass_the_race_check(algo, monkeypatch):
    from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend

    monkeypatch.setenv("NN_CUDA_CPU_RACECHECK", "1")
    backend = CudaCpuBackend(gemm=algo)
    assert backend.check
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((70, 40)), rng.standard_normal((40, 33))  # partial tiles in every dimension
    C = np.full((70, 33), np.nan)
    backend.gemm(A, B, C)
    assert np.linalg.norm(C - A @ B) / np.linalg.norm(A @ B) < 1e-14  # float64: a few ulps of K = 40 terms


def test_the_race_check_needs_gcc(monkeypatch):
    monkeypatch.setenv("NN_CUDA_CPU_RACECHECK", "1")
    monkeypatch.setattr(build, "is_gcc", lambda compiler: False)
    with pytest.raises(KernelBuildError, match=r"the race check \(NN_CUDA_CPU_RACECHECK=1\) needs GCC as the host "
                                               r"compiler"):
        RawModule(code="extern \"C\" __global__ void k(int* x) { x[0] = 1; }").get_function("k")


def test_a_lost_update_of_a_device_variable_is_named():
    code = r"""
__device__ int visits;
// Every thread counts itself in a __device__ variable without an atomic.
extern "C" __global__ void count_visits(int* out)
{
    visits += 1;
    out[threadIdx.x] = 0;
}
"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NN_CUDA_CPU_RACECHECK", "1")
        module = RawModule(code=code)
    with pytest.raises(KernelError, match=r"count_visits: a race on the variable `visits`, its bytes 0 to 3 "):
        module.get_function("count_visits")((1,), (32,), (np.full(32, -1, np.int32),))


def test_tiles_sharing_one_temp_race_even_beside_their_atomic_add_and_tiles_of_their_own_pass(races):
    # the tile's first thread synchronises by its atomicAdd, the others of its tile do not: their reads
    # of `temp` stay unordered with the next tile's writes (a first version of the race check took any
    # thread's atomic as ordering every access before it, and missed this)
    x = np.arange(256, dtype=np.int32)
    with pytest.raises(KernelError, match=r"tile_totals: a race on __shared__ `temp` \(in tile_totals\).* with no "
                                          r"__syncthreads\(\) between"):
        races.get_function("tile_totals")((2,), (128,), (x, np.zeros(1, np.int32), np.int32(1)))
    total = np.zeros(1, np.int32)
    races.get_function("tile_totals")((2,), (128,), (x, total, np.int32(0)))
    assert total[0] == x.sum()


def test_a_value_handed_over_by_a_fence_and_an_atomic_flag_passes(races):
    for _ in range(8):  # each launch its own seed of the orders: either thread first
        value, flag, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(1, -1, np.int32)
        races.get_function("flag_handoff")((1,), (2,), (value, flag, seen))
        assert seen[0] == 42 and flag[0] == 1


def test_a_value_handed_over_by_a_volatile_global_flag_and_fences_passes_and_a_shared_one_is_reported(races):
    # the global one was reported until 2026-11-28 (HeCBench's sptrsv, cuGraph's sort)
    for _ in range(4):  # either thread first
        value, flag, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(1, -1, np.int32)
        races.get_function("volatile_handoff")((1,), (2,), (value, flag, seen, np.int32(0)))
        assert seen[0] == 42 and flag[0] == 1
    with pytest.raises(KernelError, match=r"volatile_handoff: a race on __shared__ `shared_flag`"):
        for _ in range(4):  # until thread 0 comes first, raising the flag before thread 1 reads it
            races.get_function("volatile_handoff")((1,), (2,), (np.zeros(1, np.int32), np.zeros(1, np.int32),
                                                                  np.full(1, -1, np.int32), np.int32(1)))
