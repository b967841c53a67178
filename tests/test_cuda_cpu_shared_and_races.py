"""How the CPU runner treats what public CUDA code writes: a __shared__ array inside an inline device
function (NVIDIA's block reduction), the address of an extern __shared__ array, a __device__ ticket
counter, a race whose last writer decides the result, a block that spins on an atomic until the
block before it is done, floats moved as int4, a sum under an atomic lock, name expressions of
variables, device printf in the checking mode, and what the runner lacks.

Each test fails on the runner before these were handled (a build error, a wrong address or result,
a false race report, a race missed for some seeds, a launch stopped by the watchdog, a line printed
twice, a page of compiler errors).
"""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule, device_memory
from nn_cuda.cuda_cpu import build
from nn_cuda.cuda_cpu.build import KernelBuildError
from nn_cuda.cuda_cpu.raw_module import file_scope_shared

pytestmark = pytest.mark.slow  # each test builds a library or two (about a second each)

BLOCK_SUM = r"""
// The sum of a block's values: each warp sums its lanes with shuffles, lane 0 of each warp leaves its
// sum in a __shared__ array declared inside this inline function, and warp 0 sums those. With `skip`,
// warp 0 leaves its slot unwritten.
__inline__ __device__ float block_sum(float value, int skip)
{
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffff, value, offset);
    }
    if (lane == 0 && !(skip && warp == 0)) {
        warp_sums[warp] = value;
    }
    __syncthreads();
    value = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    if (warp == 0) {
        for (int offset = 16; offset > 0; offset /= 2) {
            value += __shfl_down_sync(0xffffffff, value, offset);
        }
    }
    return value;
}

extern "C" __global__ void sums(const float* x, float* out, int skip)
{
    const float total = block_sum(x[blockIdx.x * blockDim.x + threadIdx.x], skip);
    if (threadIdx.x == 0) {
        out[blockIdx.x] = total;
    }
}

// `&name` of an extern __shared__ array is its address, as on a GPU.
extern "C" __global__ void through_address(float* out)
{
    extern __shared__ float staged[];
    float* view = (float*)&staged;
    view[threadIdx.x] = threadIdx.x + 1.0f;
    __syncthreads();
    out[threadIdx.x] = staged[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.fixture(autouse=True)
def plain_mode_unless_asked(monkeypatch):
    monkeypatch.delenv("NN_CUDA_CPU_CHECK", raising=False)
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "10")  # a launch the runner cannot finish fails fast


def test_only_shared_arrays_at_file_scope_are_marked_for_the_section_of_their_own():
    # a macro's __shared__ outside braces is marked too: the declarations it makes at file scope
    code = ('namespace tiles { __shared__ float a[2]; }\nextern "C" { __shared__ int b; }\n'
            '__global__ void k() { __shared__ float c[4]; const char* text = "}"; }\n'
            "#define SHARED __shared__\n// __shared__ in a comment\n__shared__ double d;\n")
    marked = file_scope_shared(code)
    assert marked.splitlines() == [
        "namespace tiles { __shared__ NN_CUDA_CPU_FILE_SCOPE_SHARED float a[2]; }",
        'extern "C" { __shared__ NN_CUDA_CPU_FILE_SCOPE_SHARED int b; }',
        '__global__ void k() { __shared__ float c[4]; const char* text = "}"; }',
        "#define SHARED __shared__ NN_CUDA_CPU_FILE_SCOPE_SHARED", "// __shared__ in a comment",
        "__shared__ NN_CUDA_CPU_FILE_SCOPE_SHARED double d;"]


@pytest.mark.parametrize("check, threads", [(False, "2"), (False, "1"), (True, "1")])
def test_a_shared_array_inside_an_inline_device_function_builds_and_sums(monkeypatch, check, threads):
    # the checking build and the one-thread build gave "section type conflict"
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", threads)
    x = np.random.default_rng(0).standard_normal(4 * 128).astype(np.float32)
    out = np.full(4, np.nan, np.float32)
    RawModule(code=BLOCK_SUM, check=check).get_function("sums")((4,), (128,), (x, out, np.int32(0)))
    expected = x.reshape(4, 128).astype(np.float64).sum(axis=1)
    # float32 sums of 128 terms: relative error within 128 * 2^-24 of the absolute values' sum
    bound = 128 * 2.0**-24 * np.abs(x.reshape(4, 128)).sum(axis=1)
    assert np.all(np.abs(out - expected) <= bound)


def test_the_checking_mode_names_an_unwritten_element_of_an_inline_functions_shared_array():
    x = np.ones(2 * 64, np.float32)
    with pytest.raises(KernelError, match=r"sums: 2 element\(s\) of args\[1\] hold NaN after the first of its two runs .* "
                                          r"__shared__ `warp_sums` \(in block_sum"):
        RawModule(code=BLOCK_SUM, check=True).get_function("sums")((2,), (64,), (x, np.zeros(2, np.float32),
                                                                                np.int32(1)))


@pytest.mark.parametrize("check", [False, True])
def test_the_address_of_an_extern_shared_array_is_the_array(check):
    # it was the address of the pointer the runner declared in its place: a fault, or NaN reported
    out = np.zeros(64, np.float32)
    RawModule(code=BLOCK_SUM, check=check).get_function("through_address")((1,), (64,), (out,), shared_mem=64 * 4)
    np.testing.assert_array_equal(out, np.arange(64, 0, -1, dtype=np.float32))


TICKETS = r"""
// Each block takes a ticket from a __device__ counter (a dynamic block index) and writes it out.
__device__ int next_ticket = 0;
extern "C" __global__ void take_ticket(int* out)
{
    __shared__ int ticket;
    if (threadIdx.x == 0) {
        ticket = atomicAdd(&next_ticket, 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        out[ticket] = ticket + 100;
    }
}

// Block `ticket` waits, spinning on an atomic, until the block with the ticket before it has written
// its element (a single-pass scan's chain), then adds one to it.
extern "C" __global__ void chain(int* tickets, int* done, int* out)
{
    __shared__ int ticket;
    if (threadIdx.x == 0) {
        ticket = atomicAdd(tickets, 1);
    }
    __syncthreads();  // in the checking mode the other resident blocks may take a turn here
    if (threadIdx.x == 0) {
        if (ticket > 0) {
            while (atomicAdd(&done[ticket - 1], 0) == 0) {
            }
        }
        out[ticket] = ticket > 0 ? out[ticket - 1] + 1 : 1;
        __threadfence();
        atomicExch(&done[ticket], 1);
    }
}

// Thread 0 waits, spinning on an atomic, for the last thread of its block to raise a flag.
extern "C" __global__ void wait_for_last_thread(int* flag, int* out)
{
    if (threadIdx.x == blockDim.x - 1) {
        atomicExch(flag, 1);
    }
    if (threadIdx.x == 0) {
        while (atomicCAS(flag, 1, 2) != 1) {
        }
        out[0] = 7;
    }
}
"""


def test_a_device_counter_is_put_back_before_the_checking_modes_second_run():
    # the second run started from the first one's counter: tickets 4 to 7, a false race report
    module = RawModule(code=TICKETS, check=True)
    out = np.zeros(4, np.int32)
    module.get_function("take_ticket")((4,), (32,), (out,))
    assert out.tolist() == [100, 101, 102, 103]
    assert module.get_global("next_ticket").view(np.int32)[0] == 4  # as after one launch on a GPU


RESULTS_IN_VARIABLES = r"""
// Kernels that leave their result in a __device__ variable, as cuda-samples' binomialOptions leaves
// its prices in d_CallValue: a sum over a tile read without the barrier after its stores, the last of
// the blocks to write one place, and (race-free) a float sum and a count by atomics.
__device__ float tile_sum[1];
__device__ int last_block[1];
__device__ float atomic_sum;
__device__ unsigned int counted;

extern "C" __global__ void sum_without_barrier()
{
    __shared__ float tile[64];
    tile[threadIdx.x] = threadIdx.x + 1.0f;
#ifdef FIXED
    __syncthreads();
#endif
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int i = 0; i < 64; ++i) {
            total += tile[i];
        }
        tile_sum[0] = total;
    }
}

extern "C" __global__ void blocks_write_one_place()
{
    if (threadIdx.x == 0) {
        last_block[0] = blockIdx.x;
    }
}

extern "C" __global__ void add_atomically(const float* x)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&atomic_sum, x[i]);
    atomicInc(&counted, 1u << 30);
}
"""


@pytest.mark.parametrize("kernel, grid, variable", [("sum_without_barrier", 1, "tile_sum"),
                                                     ("blocks_write_one_place", 3, "last_block")])
def test_a_race_whose_result_lands_in_a_device_variable_is_reported(kernel, grid, variable):
    # the checking mode put the variables back between its runs but compared only the arguments: both
    # kernels passed unreported until 2026-11-27, leaving the second run's value
    module = RawModule(code=RESULTS_IN_VARIABLES, check=True)
    with pytest.raises(KernelError, match=rf"{kernel}: the result depends on .*the variable `{variable}`, its bytes "
                                          r"0 to 3, holds"):
        module.get_function(kernel)((grid,), (64,), ())


def test_device_variables_summed_by_atomics_or_written_after_a_barrier_pass_the_checking_mode():
    module = RawModule(code=RESULTS_IN_VARIABLES, options=("-DFIXED",), check=True)
    module.get_function("sum_without_barrier")((1,), (64,), ())
    assert module.get_global("tile_sum").view(np.float32)[0] == 64 * 65 / 2
    x = np.random.default_rng(0).standard_normal(4 * 64).astype(np.float32) * 1e3  # sums that round by order
    module.get_function("add_atomically")((4,), (64,), (x,))
    total = module.get_global("atomic_sum").view(np.float32)[0]
    assert abs(total - x.astype(np.float64).sum()) <= 1e-4 * np.abs(x).sum()
    assert module.get_global("counted").view(np.uint32)[0] == 4 * 64


COMPACTION = r"""
// A stream compaction: each element above the threshold takes a slot from an atomic counter and puts
// its index and its double there (Kilosort's spike lists, a BFS frontier). PAIRING_BUG puts the double
// at the next slot instead, so that each index is paired with another element's double
extern "C" __global__ void compact(const float* x, int n, int selected, int* count, int* where, float* doubled)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.5f) {
        const int slot = atomicAdd(count, 1);
        where[slot] = i;
        doubled[PAIRING_BUG ? (slot + 1) % selected : slot] = 2.0f * x[i];
    }
}
"""


def test_results_at_slots_from_an_atomic_counter_pass_when_they_are_the_same_rows_in_another_order(capfd):
    # their order is the order the threads came in, on a GPU too, and compute-sanitizer's racecheck
    # sees no hazard: until 2026-11-27 every such launch was reported as a race (DGL's hash-set
    # inserts, Kilosort's spike detection could never pass the checking mode)
    x = np.random.default_rng(3).random(200).astype(np.float32)
    chosen = np.flatnonzero(x > 0.5)
    compact = RawModule(code=COMPACTION, options=("-DPAIRING_BUG=0",), check=True).get_function("compact")
    for launch in range(2):  # the line on stderr once per kernel
        count, where, doubled = np.zeros(1, np.int32), np.full(200, -1, np.int32), np.full(200, -1, np.float32)
        compact((4,), (64,), (x, np.int32(200), np.int32(chosen.size), count, where, doubled))
        assert count[0] == chosen.size
        assert sorted(zip(where[:count[0]], doubled[:count[0]])) == [(i, 2 * x[i]) for i in chosen]
    said = capfd.readouterr().err
    assert said.count("compact: args[4] and args[5] hold the same rows in another order after the two thread "
                      "orders") == 1
    # the same indices and doubles, but paired otherwise in each order: a table is compared row by row
    with pytest.raises(KernelError, match=r"compact: the result depends on the order .* beyond what the order of "
                                          r"its atomics rounds"):
        RawModule(code=COMPACTION, options=("-DPAIRING_BUG=1",), check=True).get_function("compact")(
            (4,), (64,), (x, np.int32(200), np.int32(chosen.size), np.zeros(1, np.int32), np.zeros(200, np.int32),
                          np.zeros(200, np.float32)))

NEIGHBOUR_LISTS = r"""
// A neighbour list (Fan's CUDA Programming, chapter 9): each atom j appends itself to the list of atom
// j % rows at a slot from that row's counter, so that a row's order is the threads'. With fewer slots than
// neighbours, a list runs on into the next row's, whose first slots then hold whichever atom came last
extern "C" __global__ void find_neighbours(int* count, int* lists, int rows, int max_neighbours)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = j % rows;
    lists[row * max_neighbours + atomicAdd(&count[row], 1)] = j;
}
"""


def test_lists_filled_from_a_counter_of_each_row_pass_when_each_row_holds_the_same_values_in_another_order(capfd):
    # the book's neighbour list as an (atoms, max neighbours) array: its rows stay in place and each row's
    # values come in the threads' order; until 2026-11-28 only rows in another order passed, so that this
    # was reported, and passed when the same memory came as one long row
    find = RawModule(code=NEIGHBOUR_LISTS, check=True).get_function("find_neighbours")
    count, lists = np.zeros(4, np.int32), np.full((4, 20), -1, np.int32)
    find((2,), (32,), (count, lists, np.int32(4), np.int32(20)))
    assert count.tolist() == [16] * 4
    assert [sorted(row[:16]) for row in lists.tolist()] == [list(range(r, 64, 4)) for r in range(4)]
    assert (lists[:, 16:] == -1).all()
    assert ("find_neighbours: args[1] holds the same values in each row in another order after the two thread "
            "orders") in capfd.readouterr().err
    # lists of 12 slots for 16 neighbours: which atoms a row holds depends on the order, and is reported
    with pytest.raises(KernelError, match=r"find_neighbours: the result depends on the order .* beyond what the "
                                          r"order of its atomics rounds.* or the same values in each row where each "
                                          r"row has a counter"):
        find((2,), (32,), (np.zeros(4, np.int32), np.full((5, 12), -1, np.int32), np.int32(4), np.int32(12)))


KEPT_ADDRESS = r"""
// Altis's ray tracer keeps its argument's address in a __device__ object that the next kernel walks:
// here `keep` saves it and `read_kept` reads through it
__device__ int* kept;
extern "C" __global__ void keep(int* values)
{
    kept = values;
    values[0] = 42;
}
extern "C" __global__ void read_kept(int* out)
{
    out[0] = kept[0];
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_an_argument_address_kept_for_a_later_launch_is_named_where_its_memory_ends_with_the_launch(check):
    # the later launch read 0 (plain) or -1 (checking mode), with no report, until 2026-11-27
    module = RawModule(code=KEPT_ADDRESS, check=check)
    values, out = np.zeros(4, np.int32), np.zeros(1, np.int32)
    remedy = (r"run it outside the checking mode \(without NN_CUDA_CPU_CHECK, NN_CUDA_CPU_RACECHECK and "
              r"check=True\)") if check else r"pass the array as device memory"
    with pytest.raises(KernelError, match=rf"^keep: the variable `kept` \(its bytes 0 to 7\) holds an address within "
                                          rf"args\[0\] as this launch passed it, .*{remedy}"):
        module.get_function("keep")((1,), (1,), (values,))
    if not check:  # device memory keeps its address between launches, as a CuPy array does
        values = device_memory.to_device(np.zeros(4, np.int32))
        module.get_function("keep")((1,), (1,), (values,))
        module.get_function("read_kept")((1,), (1,), (out,))
        assert out[0] == 42


KEPT_IN_AN_OUTPUT = r"""
// LightGBM's tree kernels leave pointers into their histograms in a pool of pointers, and in structs
// of leaves, which the next launch reads through: `keep_in_pool` and `keep_in_leaf` store their
// argument's address in an output, `read_through` reads it
struct Leaf { int count; int pad; const float* first; };
extern "C" __global__ void keep_in_pool(const float* values, unsigned long long* pool)
{
    pool[1] = (unsigned long long)(values + 2);
}
extern "C" __global__ void keep_in_leaf(const float* values, Leaf* leaves)
{
    leaves[0].first = values;
}
extern "C" __global__ void read_through(float* const* pool, float* out)
{
    out[threadIdx.x] = pool[1][threadIdx.x];
}
"""
LEAF = np.dtype([("count", "i4"), ("pad", "i4"), ("first", "u8")])


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("kernel, output, held", [("keep_in_pool", np.zeros(2, np.uint64), r"args\[1\] \(its bytes 8 to 15\)"),
                                                  ("keep_in_leaf", np.zeros(1, LEAF), r"args\[1\] \(its bytes 8 to 15\)")])
def test_an_argument_address_kept_in_an_output_for_a_later_launch_is_named(check, kernel, output, held):
    # the later launch read freed memory (garbage in the plain mode) with no report until 2026-11-27:
    # only the code's __device__ variables were looked at
    module = RawModule(code=KEPT_IN_AN_OUTPUT, check=check)
    values = np.arange(1, 9, dtype=np.float32)
    remedy = (r"run it outside the checking mode \(without NN_CUDA_CPU_CHECK, NN_CUDA_CPU_RACECHECK and "
              r"check=True\)") if check else r"pass the array as device memory"
    with pytest.raises(KernelError, match=rf"^{kernel}: {held} holds an address within args\[0\] as this launch "
                                          rf"passed it, .*{remedy}"):
        module.get_function(kernel)((1,), (1,), (values, output.copy()))
    if not check:  # device memory keeps its address between launches, as a CuPy array does
        pool, out, device_values = np.zeros(2, np.uint64), np.zeros(4, np.float32), device_memory.to_device(values)
        module.get_function("keep_in_pool")((1,), (1,), (device_values, pool))
        module.get_function("read_through")((1,), (4,), (pool, out))
        assert out.tolist() == [3.0, 4.0, 5.0, 6.0]


@pytest.mark.parametrize("check", [False, True])
def test_a_block_spinning_on_an_atomic_lets_the_block_it_waits_for_run(monkeypatch, check):
    # in the checking mode the resident blocks take turns barrier to barrier: a block spinning in
    # one phase held the others out until the watchdog stopped the launch
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "1")
    module = RawModule(code=TICKETS, check=check)
    tickets, done, out = np.zeros(1, np.int32), np.zeros(6, np.int32), np.zeros(6, np.int32)
    module.get_function("chain")((6,), (32,), (tickets, done, out))
    assert out.tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("check", [False, True])
def test_a_thread_spinning_on_an_atomic_lets_the_thread_it_waits_for_run(check):
    # the threads of a block take turns: thread 0 spun for ever before the last thread ran
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    RawModule(code=TICKETS, check=check).get_function("wait_for_last_thread")((1,), (64,), (flag, out))
    assert (flag[0], out[0]) == (2, 7)


RACES = r"""
// Every block's thread 0 writes its block's index to one place: the last block decides the result.
extern "C" __global__ void last_block_wins(int* out)
{
    if (threadIdx.x == 0) {
        out[0] = blockIdx.x;
    }
}

// Every thread writes its index to one place: the last thread decides the result.
extern "C" __global__ void last_thread_wins(int* out) { out[0] = threadIdx.x; }

// Thread 0 reads s[63] in the phase in which thread 63 adds one to it, with no barrier between.
extern "C" __global__ void read_during_write(float* out)
{
    __shared__ float s[64];
    const unsigned t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    s[t] = s[t] + 1.0f;
    const float seen = s[63];
    if (t == 0) {
        out[0] = seen;
    }
}
"""


@pytest.mark.parametrize("kernel, grid, block, dtype", [("last_block_wins", 2, 32, np.int32),
                                                        ("last_block_wins", 4, 32, np.int32),
                                                        ("last_thread_wins", 1, 32, np.int32),
                                                        ("read_during_write", 1, 64, np.float32)])
def test_the_second_checked_run_takes_the_first_runs_orders_backwards_so_a_race_shows_for_every_seed(
        monkeypatch, kernel, grid, block, dtype):
    # with two independent orders the race went unseen for about half the seeds (2 blocks: 11 of 20)
    for seed in range(6):
        monkeypatch.setenv("NN_CUDA_CPU_SEED", str(seed))
        launch = RawModule(code=RACES, check=True).get_function(kernel)  # the seed is read as it loads
        with pytest.raises(KernelError, match=rf"{kernel}: the result depends on the order"):
            launch((grid,), (block,), (np.zeros(1, dtype),))


def test_a_checked_launch_prints_its_device_printf_once_as_a_gpu_does(capfd):
    # the checking mode runs a launch again (and again to find what it reports): each line came twice
    code = r"""
extern "C" __global__ void hello(int* out)
{
    if (threadIdx.x == 0) {
        printf("block %d\n", blockIdx.x);
    }
    out[blockIdx.x] = 1;
}
"""
    RawModule(code=code, check=True).get_function("hello")((2,), (32,), (np.zeros(2, np.int32),))
    assert sorted(capfd.readouterr().out.splitlines()) == ["block 0", "block 1"]


@pytest.mark.parametrize("check", [False, True])
def test_a_name_expression_of_a_variable_is_no_kernel_and_static_and_const_variables_are_found_as_cupy_finds_them(
        check):
    # NVRTC takes "&scale" as a name expression; the instance table took it for a kernel: a build error.
    # NVRTC names a static variable `hidden` in the PTX, as any other, where CuPy's get_global finds it;
    # GCC gave it a local symbol (_ZL6hidden), and folded `offset`, which the kernel only reads, away.
    code = r"""
__constant__ float scale[2];
static __constant__ float hidden[2];
static __device__ float offset = 0.0f;
__device__ const float unit = 1.5f;
extern "C" __global__ void apply(float* x)
{
    x[threadIdx.x] = x[threadIdx.x] * scale[threadIdx.x] + hidden[threadIdx.x] + offset + unit;
}
"""
    module = RawModule(code=code, name_expressions=("&scale",), check=check)
    module.get_global("scale")[:] = np.array([2, 3], np.float32).view(np.uint8)
    module.get_global("hidden")[:] = np.array([10, 20], np.float32).view(np.uint8)
    module.get_global("&offset")[:] = np.array([100], np.float32).view(np.uint8)
    unit = module.get_global("unit")
    assert unit.view(np.float32).tolist() == [1.5]
    with pytest.raises(ValueError, match="read-only"):  # in read-only memory here; compiled in on a GPU too
        unit[:] = 0
    x = np.ones(2, np.float32)
    module.get_function("apply")((1,), (2,), (x,))
    assert x.tolist() == [113.5, 124.5]
    with pytest.raises(LookupError, match=r"'&scale' names a variable of this RawModule, not a kernel"):
        module.get_function("&scale")
    with pytest.raises(LookupError, match=r"no __device__ or __constant__ variable 'missing' at global scope"):
        module.get_global("missing")


PUNS_AND_LOCKS = r"""
// Floats loaded into a register array as int4, as vectorized GEMMs load theirs: out = x @ y, y 8 wide.
extern "C" __global__ void through_int4(const float* x, const float* y, float* out, int K)
{
    float acc[8] = {0.0f};
    float b[8] = {0.0f};
    for (int k = 0; k < K; ++k) {
        for (int v = 0; v < 2; ++v) {
            *reinterpret_cast<int4*>(&b[4 * v]) = *reinterpret_cast<const int4*>(&y[8 * k + 4 * v]);
        }
        for (int j = 0; j < 8; ++j) {
            acc[j] += x[k] * b[j];
        }
    }
    for (int j = 0; j < 8; ++j) {
        out[j] = acc[j];
    }
}

// A sum under a lock taken with atomicCAS: right, its rounding depends on the order the threads come.
extern "C" __global__ void locked_sum(const float* x, int* lock, float* sum)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    *sum += x[i];
    __threadfence();
    atomicExch(lock, 0);
}

// The last thread decides a double's value, which differs from the others' in its 13th digit.
extern "C" __global__ void last_double(double* out) { out[0] = 1.0 + (threadIdx.x + 1) * 1e-12; }
"""


@pytest.mark.parametrize("check", [False, True])
def test_floats_moved_as_int4_are_seen_by_the_float_reads(check):
    # GCC's strict aliasing let the float reads of b miss the int4 store: out was all zeros
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)
    out = np.full(8, np.nan, np.float32)
    RawModule(code=PUNS_AND_LOCKS, check=check).get_function("through_int4")((1,), (1,), (x, y, out, np.int32(4)))
    expected = x.astype(np.float64) @ y.astype(np.float64)
    # 4 float32 products summed: within 4 * 2^-24 of the sum of the magnitudes
    assert np.all(np.abs(out - expected) <= 4 * 2.0**-24 * (np.abs(x) @ np.abs(y)))


def test_a_sum_under_an_atomic_lock_passes_the_checking_mode_within_rounding():
    # only atomicAdd of floats allowed for rounding: this sum was reported as a race
    x = np.random.default_rng(4).standard_normal(256).astype(np.float32)
    total = np.zeros(1, np.float32)
    RawModule(code=PUNS_AND_LOCKS, check=True).get_function("locked_sum")(
        (2,), (128,), (x, np.zeros(1, np.int32), total))
    # 256 float32 additions: within 256 * 2^-24 of the sum of the magnitudes
    assert abs(total[0] - x.astype(np.float64).sum()) <= 256 * 2.0**-24 * np.abs(x).sum()


def test_a_race_report_prints_every_digit_of_a_double():
    # it read "1 in one order and 1 in another"
    with pytest.raises(KernelError, match=r"args\[0\]\[0\] is 1\.0000000000\d+ in one order and "
                                          r"1\.0000000000\d+ in another"):
        RawModule(code=PUNS_AND_LOCKS, check=True).get_function("last_double")((1,), (32,), (np.zeros(1),))


@pytest.mark.parametrize("code, message", [
    ('#include <mma.h>\nusing namespace nvcuda;\nextern "C" __global__ void k(float* x)\n{\n'
     '    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;\n    wmma::fill_fragment(c, 0.0f);\n'
     '    wmma::store_matrix_sync(x, c, 16, wmma::mem_row_major);\n}\n',
     "(RawModule code):5: the CPU runner does not support tensor core matrix operations (nvcuda::wmma; mma.h)"),
    ('texture<float> heat;\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = tex1Dfetch(heat, 0); }\n',
     "(RawModule code):1: the CPU runner does not support texture references (texture<T>, which CUDA 12 removed; "
     "texture objects neither: read the array through a pointer)"),
    # Parboil's sad names the read mode: it was "`cudaReadModeElementType` is a function of the CUDA runtime API"
    ('texture<unsigned short, 2, cudaReadModeElementType> frame;\n'
     'extern "C" __global__ void k(float* x) { x[threadIdx.x] = tex2D(frame, 0, 0); }\n',
     "(RawModule code):1: the CPU runner does not support texture references (texture<T>, which CUDA 12 removed; "
     "texture objects neither: read the array through a pointer)"),
])
def test_what_the_runner_lacks_stops_the_build_in_one_line(code, message):
    # mma.h's refusal came with one compiler error per use of WMMA; a texture reference with none at all
    with pytest.raises(KernelBuildError) as refused:
        RawModule(code=code).get_function("k")
    assert str(refused.value) == message


def test_the_texture_modes_nvrtc_declares_are_declared():
    # a texture description's modes are texture_types.h's constants, which NVRTC 12.9 declares too
    code = ('extern "C" __global__ void k(int* out) { cudaTextureReadMode mode = cudaReadModeNormalizedFloat; '
            'out[0] = mode + 10 * cudaFilterModeLinear + 100 * cudaAddressModeBorder; }\n')
    out = np.zeros(1, np.int32)
    RawModule(code=code).get_function("k")((1,), (1,), (out,))
    assert out[0] == 1 + 10 + 300


def test_quoted_cuda_h_is_refused_under_nvrtc_as_the_angled_one_is():
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):1: NVRTC, CuPy's default compiler, cannot "
                                               r"compile <cuda.h>"):
        RawModule(code='#include "cuda.h"\nextern "C" __global__ void k(float* x) {}\n').get_function("k")


def test_a_null_pointer_fault_names_none_only_where_an_argument_was_none():
    # it blamed an argument given as None when no argument was: a corrupted stack looks the same
    code = r"""
// The address to write comes from the data (0: a null pointer no argument was)
extern "C" __global__ void through_null(const unsigned long long* address, int* out)
{
    reinterpret_cast<int*>(address[0])[threadIdx.x] = out[0];
}
"""
    kernel = RawModule(code=code, check=True).get_function("through_null")
    with pytest.raises(KernelError, match=r"through a null pointer \(no argument is one; a local array written past "
                                          r"its end overwrites what the thread saved on its stack"):
        kernel((1,), (1,), (np.zeros(1, np.uint64), np.zeros(1, np.int32)))
    with pytest.raises(KernelError, match=r"through a null pointer \(an argument given as None is one\)"):
        kernel((1,), (1,), (np.zeros(1, np.uint64), None))


THROUGH_A_STRUCT = r"""
// OpenCV's PtrStepSz, StyleGAN's parameter struct, PyTorch's accessors: the kernel reaches its data
// through a pointer held in a struct passed by value. `scale` doubles each element; `racy` has thread 0
// store a __shared__ element thread 63 writes, with no barrier between
struct Matrix { int n; int pad; float* data; };
extern "C" __global__ void scale(Matrix m)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m.n) m.data[i] *= 2.0f;
}
extern "C" __global__ void racy(Matrix m)
{
    __shared__ float tile[64];
    tile[threadIdx.x] = threadIdx.x;
    if (threadIdx.x == 0) m.data[0] = tile[63];
}
// ArrayFire passes 2 to 4 Param<T> structs: threads 0 and 1 race on b's element 1 only
extern "C" __global__ void three(Matrix a, Matrix b, Matrix c)
{
    a.data[threadIdx.x] = 1.0f;
    b.data[threadIdx.x] = 3.0f;
    c.data[threadIdx.x] = 2.0f;
    if (threadIdx.x == 0) b.data[1] = 7.0f;
}
// thread n reads one element past m's end
extern "C" __global__ void past_end(Matrix m, float* out) { out[threadIdx.x] = m.data[threadIdx.x]; }
"""
MATRIX = np.dtype([("n", "i4"), ("pad", "i4"), ("data", "u8")])


def test_device_memory_a_struct_argument_points_to_is_put_back_and_compared(capfd):
    # a launch whose struct held a pointer ran once, its races unchecked, until 2026-11-27, where
    # the memory it reached was NumPy's or the runner's device memory alike (5 of 14 code bases
    # pass their data so); device memory, as a CuPy array's pointer would be, is now put back
    # before the second run and compared after it
    module = RawModule(code=THROUGH_A_STRUCT, check=True)
    data = device_memory.to_device(np.arange(8, dtype=np.float32))
    matrix = np.array([(8, 0, data.ctypes.data)], MATRIX)[0]
    module.get_function("scale")((1,), (8,), (matrix,))
    assert data.tolist() == [2.0 * i for i in range(8)]  # doubled once, though run twice
    with pytest.raises(KernelError, match=r"racy: the result depends on the order in which the threads of a block run "
                                          r"between barriers \(element 0 of the device memory that args\[0\] \(its "
                                          r"bytes 8 to 15\) reaches is"):
        module.get_function("racy")((1,), (64,), (matrix,))
    assert "holds a pointer to memory that is no argument" not in capfd.readouterr().err
    # a float sum by atomics there is compared within the rounding of its order, as an argument's is
    total, x = device_memory.to_device(np.zeros(1, np.float32)), np.random.default_rng(0).standard_normal(4096) * 1e3
    RawModule(code="struct Sums { float* total; };\n"
                   'extern "C" __global__ void add(Sums s, const float* x) '
                   "{ atomicAdd(s.total, x[blockIdx.x * blockDim.x + threadIdx.x]); }", check=True).get_function("add")(
        (16,), (256,), (np.array([(total.ctypes.data,)], [("total", "u8")])[0], x.astype(np.float32)))
    # 4096 float32 additions in some order: at most 4096 * 2^-24 = 2.4e-4 of the terms' magnitudes,
    # 1e-4 of them typically; measured 0.06 on a sum of -66065 (9e-7 relative)
    assert abs(float(total[0]) - x.astype(np.float32).astype(np.float64).sum()) <= 1e-4 * np.abs(x).sum()
    # NumPy's memory is still run once, and said so
    host = np.arange(8, dtype=np.float32)
    module.get_function("racy")((1,), (64,), (np.array([(8, 0, host.ctypes.data)], MATRIX)[0],))
    assert "racy: args[0] (its bytes 8 to 15) holds a pointer to memory that is no argument" in capfd.readouterr().err

def test_device_memory_of_structs_with_padding_is_compared_by_all_its_bytes():
    """xgboost's COO tuples: 24-byte structs of two 8-byte integers and a float, read through a struct's
    pointer. NumPy's copy of the array left out the padding, so the checking mode found the untouched
    array changed and reported a race, printing two equal values."""
    code = r"""
struct Tuple { unsigned long long row, column; float value; };
struct Entries { const Tuple* tuples; unsigned long long n; };
extern "C" __global__ void column_counts(Entries entries, unsigned* counts)
{
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < entries.n; i += gridDim.x * blockDim.x)
        if (entries.tuples[i].value > 0.0f) atomicAdd(&counts[entries.tuples[i].column], 1u);
}
"""
    tuple_type = np.dtype({"names": ["row", "column", "value"], "formats": [np.uint64, np.uint64, np.float32],
                           "offsets": [0, 8, 16], "itemsize": 24})
    tuples = np.zeros(64, tuple_type)
    tuples["column"], tuples["value"] = np.arange(64) % 4, np.where(np.arange(64) % 3 == 0, -1.0, 1.0)
    on_device = device_memory.to_device(tuples)
    on_device.view(np.uint8).reshape(64, 24)[:, 20:] = 0xAB  # padding bytes that no field holds
    entries = np.array([(on_device.ctypes.data, 64)], [("tuples", np.uint64), ("n", np.uint64)])[0]
    counts = np.zeros(4, np.uint32)
    RawModule(code=code, check=True).get_function("column_counts")((2,), (32,), (entries, counts))
    np.testing.assert_array_equal(counts, np.bincount(tuples["column"][tuples["value"] > 0].astype(int), minlength=4))
    assert (on_device.view(np.uint8).reshape(64, 24)[:, 20:] == 0xAB).all()  # put back as they were


def test_a_race_or_a_fault_in_device_memory_names_the_struct_whose_pointer_reaches_it():
    """A race reported in device memory named every struct argument that held a pointer, the three of
    ArrayFire's Params where one was raced on; a read past the end of such memory was "outside every
    buffer passed to the kernel", where one past an argument's array is named."""
    module = RawModule(code=THROUGH_A_STRUCT, check=True)
    arrays = [device_memory.to_device(np.zeros(4, np.float32)) for _ in range(3)]
    structs = [np.array([(4, 0, array.ctypes.data)], MATRIX)[0] for array in arrays]
    with pytest.raises(KernelError, match=r"three: .* \(element 1 of the device memory that args\[1\] \(its bytes 8 "
                                          r"to 15\) reaches is"):
        module.get_function("three")((1,), (4,), tuple(structs))
    with pytest.raises(KernelError, match=r"past_end: an invalid memory access: an access 1 element\(s\) past the end "
                                          r"of the device memory that args\[0\] \(its bytes 8 to 15\) reaches in "
                                          r"thread \(64, 0, 0\)"):
        data = device_memory.to_device(np.arange(64, dtype=np.float32))  # 256 bytes: its end is the guard's start
        module.get_function("past_end")((1,), (65,), (np.array([(64, 0, data.ctypes.data)], MATRIX)[0],
                                                       np.zeros(65, np.float32)))


def test_a_pointer_to_pointers_takes_an_array_of_addresses(capfd):
    # CuPy takes an array of device pointers for a `void**` (CUDA by Example's hash table); it was refused
    code = r"""
extern "C" __global__ void first_of_each(void** rows, float* out)
{
    out[threadIdx.x] = *static_cast<const float*>(rows[threadIdx.x]);
}
"""
    rows = [np.full(3, 10.0 + i, np.float32) for i in range(4)]
    addresses = np.array([row.ctypes.data for row in rows], np.uint64)
    for check in (False, True):
        out = np.zeros(4, np.float32)
        RawModule(code=code, check=check).get_function("first_of_each")((1,), (4,), (addresses, out))
        assert out.tolist() == [10.0, 11.0, 12.0, 13.0]
    # what the addresses point to is no argument: the checking mode runs the launch once, and says so
    assert "first_of_each: args[0] (an array of pointers) holds a pointer" in capfd.readouterr().err
    with pytest.raises(TypeError, match=r"argument 0 \(void\*\*\) takes an array of addresses, uint64 or int64"):
        RawModule(code=code).get_function("first_of_each")((1,), (4,), (addresses.view(np.float64), out))



def test_an_array_of_null_pointers_reaches_no_memory_so_its_launch_is_still_compared(capfd):
    # rows of nulls only (a table whose slots are all empty) point to nothing the kernel can reach:
    # until 2026-11-27 such a launch ran once, as if they pointed to memory that is no argument, and
    # the race below, every thread writing out[0], went unreported
    code = r"""
extern "C" __global__ void last_empty_row(void** rows, int* out)
{
    if (rows[threadIdx.x] == nullptr) out[0] = threadIdx.x;
}
"""
    kernel = RawModule(code=code, check=True).get_function("last_empty_row")
    with pytest.raises(KernelError, match=r"last_empty_row.*race"):
        kernel((1,), (32,), (np.zeros(32, np.uint64), np.zeros(1, np.int32)))
    assert "holds a pointer" not in capfd.readouterr().err

ACTIVE_LANES = r"""
// The lanes that take the branch ask which lanes run with them, then swap values with their neighbours
// under that mask (the usual __syncwarp(__activemask()) of code written for independent threads).
extern "C" __global__ void in_a_branch(unsigned* masks, int* swapped)
{
    __shared__ int s[32];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x < 8) {
        const unsigned mask = __activemask();
        const int neighbour = s[threadIdx.x ^ 1];
        __syncwarp(mask);
        masks[threadIdx.x] = mask;
        swapped[threadIdx.x] = neighbour;
    }
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_activemask_in_a_branch_gives_the_lanes_that_took_it(check):
    # it gave the lanes not yet returned: 0xffffffff in order, another mask in each checked order (a
    # false race), and __syncwarp on it waited for lanes that never came
    masks, swapped = np.zeros(8, np.uint32), np.full(8, -1, np.int32)
    RawModule(code=ACTIVE_LANES, check=check).get_function("in_a_branch")((1,), (32,), (masks, swapped))
    assert masks.tolist() == [0xFF] * 8
    assert swapped.tolist() == [1, 0, 3, 2, 5, 4, 7, 6]


def test_memory_reached_through_a_pointer_in_a_constant_struct_is_updated_once(capfd):
    # the checking mode ran such a launch twice on the same memory: every element came out 2, not 1
    code = r"""
struct Params {
    int n;
    float* data;
};
__constant__ Params params;
extern "C" __global__ void increment()
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < params.n) {
        params.data[i] += 1.0f;
    }
}
"""
    module = RawModule(code=code, check=True)
    data = np.zeros(40, np.float32)
    layout = np.dtype([("n", np.int32), ("data", np.uint64)], align=True)
    module.get_global("params")[:] = np.array([(40, data.ctypes.data)], layout).view(np.uint8)
    module.get_function("increment")((2,), (32,), ())
    assert data.tolist() == [1.0] * 40
    assert "increment: the variable `params` (its bytes 8 to 15) holds a pointer" in capfd.readouterr().err


def test_a_race_in_memory_a_constant_struct_reaches_names_the_one_pointer_that_reaches_it():
    # CS149's renderer reaches its image through one word of a __constant__ struct of five pointers: every
    # word was named ("its bytes 8 to 15, 16 to 23, 24 to 31 and 2 more words") until 2026-11-28
    code = r"""
struct Scene {
    float* a;
    float* b;
    float* c;
};
__constant__ Scene scene;
extern "C" __global__ void racy()
{
    scene.c[0] = threadIdx.x;  // the race: every thread stores its own index in one place
    scene.a[threadIdx.x] = scene.b[threadIdx.x];
}
"""
    module = RawModule(code=code, check=True)
    a, b, c = (device_memory.to_device(np.full(n, value, np.float32)) for n, value in ((32, 0), (32, 1), (4, 0)))
    module.get_global("scene").view(np.uint64)[:] = [a.ctypes.data, b.ctypes.data, c.ctypes.data]
    with pytest.raises(KernelError, match=r"^racy: the result depends on the order .* \(element 0 of the device "
                                          r"memory that the variable `scene` \(its bytes 16 to 23\) reaches is "):
        module.get_function("racy")((1,), (32,), ())


NEIGHBOURS = r"""
extern "C" __global__ void address_of(const int* in, unsigned long long* out) { out[0] = (unsigned long long)in; }
// Each thread takes its left neighbour: `in` is a view one element into its array, as `d_in + 1`.
extern "C" __global__ void left_neighbour(const int* in, int* out) { out[threadIdx.x] = in[(int)threadIdx.x - 1]; }
// With i = 0 a write before the start of `out`, and a read before the start of `x`.
extern "C" __global__ void shift_left(const float* x, float* out) { out[(int)threadIdx.x - 1] = x[threadIdx.x]; }
extern "C" __global__ void from_the_left(const float* x, float* out) { out[threadIdx.x] = x[(int)threadIdx.x - 1]; }
// A struct with padding that the kernel only reads.
struct Element {
    int key;
    Element* next;
};
extern "C" __global__ void first_key(Element* list, int* out) { out[0] = list[0].key; }
"""


def test_device_arrays_are_passed_as_they_are_and_a_view_is_passed_within_its_array():
    # NumPy 2 keeps np.frombuffer's buffer as a memoryview: device arrays were copied at every launch
    module = RawModule(code=NEIGHBOURS)
    on_device = device_memory.to_device(np.arange(10, 19, dtype=np.int32))
    address = np.zeros(1, np.uint64)
    module.get_function("address_of")((1,), (1,), (on_device, address))
    assert int(address[0]) == on_device.ctypes.data
    # CuPy passes a view's pointer into its array: in[-1] is the element before the view, also for
    # a NumPy array, copied with the array it views (it read 0)
    for base in (on_device, np.arange(10, 19, dtype=np.int32)):
        out = np.zeros(8, np.int32)
        module.get_function("left_neighbour")((1,), (8,), (base[1:], out))
        assert out.tolist() == list(range(10, 18))


def test_the_checking_mode_passes_a_view_within_a_guarded_copy_of_its_array():
    """As the plain mode does (and CuPy): a view's neighbours are its array's elements, so a stencil
    given `in + 1` reads in[-1]; the checking mode copied a view alone and its fill came out NaN
    there (Rodinia's srad_v2 given views into a padded array was reported until 2026-11-27). Reads
    and writes past the whole array are still caught."""
    module = RawModule(code=NEIGHBOURS, check=True)
    base = np.arange(10, 19, dtype=np.int32)
    out = np.zeros(8, np.int32)
    module.get_function("left_neighbour")((1,), (8,), (base[1:], out))
    assert out.tolist() == list(range(10, 18))
    padded = np.zeros(12, np.float32)  # an output view into a padded array: the write at -1 lands in it
    padded[1:11] = np.nan
    x = np.arange(10, dtype=np.float32)
    module.get_function("shift_left")((1,), (10,), (x, padded[1:11]))
    np.testing.assert_array_equal(padded[:10], x)
    assert np.isnan(padded[10]) and padded[11] == 0
    with pytest.raises(KernelError, match=r"shift_left: a write before the start of args\[1\]: up to 1 element"):
        module.get_function("shift_left")((1,), (10,), (x, np.zeros(12, np.float32)[:10]))


def test_the_checking_mode_reports_a_write_and_a_read_right_before_an_array():
    # both landed in the array's first page, before the guard: the write unseen, the read gave 0
    module = RawModule(code=NEIGHBOURS, check=True)
    x = np.arange(7, dtype=np.float32)
    with pytest.raises(KernelError, match=r"shift_left: a write before the start of args\[1\]: up to 1 element\(s\)"):
        module.get_function("shift_left")((1,), (7,), (x, np.zeros(7, np.float32)))
    with pytest.raises(KernelError, match=r"from_the_left: 1 element\(s\) of args\[1\] hold NaN .* the bytes right "
                                          r"before an array, an index of -1"):
        module.get_function("from_the_left")((1,), (7,), (x, np.zeros(7, np.float32)))


@pytest.mark.parametrize("dtype, c_type, value", [(np.int32, "int", -1), (np.uint8, "unsigned char", 255),
                                                 (np.int32, "int", 5)])
def test_a_write_of_all_ones_bytes_right_before_an_array_is_reported(dtype, c_type, value):
    # labels[i - 1] = -1 (mumax's 255, "no region") left the 0xFF fill before the array as it was:
    # unreported until 2026-11-27, where a GPU reports an invalid global write
    code = f"""
extern "C" __global__ void reset_labels({c_type}* labels)
{{
    labels[(int)threadIdx.x - 1] = {value};
}}
"""
    with pytest.raises(KernelError, match=r"reset_labels: a write before the start of args\[0\]: up to 1 element"):
        RawModule(code=code, check=True).get_function("reset_labels")((1,), (4,), (np.zeros(4, dtype),))

ATOMIC_BEFORE = r"""
// Thread 3 adds its weight at index i - 4 = -1, as a bilinear gradient adds a weight of 0 at a
// corner outside the map (mmcv's border_align backward, unguarded): one element before `grad`.
template <typename T>
__global__ void scatter_weight(T* grad, T weight)
{
    if (threadIdx.x >= 3) atomicAdd(&grad[(int)threadIdx.x - 4], weight);
}
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("weight", [0, 1])
def test_an_atomic_right_before_an_array_is_reported_even_when_it_changes_no_byte(dtype, weight):
    # an atomicAdd of 0 into the NaN fill before the array (0xFF bytes: NaN + 0 is the same NaN) left
    # every byte as it was, and the write went unreported until 2026-11-27
    name = {np.float32: "float", np.float64: "double", np.int32: "int"}[dtype]
    kernel = RawModule(code=ATOMIC_BEFORE, check=True, name_expressions=[f"scatter_weight<{name}>"]).get_function(
        f"scatter_weight<{name}>")
    with pytest.raises(KernelError, match=r"scatter_weight<.*>: an atomic operation 1 element\(s\) before the "
                                          r"start of args\[0\], in thread \(3, 0, 0\) of block \(0, 0, 0\)"):
        kernel((1,), (8,), (np.zeros(4, dtype), dtype(weight)))
    # within the array that a view views, the element before the view is the array's own
    grad = np.zeros(5, dtype)
    kernel((1,), (8,), (grad[1:], dtype(weight)))
    assert grad.tolist() == [weight] * 5


BYTE_ADD = r"""
// A byte's atomicAdd done as an atomicCAS on the aligned 32-bit word that holds it (PyTorch's and
// pytorch_scatter's atomics for uint8, int8 and int16): out[0]'s word starts where the array does on
// a GPU, and before it here when the checked array's size is no multiple of 4 (it ends at a guard page)
extern "C" __global__ void add_bytes(unsigned char* out, const unsigned char* value, int n)
{
    const int i = threadIdx.x;
    if (i >= n) {
        return;
    }
    unsigned char* address = out + i;
    unsigned int* word = (unsigned int*)(address - ((size_t)address & 3));
    const unsigned int shift = ((size_t)address & 3) * 8;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        const unsigned int sum = (((old >> shift) & 0xffu) + value[i]) & 0xffu;
        old = atomicCAS(word, assumed, (old & ~(0xffu << shift)) | (sum << shift));
    } while (assumed != old);
}
"""


@pytest.mark.parametrize("n", [5, 6, 7, 8])
def test_a_byte_atomic_on_the_word_that_holds_the_first_byte_is_no_access_before_the_array(n):
    # an array of 5 bytes starts 3 bytes past a 4-byte boundary in the checking mode: out[0]'s word was
    # reported as "an atomic operation 3 element(s) before the start of args[0]" until 2026-11-27
    kernel = RawModule(code=BYTE_ADD, check=True).get_function("add_bytes")
    out, value = np.zeros(n, np.uint8), np.arange(1, n + 1, dtype=np.uint8)
    kernel((1,), (32,), (out, value, np.int32(n)))
    np.testing.assert_array_equal(out, value)


def test_a_struct_array_with_padding_is_compared_by_its_bytes():
    # a NumPy copy of it left the padding undefined: two equal runs were reported as a race
    layout = np.dtype([("key", np.int32), ("next", np.uint64)], align=True)
    items = np.zeros(2, layout)
    items.view(np.uint8)[4:8] = 7  # the padding between key and next
    items["key"] = [5, 6]
    out = np.zeros(1, np.int32)
    RawModule(code=NEIGHBOURS, check=True).get_function("first_key")((1,), (1,), (items, out))
    assert out[0] == 5


def test_a_file_scope_shared_array_declared_through_a_macro_is_each_blocks_own_when_checking():
    # the checking mode's blocks take turns, each with its own copy of the arrays it finds: one it
    # missed was shared by the blocks, and their results raced
    code = r"""
#define FILE_TILE __shared__ float file_tile[32];
FILE_TILE
extern "C" __global__ void reverse_blocks(const float* x, float* out)
{
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    file_tile[t] = x[base + t];
    __syncthreads();
    out[base + t] = file_tile[31 - t];
}
"""
    x = np.arange(8 * 32, dtype=np.float32)
    out = np.zeros_like(x)
    RawModule(code=code, check=True).get_function("reverse_blocks")((8,), (32,), (x, out))
    np.testing.assert_array_equal(out, x.reshape(8, 32)[:, ::-1].reshape(-1))


ATOMIC_SUM = r"""
// Each block sums its part of x in __shared__ memory and adds the sum to total with one atomicAdd
// (the atomic reduction of Fan's "CUDA Programming", chapter 9).
template <typename T>
__global__ void atomic_sum(const T* x, T* total, int n)
{
    __shared__ T part[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, part[0]);
}
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_atomic_sum_that_cancels_is_compared_by_its_partial_sums_rounding(dtype):
    """Zero-mean data (a total momentum): the two orders round the block sums (up to about 28) apart
    by about 1e-5 in float32, where the result is about 2e-4. The tolerance came from the result's
    magnitude alone, and a correct kernel was reported as a race until 2026-11-27; it comes from
    the largest value the atomicAdds met now."""
    name = f"atomic_sum<{'float' if dtype == np.float32 else 'double'}>"
    x = np.random.default_rng(9).normal(0, 1, 20_000).astype(dtype)
    x -= x.mean(dtype=np.float64).astype(dtype)
    total = np.zeros(1, dtype)
    RawModule(code=ATOMIC_SUM, name_expressions=(name,), check=True).get_function(name)(
        (157,), (128,), (x, total, np.int32(x.size)))
    # 157 float32 block sums of magnitude up to 28 added in some order: within 1e-4 absolute
    assert abs(float(total[0]) - x.astype(np.float64).sum()) < (1e-4 if dtype == np.float32 else 1e-12)
    # a sum whose order matters beyond rounding is still reported: every block adds its own index
    racy = ATOMIC_SUM.replace("atomicAdd(total, part[0]);", "total[0] = total[0] * 2 + blockIdx.x;")
    with pytest.raises(KernelError, match=r"the result depends on the order"):
        RawModule(code=racy, name_expressions=(name,), check=True).get_function(name)(
            (4,), (128,), (x, np.zeros(1, dtype), np.int32(512)))


INFINITY_BESIDE_ATOMICS = r"""
// Each thread adds its value to sums[0] with atomicAdd, whose order rounds the sum; sums[1] holds an
// infinity no thread writes (a shortest path's distance to a vertex not reached). With RACE defined,
// every thread also stores its index in sums[2]: a race whatever the rounding.
extern "C" __global__ void add(float* sums, const float* x)
{
    atomicAdd(&sums[0], x[threadIdx.x]);
#ifdef RACE
    sums[2] = threadIdx.x;
#endif
}
"""


@pytest.mark.parametrize("race", [False, True])
def test_an_infinity_beside_atomics_is_equal_to_itself_and_hides_no_race(race):
    # until 2026-11-28 an infinity made the rounding's scale infinite: it failed itself ("is inf in one
    # order and inf in another", Gunrock's SSSP) and let every finite element pass (the race went unseen)
    x = np.random.default_rng(3).normal(0, 1, 256).astype(np.float32)
    sums = np.array([0.0, np.inf, 0.0], np.float32)
    add = RawModule(code=INFINITY_BESIDE_ATOMICS, options=("-DRACE",) if race else (), check=True).get_function("add")
    if race:
        with pytest.raises(KernelError, match=r"the result depends on the order .* \(args\[0\]\[2\] is"):
            add((1,), (256,), (sums, x))
        return
    add((1,), (256,), (sums, x))
    # 256 additions, each rounding by at most half an ulp of a partial sum below 32 (2**-19): < 5e-4
    assert abs(sums[0] - x.astype(np.float64).sum()) < 5e-4 and sums[1] == np.inf


def test_an_atomic_sums_rounding_magnified_by_the_kernel_is_reported_naming_that_cause():
    """AutoDock-GPU's float gradients: a sum by atomics whose order's rounding a later step magnifies
    differs from run to run on a GPU too; the report's list of causes did not name it."""
    code = r"""
extern "C" __global__ void magnified(const float* x, float* out)
{
    __shared__ float sum;
    if (threadIdx.x == 0) sum = 0.0f;
    __syncthreads();
    atomicAdd(&sum, x[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = sum * 1e10f;
}
"""
    x = np.array([1.0, 1e-8, -1.0, 3e-8] * 8, np.float32)  # 1e-8 is lost or kept, as 1 comes before it or not
    with pytest.raises(KernelError, match=r"or a float sum by atomics, whose rounding depends on their order, "
                                          r"magnified by what the kernel does with it"):
        RawModule(code=code, check=True).get_function("magnified")((4,), (32,), (x, np.zeros(4, np.float32)))
    # the first thread to an atomic counter records its index (hashcat's cracked hashes): the threads' order's
    first = r"""
extern "C" __global__ void first_found(unsigned* found, unsigned* who)
{
    if (atomicAdd(found, 1u) == 0) *who = threadIdx.x;
}
"""
    with pytest.raises(KernelError, match=r"or which thread comes first to an atomic counter"):
        RawModule(code=first, check=True).get_function("first_found")((1,), (32,), (np.zeros(1, np.uint32),
                                                                                  np.zeros(1, np.uint32)))


FLOAT_TO_INT = r"""
// index = (int)position, as RoI align kernels take a sample's cell; a NaN position gives an index a
// GPU clamps to 0 (cvt.rzi) and x86 to INT_MIN
extern "C" __global__ void cell_of(const float* position, int* cell, unsigned int* clamped)
{
    int i = threadIdx.x;
    clamped[i] = __float2uint_rz(position[i]);
    cell[i] = (int)position[i];
}
"""


@pytest.mark.parametrize("position, shown", [(np.nan, r"nan \('float'\)"), (3e9, r"3e\+09 \('float'\)")])
def test_a_float_converted_to_an_int_that_cannot_hold_it_is_reported_where_a_gpu_clamps_it(position, shown):
    if "-DNN_CUDA_CPU_CAST_CHECK" not in build.check_flags(build.find_compiler()):
        pytest.skip("the checking build checks conversions with GCC and its libubsan, which this host lacks")
    positions = np.array([1.5, position], np.float32)
    cell, clamped = np.full(2, -7, np.int32), np.full(2, 7, np.uint32)
    with pytest.raises(KernelError, match=rf"cell_of: thread \(1, 0, 0\) of block \(0, 0, 0\) converts {shown} to "
                                          r"'int', which cannot hold it, at \(RawModule code\):8: C\+\+ leaves that "
                                          r"undefined; a GPU's conversion clamps"):
        RawModule(code=FLOAT_TO_INT, check=True).get_function("cell_of")((1,), (2,), (positions, cell, clamped))
    # in range, and through the intrinsic, which clamps as a GPU does: no report
    positions[1] = 2.5
    RawModule(code=FLOAT_TO_INT, check=True).get_function("cell_of")((1,), (2,), (positions, cell, clamped))
    assert cell.tolist() == [1, 2] and clamped.tolist() == [1, 2]


@pytest.mark.parametrize("position", [-np.inf, -3e9])
def test_a_float_below_an_ints_range_converts_to_its_minimum_as_on_a_gpu_without_a_report(position):
    # x86 and a GPU's clamp both give INT_MIN there: FasterTransformer's T5 buckets convert logf(0)
    # and drop the value, and the checking mode stopped them (until 2026-11-27)
    if "-DNN_CUDA_CPU_CAST_CHECK" not in build.check_flags(build.find_compiler()):
        pytest.skip("the checking build checks conversions with GCC and its libubsan, which this host lacks")
    positions = np.array([1.5, position], np.float32)
    cell, clamped = np.full(2, -7, np.int32), np.full(2, 7, np.uint32)
    RawModule(code=FLOAT_TO_INT, check=True).get_function("cell_of")((1,), (2,), (positions, cell, clamped))
    assert cell.tolist() == [1, -2**31] and clamped.tolist() == [1, 0]


SHIFT = r"""
// a mask of the low n bits, as bit-packing kernels make one: n = 32 gives 0xffffffff on a GPU (its
// shift clamps the count: 1u << 32 is 0) and 0 on x86 (1u << 32 is 1)
extern "C" __global__ void low_bits(const int* n, unsigned int* mask)
{
    mask[threadIdx.x] = (1u << n[threadIdx.x]) - 1u;
}
"""


def test_a_shift_by_the_width_or_more_is_reported_where_a_gpu_clamps_the_count():
    if "-DNN_CUDA_CPU_CAST_CHECK" not in build.check_flags(build.find_compiler()):
        pytest.skip("the checking build checks shifts with GCC and its libubsan, which this host lacks")
    mask = np.zeros(2, np.uint32)
    with pytest.raises(KernelError, match=r"low_bits: thread \(1, 0, 0\) of block \(0, 0, 0\) shifts a value of "
                                          r"'unsigned int' \(32 bits\) by 32 at \(RawModule code\):6: C\+\+ leaves"):
        RawModule(code=SHIFT, check=True).get_function("low_bits")((1,), (2,), (np.int32([3, 32]), mask))
    RawModule(code=SHIFT, check=True).get_function("low_bits")((1,), (2,), (np.int32([3, 31]), mask))
    assert mask.tolist() == [7, 2**31 - 1]


CAS_ADD = r"""
// the CUDA guide's atomicAdd of doubles by a CAS loop (caffe's caffe_gpu_atomic_add<double>)
__device__ void cas_add(double* address, double value)
{
    unsigned long long* bits = (unsigned long long*)address;
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        old = atomicCAS(bits, assumed, __double_as_longlong(value + __longlong_as_double(assumed)));
    } while (assumed != old);
}
"""
CAS_SUMS = CAS_ADD + r"""
extern "C" __global__ void cas_sum(const double* x, int n, double* total)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) cas_add(total, x[i]);
}
// an integer CAS (a hash table's keys, large as floats' bits) beside a real race on a float output
extern "C" __global__ void keys_and_race(unsigned int* keys, float* out)
{
    atomicCAS(&keys[threadIdx.x], 0u, 0x7E967699u + threadIdx.x);  // 1e38 as a float's bits
    out[0] = (float)threadIdx.x;  // every thread writes one element: the last one wins
}
"""


def test_a_cas_loop_sum_of_cancelling_doubles_is_compared_up_to_rounding_and_integer_cas_hides_no_race():
    # caffe's EmbedBackward<double>: addends of 1e8 that cancel to 0.03 differ by rounding only between
    # two orders (1.6e-7 here), which the checking mode reported as a race: only atomicAdd's addends
    # counted for the rounding its order allows
    rng = np.random.default_rng(3)
    big = rng.choice([-1.0, 1.0], 200) * 1e8 * rng.random(200)
    x = (np.concatenate([big, -big]) + 1e-3 * rng.standard_normal(400))[rng.permutation(400)]
    total = np.zeros(1)
    RawModule(code=CAS_SUMS, check=True).get_function("cas_sum")((1,), (512,), (x, np.int32(400), total))
    assert abs(total[0] - x.sum()) < 1e-12 * np.abs(x).sum()  # 400 roundings of addends up to 1e8
    with pytest.raises(KernelError, match=r"keys_and_race: the result depends on the order"):
        RawModule(code=CAS_SUMS, check=True).get_function("keys_and_race")(
            (1,), (32,), (np.zeros(32, np.uint32), np.zeros(1, np.float32)))


COMPLEX_SUMS = CAS_ADD + r"""
// MAGMA's zatomic_add: each part of a complex sum added by the Programming Guide's atomicCAS loop of
// doubles (CAS_ADD, above), and a complex64 one by atomicAdd of its parts
#include <cuComplex.h>
extern "C" __global__ void complex_sums(const double* x, cuDoubleComplex* total, cuFloatComplex* total32)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    cas_add(&total[0].x, x[i]);
    cas_add(&total[0].y, -x[i]);
    atomicAdd(&total32[0].x, (float)x[i]);
    atomicAdd(&total32[0].y, -(float)x[i]);
}
"""


def test_atomic_sums_into_complex_arrays_are_compared_up_to_their_rounding():
    # reported as races for a difference of an ulp until 2026-11-27: the rounding allowed between the
    # two orders applied to float arrays only, not to a complex array's parts
    x = np.random.default_rng(3).standard_normal(256) * 10
    total, total32 = np.zeros(1, np.complex128), np.zeros(1, np.complex64)
    RawModule(code=COMPLEX_SUMS, check=True).get_function("complex_sums")((4,), (64,), (x, total, total32))
    assert abs(total[0] - (x.sum() - 1j * x.sum())) < 1e-12 * np.abs(x).sum()
    assert abs(total32[0] - (x.sum() - 1j * x.sum())) < 1e-5 * np.abs(x).sum()


ATOMIC_REFS = r"""
#include <cuda/atomic>
#include <cuda/std/atomic>

// libcu++'s atomics (gsplat's rasterizer reads a counter through cuda::atomic_ref, cudf's joins count
// through them): every thread adds a tenth of its index to a float sum and 1 to a count through atomic_ref, the
// largest index through fetch_max, takes a ticket from a __shared__ cuda::atomic, and block 1 waits
// (spinning on load) until block 0 has set its flag.
extern "C" __global__ void refs(float* sum, unsigned* count, int* largest, int* tickets, int* flag, int* waited)
{
    __shared__ cuda::atomic<int, cuda::thread_scope_block> ticket;
    if (threadIdx.x == 0) {
        ticket.store(0);
    }
    __syncthreads();
    cuda::std::atomic_ref<float>(*sum).fetch_add(0.1f * threadIdx.x);  // rounded in the threads' order
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> counted(*count);
    ++counted;
    cuda::atomic_ref<int>(*largest).fetch_max((int)(blockIdx.x * blockDim.x + threadIdx.x), cuda::memory_order_relaxed);
    const int mine = ticket.fetch_add(1);
    __syncthreads();
    if (threadIdx.x == 0) {
        tickets[blockIdx.x] = ticket.load() == (int)blockDim.x && mine < (int)blockDim.x;
        cuda::atomic_ref<int> ready(*flag);
        if (blockIdx.x == 0) {
            ready.store(1, cuda::memory_order_release);
        } else {
            while (ready.load(cuda::memory_order_acquire) == 0) {
            }
            waited[0] = 1;
        }
    }
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_libcuxx_atomic_refs_and_atomics_count_as_the_runners_atomics(check):
    # <cuda/atomic> was refused, and cuda::std::atomic_ref missing below C++20; a thread spinning on
    # one's load must let the block it waits for run, and a float sum through one is compared up to
    # its order's rounding in the checking mode, as atomicAdd's are
    total, count = np.zeros(1, np.float32), np.zeros(1, np.uint32)
    largest, tickets, flag, waited = (np.zeros(1, np.int32), np.zeros(2, np.int32), np.zeros(1, np.int32),
                                      np.zeros(1, np.int32))
    RawModule(code=ATOMIC_REFS, check=check).get_function("refs")(
        (2,), (64,), (total, count, largest, tickets, flag, waited))
    np.testing.assert_allclose(total[0], 2 * sum(0.1 * i for i in range(64)), rtol=1e-5)  # 128 float32 additions
    assert count[0] == 128 and largest[0] == 127
    assert tickets.tolist() == [1, 1] and flag[0] == 1 and waited[0] == 1


GATHER = r"""
// Each thread reads x at the position its __shared__ slot holds; only the first 16 threads write
// theirs, so the others read a position no thread wrote.
extern "C" __global__ void gather(const float* x, float* out, const unsigned* order, int written)
{
    __shared__ unsigned position[32];
    if (threadIdx.x < written) {
        position[threadIdx.x] = order[threadIdx.x];
    }
    __syncthreads();
    out[threadIdx.x] = x[position[threadIdx.x]];
}
"""


def test_a_fault_that_follows_an_unwritten_shared_index_names_the_array():
    # gsplat's forward rasterizer without its barrier: the garbage read as an index faulted, and the
    # report named the access, not the __shared__ element no thread had written
    module = RawModule(code=GATHER, check=True)
    x, order = np.arange(32, dtype=np.float32), np.arange(32, dtype=np.uint32)[::-1].copy()
    out = np.zeros(32, np.float32)
    module.get_function("gather")((1,), (32,), (x, out, order, np.int32(32)))
    np.testing.assert_array_equal(out, x[::-1])
    with pytest.raises(KernelError, match=r"gather: an invalid memory access .* in thread \(\d+, 0, 0\) of block "
                                          r"\(0, 0, 0\) at \(RawModule code\):11; it follows a read of __shared__ "
                                          r"`position` \(in gather\) where no thread of the block had written it"):
        module.get_function("gather")((1,), (32,), (x, out, order, np.int32(16)))
    # a fault that zeros do not take away is reported as it is
    with pytest.raises(KernelError) as raised:
        module.get_function("gather")((1,), (32,), (x, out, order + np.uint32(1 << 30), np.int32(32)))
    assert "invalid memory access" in str(raised.value) and "it follows a read" not in str(raised.value)


def test_a_write_before_an_array_through_an_unwritten_shared_index_names_the_array():
    # CS267's particle binning without its barrier: the fill of a __shared__ int read as -1 made the kernel
    # write before `bin_end`, reported as "a[i - 1] at i = 0?" with no word of the __shared__ array
    code = r"""
extern "C" __global__ void bin_ends(int* bin_end, const int* key, int n)
{
    __shared__ int previous[65];
    const int i = threadIdx.x;
    if (i < n) previous[i + 1] = key[i];
    if (i > 0 && i < n && key[i] != previous[i]) bin_end[previous[i]] = i;
}
"""
    key = np.repeat(np.arange(16, dtype=np.int32), 4)
    with pytest.raises(KernelError, match=r"^bin_ends: a write before the start of args\[0\]: .*; it follows a read of "
                                          r"__shared__ `previous` \(in bin_ends\) where no thread of the block had "
                                          r"written it .*: a __syncthreads\(\) missing before that read"):
        RawModule(code=code, check=True).get_function("bin_ends")((1,), (64,), (np.zeros(16, np.int32), key,
                                                                               np.int32(64)))


STENCIL = r"""
// A 1-D stencil of radius 3 that expects `in` to point 3 elements into its array (OLCF's exercise):
// given the array itself, block 0 reads in[-3..-1].
template <typename T>
__global__ void stencil(const T* in, T* out)
{
    __shared__ T window[16 + 6];
    const int global = threadIdx.x + blockIdx.x * blockDim.x, local = threadIdx.x + 3;
    window[local] = in[global];
    if (threadIdx.x < 3) {
        window[local - 3] = in[global - 3];
        window[local + 16] = in[global + 16];
    }
    __syncthreads();
    T sum = 0;
    for (int offset = -3; offset <= 3; ++offset) {
        sum += window[local + offset];
    }
    out[global] = sum;
}
"""


def test_a_read_before_the_start_of_an_integer_array_is_reported():
    # the bytes before each array are 0xFF: NaN reaches a float output, which was reported; an int
    # output took -1 silently (OLCF's stencil exercise given `in` for `in + RADIUS`)
    module = RawModule(code=STENCIL, name_expressions=("stencil<int>",), check=True)
    data, out = np.ones(64 + 6, np.int32), np.zeros(64 + 6, np.int32)
    module.get_function("stencil<int>")((4,), (16,), (data[3:], out[3:]))  # as the exercise means it
    assert out[3:-3].tolist() == [7] * 64
    with pytest.raises(KernelError, match=r"stencil<int>: the result depends on the bytes right before args\[0\] "
                                          r"\(args\[1\]\[0\] is 1 with 0xFF bytes and 4 with zeros\): the kernel "
                                          r"read before the start of an array"):
        module.get_function("stencil<int>")((4,), (16,), (data, out))


SHARED_THEN_BEFORE_THE_VIEW = r"""
// Thread 0 zeroes a __shared__ count, every thread adds 1 to it, and the last adds the count at
// index -1 of `out`: an element before the view it is given, within the array the view views.
extern "C" __global__ void count_before(int* out)
{
    __shared__ int count;
    if (threadIdx.x == 0) {
        count = 0;
    }
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) {
        out[-1] = count;
    }
}
"""


def test_what_a_kernel_writes_before_its_view_survives_the_checking_modes_reruns():
    # the reruns that look for reads of unwritten __shared__ memory and of the bytes before an array
    # put the outputs back as they were after the launch: the views only, which lost out[-1]
    out = np.zeros(3, np.int32)
    RawModule(code=SHARED_THEN_BEFORE_THE_VIEW, check=True).get_function("count_before")((1,), (8,), (out[1:],))
    assert out.tolist() == [8, 0, 0]


def test_a_tile_left_unwritten_by_threads_that_returned_early_names_the_early_return():
    # GPU MODE's tiled matrix multiply warns "cannot just exit if we want to do padding!"; the report
    # asked for a __syncthreads() only, which does not mend it
    code = r"""
extern "C" __global__ void rotate(const float* x, float* y, int n)
{
    __shared__ float tile[32];
    int i = threadIdx.x;
    if (i >= n) return;
    tile[i] = x[i];
    __syncthreads();
    y[i] = tile[(i + 1) % 32];
}
"""
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    with pytest.raises(KernelError, match=r"rotate: 1 element\(s\) of args\[1\] hold NaN .* read __shared__ `tile` "
                                          r".* or the thread that writes it returned before it did \(a thread that "
                                          r"returns early"):
        RawModule(code=code, check=True).get_function("rotate")((1,), (32,), (x, y, np.int32(20)))


def test_a_halo_that_no_thread_loads_is_named_as_such():
    # ENCCS's shared-memory heat equation loads the right halo and not the left one: the report named a
    # missing barrier or an early return only, with the barrier there and no thread returning
    code = r"""
extern "C" __global__ void smooth(const float* in, float* out)
{
    __shared__ float s[34];
    const int t = threadIdx.x;
    s[t + 1] = in[t];
    if (t == blockDim.x - 1) s[t + 2] = in[t];
    __syncthreads();
    out[t] = s[t] + s[t + 1] + s[t + 2];
}
"""
    with pytest.raises(KernelError, match=r"smooth: 1 element\(s\) of args\[1\] hold NaN .* read __shared__ `s` .* or no "
                                          r"thread of the block writes that element at all \(a tile's halo that no "
                                          r"thread loads"):
        RawModule(code=code, check=True).get_function("smooth")((1,), (32,), (np.ones(32, np.float32),
                                                                             np.zeros(32, np.float32)))


def test_thread_0_writing_alone_what_every_other_thread_overwrites_is_reported_at_every_launch():
    # PMPP's single-pass scans as students wrote them: `if (threadIdx.x == 0) s = previous; else s = 0;`.
    # The mirrored run reverses a random order, so the two runs ended differently only where thread 0
    # came first or last: 3 launches in 40 at 32 threads were reported.
    code = r"""
extern "C" __global__ void carry(float* out)
{
    __shared__ float previous;
    if (threadIdx.x == 0) previous = 1.0f;
    else previous = 0.0f;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = previous;
}
"""
    kernel = RawModule(code=code, check=True).get_function("carry")
    for launch in range(10):  # each launch draws new orders
        with pytest.raises(KernelError, match=r"carry: .*the result depends on the order in which the threads of "
                                              r"a block, or the blocks, run"):
            kernel((2,), (64,), (np.zeros(128, np.float32),))


@pytest.mark.parametrize("blocks", [3, 24])
def test_blocks_that_write_one_place_last_are_reported_at_every_launch(blocks):
    # The mirrored run took the first run's draws over the blocks backwards, which swapped two blocks
    # only where they sat in mirrored slots of the four resident ones: 3 launches in 10 at 3 blocks went
    # unreported (Rodinia's leukocyte dilate_kernel: the rounded-up last block overwrites pixels of
    # block 0)
    code = r"""
extern "C" __global__ void last_block(float* out, int* winner)
{
    if (threadIdx.x == 0) winner[0] = blockIdx.x;
    if (blockIdx.x == 0 && threadIdx.x == 1) out[0] = 1.0f;
    else if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) out[0] = 2.0f;
    else out[blockIdx.x * blockDim.x + threadIdx.x] = 3.0f;
}
"""
    kernel = RawModule(code=code, check=True).get_function("last_block")
    for launch in range(20):  # each launch draws new orders
        # not the threads of a block alone, which the message named first until 2026-11-27 (dlib's
        # multiply_conv race between blocks)
        with pytest.raises(KernelError, match=r"last_block: the result depends on the order in which the threads of "
                                              r"a block, or the blocks, run .*blocks share global memory"):
            kernel((blocks,), (32,), (np.zeros(blocks * 32, np.float32), np.zeros(1, np.int32)))


RESET_AND_TOTAL = r"""
// sgl-kernel's moe_lora_align_block_size: both blocks of a pair clear a total at their start, and
// the first stores it at its end, after counting with atomics on __shared__ memory
extern "C" __global__ void reset_and_total(int* total)
{
    __shared__ int count;
    if (threadIdx.x == 0) total[0] = 0;
    __syncthreads();
    if (blockIdx.x == 1) return;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    if (threadIdx.x == 0) total[0] = count;
}
"""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_race_between_blocks_after_atomics_on_shared_memory_is_reported(monkeypatch, seed):
    # a thread's first atomic on __shared__ memory lets the others of its block go first; the block
    # then gave its turn to the other one in the mirrored run, whose clearing came before the total
    # in both runs, and the race went unreported at every seed until 2026-11-27. (A seed whose first
    # run had the clearing block finish last still misses it: docs/kernels.md.)
    monkeypatch.setenv("NN_CUDA_CPU_SEED", str(seed))
    kernel = RawModule(code=RESET_AND_TOTAL, check=True).get_function("reset_and_total")
    with pytest.raises(KernelError, match=r"reset_and_total: the result depends on the order"):
        kernel((2,), (64,), (np.full(1, -1, np.int32),))
