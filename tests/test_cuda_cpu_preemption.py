"""A thread that runs on without stopping is made to yield (runtime.cpp, "preemption"), as a GPU runs
the threads of a block, and its resident blocks, at once: a thread that waits on a flag that another
thread or block sets now ends, where it spun until the watchdog; a thread preempted in the middle of
its arithmetic keeps every register; and a spin that nothing ends still meets the watchdog."""

import time

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.runner import RACE_CHECK_VARIABLE

pytestmark = pytest.mark.slow  # builds, and launches that run for a tenth of a second each

CODE = r"""
// Thread 1 hands a value over to thread 0: the value, a fence, then a volatile flag; thread 0 waits
// for the flag, then a fence, then reads the value (right on a GPU). On a GPU the two run at once;
// here thread 0 runs first, and only its preemption lets thread 1 set the flag.
extern "C" __global__ void hand_over(volatile int* flag, int* data, int* seen)
{
    if (threadIdx.x == 1) {
        data[0] = 42;
        __threadfence();
        flag[0] = 1;
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) {
        }
        __threadfence();
        seen[0] = data[0];
    }
}

// Kaldi's _strided_reduction_fused_kernel waits so: the blocks of rows y > 0 wait on a volatile flag
// that block (x, 0) sets. The checking mode starts the resident blocks (up to 4, as many as a grid
// this size has on a GPU) in a random order, and a block of row 1 that ran first spun until the
// watchdog.
extern "C" __global__ void wait_for_block(volatile unsigned* flag, unsigned* seen)
{
    if (blockIdx.y == 0 && threadIdx.x == 0) {
        flag[blockIdx.x] = gridDim.y;
    }
    if (threadIdx.x == 0) {
        while (flag[blockIdx.x] < gridDim.y) {
        }
        seen[blockIdx.y * gridDim.x + blockIdx.x] = flag[blockIdx.x];
    }
}

// A long loop of integer and floating-point arithmetic per thread, its state in registers when the
// thread is preempted. The sums are exact: integers, and doubles that stay far below 2^53.
extern "C" __global__ void long_sums(const int* x, unsigned long long* weighted, double* sums, int n)
{
    unsigned long long total = 0;
    double plain = 0.0, halves = 0.0, low_bits = 0.0;
    for (int i = 0; i < n; ++i) {
        const int v = x[(i + threadIdx.x) & 15];
        total += static_cast<unsigned long long>(v) * static_cast<unsigned long long>(i);
        plain += v;
        halves += 0.5 * v;
        low_bits += static_cast<double>(i & 1023);
    }
    weighted[threadIdx.x] = total;
    sums[3 * threadIdx.x] = plain;
    sums[3 * threadIdx.x + 1] = halves;
    sums[3 * threadIdx.x + 2] = low_bits;
}

// Two blocks of one warp meet through global memory, as a persistent kernel's warps do (Gunrock's
// asynchronous queue): each raises its flag, then loops with a __syncwarp() in every pass until the
// other's is up. The checking mode's block kept its turn through warp syncs: block 0 spun for ever.
extern "C" __global__ void meet(volatile int* flags, int* passes)
{
    if (threadIdx.x == 0) {
        flags[blockIdx.x] = 1;
    }
    int n = 0;
    while (flags[1 - blockIdx.x] == 0) {
        __syncwarp();
        ++n;
    }
    passes[blockIdx.x * blockDim.x + threadIdx.x] = n > 0;
}

// A grid barrier of a persistent kernel: every block counts itself in, then waits for all of them.
extern "C" __global__ void grid_barrier(volatile unsigned* count, unsigned* passed)
{
    if (threadIdx.x == 0) {
        atomicAdd(const_cast<unsigned*>(count), 1u);
        while (count[0] < gridDim.x) {
        }
        passed[blockIdx.x] = 1;
    }
}

// A chain of waits (HeCBench's sptrsv solves row after row so): thread i waits until thread i + 1 has
// written its value. The threads run in order, so each round of preemptions ends one wait.
extern "C" __global__ void chain(volatile int* values, int n)
{
    const int i = threadIdx.x;
    if (i < n - 1) {
        while (values[i + 1] == 0) {
        }
    }
    __threadfence();
    values[i] = i + 1;
}

// A spin that nothing ends: one thread waits for a flag no one sets.
extern "C" __global__ void wait_for_ever(volatile int* flag)
{
    while (flag[0] == 0) {
    }
}
"""

MODES = pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])


@MODES
def test_a_chain_of_64_waits_ends_well_before_a_5_second_watchdog(monkeypatch, check):
    # each wait costs a tick: 4-ms ticks of the process's CPU time made the chain take 8.3 s (plain) and
    # 14.5 s (checking); a launch whose threads spin now ticks every 250 us: 0.5 s and 0.9 s measured on
    # the 2-core machine, so the watchdog leaves room for a loaded one
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "5")
    values = np.zeros(64, np.int32)
    RawModule(code=CODE, check=check).get_function("chain")((1,), (64,), (values, np.int32(64)))
    assert values.tolist() == list(range(1, 65))


@pytest.mark.parametrize("check, race_check", [(False, False), (True, False), (True, True)],
                         ids=["plain", "checking", "race-check"])
def test_a_thread_that_waits_on_another_threads_volatile_flag_ends(monkeypatch, check, race_check):
    # the watchdog stopped it until 2026-11-28 (cuGraph's tree summarisation); under the race check a
    # preemption now orders what came before, as __nanosleep() does (the flag handed over with fences
    # on both sides was reported as a race), and a spin in the check's handler of a load is preempted
    # at its next load (a tick never found it in the code's own functions: the watchdog stopped it)
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "30")
    monkeypatch.setenv(RACE_CHECK_VARIABLE, str(int(race_check)))
    kernel = RawModule(code=CODE, check=check).get_function("hand_over")
    for _ in range(3):  # the checking mode: three seeds, three orders of the threads
        flag, data, seen = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
        kernel((1,), (64,), (flag, data, seen))
        assert seen[0] == 42 and flag[0] == 1
    if not check or race_check:  # the threads in order (the race check's first run): thread 0 spun first
        assert kernel._module._kernels.preemptions() > 0


@MODES
def test_blocks_that_wait_on_a_flag_of_a_block_of_their_column_end(monkeypatch, check):
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "30")
    kernel = RawModule(code=CODE, check=check).get_function("wait_for_block")
    for _ in range(4):  # the checking mode: four orders of the four blocks
        seen = np.zeros(4, np.uint32)
        kernel((1, 4), (32,), (np.zeros(1, np.uint32), seen))
        np.testing.assert_array_equal(seen, 4)


def test_a_block_whose_warp_spins_through_syncwarp_hands_its_turn_on(monkeypatch):
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "30")
    kernel = RawModule(code=CODE, check=True).get_function("meet")
    for _ in range(3):  # three orders of the two blocks
        flags, passes = np.zeros(2, np.int32), np.full(64, -1, np.int32)
        kernel((2,), (32,), (flags, passes))
        assert flags.tolist() == [1, 1] and set(passes.tolist()) <= {0, 1}


@MODES
def test_a_preempted_thread_keeps_its_integer_and_floating_point_registers(check):
    module = RawModule(code=CODE, check=check)
    kernel = module.get_function("long_sums")
    x = np.random.default_rng(0).integers(-100, 100, 16).astype(np.int32)
    threads, n = 4, 16 * 1_250_000  # about 20 ms a thread: preempted in every run
    weighted, sums = np.zeros(threads, np.uint64), np.full(3 * threads, np.nan)
    before = module._kernels.preemptions()
    kernel((1,), (threads,), (x, weighted, sums, np.int32(n)))
    assert module._kernels.preemptions() > before
    rounds = n // 16  # i = 16 k + r takes x[(r + t) & 15], and the i of one r sum to 16 k + r over k
    for t in range(threads):
        values = [int(x[(r + t) & 15]) for r in range(16)]
        expected = sum(v * (rounds * r + 16 * rounds * (rounds - 1) // 2) for r, v in enumerate(values))
        assert int(weighted[t]) == expected % 2**64
        total = rounds * sum(values)
        low_bits = (n // 1024) * (1023 * 1024 // 2) + (n % 1024) * (n % 1024 - 1) // 2
        assert sums[3 * t:3 * t + 3].tolist() == [total, 0.5 * total, low_bits]


@MODES
def test_a_spin_that_nothing_ends_still_meets_the_watchdog(monkeypatch, check):
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1.5")
    kernel = RawModule(code=CODE, check=check).get_function("wait_for_ever")
    started = time.monotonic()
    with pytest.raises(KernelError, match=r"wait_for_ever: still running after 1.5 s \(NN_CUDA_CPU_WATCHDOG\) in "
                                          r"thread \(\d+, 0, 0\) of block \(0, 0, 0\)"):
        kernel((1,), (4,), (np.zeros(1, np.int32),))
    assert time.monotonic() - started < 10


def test_a_grid_barrier_needs_as_many_host_threads_as_blocks_in_the_plain_mode_and_says_so(monkeypatch):
    # the plain mode keeps as many blocks resident as host threads: a fourth block waits for a thread
    # that three blocks spinning at the barrier never give up, and the message names the variable
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1.5")
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "3")
    kernel = RawModule(code=CODE, check=False).get_function("grid_barrier")
    with pytest.raises(KernelError, match=r"its blocks \(3 at a time, in order; NN_CUDA_CPU_THREADS=N keeps N "
                                          r"resident, as a persistent kernel's blocks that wait for each other need\)"):
        kernel((4,), (32,), (np.zeros(1, np.uint32), np.zeros(4, np.uint32)))
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "4")
    kernel = RawModule(code=CODE, check=False).get_function("grid_barrier")
    passed = np.zeros(4, np.uint32)
    kernel((4,), (32,), (np.zeros(1, np.uint32), passed))
    assert passed.tolist() == [1, 1, 1, 1]
