"""Kernel code's malloc, free, new and delete (the device heap) in the CPU runner: the addresses the
checking mode's two runs get are compared as allocations, and an object that keeps an argument's
address past its launch is reported (nn_cuda/cuda_cpu/device_heap.py)."""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.device_memory import to_device

MODES = pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])

ALLOCATING = r"""
struct Sphere { float radius; };
__device__ Sphere* last_made;

// one thread builds the world, as "Ray Tracing in One Weekend in CUDA" does in create_world
extern "C" __global__ void create(Sphere** list, int n)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        for (int i = 0; i < n; ++i) {
            list[i] = new Sphere{0.5f * (i + 1)};
        }
        last_made = list[n - 1];
    }
}

// each thread allocates its own scratch and hands its address out
extern "C" __global__ void scratch(unsigned long long* where, int* sizes)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int* mine = static_cast<int*>(malloc(sizeof(int) * (i + 1)));
    mine[i] = i;
    where[i] = reinterpret_cast<unsigned long long>(mine);
    sizes[i] = mine[i] + 1;
}

extern "C" __global__ void radii(Sphere* const* list, float* out, int n)
{
    int i = threadIdx.x;
    if (i < n) out[i] = list[i]->radius + (list[i] == last_made ? 100.0f : 0.0f);
}

extern "C" __global__ void destroy(Sphere** list, int n)
{
    for (int i = 0; i < n; ++i) delete list[i];
}
"""


@MODES
def test_addresses_a_kernel_allocates_are_results_the_checking_mode_takes(check):
    """The checking mode runs a launch twice and compares the results bit for bit: the addresses of
    what a kernel allocated (one thread's `new`, as a ray tracer's create_world; each thread's
    malloc) differ between the runs, and were reported as a race (2026-11-27). They are compared as
    the same allocations (the same thread's, of the same size, made as its n-th), and the objects are
    used by the next launch as on a GPU."""
    module = RawModule(code=ALLOCATING, check=check)
    slots = np.zeros(3, np.uint64)
    module.get_function("create")((1,), (1,), (slots, np.int32(3)))
    assert (slots != 0).all() and len(set(slots.tolist())) == 3
    if not check:  # the checking mode's later launches run once (their arguments hold such pointers)
        out = np.full(3, np.nan, np.float32)
        module.get_function("radii")((1,), (4,), (slots, out, np.int32(3)))
        assert out.tolist() == [0.5, 1.0, 101.5]
        module.get_function("destroy")((1,), (1,), (slots, np.int32(3)))
    where, sizes = np.zeros(8, np.uint64), np.zeros(8, np.int32)
    module.get_function("scratch")((2,), (4,), (where, sizes))
    assert sizes.tolist() == list(range(1, 9)) and len(set(where.tolist())) == 8


def test_a_race_to_store_an_allocation_is_still_reported():
    """Two runs that leave addresses of allocations made by different threads at one place differ,
    as the threads' order decides which one stays, on a GPU too."""
    # every thread stores its own allocation at one place: the last thread to store it wins (a module of
    # its own: a __device__ variable holding a pointer makes the checking mode run a launch once)
    code = 'extern "C" __global__ void racing(float** one) { one[0] = new float(threadIdx.x); }'
    one = np.zeros(1, np.uint64)
    with pytest.raises(KernelError, match=r"racing: the result depends on the order in which the threads of a "
                                          r"block run between barriers \(args\[0\]\[0\] is \d+ in one order and "
                                          r"\d+ in another"):
        RawModule(code=code, check=True).get_function("racing")((1,), (4,), (one,))


@MODES
def test_an_object_a_kernel_made_that_keeps_an_arrays_address_is_reported(check):
    """A NumPy array is copied for each launch (and the checking mode copies device memory too): an
    object made by `new` that keeps the copy's address reads freed memory in the next launch. The
    check made after every launch looked at the code's variables and the launch's outputs only, so
    the next launch read 0 where a GPU reads 7, with no report. Device memory keeps its address in
    the plain mode, as a CuPy array does."""
    code = r"""
    struct Holder { const float* data; };
    extern "C" __global__ void keep(Holder** out, const float* x) { out[0] = new Holder{x}; }
    extern "C" __global__ void use(Holder* const* in, float* y) { y[0] = in[0]->data[1]; }
    """
    holder, x = np.zeros(1, np.uint64), np.array([1, 7, 3], np.float32)
    module = RawModule(code=code, check=check)
    with pytest.raises(KernelError, match=r"^keep: memory a kernel allocated with malloc or new \(its bytes 0 to 7\) "
                                          r"holds an address within args\[1\] as this launch passed it, which a later "
                                          r"launch reading through it would find gone"):
        module.get_function("keep")((1,), (1,), (holder, x))
    if not check:
        kept, y = to_device(x), np.zeros(1, np.float32)
        module.get_function("keep")((1,), (1,), (holder, kept))
        module.get_function("use")((1,), (1,), (holder, y))
        assert y[0] == 7


def test_a_variable_holding_an_allocation_is_compared_as_one():
    """A `__device__` pointer set to what a kernel allocated (a list's head) differs between the
    checking mode's runs as the arrays do, and is compared as an allocation too."""
    code = r"""
    struct Node { int value; Node* next; };
    __device__ Node* head;
    extern "C" __global__ void push(int value) { head = new Node{value, head}; }
    extern "C" __global__ void top(int* out) { out[0] = head->value; }
    """
    module = RawModule(code=code, check=True)
    module.get_function("push")((1,), (1,), (np.int32(4),))
    out = np.zeros(1, np.int32)
    module.get_function("top")((1,), (1,), (out,))
    assert out[0] == 4


def test_a_launch_that_reaches_the_heap_through_a_variable_is_checked_twice(capfd):
    """A `__device__` pointer to what kernels allocated made the checking mode run every later launch
    once, unchecked ("a pointer to memory that is no argument"): the device heap is now put back
    between the two runs and compared after them, so a race on an object there is reported."""
    code = r"""
    struct Node { int value; Node* next; };
    __device__ Node* head;
    extern "C" __global__ void push(int value) { head = new Node{value, head}; }
    extern "C" __global__ void sum(int* out)
    {
        int s = 0;
        for (Node* n = head; n; n = n->next) s += n->value;
        out[0] = s;
    }
    // two threads store into the head's value without an atomic: the last one's stays
    extern "C" __global__ void bump() { if (threadIdx.x < 2) head->value = threadIdx.x; }
    """
    module = RawModule(code=code, check=True)
    for value in (4, 5):
        module.get_function("push")((1,), (1,), (np.int32(value),))
    out = np.zeros(1, np.int32)
    module.get_function("sum")((1,), (1,), (out,))
    assert out[0] == 9 and "no argument" not in capfd.readouterr().err
    with pytest.raises(KernelError, match=r"^bump: the result depends on the order in which the threads of a block "
                                          r"run between barriers \(bytes 0 to 7 of memory a kernel allocated with "
                                          r"malloc or new, which the variable `head` \(its bytes 0 to 7\) reaches, "
                                          r"hold 0x[0-9a-f]+ in one order and 0x[0-9a-f]+ in another\)"):
        module.get_function("bump")((1,), (32,), ())
