"""RawModule on the CPU with what the code of Python's CUDA wrappers and of public kernels holds.

Written for these tests, after patterns seen in PyCUDA's examples (which wrap all code in
extern "C", so that its helpers and kernels have C names: the game of life's kernel is `step`),
NVIDIA's cuda-python examples (timestamps from clock(), atomicExch's last writer, clusters), public
kernel collections (OneFlow's aligned extern __shared__ bytes, YHs' SGEMM's __noinline__ and inline
PTX, CUB's examples), CuPy's cupyx and cuSignal (outputs made by `empty`, a 0-d output, a shape's
numpy.int64, <nvfunctional>) and CS344 solutions (a struct with a copy constructor by value). Two
modules are built and shared, `BOTH_MODES_CODE` in both modes and `TOOLKIT_CODE`; the other builds
are small, and four fail on purpose, each in one line.
"""

import re
import shutil
import subprocess

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu import build, runner
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # builds of the CPU runner (a few seconds each)

BOTH_MODES_CODE = r"""
__device__ int opterr = 5;                                  // names of the C library: the code's own
extern "C" __device__ int step(int x) { return x + 100; }

extern "C" __global__ void getpid(int* out)
{
    out[threadIdx.x] = step(threadIdx.x) + opterr;
}

// A pointer to a struct that is not trivially copyable (PyCUDA's struct reductions) is an address.
struct MinMax {
    float lo, hi;
    __device__ MinMax() {}
    __device__ MinMax(float a, float b) : lo(a), hi(b) {}
    __device__ MinMax(const MinMax& other) : lo(other.lo), hi(other.hi) {}
};

extern "C" __global__ void min_max(MinMax* out, const float* x)
{
    out[threadIdx.x] = MinMax(x[threadIdx.x], 2.0f * x[threadIdx.x]);
}

extern "C" __global__ void ends(MinMax range, float* out)  // by value (CS344's Point2D has a copy constructor)
{
    out[threadIdx.x] = threadIdx.x == 0 ? range.lo : range.hi;
}

// CUDA by Example's Lock (appendix A) frees its mutex in its destructor; a GPU's kernel gets a bitwise
// copy of the argument and runs no destructor on the device, here the one that would add 1000.
struct Lock {
    int* mutex;
    int step;
    __host__ __device__ ~Lock() { *mutex += 1000; }
    __device__ void lock() { while (atomicCAS(mutex, 0, 1) != 0) {} }
    __device__ void unlock() { atomicExch(mutex, 0); }
};

extern "C" __global__ void locked_count(short first, Lock lock, int* count, int* steps, double last)
{
    lock.step += threadIdx.x;  // the thread's own copy
    steps[blockIdx.x * blockDim.x + threadIdx.x] = lock.step + first + (int)last;
    if (threadIdx.x == 0) {
        lock.lock();
        *count += 1;
        lock.unlock();
    }
}

extern "C" __global__ void reverse(float* out, int n)  // OneFlow's softmax declares its bytes so
{
    extern __shared__ __align__(sizeof(double)) unsigned char bytes[];
    float* values = reinterpret_cast<float*>(bytes);
    values[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = values[n - 1 - threadIdx.x];
}

extern "C" __global__ void stamps(long long* times, long* ticks)  // clock_t is a long
{
    if (threadIdx.x == 0) {
        times[blockIdx.x] = clock64();
        ticks[blockIdx.x] = clock();
    }
    __syncthreads();
    if (threadIdx.x == 0) times[gridDim.x + blockIdx.x] = clock64();
}

extern "C" __global__ void last_swap(int* winner)
{
    atomicExch(winner, blockIdx.x * blockDim.x + threadIdx.x);
}

// CUDA by Example's hash table, reduced: each thread pushes its index onto one list under a lock, a lane
// at a time; the list holds every index once, in the order the threads took the lock
extern "C" __global__ void push_locked(int* next, int* head, int* mutex)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int lane = 0; lane < 32; ++lane) {
        if (threadIdx.x % 32 == lane) {
            while (atomicCAS(mutex, 0, 1) != 0) {}
            __threadfence();
            next[i] = *head;
            *head = i;
            __threadfence();
            atomicExch(mutex, 0);
        }
    }
}

extern "C" __global__ void copy_tail(float* out, const float* tail, int n)
{
    if (threadIdx.x < n) out[threadIdx.x] = tail[threadIdx.x];
}

extern "C" __global__ void flag(double* out) { *out = 3.0; }  // CuPy's Delaunay: an empty((), float64)
"""

# CUDA toolkit headers nvcc finds (and CuPy's NVRTC, which it gives CUDA's include folder); CUDA's
# float sincos and its inlining qualifiers; __half from CUB's headers alone.
TOOLKIT_CODE = r"""
#include <vector_functions.h>
#include <builtin_types.h>
#include <device_functions.h>
#include <math_functions.h>
#include <host_defines.h>
#include <device_atomic_functions.h>
#include <sm_60_atomic_functions.h>
#include <surface_functions.h>
#include <driver_functions.h>  // CS149's kernel files include it (no such file until 2026-11-28)
#include <cub/cub.cuh>

cudaExtent volume(size_t side) { return make_cudaExtent(side, side, side); }  // host code beside the kernel

__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__device__ __inline_hint__ float thrice(float v) { return 3.0f * v; }

extern "C" __global__ void sin_cos(float* out, const float* x)
{
    float s, c;
    sincos(x[threadIdx.x], &s, &c);
    const float2 both = make_float2(twice(s), thrice(c));
    out[2 * threadIdx.x] = both.x;
    out[2 * threadIdx.x + 1] = __half2float(__float2half(both.y));
}
"""


@pytest.fixture(autouse=True)
def plain_mode(monkeypatch):
    monkeypatch.delenv("NN_CUDA_CPU_CHECK", raising=False)


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "checking"])
def module(request):
    return RawModule(code=BOTH_MODES_CODE, check=request.param)


def test_a_kernel_function_and_variable_named_like_the_c_librarys_are_the_codes(module):
    # getpid ran the C library's getpid (nothing written), step its regular-expression function and
    # opterr read the C library's 1; the game of life named `step` ended at the watchdog
    out = np.full(4, -1, np.int32)
    module.get_function("getpid")((1,), (4,), (out,))
    np.testing.assert_array_equal(out, np.arange(4) + 105)
    np.testing.assert_array_equal(module.get_global("opterr").view(np.int32), [5])


def test_a_pointer_to_a_struct_that_is_not_trivially_copyable_takes_its_array(module):
    x = np.arange(4, dtype=np.float32)
    out = np.full(4, np.nan, np.dtype([("lo", np.float32), ("hi", np.float32)]))
    module.get_function("min_max")((1,), (4,), (out, x))
    np.testing.assert_array_equal(out["lo"], x)
    np.testing.assert_array_equal(out["hi"], 2 * x)


def test_a_struct_with_a_copy_constructor_of_its_own_is_passed_by_value(module):
    # refused as a type the runner cannot name; a GPU's kernel gets the argument's bytes
    pair = np.dtype([("lo", np.float32), ("hi", np.float32)])
    out = np.full(2, np.nan, np.float32)
    module.get_function("ends")((1,), (2,), (np.array((1.5, -2.5), pair)[()], out))
    assert out.tolist() == [1.5, -2.5]


def test_a_struct_whose_destructor_is_not_trivial_is_passed_by_value_and_never_destroyed(module):
    # refused as a type the runner cannot name (CUDA by Example's lock-based dot product); a GPU's
    # kernel gets the bytes, each thread a copy of its own, and runs no destructor on the device
    mutex, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    steps = np.full(3 * 4, -1, np.int32)
    lock = np.array((mutex.ctypes.data, 10), np.dtype([("mutex", np.uint64), ("step", np.int32)], align=True))
    module.get_function("locked_count")((3,), (4,), (np.int16(100), lock[()], count, steps, 0.5e4))
    assert (mutex[0], count[0]) == (0, 3)  # unlocked, one count a block, no destructor's 1000
    np.testing.assert_array_equal(steps, np.tile(np.arange(4), 3) + 10 + 100 + 5000)


def test_an_extern_shared_array_aligned_by_an_expression(module):
    out = np.full(32, np.nan, np.float32)
    module.get_function("reverse")((1,), (32,), (out, np.int32(32)), shared_mem=128)
    np.testing.assert_array_equal(out, np.arange(31, -1, -1))


def test_timestamps_grow_and_the_checking_mode_compares_them_equal(module):
    # the checking mode took clocks read at different moments of its two runs for a race
    times, ticks = np.zeros(4, np.int64), np.zeros(2, np.int64)
    module.get_function("stamps")((2,), (32,), (times, ticks))
    assert (times[2:] > times[:2]).all() and (ticks > 0).all()


def test_atomic_exchanges_leave_a_last_writer_the_checking_mode_names(module):
    winner = np.full(1, -1, np.int32)
    if not module.check:
        module.get_function("last_swap")((2,), (32,), (winner,))
        assert 0 <= winner[0] < 64
        return
    with pytest.raises(KernelError, match="the value an atomicExch or atomicCAS leaves, which the last thread "
                                          "to swap decides, on a GPU too"):
        module.get_function("last_swap")((2,), (32,), (winner,))


def test_a_list_built_under_a_lock_holds_each_item_once_and_its_order_is_named(module):
    # the checking mode's message named missing barriers only (CUDA by Example's hash table)
    next_, head, mutex = np.full(64, -2, np.int32), np.full(1, -1, np.int32), np.zeros(1, np.int32)
    if module.check:
        with pytest.raises(KernelError, match=r"what threads write in turn under a lock taken with atomicCAS, in the "
                                              r"order they took it .*, which varies from run to run on a GPU too"):
            module.get_function("push_locked")((2,), (32,), (next_, head, mutex))
        return
    module.get_function("push_locked")((2,), (32,), (next_, head, mutex))
    walked, item = [], head[0]
    while item != -1 and len(walked) <= 64:
        walked.append(item)
        item = next_[item]
    assert sorted(walked) == list(range(64)) and mutex[0] == 0


def test_an_empty_array_is_passed(module):
    # the checking mode's comparison of its two runs failed on an empty output (numpy's argmax)
    out = np.zeros(0, np.float32)
    module.get_function("copy_tail")((1,), (32,), (out, np.zeros(0, np.float32), np.int32(0)))
    assert out.size == 0


def test_a_zero_dimensional_array_is_an_output(module):
    # the checking mode's comparison of its two runs raised NumPy's ValueError on a 0-d array
    out = np.zeros((), np.float64)
    module.get_function("flag")((1,), (1,), (out,))
    assert out[()] == 3.0


def test_cuda_toolkit_headers_float_sincos_inlining_qualifiers_and_cubs_half():
    x = np.linspace(0, 3, 8).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    RawModule(code=TOOLKIT_CODE).get_function("sin_cos")((1,), (8,), (out, x))
    np.testing.assert_allclose(out[0::2], 2 * np.sin(x.astype(np.float64)), rtol=0, atol=2.5e-7)
    np.testing.assert_allclose(out[1::2], 3 * np.cos(x.astype(np.float64)), rtol=0, atol=4e-3)  # a half's 2^-11


def test_nvccs_pre_include_option_is_taken(tmp_path):
    header = tmp_path / "scale.h"
    header.write_text("#define SCALE 2\n")
    code = '#ifndef SCALE\n#define SCALE 1\n#endif\nextern "C" __global__ void k(int* out) { out[0] = 21 * SCALE; }'
    out = np.zeros(1, np.int32)
    RawModule(code=code, options=(f"--pre-include={header}",), backend="nvcc").get_function("k")((1,), (1,), (out,))
    assert out[0] == 42


@pytest.mark.parametrize("code, message", [
    # a kernel named like a C function the runner calls would take its calls (a crash at the launch)
    ('extern "C" __global__ void sysconf(int* out) { out[0] = 1; }',
     r"^the RawModule code defines `sysconf`, which the CPU runner itself calls in the C library: the CPU build "
     r"would call the code's in its place \(on a GPU the name is free\); rename it$"),
    # one the host's headers declare
    ('extern "C" __global__ void select(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):1: `select` is also a function of the C library, which the CPU build includes \(NVRTC "
     r"declares no such function, so on a GPU the name is free\): rename it$"),
    # one whose C++ overloads (<string.h>'s index) made the instance table's error unreadable
    ('// SHOC names its kernels this way\nextern "C" __global__ void index(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):2: `index` is also a function of the C library, which the CPU build includes"),
    # one CUDA's device library declares too: NVRTC refuses it as well
    ('extern "C" __global__ void sqrt(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):1: `sqrt` is also a function of the C library and of CUDA's device library, which "
     r"declares it for NVRTC too: CuPy's build of this code fails on a GPU as well; rename it$"),
    # one of CUDA's math API the C library lacks (a LeetGPU solution's `norm`): NVRTC 13.0 refuses it with
    # C linkage too, where the message said the name was free on a GPU
    ('extern "C" __global__ void norm(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):1: `norm` is also a function of CUDA's math API, which NVRTC declares too: CuPy's "
     r"build of this code fails on a GPU as well; rename it$"),
    ('extern "C" __global__ void j0(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):1: `j0` is also a function of the C library and of CUDA's device library"),
    # a host library's header (darknet's kernel files include it for their host code): g++'s "No such file"
    ('#include <cublas_v2.h>\nextern "C" __global__ void k(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):1: the CPU runner has no <cublas_v2.h>, the header of cuBLAS, which host code calls: a "
     r"RawModule holds device code"),
    # a host launcher (darknet's): g++'s "expected primary-expression before '<' token"
    ('extern "C" __global__ void k(int* out) { out[0] = 1; }\nvoid launch(int* out)\n{\n    k<<<1, 1>>>(out);\n}',
     r"^\(RawModule code\):4: a kernel launch, kernel<<<...>>>\(...\): the CPU runner does not support one in device "
     r"code \(dynamic parallelism\), and one in host code"),
    # ... spelt with spaces, as Visual Studio formats it (Gaussian splatting's rasterizer)
    ('extern "C" __global__ void k(int* out) { out[0] = 1; }\nvoid launch(int* out) { k << <1, 32 >> > (out); }',
     r"^\(RawModule code\):2: a kernel launch, kernel<<<...>>>\(...\): the CPU runner does not support one"),
    # inline PTX with a float register: GCC's constraint errors, one per asm, had no word of PTX
    ('extern "C" __global__ void k(float* y, const float* x)\n{\n    float v;\n'
     '    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(x + threadIdx.x));\n    y[threadIdx.x] = v;\n}',
     r"^\(RawModule code\):4: the CPU runner does not support inline PTX assembly, asm\(\"...\"\), which runs on "
     r"a GPU only$"),
    # inline PTX of integer registers, which only the assembler refuses: it named no place (TensorRT)
    ('extern "C" __global__ void k(unsigned* y)\n{\n    unsigned a;\n'
     '    asm volatile("cvt.rni.sat.s32.f32 %0, %1;" : "=r"(a) : "r"(y[0]));\n    y[0] = a;\n}',
     r"^\(RawModule code\):4: the CPU runner does not support inline PTX assembly"),
    # a launcher in a template (left out where it is the only error) beside inline PTX in a function that
    # nothing calls: the PTX, which the launcher's message hid until 2026-11-28 (Gunrock's async queue)
    ('template <typename T> __global__ void twice(T* x) { x[threadIdx.x] *= 2; }\n'
     'template <typename T> void launch(T* x) { twice<T><<<1, 32>>>(x); }\n'
     '__device__ int shared_space(void* p)\n{\n    int r;\n'
     '    asm("{ .reg .pred p; isspacep.shared p, %1; selp.b32 %0, 1, 0, p; }" : "=r"(r) : "l"(p));\n'
     '    return r;\n}\nextern "C" __global__ void k(int* out) { out[0] = 1; }',
     r"^\(RawModule code\):6: the CPU runner does not support inline PTX assembly"),
    # thread block clusters (sm_90) stopped the build with the compiler's errors
    ('#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n'
     'extern "C" __global__ void k(unsigned* out) { out[0] = cg::this_grid().cluster_rank(); }',
     r"^\(RawModule code\):3: the CPU runner does not support thread block clusters \(sm_90; its code is sm_80's, "
     r"__CUDA_ARCH__ 800\)$"),
], ids=["runner-name", "header-name", "overloaded-name", "cuda-name", "cuda-math-name", "cuda-and-c-name",
        "host-library", "host-launcher", "spaced-launcher", "inline-ptx", "assembled-ptx", "ptx-beside-launcher",
        "clusters"])
def test_a_build_that_cannot_be_is_refused_in_one_line(code, message):
    with pytest.raises(KernelBuildError, match=message):
        RawModule(code=code).get_function(re.search(r"void (\w+)\(", code)[1])


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_a_launcher_in_a_header_the_code_includes_is_refused_in_one_line_naming_the_header(tmp_path, backend):
    # AutoDock-GPU's kernels.cu includes kernel1.cu ... kernel4.cu, each with its launcher: the compiler's
    # "expected primary-expression before '<' token" and 40 lines more until 2026-11-28
    (tmp_path / "launcher.cuh").write_text('__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n'
                                           "void launch_k(float* x) { k<<<1, 32>>>(x); }\n")
    with pytest.raises(KernelBuildError, match=rf"^{re.escape(str(tmp_path / 'launcher.cuh'))}:2: a kernel launch, "
                                               r"kernel<<<...>>>\(...\): the CPU runner does not support one in "
                                               r"device code \(dynamic parallelism\), and one in host code"):
        RawModule(code='#include "launcher.cuh"\n', options=(f"-I{tmp_path}",), backend=backend).get_function("_Z1kPf")



# CUB's examples: <cub/block/block_load.cuh> for the direct loads, cuda::maximum<>{} (CCCL 2.8),
# dynamic shared memory aligned after its name; built with the -D names GEMM code gives its sizes.
CUB_EXAMPLE = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>

extern "C" __global__ void block_max(int* out, const int* in)
{
    extern __shared__ char staging[] __align__(16);
    int items[2];
    cub::LoadDirectBlocked(threadIdx.x, in, items);
    using Reduce = cub::BlockReduce<int, 64>;
    __shared__ typename Reduce::TempStorage temp;
    const int best = Reduce(temp).Reduce(items, cuda::maximum<>{});
    reinterpret_cast<int*>(staging)[threadIdx.x] = items[0] + items[1];
    __syncthreads();
    if (threadIdx.x == 0) {
        out[0] = best;
        out[1] = reinterpret_cast<int*>(staging)[63] + M + N + K + E + BX + WIDTH;
    }
}
"""


def test_cubs_examples_build_with_the_macros_gemm_code_defines():
    # each stopped the build inside the runner's headers: the include, cuda::maximum, the trailing
    # __align__, and -DM, -DN, -DK, -DE, -DBX, -DWIDTH (names of its template parameters)
    values = np.random.default_rng(5).integers(-1000, 1000, 128).astype(np.int32)
    out = np.zeros(2, np.int32)
    options = ("-DM=1", "-DN=2", "-DK=3", "-DE=4", "-DBX=5", "-DWIDTH=6")
    RawModule(code=CUB_EXAMPLE, options=options).get_function("block_max")((1,), (64,), (out, values),
                                                                           shared_mem=256)
    assert out.tolist() == [values.max(), values[126] + values[127] + 21]


def test_a_macro_of_the_options_that_the_runners_headers_use_as_a_name_is_named_in_one_line():
    with pytest.raises(KernelBuildError, match=r"^-DT: the option's macro `T` also replaces that name in the CPU "
                                               r"runner's own headers \(runtime\.h:\d+\), which the build includes "
                                               r"before the code; give the macro a longer name$"):
        RawModule(code='extern "C" __global__ void k(int* out) { out[0] = 1; }', options=("-DT=64",)).get_function("k")


def test_cupys_math_constants_header_is_cudas():
    # cupyx's Delaunay triangulation and spline kernels include it; CuPy's other headers stay refused
    code = ('#include <cupy/math_constants.h>\nextern "C" __global__ void k(float* f, double* d)\n'
            '{\n    f[0] = CUDART_INF_F; f[1] = CUDART_NAN_F; d[0] = -CUDART_INF; d[1] = CUDART_NAN;\n}\n')
    f, d = np.zeros(2, np.float32), np.zeros(2, np.float64)
    RawModule(code=code).get_function("k")((1,), (1,), (f, d))
    assert f[0] == np.inf and np.isnan(f[1]) and d[0] == -np.inf and np.isnan(d[1])


def test_nvstd_function_and_wider_integer_scalars_as_cusignal_passes_them():
    # <nvfunctional> was "No such file" (cuSignal's peak finding); a shape's numpy.int64 for an int
    # parameter was refused (cuSignal's convolve2d), where CuPy passes 8 bytes a GPU reads the first 4 of
    code = ('#include <nvfunctional>\nextern "C" __global__ void k(int* out, int n)\n{\n'
            '    nvstd::function<int(int)> twice = [](int v) { return 2 * v; };\n'
            '    if (threadIdx.x < n) out[threadIdx.x] = twice(threadIdx.x);\n}\n')
    out = np.full(4, -1, np.int32)
    RawModule(code=code).get_function("k")((1,), (4,), (out, np.int64(3)))
    assert out.tolist() == [0, 2, 4, -1]


UNUSED_OPERATORS = r"""
// TransformerEngine's VectorizedStorage: a class template's member operators that no kernel calls,
// whose bodies only compile for some types (add_elem is declared nowhere; float has no ::member)
template <typename T> struct Storage {
    T value;
    __device__ Storage& operator+=(const Storage& other) { value = add_elem(value, other.value); return *this; }
    __device__ T operator[](int) const { return T::member; }
    __device__ bool operator==(const Storage& other) const { return value == other.value; }
};
struct Point { float x; };
extern "C" __global__ void store(float* out)
{
    Storage<float> s;
    s.value = 2.0f;
    Storage<Point> p;
    p.value.x = 3.0f;
    out[threadIdx.x] = s.value + p.value.x;
}
"""


def test_a_class_templates_unused_device_operators_are_not_compiled():
    # `__device__ S& operator+=(` was taken for a __device__ variable (an `=` before the `(`) and
    # marked `used`, so the build compiled it with its class and stopped (until 2026-11-27)
    out = np.zeros(4, np.float32)
    RawModule(code=UNUSED_OPERATORS).get_function("store")((1,), (4,), (out,))
    assert out.tolist() == [5.0] * 4


ALIAS_OF_ITS_OWN_NAME = r"""
// TransformerEngine's utils.cuh: a member alias named as the class template it aliases, which NVRTC
// and clang take and GCC calls an error ("changes meaning")
template <typename T> struct Reducer { T value; };
template <typename T> struct Stats {
    using Reducer = Reducer<T>;
    Reducer reducer;
};
extern "C" __global__ void alias(float* out)
{
    Stats<float> stats;
    stats.reducer.value = 3.0f;
    out[threadIdx.x] = stats.reducer.value;
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_member_alias_named_as_the_template_it_aliases_builds(check):
    # GCC stopped the build until 2026-11-27; the build is made again with -fpermissive when these are
    # its only errors, and any other error still stops it
    out = np.zeros(4, np.float32)
    RawModule(code=ALIAS_OF_ITS_OWN_NAME, check=check).get_function("alias")((1,), (4,), (out,))
    assert out.tolist() == [3.0] * 4
    with pytest.raises(KernelBuildError, match=r"(?s)changes meaning of .*error: .*undeclared_name"):
        RawModule(code=ALIAS_OF_ITS_OWN_NAME.replace("out[threadIdx.x] =", "undeclared_name(); out[threadIdx.x] ="),
                  check=check).get_function("alias")


BASE_MEMBER_WITHOUT_THIS = r"""
// DGL's GPU hash table: a member of a class template calls its dependent base class's `Hash` without
// `this->`, which nvcc's front end finds and GCC calls an error (the C++ rule: not found); `Missing`
// is declared nowhere
template <typename T> struct Table { __device__ T Hash(T x) const { return x * 3; } };
template <typename T> struct MutableTable : Table<T> {
    __device__ T Insert(T x) const { return Hash(x) + 1; }
    __device__ T Lookup(T x) const { return Missing(x); }
};
template <typename T> __global__ void insert(T* out, int lookup)
{
    MutableTable<T> table;
    out[threadIdx.x] = lookup ? table.Lookup(T(threadIdx.x)) : table.Insert(T(threadIdx.x));
}
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_a_dependent_base_member_called_without_this_builds_as_nvcc_builds_it(backend):
    # every kernel of DGL's hash table stopped the build until 2026-11-27; a name declared nowhere still does
    def built(code):  # as CuPy finds the kernel: by its name expression, or (nvcc) its mangled name
        if backend == "nvrtc":
            return RawModule(code=code, name_expressions=("insert<int>",)).get_function("insert<int>")
        return RawModule(code=code + "template __global__ void insert<int>(int*, int);\n",
                         backend="nvcc").get_function("_Z6insertIiEvPT_i")

    out = np.zeros(4, np.int32)
    built(BASE_MEMBER_WITHOUT_THIS.replace("return Missing(x);", "return x;"))((1,), (4,), (out, np.int32(0)))
    assert out.tolist() == [1, 4, 7, 10]
    with pytest.raises(KernelBuildError, match=r"error: .Missing. was not declared in this scope"):
        built(BASE_MEMBER_WITHOUT_THIS)

FUNCTION_POINTERS = r"""
// cuda-samples' FunctionPointers: the host reads a device function's address from a __device__
// variable (cudaMemcpyFromSymbol) and passes it to a kernel's parameter, or NULL
typedef float (*operation_t)(float);
__device__ float square(float v) { return v * v; }
__device__ operation_t square_address = square;
extern "C" __global__ void apply(float* x, operation_t operation)
{
    if (operation != nullptr) {
        x[threadIdx.x] = operation(x[threadIdx.x]);
    }
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_function_pointer_parameter_takes_an_address_read_from_a_device_variable(check):
    # its type was named "?*" and every argument refused ("a type it cannot name") until 2026-11-27
    module = RawModule(code=FUNCTION_POINTERS, check=check)
    address = module.get_global("square_address").view(np.uint64)[0]
    x = np.arange(4, dtype=np.float32)
    module.get_function("apply")((1,), (4,), (x, address))
    assert x.tolist() == [0, 1, 4, 9]
    module.get_function("apply")((1,), (4,), (x, None))  # a null pointer, as CuPy passes None
    assert x.tolist() == [0, 1, 4, 9]
    with pytest.raises(TypeError, match=r"apply: argument 1 \(function pointer\) takes a numpy.uint64"):
        module.get_function("apply")((1,), (4,), (x, 1.5))


def test_parameters_beyond_a_gpus_32764_bytes_are_refused_as_nvrtc_refuses_them():
    # cuda-samples' LargeKernelParameter passes 32,000 bytes, which a GPU takes; 36,000 built and ran
    # here until 2026-11-27, where NVRTC stops ("Formal parameter space overflowed")
    code = ("struct Big { int value[N]; };\n"
            'extern "C" __global__ void total(const Big big, int* out)\n{\n'
            "    int sum = 0;\n    for (int i = 0; i < N; ++i) sum += big.value[i];\n    out[0] = sum;\n}\n")
    out = np.zeros(1, np.int32)
    within = np.ones(1, np.dtype([("value", np.int32, (8000,))]))
    RawModule(code=code, options=("-DN=8000",)).get_function("total")((1,), (1,), (within, out))
    assert out[0] == 8000
    beyond = np.ones(1, np.dtype([("value", np.int32, (9000,))]))
    with pytest.raises(KernelBuildError, match=r"^total: its parameters take 36,008 bytes, more than the 32,764 a "
                                               r"kernel's parameters may take on a GPU"):
        RawModule(code=code, options=("-DN=9000",)).get_function("total")((1,), (1,), (beyond, out))


def test_a_race_is_reported_when_an_output_of_structs_holds_an_address_by_chance():
    # np.empty's leftover bytes hold the heap's own pointers here and there: one such word made the
    # checking mode take the output for structs that hold pointers and run the launch once, unchecked
    # (cuSignal's upfirdn on complex128); a pointer is a field now, an address in half the elements
    code = ('struct Complex { double re, im; };\nextern "C" __global__ void k(Complex* out)\n{\n'
            '    __shared__ double s[32];\n    s[threadIdx.x] = threadIdx.x;  // no __syncthreads() after\n'
            '    out[threadIdx.x].re = s[31 - threadIdx.x];\n    out[threadIdx.x].im = 0.0;\n}\n')
    live = np.zeros(16)
    out = np.zeros(32, np.complex128)
    out.view(np.uint64)[0] = live.ctypes.data
    # the missing barrier is read as __shared__ memory no thread had written (the mirrored run's fill)
    with pytest.raises(KernelError, match=r"the result depends on what __shared__ memory held before the launch: "
                                          r"args\[0\]\[0\] is \(nan\+0j\) with the first fill"):
        RawModule(code=code, check=True).get_function("k")((1,), (32,), (out,))
    # a struct whose size is no multiple of 8 holds no pointer (CuPy's Delaunay: triangles of 3 ints)
    triangles = code.replace("struct Complex { double re, im; };", "struct Complex { int re, im, unused; };")
    triangles = triangles.replace("double s[32]", "int s[32]")
    out = np.zeros(48, np.int32)
    out.view(np.uint64)[0] = live.ctypes.data
    with pytest.raises(KernelError, match="the result depends on what __shared__ memory held"):  # ints: never NaN
        RawModule(code=triangles, check=True).get_function("k")((1,), (16,), (out,))


#: code that NVRTC and nvcc 12.9 build, and the value each launch of `k` stores in out[0]: SHOC's
#: narrowed constants in braces, a register limit, CUDA's assumption hint, the version macros (with
#: the legacy branch's __shfl_down, which no longer builds), and the C library's names as the code's own
BUILT_AS_NVRTC_BUILDS = [
    ('extern "C" __global__ void k(int* out) { int y[3] = {0.0, 2.5, -1}; unsigned u[1] = {-1}; '
     "out[0] = y[1] + (u[0] == 4294967295u); }", 3),
    ('extern "C" __global__ void __maxnreg__(32) k(int* out) { out[0] = 4; }', 4),
    ('extern "C" __global__ void k(int* out) { __builtin_assume(threadIdx.x < 32); out[0] = 5; }', 5),
    ('extern "C" __global__ void k(int* out) {\n#if CUDART_VERSION >= 9000 && __CUDACC_VER_MAJOR__ >= 12\n'
     "out[0] = __shfl_down_sync(0xffffffff, 6, 1);\n#else\nout[0] = __shfl_down(6, 1);\n#endif\n}", 6),
    ('extern "C" __global__ void k(const unsigned char* in, int* out) {\n#ifdef BIG_ENDIAN\nout[0] = in[0];\n#else\n'
     "int errno = 7, PATH_MAX = 0; out[0] = errno + PATH_MAX;\n#endif\n}", 7),
]


@pytest.mark.parametrize("case", range(len(BUILT_AS_NVRTC_BUILDS)))
def test_code_nvrtc_builds_builds_and_takes_nvrtcs_branches(case):
    code, want = BUILT_AS_NVRTC_BUILDS[case]
    out = np.zeros(1, np.int32)
    args = (np.zeros(4, np.uint8), out) if "in," in code else (out,)
    RawModule(code=code).get_function("k")((1,), (32,), args)
    assert out[0] == want


def test_clusters_and_inline_ptx_in_braces_are_refused_in_one_line():
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):1: the CPU runner does not support thread block "
                                               r"clusters \(__cluster_dims__, sm_90\)$"):
        RawModule(code='extern "C" __global__ void __cluster_dims__(2, 1, 1) k(int* out) { out[0] = 1; }'
                  ).get_function("k")
    # DeepSpeed's vector loads: a { } block around a vector operand, which GCC reads as its dialects
    ptx = ('extern "C" __global__ void k(const float* in, float* out) {\n  float a, b;\n'
           '  asm volatile("{\\n ld.global.v2.f32 {%0, %1}, [%2];\\n}\\n" : "=f"(a), "=f"(b) : "l"(in));\n'
           "  out[0] = a + b;\n}\n")
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):3: the CPU runner does not support inline PTX"):
        RawModule(code=ptx).get_function("k")


ROWS_THROUGH_POINTERS = r"""
// Kaldi's _copy_rows: row i of `out` from the row `rows[i]` points to (or zeros where it is null);
// its own `warpSize` shadows CUDA's built-in one
extern "C" __global__ void copy_rows(const float* const* rows, float** out, int columns)
{
    const int warpSize = 4;  // a variable of the code's own
    int i = blockIdx.x, j = threadIdx.x;
    if (j < columns) out[i][j] = rows[i] ? rows[i][j] + warpSize : 0.0f;
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_arrays_of_addresses_are_taken_for_typed_pointers_to_pointers(check):
    # float** and const float* const* refused every argument: an array of addresses passed the check of
    # a pointer to pointers, then failed the one of the pointee's dtype (float32)
    source, target = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((3, 3), np.nan, np.float32)
    rows = np.array([source[1].ctypes.data, 0, source[0].ctypes.data], np.uint64)
    out = np.array([target[i].ctypes.data for i in range(3)], np.uint64)
    RawModule(code=ROWS_THROUGH_POINTERS, check=check).get_function("copy_rows")((3,), (32,), (rows, out, 3))
    np.testing.assert_array_equal(target, [[7, 8, 9], [0, 0, 0], [4, 5, 6]])
    with pytest.raises(TypeError, match=r"argument 0 \(const float\* const\*\) takes an array of addresses"):
        RawModule(code=ROWS_THROUGH_POINTERS, check=check).get_function("copy_rows")((3,), (32,), (source, out, 3))


BOUNDED = r"""
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 1024)
extern "C" __global__ void __launch_bounds__(64, 1) bounded(int* out) { out[threadIdx.x] = 1; }
extern "C" __global__ void __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((128)))) pytorch_bounded(int* out)
{
    out[threadIdx.x] = 2;
}
template <int Threads>
__global__ void __launch_bounds__(Threads) templated(int* out) { out[threadIdx.x] = 3; }
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_block_beyond_the_kernels_launch_bounds_is_refused_as_a_gpu_refuses_it(check):
    # ggml's kernels declare __launch_bounds__; a launch of more threads ran here and fails on a GPU
    module = RawModule(code=BOUNDED, name_expressions=("templated<32>",), check=check)
    out = np.zeros(256, np.int32)
    module.get_function("bounded")((1,), (64,), (out,))
    module.get_function("pytorch_bounded")((1,), (128,), (out,))
    assert out[:64].tolist() == [2] * 64 and out[64:128].tolist() == [2] * 64
    with pytest.raises(KernelError, match=r"^bounded: a block of 128 threads, more than the 64 of the kernel's "
                                          r"__launch_bounds__: a GPU refuses the launch"):
        module.get_function("bounded")((1,), (64, 2), (out,))
    with pytest.raises(KernelError, match=r"^pytorch_bounded: a block of 256 threads, more than the 128"):
        module.get_function("pytorch_bounded")((1,), (256,), (out,))
    module.get_function("templated<32>")((1,), (256,), (out,))  # a bound of a template's parameter: unknown
    assert (out == 3).all()
    # a C++ kernel asked for by its mangled name in an nvcc build (its instance is a cast to its type)
    with pytest.raises(KernelError, match=r"^_Z7boundedPi: a block of 128 threads, more than the 64"):
        RawModule(code=BOUNDED.replace('extern "C" ', ""), backend="nvcc", check=check).get_function(
            "_Z7boundedPi")((1,), (128,), (out,))


def test_a_library_holding_the_cpp_runtime_is_not_said_to_define_the_runners_names(tmp_path):
    # GCC 13 of Ubuntu 24.04 (an H200 machine) links the C++ runtime into each library, which then
    # defines operator new and std::terminate that the runner's objects take: every build was refused
    # as a code that defines them. A C name the code defines stays refused.
    compiler = shutil.which("g++")
    if compiler is None or shutil.which("nm") is None:
        pytest.skip("needs g++ and nm")
    runner_object = tmp_path / "runner.o"
    subprocess.run([compiler, "-c", "-fPIC", "-x", "c++", "-", "-o", str(runner_object)], check=True, text=True,
                   input="#include <exception>\n#include <unistd.h>\n"
                         "long page() { int* p = new int(1); long s = sysconf(_SC_PAGESIZE) + *p; delete p; "
                         "if (s < 0) std::terminate(); return s; }\n")
    library = tmp_path / "code.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-static-libstdc++", "-x", "c++", "-", "-x", "none",
                    str(runner_object), "-o", str(library)], check=True, text=True,
                   input='extern "C" long sysconf(int) { return 1; }\n')
    assert "_Znwm" in subprocess.run(["nm", "--dynamic", "--defined-only", str(library)], capture_output=True,
                                     text=True).stdout  # the C++ runtime is in the library
    assert build._runner_names_taken([runner_object], library) == ["sysconf"]


def test_the_cpp_runtime_linked_into_a_library_has_no_variable_of_the_code(tmp_path):
    # There, the exception handling's emergency pool holds pointers: the checking mode took it for a
    # __device__ variable of the code holding one and ran every launch once, reporting no race (an H200
    # machine's GCC 13). The code's own variables stay the code's.
    compiler = shutil.which("g++")
    if compiler is None or shutil.which("nm") is None:
        pytest.skip("needs g++ and nm")
    library = tmp_path / "code.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-static-libstdc++", "-x", "c++", "-", "-o", str(library)],
                   check=True, text=True,
                   input="#include <algorithm>\nfloat* table = nullptr;\nint counter = 3;\n"
                         "int fail(int x) { if (x < 0) throw x; return std::max(x, counter); }\n")
    symbols = runner._symbol_table(str(library), "the test")
    assert "_ZN12_GLOBAL__N_114emergency_poolE" in symbols  # the C++ runtime is in the library
    runtime_data = runner.linked_cpp_runtime_data(symbols)
    variables = {name for name, (kind, _, size, elf_type, section) in symbols.items()
                 if runner._code_variable(name, kind, size, elf_type, section) and name not in runtime_data}
    assert variables == {"table", "counter"}


def test_the_checking_mode_compares_two_orders_where_the_compiler_links_the_cpp_runtime_in(tmp_path, monkeypatch):
    # a compiler that links libstdc++ into every library, as GCC 13 of Ubuntu 24.04 does: every build was
    # refused (operator new), then every checked launch ran once, so that no race was reported
    compiler = shutil.which("g++")
    if compiler is None or shutil.which("nm") is None:
        pytest.skip("needs g++ and nm")
    linking_it_in = tmp_path / "g++"
    linking_it_in.write_text(f'#!/bin/sh\nexec {compiler} "$@" -static-libstdc++\n')
    linking_it_in.chmod(0o755)
    monkeypatch.setenv("CXX", str(linking_it_in))
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    code = 'extern "C" __global__ void last(int* out) { out[0] = blockIdx.x * blockDim.x + threadIdx.x; }\n'
    kernel = RawModule(code=code, check=True).get_function("last")
    library = kernel._module._kernels.tool_path
    assert "_ZSt9terminatev" in runner._symbol_table(library, "the test")  # the C++ runtime is in it
    with pytest.raises(KernelError, match=r"last: the result depends on the order in which the threads"):
        kernel((2,), (32,), (np.zeros(1, np.int32),))
