"""A launch on the CPU runner that would not end, or would take the process down, ends with a clear
error instead: the watchdog stops a kernel that spins for ever, Ctrl-C and SIGTERM stop a launch
in progress, and a thread whose local variables outgrow its stack is named, where each used to hang
the process or corrupt the stack of the thread next to it."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.runner import RACE_CHECK_VARIABLE, watchdog_from_environment

pytestmark = pytest.mark.slow  # builds, and processes that wait for a signal

CODE = r"""
// Thread 0 waits for a flag that nothing sets (a wait that another thread ends, as a GPU would,
// tests/test_cuda_cpu_preemption.py)
extern "C" __global__ void spin(volatile int* flag)
{
    if (threadIdx.x == 0) {
        while (flag[0] == 0) {
        }
    }
}

// The same wait on a plain flag, which C++ lets a compiler take for a loop that ends (GCC deleted it)
extern "C" __global__ void spin_on_a_plain_flag(const int* flag, int* out)
{
    while (flag[0] != 1) {
    }
    out[0] = 42;
}

// 160 KB of local variables per thread: more than a fiber's stack.
extern "C" __global__ void big_local(float* out)
{
    float local[40000];
    for (int i = 0; i < 40000; ++i) {
        local[i] = i * out[0];
    }
    out[threadIdx.x] = local[39999 - threadIdx.x];
}

// Each thread divides by its divisor: zero in thread 2.
extern "C" __global__ void divide(int* out, const int* divisors)
{
    out[threadIdx.x] = 100 / divisors[threadIdx.x];
}
"""


@pytest.mark.parametrize("race_check", [False, True])
def test_the_watchdog_stops_a_kernel_that_spins_for_ever(monkeypatch, race_check):
    # under the race check the watchdog stops the thread in the runner's handler of the loop's load, whose
    # caller's line the message lacked until 2026-11-28
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1.5")
    monkeypatch.setenv(RACE_CHECK_VARIABLE, str(int(race_check)))
    kernel = RawModule(code=CODE).get_function("spin")
    started = time.monotonic()
    # named with the line of the loop it spins in (the code's 7th line: `while (flag[0] == 0)`)
    spin_line = CODE.splitlines().index("        while (flag[0] == 0) {") + 1
    with pytest.raises(KernelError, match=r"spin: still running after 1.5 s \(NN_CUDA_CPU_WATCHDOG\) in thread "
                                          r"\(0, 0, 0\) of block \(0, 0, 0\) at \(RawModule code\):"
                                          rf"{spin_line}: a loop that never ends, a thread that waits for another"):
        kernel((1,), (2,), (np.zeros(1, np.int32),))
    assert time.monotonic() - started < 10
    flag = np.ones(1, np.int32)  # already set: the same kernel ends at once, and the module goes on
    kernel((1,), (2,), (flag,))


def test_a_wait_on_a_plain_flag_that_nothing_sets_spins_until_the_watchdog(monkeypatch):
    # GCC at -O2 deleted the loop, and the kernel stored 42 at once, where a GPU waits for ever (Ansorge's
    # deadlock.cu), until 2026-11-28
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1.5")
    kernel = RawModule(code=CODE).get_function("spin_on_a_plain_flag")
    out = np.zeros(1, np.int32)
    with pytest.raises(KernelError, match=r"spin_on_a_plain_flag: still running after 1.5 s \(NN_CUDA_CPU_WATCHDOG\)"):
        kernel((1,), (1,), (np.zeros(1, np.int32), out))
    assert out[0] == 0
    kernel((1,), (1,), (np.ones(1, np.int32), out))
    assert out[0] == 42


def test_the_watchdog_stops_blocks_that_spin_on_every_host_thread(monkeypatch):
    # Four blocks on two host threads: the watchdog's signal reaches one of them, which passes it on
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1.5")
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "2")
    kernel = RawModule(code=CODE).get_function("spin")
    started = time.monotonic()
    with pytest.raises(KernelError, match=r"spin: still running after 1.5 s \(NN_CUDA_CPU_WATCHDOG\) in thread "
                                          r"\(0, 0, 0\) of block \(\d, 0, 0\)"):
        kernel((4,), (2,), (np.zeros(1, np.int32),))
    assert time.monotonic() - started < 10
    kernel((4,), (2,), (np.ones(1, np.int32),))  # the module goes on, its host threads too


ONE_BAD_BLOCK = r"""
extern "C" __global__ void store_in_page_zero(int* out, int bad_block, long long address)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
    if (blockIdx.x == bad_block && threadIdx.x == 3) {
        *reinterpret_cast<volatile int*>(address) = 1;  // page 0: never mapped
    }
}
"""


@pytest.mark.parametrize("bad_block", [0, 5, 7])
def test_a_fault_on_any_host_thread_is_named_and_the_module_goes_on(monkeypatch, bad_block):
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "2")
    kernel = RawModule(code=ONE_BAD_BLOCK).get_function("store_in_page_zero")
    out = np.zeros(8 * 32, np.int32)
    with pytest.raises(KernelError, match=rf"store_in_page_zero: an invalid memory access in thread \(3, 0, 0\) of "
                                          rf"block \({bad_block}, 0, 0\)"):
        kernel((8,), (32,), (out, np.int32(bad_block), np.int64(16)))
    out[:] = 0
    kernel((8,), (32,), (out, np.int32(-1), np.int64(16)))  # no block faults: every block runs
    assert out.tolist() == [1] * out.size


def test_a_thread_whose_locals_outgrow_its_stack_is_named():
    with pytest.raises(KernelError, match=r"big_local: a thread's local variables outgrew its stack .* in thread "
                                          r"\(0, 0, 0\) of block \(0, 0, 0\)"):
        RawModule(code=CODE).get_function("big_local")((1,), (2,), (np.ones(2, np.float32),))


@pytest.mark.parametrize("check", [False, True])
def test_an_integer_division_by_zero_is_named_without_a_hint_about_buffers(check):
    # the plain mode's message ended "run with NN_CUDA_CPU_CHECK=1 to name the buffer", which names none
    with pytest.raises(KernelError) as raised:
        RawModule(code=CODE, check=check).get_function("divide")((1,), (4,), (np.zeros(4, np.int32),
                                                                              np.array([1, 2, 0, 4], np.int32)))
    assert re.fullmatch(r"divide: an arithmetic fault \(an integer division by zero, or INT_MIN / -1, which overflows; "
                        r"a GPU gives a value for both\) in thread \(2, 0, 0\) of block \(0, 0, 0\) at "
                        r"\(RawModule code\):\d+", str(raised.value)), str(raised.value)


@pytest.mark.parametrize("text", ["soon", "-1"])
def test_a_watchdog_that_is_not_a_number_of_seconds_is_refused(monkeypatch, text):
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", text)
    with pytest.raises(ValueError, match="NN_CUDA_CPU_WATCHDOG=.* is not a number of seconds"):
        watchdog_from_environment()


@pytest.mark.parametrize("text", ["many", "0", "-2"])
def test_a_number_of_host_threads_that_is_not_one_is_refused(monkeypatch, text):
    from nn_cuda.cuda_cpu.build import threads_from_environment

    monkeypatch.setenv("NN_CUDA_CPU_THREADS", text)
    with pytest.raises(ValueError, match="NN_CUDA_CPU_THREADS=.* is not a number of threads"):
        threads_from_environment()
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "3")
    assert threads_from_environment() == 3


SPINNER = """
import sys
import numpy as np
from nn_cuda.cuda_cpu import RawModule
kernel = RawModule(code=sys.argv[1]).get_function("spin")
print("launching", flush=True)
try:
    kernel((int(sys.argv[2]),), (2,), (np.zeros(1, np.int32),))
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("blocks", [1, 4], ids=["one block", "4 blocks on 2 host threads"])
@pytest.mark.parametrize("signal_number, returncode, said", [(signal.SIGINT, 130, "interrupted"),
                                                             (signal.SIGTERM, -signal.SIGTERM, "")])
def test_ctrl_c_and_sigterm_stop_a_launch_in_progress(signal_number, returncode, said, blocks):
    # no limit: only the signal can stop it
    env = {**os.environ, "NN_CUDA_CPU_WATCHDOG": "0", "NN_CUDA_CPU_THREADS": "2"}
    job = subprocess.Popen([sys.executable, "-c", SPINNER, CODE, str(blocks)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
    assert job.stdout.readline().strip() == "launching"
    time.sleep(1.0)  # inside the launch by now
    job.send_signal(signal_number)
    sent = time.monotonic()
    out, err = job.communicate(timeout=30)
    # measured: 0.03 s (Ctrl-C, the process exit included) and 0.004 s (SIGTERM) on the 2-core machine;
    # the bound leaves room for a loaded machine (without the stop, the launch spins until the timeout)
    assert time.monotonic() - sent < 5.0
    assert job.returncode == returncode, err
    assert said in out and "Traceback" not in err


BYSTANDER = """
import signal, sys, threading, time
import numpy as np
from nn_cuda.cuda_cpu import RawModule
kernel = RawModule(code=sys.argv[1], check=sys.argv[2] == "checking").get_function("spin")
idle = threading.Event()
bystander = threading.Thread(target=idle.wait)
bystander.start()
# Ctrl-C, sent to the process, may come to any of its threads: here it comes to one that runs no block
threading.Timer(1.0, signal.pthread_kill, (bystander.ident, signal.SIGINT)).start()
try:
    kernel((1,), (2,), (np.zeros(1, np.int32),))
except KeyboardInterrupt:
    print("interrupted", flush=True)
idle.set()
"""


@pytest.mark.parametrize("mode", ["plain", "checking"])
def test_a_stop_signal_that_comes_to_a_thread_outside_the_launch_stops_the_launch_it_does_not_enter(mode):
    # where the blocks run on the caller's thread alone (one host thread, or the checking mode), a stop
    # signal that came to another thread of the process took the launch's state for that thread's own and
    # jumped into the caller's frames: the process crashed (the watchdog's SIGALRM, so delivered once the
    # preemption ticks kept the kernel from picking the busy caller, ended it as "Alarm clock")
    env = {**os.environ, "NN_CUDA_CPU_WATCHDOG": "0", "NN_CUDA_CPU_THREADS": "1"}
    job = subprocess.run([sys.executable, "-c", BYSTANDER, CODE, mode], capture_output=True, text=True, env=env,
                         timeout=120)
    assert job.returncode == 0 and job.stdout == "interrupted\n", (job.returncode, job.stdout, job.stderr)


FAULTING_BYSTANDER = """
import ctypes, sys, threading
import numpy as np
from nn_cuda.cuda_cpu import RawModule
kernel = RawModule(code=sys.argv[1], check=sys.argv[2] == "checking").get_function("spin")

def crash_outside_the_launch():
    ctypes.string_at(0)  # a fault of this thread's own

threading.Timer(1.0, crash_outside_the_launch).start()
try:
    kernel((1,), (2,), (np.zeros(1, np.int32),))
except Exception as error:
    print("the launch took it:", error, flush=True)
"""


@pytest.mark.parametrize("mode", ["plain", "checking"])
def test_a_fault_of_a_thread_outside_the_launch_is_that_threads_not_the_launchs(mode):
    # it jumped into the caller's frames and was reported as the kernel's fault, the faulting thread
    # left in the launch's state; now it is handled as if no launch ran (here Python's faulthandler
    # names that thread, and the process ends by SIGSEGV as it would without a launch)
    env = {**os.environ, "NN_CUDA_CPU_WATCHDOG": "20", "NN_CUDA_CPU_THREADS": "1"}
    job = subprocess.run([sys.executable, "-X", "faulthandler", "-c", FAULTING_BYSTANDER, CODE, mode],
                         capture_output=True, text=True, env=env, timeout=60)  # it hung, deadlocked
    assert job.returncode == -signal.SIGSEGV and "the launch took it" not in job.stdout, (job.stdout, job.stderr)
    assert "Fatal Python error: Segmentation fault" in job.stderr and "crash_outside_the_launch" in job.stderr


# Numba's simulator runs a kernel's threads as Python threads. Before, Ctrl-C reached the main thread
# but Python's exit then waited for the spinning thread for ever.
NUMBA_SPINNER = """
import os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
from numba import cuda
from nn_cuda.interrupts import ends_in_one_line_when_interrupted

@cuda.jit
def spin(flag):
    while flag[0] == 0:
        pass

@ends_in_one_line_when_interrupted("spin")
def main():
    print("launching", flush=True)
    spin[1, 2](np.zeros(1, np.int32))
    return 0

sys.exit(main())
"""


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_a_spinning_kernel_in_numbas_simulator(signal_number):
    job = subprocess.Popen([sys.executable, "-c", NUMBA_SPINNER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    assert job.stdout.readline().strip() == "launching"
    time.sleep(1.0)  # the simulator's threads spin by now
    job.send_signal(signal_number)
    sent = time.monotonic()
    _, err = job.communicate(timeout=30)
    # measured: about 0.5-0.7 s on the 2-core machine (the simulator checks for the signal between
    # steps); the bound leaves room for a loaded machine (without the stop, it spins until the timeout)
    assert time.monotonic() - sent < 5.0
    assert job.returncode == 128 + signal_number
    assert err.strip().splitlines()[-1] == f"spin: interrupted ({signal.Signals(signal_number).name})"


PAST_THE_LAST_SHARED_ARRAY = r"""
import numpy as np
from nn_cuda.cuda_cpu import KernelError, RawModule

module = RawModule(code='''
extern "C" __global__ void shift(float* out, const float* in)
{
    __shared__ float s[128];
    s[threadIdx.x + 1] = in[threadIdx.x];  // thread 127 writes s[128]
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
''', check=False)
ones = np.ones(128, np.float32)
for launch in range(2):  # reported each time, and the module goes on
    try:
        module.get_function("shift")((2,), (128,), (np.zeros(128, np.float32), ones))
    except KernelError as error:
        print(error)
"""


def test_a_write_past_the_last_shared_array_is_reported_where_it_hung_the_process(tmp_path):
    # With its blocks on several host threads a kernel's __shared__ arrays are per-thread memory, and
    # the runner's own state followed them: s[128] overwrote it, and the launch never ended, deaf
    # to the watchdog, Ctrl-C and SIGTERM. Now a guard follows them, checked after each block.
    job = subprocess.run([sys.executable, "-c", PAST_THE_LAST_SHARED_ARRAY], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NN_CUDA_CPU_THREADS": "2", "NN_CUDA_CPU_WATCHDOG": "10"})
    reports = job.stdout.splitlines()
    assert job.returncode == 0 and len(reports) == 2, job.stderr
    # s[128] = 1.0f: bytes 00 00 80 3f, of which the last two are no longer the guard's zeros
    assert all(report.startswith("shift: block (") and "wrote past the end of a __shared__ array: bytes 2 to 3 "
               "past the end of the kernel's last one changed" in report and "NN_CUDA_CPU_CHECK=1" in report
               for report in reports)


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_fault_in_the_second_of_two_kernels_of_one_body_is_named_at_its_own_line(check):
    """GCC at -O2 folds functions of identical code into one: a fault in the second of two kernels with
    the same body was named at its header's line, the code run being the first one's (GPUSorting's
    kernels, cut down, have such twins)."""
    code = ('extern "C" __global__ void first(unsigned int* p, int i)\n{\n    p[i] = 1u;\n}\n'
            'extern "C" __global__ void second(unsigned int* p, int i)\n{\n    p[i] = 1u;\n}\n')
    with pytest.raises(KernelError, match=r"^second: .* in thread \(0, 0, 0\) of block \(0, 0, 0\) at "
                                          r"\(RawModule code\):7\b"):
        RawModule(code=code, check=check).get_function("second")((1,), (1,), (np.zeros(256, np.uint32), 300))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_fault_inside_an_atomic_the_compiler_did_not_inline_is_named_at_the_kernels_line(check):
    """GPUSorting's OneSweep adds to a histogram's row past its end with atomicAdd, the kernel's last
    call: GCC made it a jump to the runner's atomicAdd, called out of line, and the fault was named
    at no line. The call stays a call, and the kernel's line is found on the thread's stack."""
    code = '''extern "C" __global__ void bins(volatile unsigned int* histogram, volatile unsigned int* ticket)
{
    __shared__ unsigned int counts[512];
    counts[threadIdx.x] = 0;
    if (threadIdx.x == 0)
        counts[511] = atomicAdd((unsigned int*)&ticket[0], 1);
    __syncthreads();
    const unsigned int partition = counts[511];
    if (threadIdx.x < 256) {
        atomicAdd((unsigned int*)&histogram[threadIdx.x + (partition + 1) * 256], 1u);
    }
}
'''
    with pytest.raises(KernelError, match=r"^bins: an invalid memory access.* in thread \(0, 0, 0\) of block "
                                          r"\(0, 0, 0\) at \(RawModule code\):10\b"):
        RawModule(code=code, check=check).get_function("bins")((1,), (256,), (np.zeros(256, np.uint32),
                                                                              np.zeros(1, np.uint32)))


def test_an_access_past_a_byte_array_given_for_wider_elements_is_counted_in_bytes():
    """An image of bytes given for a uchar4* (CS344's RGBA images): the count was of the array's
    elements, bytes, and said "element(s)"."""
    code = 'extern "C" __global__ void grey(const uchar4* rgba, unsigned char* out) { out[0] = rgba[4].x; }'
    with pytest.raises(KernelError, match=r"^grey: an invalid memory access: an access 1 byte\(s\) past the end of "
                                          r"args\[0\]"):
        RawModule(code=code, check=True).get_function("grey")((1,), (1,), (np.zeros(16, np.uint8),
                                                                          np.zeros(1, np.uint8)))


def test_a_place_in_the_runners_code_with_a_library_function_inlined_there_is_no_kernel_line():
    # addr2line -i's answer for an address in the race check's handler of a load, where the watchdog
    # stopped a spin: the message named the C++ library's line until 2026-11-28, not the kernel's
    from nn_cuda.cuda_cpu.runner import _kernel_place
    handler = ["/usr/include/c++/12/bits/stl_iterator.h:1073", "/usr/include/c++/12/bits/stl_vector.h:889",
               "/repo/nn_cuda/cuda_cpu/runtime.cpp:1107 (discriminator 2)"]
    assert _kernel_place(handler) == ""
    # a header's function inlined into a kernel that is inlined into runtime.h's run_thread: the kernel's
    kernel = ["/cache/include/cub/block/block_reduce.cuh:40", "/cache/(RawModule code):12 (discriminator 1)",
              "/repo/nn_cuda/cuda_cpu/runtime.h:524", "/repo/nn_cuda/cuda_cpu/runtime.h:539"]
    assert _kernel_place(kernel) == " at /cache/include/cub/block/block_reduce.cuh:40, called from (RawModule code):12"
    assert _kernel_place(["??:0"]) == ""
