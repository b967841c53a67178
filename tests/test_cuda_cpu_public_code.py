"""RawModule on the CPU with what kernel files written for nvcc or NVRTC commonly hold besides kernels.

Written for these tests, after patterns seen in public CUDA code: a host prototype that names the
runtime API's types in a kernel's header, `#include <cuda.h>` left in a kernel file, text bytes passed
to a `char*`, a pointer to a union, the warp functions of CUDA 8 (without `_sync`), `#pragma once`
in code that is a header's text, an array of structs that hold pointers, and CUB's headers. Two modules are built and shared by the tests
(one per backend), and two builds fail on purpose.
"""

import re

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu import build
from nn_cuda.cuda_cpu.build import KernelBuildError

# Built with backend="nvcc", which takes host declarations and cuda.h as nvcc does. The values are
# CUDA's own (driver_types.h and cuda.h of CUDA 12.9), which code may compare with or store.
NVCC_CODE = r"""
#include <cuda.h>
#include <cuda_runtime.h>

cudaError_t initConstFilter(const float* filter, int radius);   // a host function's prototype
cudaError_t launchBlur(const float* in, float* out, int n, cudaStream_t stream, cudaEvent_t done);

union Bits { unsigned long long word; float halves[2]; };

extern "C" __global__ void runtime_types(long long* out)
{
    const cudaError_t codes[] = {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                                 cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorUnknown};
    for (int i = 0; i < 6; ++i) out[i] = codes[i];
    out[6] = cudaMemcpyDeviceToHost;
    out[7] = sizeof(cudaStream_t) + sizeof(cudaEvent_t);
    CUstream driver_stream = nullptr;
    cudaStream_t runtime_stream = driver_stream;  // the same type, as in CUDA
    out[8] = runtime_stream == nullptr;
    out[9] = CUDA_VERSION;
    out[10] = sizeof(CUdeviceptr);
    out[11] = CUDA_ERROR_LAUNCH_FAILED;
    out[12] = CUDA_SUCCESS;
    out[13] = INT32_MAX;  // cuda.h includes <stdint.h>
}

extern "C" __global__ void count_x(int* count, const char* text, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && text[i] == 'x') atomicAdd(count, 1);
}

extern "C" __global__ void bytes_sum(int* sum, const unsigned char* bytes, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, bytes[i]);
}

extern "C" __global__ void fill_union(Bits* items)
{
    items[threadIdx.x].word = 3ull * threadIdx.x;
}
"""

# Built with backend="nvrtc": NVRTC declares the runtime API's types itself (NVRTC 12.9 built
# cudaError_t, cudaStream_t and cudaMemcpyKind without an include), as nvcc does through the
# cuda_runtime.h it includes in every file, and a function that says __device__ may return one.
NVRTC_CODE = r"""
__device__ cudaError_t check_positive(float v) { return v > 0.0f ? cudaSuccess : cudaErrorInvalidValue; }

extern "C" __global__ void checks(int* out, const float* v, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = check_positive(v[i]);
}
"""


@pytest.fixture(autouse=True)
def plain_mode(monkeypatch):
    monkeypatch.delenv("NN_CUDA_CPU_CHECK", raising=False)


@pytest.fixture(scope="module")
def nvcc_module():
    return RawModule(code=NVCC_CODE, backend="nvcc")


def test_cuda_runtime_h_and_cuda_h_declare_the_api_types_with_cudas_values(nvcc_module):
    out = np.zeros(14, np.int64)
    nvcc_module.get_function("runtime_types")((1,), (1,), (out,))
    assert out.tolist() == [0, 1, 2, 700, 719, 999, 2, 16, 1, 12090, 8, 719, 0, 2**31 - 1]


def test_the_runtime_api_types_build_with_nvrtc_in_device_functions():
    v = np.array([1.5, -2.0, 0.0, 3.0], np.float32)
    out = np.full(4, -1, np.int32)
    RawModule(code=NVRTC_CODE).get_function("checks")((1,), (32,), (out, v, np.int32(4)))
    np.testing.assert_array_equal(out, [0, 1, 1, 0])


def test_nvrtc_refuses_a_host_prototype_and_cuda_h_in_one_line():
    # NVRTC 12.9: "host functions are not allowed in JIT mode" for a prototype without __device__;
    # cuda.h includes <stdlib.h>, which NVRTC has not ("cannot open source file")
    with pytest.raises(KernelBuildError) as refused:
        RawModule(code=NVCC_CODE).get_function("runtime_types")
    assert str(refused.value) == (
        "(RawModule code):2: NVRTC, CuPy's default compiler, cannot compile <cuda.h> (CUDA's driver API header "
        "includes <stdlib.h>, which NVRTC has not): CuPy's build of this code fails on a GPU. Drop the #include "
        "(a kernel needs nothing of it), or build with backend='nvcc', which has it")
    without_cuda_h = NVCC_CODE.replace("#include <cuda.h>", "")
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):5: initConstFilter is a host function \(no "
                                               r"__device__ or __global__\), which NVRTC.*refuses[^\n]*$"):
        RawModule(code=without_cuda_h).get_function("runtime_types")


def test_a_char_pointer_takes_int8_and_uint8_and_other_pointers_stay_strict(nvcc_module):
    count_x, bytes_sum = nvcc_module.get_function("count_x"), nvcc_module.get_function("bytes_sum")
    text = np.frombuffer(b"xoxoxxqx", np.uint8).copy()
    for given in (text, text.view(np.int8)):  # plain char is signed or not as the platform chooses
        count = np.zeros(1, np.int32)
        count_x((1,), (32,), (count, given, np.int32(text.size)))
        assert count[0] == 5
    with pytest.raises(TypeError, match=re.escape("count_x: argument 1 (const char*) takes an array of int8 or "
                                                  "uint8 (plain char is signed or unsigned")):
        count_x((1,), (32,), (np.zeros(1, np.int32), text.view(np.int16), np.int32(4)))
    total = np.zeros(1, np.int32)
    bytes_sum((1,), (32,), (total, text, np.int32(text.size)))
    assert total[0] == int(text.astype(np.int64).sum())
    with pytest.raises(TypeError, match=re.escape("takes an array of uint8, got an array of int8")):
        bytes_sum((1,), (32,), (total, text.view(np.int8), np.int32(text.size)))


def test_a_pointer_to_a_union_takes_any_array_as_a_pointer_to_a_struct_does(nvcc_module):
    items = np.zeros(4, np.uint64)
    nvcc_module.get_function("fill_union")((1,), (4,), (items,))
    np.testing.assert_array_equal(items, 3 * np.arange(4))


def test_a_warp_function_without_sync_stops_the_build_in_one_line():
    # removed for sm_70 and later: NVRTC 12.9 for compute_90 says 'identifier "__shfl_down" is undefined'
    code = r"""
template <typename T>
__device__ T warp_sum(T v)
{
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    return v;
}
extern "C" __global__ void sum(float* x) { x[threadIdx.x] = warp_sum(x[threadIdx.x]); }
"""
    with pytest.raises(KernelBuildError) as refused:
        RawModule(code=code).get_function("sum")
    assert str(refused.value) == (
        "(RawModule code):5: __shfl_down, a warp shuffle without a mask, was removed for GPUs of sm_70 and later "
        "(CUDA 9), whose compilers refuse it too: use __shfl_down_sync(mask, ...), the mask naming the lanes that "
        "take part (0xffffffff: the whole warp)")


def test_a_vote_without_sync_stops_the_build_where_it_is_compiled_only():
    # CUDA declares __ballot, __any and __all, and ptxas refuses the vote a call compiles to: a template
    # nothing instantiates and an inline function nothing calls build (moderngpu's ctascan.cuh under
    # warp-ctc; NVRTC 12.9 builds them), where the runner refused the whole code
    code = r"""
template <int NT>
__device__ int scan_bits(bool x) { return __popc(__ballot(x)) + NT; }
__device__ __forceinline__ int any_set(int x) { return __any(x) + __all(x); }
extern "C" __global__ void votes(unsigned* out) { out[threadIdx.x] = __ballot_sync(0xffffffffu, threadIdx.x & 1); }
"""
    out = np.zeros(32, np.uint32)
    RawModule(code=code).get_function("votes")((1,), (32,), (out,))
    assert out.tolist() == [0xAAAAAAAA] * 32
    called = code + 'extern "C" __global__ void scan(int* out) { out[threadIdx.x] = scan_bits<4>(threadIdx.x & 1); }\n'
    with pytest.raises(KernelBuildError) as refused:
        RawModule(code=called).get_function("scan")
    assert str(refused.value) == (
        "(RawModule code):3: __ballot, a warp vote without a mask, was removed for GPUs of sm_70 and later "
        "(CUDA 9), whose compilers refuse it too: use __ballot_sync(mask, ...), the mask naming the lanes that "
        "take part (0xffffffff: the whole warp)")


def test_pragma_once_in_the_code_adds_no_warning_to_a_build_error():
    code = '#pragma once\n#pragma once\nextern "C" __global__ void k(float* x) { x[threadIdx.x] = undeclared; }\n'
    with pytest.raises(KernelBuildError) as failed:
        RawModule(code=code).get_function("k")
    message = str(failed.value)
    assert "(RawModule code):3:" in message and "undeclared" in message  # the real error, at its line
    assert "pragma once" not in message


# Rodinia's streamcluster passes its points as an array of structs, each holding a pointer to its
# coordinates, which the kernel updates through it.
POINTS = r"""
typedef struct { float weight; float* coord; long assign; float cost; } Point;
extern "C" __global__ void pull(Point* points, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) points[i].coord[0] += points[i].weight;
}
"""
POINT = np.dtype({"names": ["weight", "coord", "assign", "cost"], "formats": [np.float32, np.uint64, np.int64, np.float32],
                  "offsets": [0, 8, 16, 24], "itemsize": 32})


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_memory_reached_through_an_array_of_structs_is_updated_once(check, capsys):
    """What the structs point to is no argument: the checking mode neither guards it nor puts it back
    between its runs, so it runs such a launch once and says so (until 2026-11-27 it ran it twice,
    adding every weight twice, with no report)."""
    coords = np.zeros((8, 4), np.float32)
    points = np.zeros(8, POINT)
    points["weight"] = np.arange(1, 9)
    points["coord"] = coords.ctypes.data + coords.strides[0] * np.arange(8)
    RawModule(code=POINTS, check=check).get_function("pull")((1,), (8,), (points, 8))
    np.testing.assert_array_equal(coords[:, 0], np.arange(1, 9))
    assert coords[:, 1:].sum() == 0
    said = capsys.readouterr().err
    assert ("pull: args[0] (an array of structs) (its bytes 8 to 15) holds a pointer to memory that is no argument"
            in said) == check


@pytest.mark.parametrize("header", ["cub/device/device_radix_sort.cuh", "thrust/device_vector.h", "cupy/complex.cuh"])
def test_an_include_of_cub_thrust_or_cupys_headers_stops_the_build_in_one_line(header):
    """Kernel Tuner's expdist includes CUB, which nvcc finds among CUDA's headers: the build stopped on
    the host compiler's "No such file or directory"; it names the library the runner lacks now (of
    CUB, the headers of its block and warp reductions and scans are there: test_cuda_cpu_cub.py)."""
    code = f"#include <{header}>\n" + 'extern "C" __global__ void k(int* out) { out[0] = 1; }\n'
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code, backend="nvcc").get_function("k")
    assert str(error.value) == (
        f"(RawModule code):1: the CPU runner does not support {build.MISSING_LIBRARIES[header.split('/')[0]]}: "
        f"#include <{header}> has no counterpart here (a GPU build finds it among CUDA's or CuPy's headers where "
        "it is one of them; NVRTC says \"cannot open source file\" where it is none)")


def test_a_missing_header_of_the_codes_own_under_a_cuda_folder_is_no_libcuxx_header():
    """Ginkgo includes "cuda/components/memory.cuh"; where it was missing from the include path, the
    message called it a header of libcu++ the runner lacks, whose headers have no suffix."""
    code = '#include "cuda/components/memory.cuh"\nextern "C" __global__ void k(int* out) { out[0] = 1; }\n'
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code).get_function("k")
    assert "cuda/components/memory.cuh: No such file or directory" in str(error.value)
    assert "libcu++" not in str(error.value)


# LeetCUDA's transposes and GEMMs move a `__shared__ float` array as float4, which a GPU allows: its
# shared arrays start 16-byte aligned. A block of 16 x 16 threads copies a 16 x 64 tile through it.
FLOAT4_TILE = r"""
#define FLOAT4(v) (reinterpret_cast<float4*>(&(v))[0])
extern "C" __global__ void through_tile(const float* x, float* y)
{
    __shared__ float tile[16][64];
    __shared__ float odd[3];  // a second array, of a size no multiple of 16 bytes, before or after it
    int r = threadIdx.y, c = threadIdx.x * 4;
    odd[0] = 0.0f;
    FLOAT4(tile[r][c]) = reinterpret_cast<const float4*>(&x[r * 64 + c])[0];
    __syncthreads();
    FLOAT4(y[r * 64 + c]) = FLOAT4(tile[r][c]);
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_shared_float_array_read_as_float4_is_aligned_for_it(check):
    """The plain build's __shared__ arrays are thread_local, which GCC aligned to their element only:
    the float4 store faulted ("a misaligned vector access") until 2026-11-27."""
    x = np.arange(16 * 64, dtype=np.float32)
    y = np.full_like(x, np.nan)
    RawModule(code=FLOAT4_TILE, check=check).get_function("through_tile")((2,), (16, 16), (x, y))
    np.testing.assert_array_equal(y, x)


def test_a_nan_the_kernel_computes_is_no_checking_mode_report():
    """tanh written as (e^2x - 1) / (e^2x + 1), as LeetCUDA's half-precision GELU is, gives inf / inf =
    NaN for x > 44: a GPU computes the same NaN. The checking mode said the kernel "read poisoned
    memory ... or left elements unwritten"; it runs the launch again with nothing filled with NaN
    and finds the NaN there too."""
    code = r"""
    extern "C" __global__ void naive_tanh(const float* x, float* y, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            float e = expf(2.0f * x[i]);
            y[i] = (e - 1.0f) / (e + 1.0f);
        }
    }
    """
    x = np.array([0.5, 1.0, 50.0, 100.0] * 8, np.float32)
    y = np.zeros_like(x)
    RawModule(code=code, check=True).get_function("naive_tanh")((1,), (32,), (x, y, 32))
    assert np.flatnonzero(np.isnan(y)).tolist() == [i for i in range(32) if i % 4 >= 2]
    np.testing.assert_allclose(y[0::4], np.tanh(np.float64(0.5)), rtol=1e-6)  # float32 expf: 1e-7
    # a NaN read from the bytes right before an array is still reported
    reading_before = code.replace("float e = expf(2.0f * x[i]);", "float e = x[i - 1];")
    with pytest.raises(KernelError, match=r"naive_tanh: 1 element\(s\) of args\[1\] hold NaN after the launch \(first "
                                          r"at index \(0,\)\) though no input did: the kernel read poisoned memory"):
        RawModule(code=reading_before, check=True).get_function("naive_tanh")((1,), (32,), (x, np.zeros_like(x), 32))


def test_cuda_fp8_h_builds_and_a_use_of_its_types_stops_the_build_in_one_line():
    """LeetCUDA includes cuda_fp8.h at the top of most of its kernel files: the build stopped on the host
    compiler's "No such file or directory" also where no FP8 type is used."""
    code = '#include <cuda_fp8.h>\nextern "C" __global__ void k(float* out) {\n    out[0] = 1.0f;%s\n}\n'
    out = np.zeros(1, np.float32)
    RawModule(code=code % "").get_function("k")((1,), (1,), (out,))
    assert out[0] == 1.0
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code % " __nv_fp8_e4m3 v; (void)v;").get_function("k")
    assert str(error.value) == "(RawModule code):3: the CPU runner does not support 8-bit floats (cuda_fp8.h)"
    # a conversion of CUDA's result type (ColossalAI's cast_functor.h): its int stopped the build on a type
    # error, and the pair ones were not declared at all
    for call in (" __half_raw r = __nv_cvt_fp8_to_halfraw(0, __NV_E4M3); (void)r;",
                 " __nv_fp8x2_storage_t p = __nv_cvt_halfraw2_to_fp8x2(__half2_raw(), __NV_SATFINITE, __NV_E4M3);"
                 " (void)p;"):
        with pytest.raises(KernelBuildError) as error:
            RawModule(code=code % call).get_function("k")
        assert str(error.value).startswith("(RawModule code):3: the CPU runner does not support 8-bit floats "
                                           "(cuda_fp8.h: __nv_cvt_"), str(error.value)


def test_an_address_space_conversion_stops_the_build_in_one_line():
    """LeetCUDA's asynchronous copies give __cvta_generic_to_shared's address to inline PTX: it was
    "not declared" with a template backtrace."""
    code = 'extern "C" __global__ void k(unsigned* out) {\n    __shared__ float s[32];\n' \
           '    out[0] = __cvta_generic_to_shared(s);\n}\n'
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code).get_function("k")
    assert str(error.value) == ("(RawModule code):3: the CPU runner does not support __cvta_generic_to_shared "
                                "(address space conversions, which inline PTX takes)")
    # in a function no kernel calls, as Ginkgo's memory helpers beside its SpMV kernels: a GPU's build
    # leaves the function out, and so does the CPU's (a static_assert stopped it until 2026-11-27)
    uncalled = ("__device__ __forceinline__ unsigned to_shared(void* p)\n"
                "{\n    return (unsigned)__cvta_generic_to_shared(p);\n}\n"
                "__device__ inline float fetch(unsigned long long t) { return tex1Dfetch<float>(t, 0); }\n"
                'extern "C" __global__ void k(int* out) { out[0] = 7; }\n')
    out = np.zeros(1, np.int32)
    RawModule(code=uncalled).get_function("k")((1,), (1,), (out,))
    assert out[0] == 7
