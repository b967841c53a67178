"""CUDA's device functions and types on the CPU (nn_cuda/cuda_cpu/device_functions.h), each through
RawModule against NumPy: vector types, dim3, min/max, fast-math and bit intrinsics, __ldg, fences,
clock64, the counting barriers, device printf and assert, atomics (in the checking mode too),
__constant__ and __device__ variables, extern __shared__; and what is not supported yet stops the build
naming it (warps: tests/test_cuda_cpu_warps.py). The kernels are written here; one module holds most
of them (one build)."""

import re

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each module is a build (about two seconds)

FEATURES = r"""
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 as CUDA lays it out");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 as CUDA lays it out");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2 as CUDA lays it out");
static_assert(sizeof(float3) == 12 && sizeof(int4) == 16 && sizeof(uchar4) == 4, "vector sizes");

// Each thread loads one float4, scales it and stores it with make_float4; dim3 fills shape[0..5].
extern "C" __global__ void vectors(const float* in, float* out, unsigned* shape)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = reinterpret_cast<const float4*>(in)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(v.w, v.z * 2.0f, v.y, v.x + 1.0f);
    if (i == 0) {
        const dim3 one(7), two(7, 8);
        const dim3 from_uint3(make_uint3(1, 2, 3));
        shape[0] = one.y * 10 + one.z;
        shape[1] = two.x * 10 + two.y;
        shape[2] = from_uint3.z;
        shape[3] = dim3(blockDim).x;
    }
}

// min and max in the common type of their arguments, as CUDA's overloads.
extern "C" __global__ void minmax(long long* out, float* fout)
{
    out[0] = min(-1, 2u);          // unsigned: -1 is 4294967295
    out[1] = max(-1, 2);           // int
    out[2] = min(-5LL, 3LL);       // long long
    out[3] = max(7ll, 9ull);       // unsigned long long
    fout[0] = min(1.5f, 2.0);      // double
    fout[1] = max(0.0f / 0.0f, 3.0f);  // a NaN loses, as with fmaxf
}

// One row per intrinsic: the fast-math functions, then bit casts and bit counts.
extern "C" __global__ void intrinsics(const float* x, float* out, int* bits, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    const float v = __ldg(x + i);
    out[0 * n + i] = __expf(v);
    out[1 * n + i] = __logf(v);
    out[2 * n + i] = rsqrtf(v);
    out[3 * n + i] = __saturatef(v - 1.0f);
    out[4 * n + i] = __fdividef(1.0f, v);
    out[5 * n + i] = __powf(v, 1.5f);
    __threadfence();
    bits[0 * n + i] = __float_as_int(v);
    bits[1 * n + i] = __popc(static_cast<unsigned>(i) * 2654435761u);
    bits[2 * n + i] = __clz(i);
    bits[3 * n + i] = __ffs(i);
    bits[4 * n + i] = static_cast<int>(__brev(static_cast<unsigned>(i)));
    bits[5 * n + i] = __umulhi(0xFFFFFFFFu, static_cast<unsigned>(i));
}

// Three counting barriers in a row on every thread: count, and, or of threadIdx.x % k == 0.
extern "C" __global__ void votes(int* out, int k)
{
    const bool p = threadIdx.x % k == 0;
    for (int round = 0; round < 3; ++round) {
        const int count = __syncthreads_count(p);
        const int all = __syncthreads_and(p || round == 1);
        const int any = __syncthreads_or(p && round == 2);
        if (threadIdx.x == 0) {
            out[3 * round + 0] = count;
            out[3 * round + 1] = all;
            out[3 * round + 2] = any;
        }
    }
}

// Device printf, one line per block.
extern "C" __global__ void hello(int n)
{
    if (threadIdx.x == 0) {
        printf("block %d of %d\n", blockIdx.x, n);
    }
}

// The clock grows, and a device assert that fails on one thread.
extern "C" __global__ void clock_and_assert(long long* ticks, int limit)
{
    const long long start = clock64();
    __syncthreads();
    ticks[threadIdx.x] = clock64() - start;
    assert(static_cast<int>(threadIdx.x) < limit);
}

// Integer atomics: a histogram, the extremes, a counter by compare-and-swap, wrapping counters, bits.
extern "C" __global__ void integer_atomics(const int* x, int n, int* histogram, int* extremes,
                                           unsigned* counters, unsigned long long* big)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    atomicAdd(&histogram[x[i] % 8], 1);
    atomicMax(&extremes[0], x[i]);
    atomicMin(&extremes[1], x[i]);
    atomicSub(&extremes[2], 1);
    int seen = extremes[3];
    for (int old; (old = atomicCAS(&extremes[3], seen, seen + 1)) != seen;) {
        seen = old;
    }
    atomicInc(&counters[0], 4u);   // wraps to 0 after 4: n increments leave n % 5
    atomicDec(&counters[1], 6u);   // wraps to 6 below 0
    atomicOr(&counters[2], 1u << (i % 32));
    atomicXor(&counters[3], static_cast<unsigned>(i));
    atomicAdd(&big[0], 1ull << 40);
    atomicExch(&big[1], 99ull);
}

// Column sums of a rows x cols matrix: every thread adds one element (float atomics).
template <typename T>
__global__ void column_sums(const T* x, T* sums, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        atomicAdd(&sums[i % cols], x[i]);
    }
}

// A polynomial with coefficients in __constant__ memory; a __device__ counter of the threads.
__constant__ float coefficients[3];
__device__ int threads_run;

extern "C" __global__ void polynomial(const float* x, float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = coefficients[0] + x[i] * (coefficients[1] + x[i] * coefficients[2]);
        atomicAdd(&threads_run, 1);
    }
}

// Each block reverses its part of x through dynamic shared memory (shared_mem: blockDim.x floats);
// with `skip`, the last thread leaves its element of the tile unwritten.
extern "C" __global__ void reverse_blocks(const float* x, float* out, int skip)
{
    extern __shared__ float tile[];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    if (!(skip && t == static_cast<int>(blockDim.x) - 1)) {
        tile[t] = x[base + t];
    }
    __syncthreads();
    out[base + t] = tile[blockDim.x - 1 - t];
}

// The same through raw aligned bytes, in any type.
template <typename T>
__global__ void reverse_bytes(const T* x, T* out)
{
    extern __shared__ __align__(16) unsigned char raw[];
    T* tile = reinterpret_cast<T*>(raw);
    tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

// The same in the other orders CUDA allows for the words of the declaration, over two lines, with
// a second dynamic array that aliases the first (both start at the block's dynamic memory).
template <typename T>
__global__ void reverse_any_order(const T* x, T* out, int* check)
{
    extern T __shared__
        tile[];
    __shared__ extern __align__(8) int also_tile[];
    tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
    check[blockIdx.x * blockDim.x + threadIdx.x] = reinterpret_cast<T*>(also_tile) == tile ? __LINE__ : -1;
}

// A race the atomics do not excuse: thread 0 clears the total, the last thread reads it, no barrier.
extern "C" __global__ void racy_total(const float* x, float* out)
{
    __shared__ float total;
    if (threadIdx.x == 0) {
        total = 0.0f;
    }
    atomicAdd(&total, x[threadIdx.x]);
    if (threadIdx.x == blockDim.x - 1) {
        out[0] = total;
    }
}

// The scoped atomics (_block, _system: one scope on the CPU) and the integer min and max of CUDA's
// math API.
extern "C" __global__ void scoped_atomics_and_integer_min(const int* x, int* extremes, unsigned* counter,
                                                          unsigned long long* smallest)
{
    const int v = x[threadIdx.x];
    atomicMax_system(&extremes[0], v);
    atomicMin_block(&extremes[1], v);
    atomicAdd_block(counter, 1u);
    atomicCAS_system(counter + 1, 0u, 7u);  // only the first thread finds 0
    atomicExch_block(counter + 2, 5u);
    smallest[threadIdx.x] = ullmin(static_cast<unsigned long long>(umin(static_cast<unsigned>(v), 500u)),
                                   static_cast<unsigned long long>(llmax(static_cast<long long>(v), 100ll)));
}
"""


@pytest.fixture(scope="module")
def features():
    """FEATURES built once (the session's build cache, tests/conftest.py), plain mode."""
    module = RawModule(code=FEATURES, check=False)
    module.compile()
    return module


def test_vector_types_and_dim3(features):
    x = np.arange(32, dtype=np.float32)
    out = np.full(32, np.nan, dtype=np.float32)
    shape = np.zeros(4, dtype=np.uint32)
    features.get_function("vectors")((2,), (4,), (x, out, shape))
    v = x.reshape(-1, 4)
    np.testing.assert_array_equal(out.reshape(-1, 4), np.stack([v[:, 3], 2 * v[:, 2], v[:, 1], v[:, 0] + 1], 1))
    assert shape.tolist() == [11, 78, 3, 4]


def test_min_and_max_take_the_common_type(features):
    out = np.zeros(4, dtype=np.int64)
    fout = np.full(2, np.nan, dtype=np.float32)
    features.get_function("minmax")((1,), (1,), (out, fout))
    assert out.tolist() == [2, 2, -5, 9] and fout.tolist() == [1.5, 3.0]


@pytest.mark.parametrize("call", ["min(-5LL, 3)", "max(1.5f, 2)", "min(7u, 9ull)"])
def test_a_min_or_max_that_cuda_finds_ambiguous_does_not_build(call):
    # CUDA declares min and max for each integer width with itself and its unsigned twin, and for float
    # and double: NVRTC refuses min(-5LL, 3) as ambiguous (seen on an H100), and so does the runner now
    # (a template of the common type took it)
    code = f'extern "C" __global__ void k(double* out) {{ out[0] = {call}; }}\n'
    with pytest.raises(KernelBuildError, match=r"call of overloaded .m(in|ax)\(.*\). is ambiguous"):
        RawModule(code=code).get_function("k")


def test_fast_math_and_bit_intrinsics_match_numpy(features):
    n = 37
    x = np.linspace(0.25, 4.0, n, dtype=np.float32)
    out = np.full(6 * n, np.nan, dtype=np.float32)
    bits = np.full(6 * n, -7, dtype=np.int32)
    features.get_function("intrinsics")((2,), (32,), (x, out, bits, n))
    x64 = x.astype(np.float64)
    expected = [np.exp(x64), np.log(x64), 1 / np.sqrt(x64), np.clip(x64 - 1, 0, 1), 1 / x64, x64 ** 1.5]
    for row, reference in zip(out.reshape(6, n), expected):
        # float32 results of libm: within a few units of float32's 6e-8 of the float64 value
        assert np.linalg.norm(row - reference) / np.linalg.norm(reference) < 1e-6
    i = np.arange(n, dtype=np.uint64)
    hashed = (i * 2654435761) % 2**32
    brev = [int(f"{k:032b}"[::-1], 2) for k in range(n)]
    expected_bits = [x.view(np.int32), [bin(h).count("1") for h in hashed],
                     [32 - k.bit_length() for k in range(n)], [(k & -k).bit_length() for k in range(n)],
                     np.array(brev, dtype=np.uint32).view(np.int32), ((0xFFFFFFFF * i) >> 32).astype(np.int32)]
    for row, reference in zip(bits.reshape(6, n), expected_bits):
        np.testing.assert_array_equal(row, np.asarray(reference, dtype=np.int32))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_counting_barriers_count_the_block(check):
    # In the checking mode the threads run in shuffled orders: the totals must not depend on it.
    kernel = RawModule(code=FEATURES, check=check).get_function("votes")
    out = np.full(9, -1, dtype=np.int32)
    kernel((2,), (64,), (out, np.int32(3)))
    expected = [22, 0, 0,  22, 1, 0,  22, 0, 1]  # 22 of 64 threads have threadIdx.x % 3 == 0
    assert out.tolist() == expected


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_named_barrier_of_the_whole_block_is_a_barrier_and_one_of_part_of_it_is_refused(check):
    """nvFuser's block_sync_default.cu waits at `__barrier_sync(0)` (CUDA declares it for NVRTC):
    "'__barrier_sync' was not declared" stopped every nvFuser kernel. A named barrier of the whole
    block is __syncthreads(); one of part of the block ends the launch, naming it."""
    code = r"""
    extern "C" __global__ void mirror(int* out, int count)
    {
        __shared__ int s[64];
        s[threadIdx.x] = threadIdx.x;
        if (count) __barrier_sync_count(1, count); else __barrier_sync(0);
        out[threadIdx.x] = s[63 - threadIdx.x];
    }
    """
    kernel = RawModule(code=code, check=check).get_function("mirror")
    for count in (0, 64):
        out = np.full(64, -1, np.int32)
        kernel((1,), (64,), (out, np.int32(count)))
        assert out.tolist() == list(range(63, -1, -1))
    with pytest.raises(KernelError, match=r"mirror: __barrier_sync_count\(1, 32\) in thread .* the CPU runner does not "
                                          r"support a named barrier of part of a block \(64 threads\)"):
        kernel((1,), (64,), (np.zeros(64, np.int32), np.int32(32)))


def test_device_printf_is_written_by_the_end_of_the_launch(features, capfd):
    capfd.readouterr()
    features.get_function("hello")((3,), (4,), (np.int32(3),))
    assert capfd.readouterr().out.splitlines() == ["block 0 of 3", "block 1 of 3", "block 2 of 3"]


def test_the_clock_grows_and_a_failed_assert_is_a_kernel_error(features):
    kernel = features.get_function("clock_and_assert")
    ticks = np.full(8, -1, dtype=np.int64)
    kernel((1,), (8,), (ticks, np.int32(8)))  # every thread passes its assert
    assert (ticks >= 0).all() and ticks.max() > 0
    with pytest.raises(KernelError, match=r"clock_and_assert: assertion `static_cast<int>\(threadIdx.x\) < limit` "
                                          r"failed \(.*:\d+, in .*\) in thread \(5, 0, 0\) of block \(0, 0, 0\)"):
        kernel((1,), (8,), (ticks, np.int32(5)))
    kernel((1,), (8,), (ticks, np.int32(8)))  # the process and the module go on


@pytest.mark.parametrize("call, what", [
    ("__isGlobal(&v)", "__isGlobal (address space queries)"),
    ("__isShared(&v)", "__isShared (address space queries)"),
    ("tex2D<float>(texture, 0.5f, 0.5f)", "tex2D (textures and surfaces)"),
    ("(tex1Dfetch(&v, texture, 3), v)", "tex1Dfetch (textures and surfaces)"),
    ("(surf2Dwrite(v, surface, 0, 0), v)", "surf2Dwrite (textures and surfaces)"),
])
def test_what_the_runner_cannot_run_stops_the_build_naming_it(call, what):
    code = ('extern "C" __global__ void uses(float* out, cudaTextureObject_t texture, cudaSurfaceObject_t surface)'
            f"\n{{\n    float v = out[0];\n    out[1] = {call};\n}}\n")
    with pytest.raises(KernelBuildError) as raised:
        RawModule(code=code).get_function("uses")
    message = str(raised.value)
    assert f"the CPU runner does not support {what}" in message
    assert "(RawModule code):4" in message  # the line of the call


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_integer_atomics_match_numpy(check):
    kernel = RawModule(code=FEATURES, check=check).get_function("integer_atomics")
    n = 100
    x = np.random.default_rng(1).integers(0, 1000, n).astype(np.int32)
    histogram = np.zeros(8, np.int32)
    extremes = np.array([-1, 10**6, 0, 0], np.int32)
    counters = np.zeros(4, np.uint32)
    big = np.array([0, 5], np.uint64)
    kernel((4,), (32,), (x, np.int32(n), histogram, extremes, counters, big))
    np.testing.assert_array_equal(histogram, np.bincount(x % 8, minlength=8))
    assert extremes.tolist() == [x.max(), x.min(), -n, n]
    expected_xor = 0
    for i in range(n):
        expected_xor ^= i
    assert counters.tolist() == [n % 5, (6 - (n - 1) % 7) % 7, 0xFFFFFFFF, expected_xor]
    assert big.tolist() == [n << 40, 99]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_atomics_sum_columns_and_pass_the_checking_mode(dtype):
    # The two thread orders of the checking mode add in different orders: within rounding, not a race.
    name = f"column_sums<{'float' if dtype == np.float32 else 'double'}>"
    kernel = RawModule(code=FEATURES, name_expressions=(name,), check=True).get_function(name)
    rows, cols = 300, 7
    x = np.random.default_rng(2).standard_normal((rows, cols)).astype(dtype)
    sums = np.zeros(cols, dtype)
    kernel(((rows * cols + 127) // 128,), (128,), (x, sums, np.int32(rows), np.int32(cols)))
    reference = x.astype(np.float64).sum(axis=0)
    error = np.linalg.norm(sums - reference) / np.linalg.norm(reference)
    assert error < (1e-5 if dtype == np.float32 else 1e-13), error  # measured 2.1e-7 and 3.9e-16


def test_a_race_is_still_reported_when_a_kernel_uses_float_atomics():
    # also where the mirrored run's atomicAdds land on its 0x7F fill (3.4e38): that magnitude is the
    # fill's, and allowing rounding by it hid this race in the first version of that fill
    kernel = RawModule(code=FEATURES, check=True).get_function("racy_total")
    out = np.zeros(1, np.float32)
    with pytest.raises(KernelError, match=r"racy_total: the result depends on the order .* beyond what the order "
                                          r"of its atomics rounds"):
        kernel((1,), (64,), (np.ones(64, np.float32), out))


def test_constant_and_device_variables_are_read_and_written_through_get_global(features):
    coefficients = features.get_global("coefficients")
    assert coefficients.dtype == np.uint8 and coefficients.size == 12
    coefficients[:] = np.array([1.0, -2.0, 0.5], np.float32).view(np.uint8)
    counter = features.get_global("threads_run").view(np.int32)
    counter[0] = 0
    x = np.linspace(-3, 3, 50, dtype=np.float32)
    out = np.full(50, np.nan, np.float32)
    features.get_function("polynomial")((2,), (32,), (x, out, np.int32(50)))
    np.testing.assert_allclose(out, 1 - 2 * x + 0.5 * x * x, rtol=1e-6, atol=1e-6)
    assert counter[0] == 50
    with pytest.raises(LookupError, match="no __device__ or __constant__ variable 'missing'"):
        features.get_global("missing")


def test_extern_shared_memory_is_sized_by_shared_mem():
    module = RawModule(code=FEATURES, name_expressions=("reverse_bytes<double>", "reverse_any_order<float>"),
                       check=False)
    x = np.arange(96, dtype=np.float32)
    out = np.full(96, np.nan, np.float32)
    module.get_function("reverse_blocks")((3,), (32,), (x, out, np.int32(0)), shared_mem=32 * 4)
    np.testing.assert_array_equal(out, x.reshape(3, 32)[:, ::-1].reshape(-1))
    xd = np.arange(64, dtype=np.float64)
    outd = np.full(64, np.nan)
    module.get_function("reverse_bytes<double>")((2,), (32,), (xd, outd), shared_mem=32 * 8)
    np.testing.assert_array_equal(outd, xd.reshape(2, 32)[:, ::-1].reshape(-1))
    # `extern T __shared__ name[]` and `__shared__ extern ...` too, on the lines where they are written
    xf = np.arange(32, dtype=np.float32)
    outf, lines = np.full(32, np.nan, np.float32), np.zeros(32, np.int32)
    module.get_function("reverse_any_order<float>")((1,), (32,), (xf, outf, lines), shared_mem=32 * 4)
    np.testing.assert_array_equal(outf, xf[::-1])
    assert set(lines.tolist()) == {FEATURES[:FEATURES.index("? __LINE__")].count("\n") + 1}
    # a GPU's limit: 48 KiB unless the kernel's attribute raises it
    kernel = module.get_function("reverse_blocks")
    with pytest.raises(ValueError, match=r"shared_mem=65536 bytes is more than a block may have \(49152"):
        kernel((3,), (32,), (x, out, np.int32(0)), shared_mem=64 * 1024)
    kernel.max_dynamic_shared_size_bytes = 100 * 1024
    kernel((3,), (32,), (x, out, np.int32(0)), shared_mem=64 * 1024)


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_extern_shared_memory_declared_by_a_macro_that_leaves_the_semicolon_to_its_use(check):
    """TensorFlow's GPU_DYNAMIC_SHARED_MEM_DECL(ALIGN, TYPE, NAME): `extern __shared__ __align__(ALIGN)
    TYPE NAME[]`, its `;` at the use; the rewrite looked for the declaration's `;` in the macro and
    left it as written, and the build stopped on "conflicting specifiers"."""
    code = r"""
#define GPU_DYNAMIC_SHARED_MEM_DECL(ALIGN, TYPE, NAME) \
    extern __shared__ __align__(ALIGN) TYPE NAME[]
extern "C" __global__ void rotate(float* out)
{
    GPU_DYNAMIC_SHARED_MEM_DECL(16, unsigned char, raw);
    float* f = reinterpret_cast<float*>(raw);
    f[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = f[(threadIdx.x + 1) % blockDim.x];
}
"""
    out = np.full(4, np.nan, np.float32)
    RawModule(code=code, check=check).get_function("rotate")((1,), (4,), (out,), shared_mem=16)
    assert out.tolist() == [1, 2, 3, 0]


STATIC_BESIDE_DYNAMIC = r"""
// FastFold's softmax: a kernel's own __shared__ array beside its extern __shared__ memory, which share
// a block's 48 KiB on a GPU (templated too, as name expressions and mangled names find it)
template <int N> __global__ void beside(float* out)
{
    __shared__ float own[N];
    extern __shared__ float dynamic[];
    own[threadIdx.x] = threadIdx.x;
    dynamic[threadIdx.x] = 2.0f * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = own[threadIdx.x] + dynamic[threadIdx.x];
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_kernels_static_shared_arrays_count_against_the_limit_of_its_dynamic_shared_memory(check):
    # a launch a GPU refuses (CUDA_ERROR_INVALID_VALUE) ran until 2026-11-27: only shared_mem was counted
    kernel = RawModule(code=STATIC_BESIDE_DYNAMIC, name_expressions=("beside<1024>",), check=check).get_function(
        "beside<1024>")
    out = np.full(32, np.nan, np.float32)
    kernel((1,), (32,), (out,), shared_mem=48 * 1024 - 4096)  # 4096 + 45056: exactly 48 KiB
    np.testing.assert_array_equal(out, 3 * np.arange(32))
    with pytest.raises(ValueError, match=r"beside<1024>: shared_mem=45060 bytes and the kernel's 4096 bytes of static "
                                         r"__shared__ arrays are more than a block may have together \(49152; set "
                                         r"max_dynamic_shared_size_bytes"):
        kernel((1,), (32,), (out,), shared_mem=48 * 1024 - 4092)
    kernel.max_dynamic_shared_size_bytes = 100 * 1024  # raised: the two together up to sm_90's 227 KiB
    kernel((1,), (32,), (out,), shared_mem=48 * 1024)
    kernel.max_dynamic_shared_size_bytes = 227 * 1024
    with pytest.raises(ValueError, match=r"the kernel's 4096 bytes of static __shared__ arrays are more than a block "
                                         r"may have together \(232448, sm_90's most\)"):
        kernel((1,), (32,), (out,), shared_mem=227 * 1024)

def test_an_unwritten_element_of_dynamic_shared_memory_is_caught_in_the_checking_mode():
    kernel = RawModule(code=FEATURES, check=True).get_function("reverse_blocks")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    kernel((2,), (32,), (x, out, np.int32(0)), shared_mem=32 * 4)  # every element written: clean
    # out[0] of each block reads the tile's unwritten last element: NaN, from NaN-free inputs
    with pytest.raises(KernelError, match=r"2 element\(s\) of args\[1\] hold NaN after the first of its two runs \(first at index "
                                          r"\(0,\)\) though no input did: the kernel read extern "
                                          r"__shared__ memory \(within its shared_mem = 128 bytes, or past "
                                          r"them\) where no thread"):
        kernel((2,), (32,), (x, out, np.int32(1)), shared_mem=32 * 4)


READ_PAST_SHARED_MEM = r"""
extern "C" __global__ void copy_through_shared(const float* x, float* out, int written)
{
    extern __shared__ float tile[];
    if (threadIdx.x < written) {
        tile[threadIdx.x] = x[threadIdx.x];
    }
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x];
}
"""


@pytest.mark.parametrize("shared_mem", [16 * 4, 0])  # too small, and forgotten
def test_a_write_past_the_launchs_shared_mem_is_named_in_the_checking_mode(shared_mem):
    # compute-sanitizer's "invalid __shared__ write": here the rest of the region is a guard
    kernel = RawModule(code=FEATURES, check=True).get_function("reverse_blocks")
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    message = (rf"reverse_blocks: a write past the end of its extern __shared__ memory: the launch gave shared_mem = "
               rf"{shared_mem} bytes, and bytes {shared_mem} to 127 of the block's shared memory were written; "
               r"thread \((\d+), 0, 0\) of block \(0, 0, 0\) wrote bytes (\d+) to (\d+) ")
    with pytest.raises(KernelError, match=message) as caught:
        kernel((1,), (32,), (x, out, np.int32(0)), shared_mem=shared_mem)
    # the threads run in a shuffled order: whichever wrote first past the end, its own element
    thread, first, last = map(int, re.search(message, str(caught.value)).groups())
    assert shared_mem // 4 <= thread < 32 and (first, last) == (4 * thread, 4 * thread + 3)
    kernel((1,), (32,), (x, out, np.int32(0)), shared_mem=32 * 4)  # the bytes it uses: clean
    np.testing.assert_array_equal(out, x[::-1])


def test_a_write_of_zeros_past_the_launchs_shared_mem_is_named_as_that_write_alone():
    # HOOMD's FIRE partial sums store zeros into a tile larger than shared_mem: the report added that it
    # "follows a read of extern __shared__ memory where no thread of the block had written it" until
    # 2026-11-27 (with zeros there the write no longer showed, which was taken for a read of the fill)
    code = r"""
extern "C" __global__ void zeros(float* out)
{
    extern __shared__ float partial[];
    partial[threadIdx.x] = 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = partial[0];
}
"""
    with pytest.raises(KernelError, match=r"zeros: a write past the end of its extern __shared__ memory") as caught:
        RawModule(code=code, check=True).get_function("zeros")((1,), (64,), (np.ones(1, np.float32),),
                                                                 shared_mem=32 * 4)
    assert "no thread of the block had written" not in str(caught.value)

@pytest.mark.parametrize("shared_mem", [0, 8])
def test_a_read_past_the_launchs_shared_mem_is_named_as_a_read_of_extern_shared_memory(shared_mem):
    # launched without the bytes it reads (onnxruntime's softmax): with shared_mem = 0 it was reported
    # as a race between threads until 2026-11-27
    code = r"""
extern "C" __global__ void read_past(unsigned* y)
{
    extern __shared__ unsigned s[];
    y[threadIdx.x] = s[threadIdx.x];
}
"""
    with pytest.raises(KernelError, match=rf"read_past: the result depends on what __shared__ memory held before the "
                                          rf"launch: .* the kernel read extern __shared__ memory \(within its "
                                          rf"shared_mem = {shared_mem} bytes, or past them\) where no thread"):
        RawModule(code=code, check=True).get_function("read_past")((1,), (4,), (np.zeros(4, np.uint32),),
                                                                   shared_mem=shared_mem)

def test_an_atomic_past_the_launchs_shared_mem_is_named_even_when_it_keeps_the_bytes():
    # an atomicOr into the guard's all-ones bytes changes none of them: it was reported as a read of
    # memory no thread wrote, naming no thread (found while running Rodinia through the runner)
    code = r"""
extern "C" __global__ void flags(unsigned* out, unsigned bits)
{
    extern __shared__ unsigned words[];
    words[threadIdx.x] = 0;
    __syncthreads();
    if (threadIdx.x == 5) atomicOr(&words[blockDim.x], bits);
    __syncthreads();
    out[threadIdx.x] = words[threadIdx.x];
}
"""
    kernel = RawModule(code=code, check=True).get_function("flags")
    for bits in (0xFFFFFFFF, 0):  # it keeps the bytes; it writes none
        with pytest.raises(KernelError, match=r"^flags: an atomic operation past the end of its extern __shared__ "
                                              r"memory: the launch gave shared_mem = 256 bytes, and thread "
                                              r"\(5, 0, 0\) of block \(0, 0, 0\) made one at byte 256 of the "
                                              r"block's shared memory"):
            kernel((1,), (64,), (np.zeros(64, np.uint32), np.uint32(bits)), shared_mem=256)
    out = np.full(64, 7, np.uint32)
    kernel((1,), (64,), (out, np.uint32(1)), shared_mem=260)  # the bytes it uses: clean
    assert out.tolist() == [0] * 64


PAST_THE_END_IN_ONE_BLOCK = r"""
// Block `block` of the grid, thread `thread` of it, writes `offset` floats past the tile of
// blockDim.x floats; every other thread writes its own element only.
extern "C" __global__ void one_stray_write(float* out, int block, int thread, int offset)
{
    extern __shared__ float tile[];
    tile[threadIdx.x] = threadIdx.x;
    if (blockIdx.x == block && threadIdx.x == thread) {
        tile[blockDim.x + offset] = 1.0f;
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
"""


def test_a_write_past_the_end_names_its_thread_and_block_among_resident_blocks():
    # 8 blocks, up to 4 of them resident and taking turns in the checking mode
    kernel = RawModule(code=PAST_THE_END_IN_ONE_BLOCK, check=True).get_function("one_stray_write")
    out = np.zeros(8 * 32, np.float32)
    with pytest.raises(KernelError, match=r"bytes 128 to 131 of the block's shared memory were written; "
                                          r"thread \(5, 0, 0\) of block \(6, 0, 0\) wrote bytes 128 to 131 "):
        kernel((8,), (32,), (out, np.int32(6), np.int32(5), np.int32(0)), shared_mem=32 * 4)
    # beyond the watched bytes the write is still found when the launch ends, without its thread
    with pytest.raises(KernelError, match=r"bytes 4128 to 4131 of the block's shared memory were written "
                                          r"\(compute-sanitizer") as far:
        kernel((8,), (32,), (out, np.int32(6), np.int32(5), np.int32(1000)), shared_mem=32 * 4)
    assert "wrote bytes" not in str(far.value)
    kernel((8,), (32,), (out, np.int32(-1), np.int32(0), np.int32(0)), shared_mem=32 * 4)
    np.testing.assert_array_equal(out, np.tile(np.arange(32, dtype=np.float32)[::-1], 8))


def test_a_read_past_the_launchs_shared_mem_is_named_in_the_checking_mode():
    kernel = RawModule(code=READ_PAST_SHARED_MEM, check=True).get_function("copy_through_shared")
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    kernel((1,), (32,), (x, out, np.int32(32)), shared_mem=32 * 4)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(KernelError, match=r"16 element\(s\) of args\[1\] hold NaN .* the kernel read extern __shared__ "
                                          r"memory \(within its shared_mem = 64 bytes, or past them\)"):
        kernel((1,), (32,), (x, out, np.int32(16)), shared_mem=16 * 4)



def test_scoped_atomics_and_the_integer_min_and_max(features):
    x = np.random.default_rng(5).integers(0, 1000, 64).astype(np.int32)
    extremes = np.array([-1, 10**6], np.int32)
    counter = np.zeros(3, np.uint32)
    smallest = np.zeros(64, np.uint64)
    features.get_function("scoped_atomics_and_integer_min")((1,), (64,), (x, extremes, counter, smallest))
    assert extremes.tolist() == [x.max(), x.min()]
    assert counter.tolist() == [64, 7, 5]
    assert smallest.tolist() == np.minimum(np.minimum(x, 500), np.maximum(x, 100)).tolist()


LONG_LONG_BITS = r"""
// sm_32_atomic_functions.h's bitwise atomics of long long, and their scoped forms (cudf's
// device_atomics.cuh, in MinkowskiEngine, casts 8-byte values to long long* for them)
extern "C" __global__ void long_long_bits(long long* out)
{
    const long long bit = 1ll << (40 + threadIdx.x);
    atomicOr(&out[0], bit);
    atomicAnd(&out[1], ~bit);
    atomicXor(&out[2], bit);
    atomicOr_block(&out[3], bit);
    atomicXor_system(&out[4], bit | 1);
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_bitwise_atomics_of_long_long_build_and_match_numpy(check):
    # they stopped the build ("invalid conversion from 'long long int*'") until 2026-11-27
    out = np.array([0, -1, 0, 5, 0], np.int64)
    RawModule(code=LONG_LONG_BITS, check=check).get_function("long_long_bits")((1,), (3,), (out,))
    bits = (1 << 40) | (1 << 41) | (1 << 42)
    assert out.tolist() == [bits, ~bits, bits, bits | 5, bits | 1]


def test_mma_h_stops_the_build_where_a_kernel_uses_it_not_where_it_is_included():
    # bitsandbytes includes <mma.h> in every kernel file, and most of its kernels use none of it: the
    # #include stopped the build until 2026-11-28
    code = '#include <mma.h>\nextern "C" __global__ void uses(float* out) { out[0] = 1.0f; }\n'
    out = np.zeros(1, np.float32)
    RawModule(code=code).get_function("uses")((1,), (1,), (out,))
    assert out[0] == 1.0
    code += ('template <typename T> __global__ void wmma_fill(T* out)\n{\n'
             '    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, T> c;\n}\n')
    RawModule(code=code).get_function("uses")  # a template no one instantiates: as a GPU's build leaves it out
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):5: the CPU runner does not support tensor core "
                                               r"matrix operations \(nvcuda::wmma; mma.h\)$"):
        RawModule(code=code, name_expressions=("wmma_fill<float>",)).get_function("wmma_fill<float>")


def test_headers_macros_and_qualifiers_that_a_gpu_build_takes_compile():
    # __CUDACC__ and __CUDA_ARCH__ (sm_80) are defined, as for device code (helper_math.h of
    # cuda-samples adds host fallbacks without __CUDACC__); assert needs no #include, as with NVRTC
    code = r"""
    #include <cuda_runtime.h>
    #include <cuda_runtime_api.h>
    #include <vector_types.h>
    #include <device_launch_parameters.h>
    #include <math_constants.h>
    #if !defined(__CUDACC__) || __CUDA_ARCH__ < 800
    #error "device code sees __CUDACC__ and an __CUDA_ARCH__ of at least 800"
    #endif
    extern "C" __global__ void constants(float* out, const __grid_constant__ int n)
    {
        assert(n <= 4);
        if (threadIdx.x < n) {
            out[threadIdx.x] = CUDART_PI_F * threadIdx.x + static_cast<float>(CUDART_SQRT_TWO);
        }
    }
    #if __CUDA_ARCH__ >= 800  // the kernel scan sees the device branches too
    extern "C" __global__ void sm80(float* out) { out[0] = __CUDA_ARCH__; }
    #endif
    """
    module = RawModule(code=code)
    out = np.zeros(4, np.float32)
    module.get_function("constants")((1,), (4,), (out, np.int32(4)))
    np.testing.assert_allclose(out, np.pi * np.arange(4) + np.sqrt(2), rtol=1e-6)
    module.get_function("sm80")((1,), (1,), (out,))
    assert out[0] == 800
    with pytest.raises(KernelError, match=r"assertion `n <= 4` failed"):
        module.get_function("constants")((1,), (4,), (out, np.int32(5)))


def test_a_kernel_launch_in_the_code_is_named(tmp_path):
    code = ('__global__ void child(float* out) { out[0] = 1.0f; }\n'
            'extern "C" __global__ void parent(float* out)\n{\n    child<<<1, 1>>>(out);\n}\n')
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):4: a kernel launch, kernel<<<\.\.\.>>>\(\.\.\.\): the "
                                               r"CPU runner does not support one in device code \(dynamic parallelism\)"):
        RawModule(code=code).get_function("parent")


def test_what_a_compiler_message_means_for_cuda_is_added_to_it(tmp_path):
    (tmp_path / "shared_memory.cuh").write_text(
        "template <typename T>\n__device__ T* dynamic_tile()\n{\n    extern __shared__ T tile[];\n    return tile;\n}\n")
    # through #include <...> of a -I folder it is rewritten as the code is (ArrayFire's <shared.hpp>,
    # refused until 2026-11-27), as a quoted include's header is (test_cuda_cpu_raw_module.py)
    code = ('#include <shared_memory.cuh>\nextern "C" __global__ void k(float* out) '
            '{ dynamic_tile<float>()[threadIdx.x] = 2.0f * threadIdx.x; __syncthreads(); out[threadIdx.x] = '
            'dynamic_tile<float>()[3 - threadIdx.x]; }\n')
    out = np.full(4, np.nan, np.float32)
    RawModule(code=code, options=(f"-I{tmp_path}",)).get_function("k")((1,), (4,), (out,), shared_mem=16)
    assert out.tolist() == [6.0, 4.0, 2.0, 0.0]
    # through a macro, it is read as it is, and the message says why it fails
    code = code.replace("#include <shared_memory.cuh>", "#define TILE_HEADER <shared_memory.cuh>\n#include TILE_HEADER")
    with pytest.raises(KernelBuildError, match=r"an `extern __shared__` or `static __shared__` array declared in an "
                                               r"included header"):
        RawModule(code=code, options=(f"-I{tmp_path}",)).get_function("k")
    ptx = 'extern "C" __global__ void k(unsigned* out)\n{\n    unsigned lane;\n' \
          '    asm volatile("mov.u32 %0, %%smid;" : "=r"(lane));\n    out[0] = lane;\n}\n'
    with pytest.raises(KernelBuildError, match=r"inline PTX assembly, asm\("):
        RawModule(code=ptx).get_function("k")
    # code for NVRTC that declares the standard library's pieces itself (tiny-cuda-nn's ministd.h)
    # collides with the host's: GCC's message alone did not say why
    for own in ("using int8_t = char;", "namespace std { template <typename T> struct remove_const { using type = T; }; }"):
        with pytest.raises(KernelBuildError, match=r"\(the code declares a piece of the C or C\+\+ standard library "
                                                   r"itself, .* the CPU runner cannot build such code\)$"):
            RawModule(code=own + '\nextern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n').get_function("k")


OPTIONAL_AND_TRAP = r"""
// out[i] = x[i] + (bias ? bias[i] : 0): an optional input, NULL when absent (llm.c's launchers pass
// NULL for the bias they do not have).
extern "C" __global__ void add_optional(float* out, const float* x, const float* bias, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + (bias != nullptr ? bias[i] : 0.0f);
    }
}

// The same without the test: NULL dereferenced when bias is absent.
extern "C" __global__ void add_required(float* out, const float* x, const float* bias, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + bias[i];
    }
}

// A kernel's guard against a size it cannot handle: thread 3 traps when n is negative.
extern "C" __global__ void guarded(float* out, int n)
{
    if (n < 0 && threadIdx.x == 3) {
        __trap();
    }
    out[threadIdx.x] = n;
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_none_is_a_null_pointer_as_cupy_passes_it(check):
    module = RawModule(code=OPTIONAL_AND_TRAP, check=check)
    x, bias = np.arange(40, dtype=np.float32), np.full(40, 0.5, np.float32)
    out = np.full(40, np.nan, np.float32)
    module.get_function("add_optional")((2,), (32,), (out, x, None, np.int32(40)))
    np.testing.assert_array_equal(out, x)
    module.get_function("add_optional")((2,), (32,), (out, x, bias, np.int32(40)))
    np.testing.assert_array_equal(out, x + 0.5)
    with pytest.raises(KernelError, match=r"add_required: an invalid memory access"
                                          + (r" at address 0x[0-9a-f]+, through a null pointer" if check else "")):
        module.get_function("add_required")((2,), (32,), (out, x, None, np.int32(40)))
    with pytest.raises(TypeError, match=r"argument 3 \(int\) takes a numpy.int32 or a Python int, got a Python NoneType"):
        module.get_function("add_optional")((2,), (32,), (out, x, None, None))


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_trap_ends_the_launch_naming_its_thread_and_line(check):
    kernel = RawModule(code=OPTIONAL_AND_TRAP, check=check).get_function("guarded")
    out = np.zeros(8, np.float32)
    kernel((1,), (8,), (out, np.int32(2)))
    np.testing.assert_array_equal(out, 2)
    line = OPTIONAL_AND_TRAP.splitlines().index("        __trap();") + 1
    with pytest.raises(KernelError, match=rf"guarded: __trap\(\) \(\(RawModule code\):{line}\) in thread \(3, 0, 0\) "
                                          r"of block \(0, 0, 0\)"):
        kernel((1,), (8,), (out, np.int32(-1)))


def test_a_missing_closing_brace_is_named_first_not_buried_under_the_instance_tables_errors():
    code = 'extern "C" __global__ void k(float* out, int n)\n{\n    if (threadIdx.x < n) {\n        out[0] = 1.0f;\n}\n'
    with pytest.raises(KernelBuildError) as raised:
        RawModule(code=code).get_function("k")
    first_line = str(raised.value).splitlines()[0]
    assert first_line.startswith("the RawModule code does not compile for the CPU: a `}` is missing (the brace "
                                 "opened at (RawModule code):2, or one inside it, is never closed)"), first_line


def test_a_kernel_header_left_unfinished_is_named_first_not_buried_under_the_instance_tables_errors():
    # code that ends inside a parenthesis: the instance table is compiled as the rest of a parameter list
    with pytest.raises(KernelBuildError) as raised:
        RawModule(code='extern "C" __global__ void k(float* out,\n            int n').get_function("k")
    first_line = str(raised.value).splitlines()[0]
    assert first_line.startswith("the RawModule code does not compile for the CPU: a `)` is missing (the "
                                 "parenthesis opened at (RawModule code):1 is never closed)"), first_line



@pytest.mark.parametrize("cut", ["__device__ int table[] = {1,\n", "void launcher(\n"],
                         ids=["initializer", "parameters"])
def test_code_cut_inside_an_initializer_or_a_parameter_list_names_that_not_the_runners_table(cut):
    # LeetCUDA's files, cut in a launcher or a table: no first line for an initializer's brace, and a last
    # line that blamed name_expressions (none given) for `nn_cuda_cpu_instances`, a name of the runner's
    code = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n' + cut
    with pytest.raises(KernelBuildError) as raised:
        RawModule(code=code).get_function("k")
    message = str(raised.value)
    missing = "a `}` is missing (the brace" if cut.endswith("{1,\n") else "a `)` is missing (the parenthesis"
    assert message.splitlines()[0].startswith(f"the RawModule code does not compile for the CPU: {missing} opened "
                                              "at (RawModule code):2"), message
    assert "name_expressions" not in message, message

DIRECTED = r"""
// Row r of out, for mode m = r / 7 (to nearest, toward zero, down, up) and operation r % 7: a + b,
// a - b, a * b, a / b, 1 / a, sqrt |a|, fma(a, b, c), in the precision T (interval arithmetic's
// building blocks, as cuda-samples' interval sample uses them). ADD ... FMA name the precision's
// intrinsics (__fadd or __dadd, ...); the mode's suffix is pasted on.
#define ROWS(m, mode, ADD, SUB, MUL, DIV, RCP, SQRT, FMA)                                          \
    out[(m * 7 + 0) * n + i] = ADD##_##mode(x, y); out[(m * 7 + 1) * n + i] = SUB##_##mode(x, y); \
    out[(m * 7 + 2) * n + i] = MUL##_##mode(x, y); out[(m * 7 + 3) * n + i] = DIV##_##mode(x, y); \
    out[(m * 7 + 4) * n + i] = RCP##_##mode(x); out[(m * 7 + 5) * n + i] = SQRT##_##mode(w);     \
    out[(m * 7 + 6) * n + i] = FMA##_##mode(x, y, z);
#define DIRECTED_KERNEL(name, T, ...)                                                              \
    extern "C" __global__ void name(const T* a, const T* b, const T* c, T* out, int n)             \
    {                                                                                              \
        const int i = blockIdx.x * blockDim.x + threadIdx.x;                                       \
        if (i >= n) return;                                                                        \
        const T x = a[i], y = b[i], z = c[i], w = a[i] < 0 ? -a[i] : a[i];                        \
        ROWS(0, rn, __VA_ARGS__) ROWS(1, rz, __VA_ARGS__) ROWS(2, rd, __VA_ARGS__) ROWS(3, ru, __VA_ARGS__) \
    }
DIRECTED_KERNEL(directed_float, float, __fadd, __fsub, __fmul, __fdiv, __frcp, __fsqrt, __fmaf)
DIRECTED_KERNEL(directed_double, double, __dadd, __dsub, __dmul, __ddiv, __drcp, __dsqrt, __fma)
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_directed_rounding_intrinsics_bracket_the_exact_result(dtype):
    from fractions import Fraction

    rng = np.random.default_rng(4)
    n = 200
    a, b, c = ((rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype) for _ in range(3))
    a[:4], b[:4] = [1, 3, 0.5, 2], [3, 1, 0.25, 2]  # exact results among them: every mode agrees
    out = np.full(4 * 7 * n, np.nan, dtype)
    name = "directed_float" if dtype == np.float32 else "directed_double"
    RawModule(code=DIRECTED).get_function(name)((2,), (128,), (a, b, c, out, np.int32(n)))
    nearest, toward_zero, down, up = out.reshape(4, 7, n)
    exact = [lambda x, y, z: x + y, lambda x, y, z: x - y, lambda x, y, z: x * y, lambda x, y, z: x / y,
             lambda x, y, z: 1 / x, None, lambda x, y, z: x * y + z]
    for k in range(7):
        for i in range(n):
            lo, hi, zero, near = (Fraction(float(v[k, i])) for v in (down, up, toward_zero, nearest))
            if k == 5:  # sqrt |a|: lo^2 <= |a| <= hi^2
                value = abs(Fraction(float(a[i])))
                assert lo * lo <= value <= hi * hi, (k, i)
                inside = lo * lo == value
            else:
                value = exact[k](Fraction(float(a[i])), Fraction(float(b[i])), Fraction(float(c[i])))
                assert lo <= value <= hi, (k, i)
                inside = lo == value
            # the two neighbours of an inexact result, or the result itself
            assert hi == lo if inside else float(hi) == np.nextafter(dtype(float(lo)), dtype(np.inf)), (k, i)
            assert zero == (lo if value >= 0 else hi), (k, i)
            assert near in (lo, hi), (k, i)
