"""CuPy's RawKernel / RawModule API as CuPy's own tests and examples use it (cupy/cupy's
tests/cupy_tests/core_tests/test_raw.py, examples/gemm/sgemm.py, examples/finance/monte_carlo.py):
what the CPU runner refused, or did otherwise than CuPy, until 2026-11-27. CuPy's behaviour is read
from its source (cupy/_core/raw.pyx, cupy/cuda/function.pyx, cupy/_core/_scalar.pyx)."""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import KernelError, RawKernel, RawModule
from nn_cuda.cuda_cpu import unread_templates
from nn_cuda.cuda_cpu.build import KernelBuildError

MODES = pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])

CODE = r"""
// out[c] = the sum of column c of a (rows x cols, stored column after column, as Fortran order keeps
// it), and twice each element into twice_a, in the same order
extern "C" __global__ void column_sums(const float* a, float* out, float* twice_a, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r) {
            sum += a[c * rows + r];
            twice_a[c * rows + r] = 2.0f * a[c * rows + r];
        }
        out[c] = sum;
    }
}

// z[i] *= factor, complex numbers as double2 (as cuDoubleComplex is)
extern "C" __global__ void complex_scale(double2* z, double2 factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double2 v = z[i];
        z[i] = make_double2(v.x * factor.x - v.y * factor.y, v.x * factor.y + v.y * factor.x);
    }
}

// out[block] = the grid's size, from each block that runs
extern "C" __global__ void grid_size(int* out) { out[blockIdx.x] = gridDim.x; }
"""


@MODES
def test_raw_kernel_takes_code_and_name_and_builds_at_its_first_call(check):
    """cupy.RawKernel(code, name, options=(), backend='nvrtc', ...) is CuPy's most used entry point
    (its test_raw.py fixture, sgemm.py); until 2026-11-27 it raised TypeError here."""
    kernel = RawKernel(CODE, "complex_scale", options=("-DUNUSED=1",), check=check)
    assert (kernel.code, kernel.name, kernel.options, kernel.backend) == (CODE, "complex_scale", ("-DUNUSED=1",),
                                                                           "nvrtc")
    assert kernel.enable_cooperative_groups is False
    z = (np.arange(5) + 0.5j).astype(np.complex128)
    expected = z * (2 - 3j)
    # a Python complex for a 16-byte struct: CuPy passes it as a complex128, as a double2 reads it
    kernel((1,), (8,), (z, 2 - 3j, 5))
    np.testing.assert_allclose(z, expected, rtol=1e-15)  # one complex product: exact to rounding
    assert kernel.signature == ("struct of 16 bytes*", "struct of 16 bytes", "int")
    with pytest.raises(TypeError, match=r"argument 1 \(struct of 16 bytes\) takes a NumPy scalar or a one-element "
                                        r"array of 16 byte\(s\).*got a Python float"):
        kernel((1,), (8,), (z, 2.0, 5))  # a float is not a complex: CuPy would pass a double's 8 bytes


def test_raw_kernel_compiles_on_demand_and_names_a_missing_kernel():
    kernel = RawKernel(CODE, "no_such_kernel")
    with pytest.raises(LookupError, match=r"no kernel 'no_such_kernel' in this RawModule; it holds 'column_sums', "
                                          r"'complex_scale', 'grid_size'"):
        kernel.compile()
    RawKernel(CODE, "grid_size").compile()  # builds (or loads) now; the launch later needs no build
    # a misspelt extern "C" name is no template instance left out of name_expressions
    with pytest.raises(LookupError, match=r"\(the code declares nothing of that name; did you mean 'grid_size'\?\)"):
        RawKernel(CODE, "grid_sizes").compile()
    with pytest.raises(LookupError, match=r"\(a template instance must be listed in name_expressions"):
        RawModule(code="template <int N> __global__ void fill(int* out) { out[0] = N; }\n").get_function("fill<3>")


@MODES
def test_a_fortran_ordered_array_is_passed_as_its_memory(check):
    """CuPy passes any array's data pointer (examples/gemm/sgemm.py passes cupy.asfortranarray
    matrices); the runner refused one as "a strided view", and its advice, np.ascontiguousarray,
    reorders the memory: the kernel then summed rows, with no report."""
    a = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    sums = np.full(4, np.nan, np.float32)
    twice = np.asfortranarray(np.full((3, 4), np.nan, np.float32))  # an output in Fortran order too
    RawKernel(CODE, "column_sums", check=check)((1,), (32,), (a, sums, twice, 3, 4))
    np.testing.assert_array_equal(sums, a.sum(axis=0))  # small integers: exact
    np.testing.assert_array_equal(twice, 2 * a)
    with pytest.raises(TypeError, match=r"got a view with a negative or zero stride: CuPy would pass the address "
                                        r"of its first element, and the kernel would read forward from there"):
        RawKernel(CODE, "column_sums", check=check)((1,), (32,), (a[::-1], sums, twice, 3, 4))



STRIDED_COPY = r"""
// out = in read through its strides (c, h, w), as PyTorch's kernels read a tensor; in += 1 where it is
extern "C" __global__ void strided_copy(float* in, float* out, int C, int H, int W, int sc, int sh, int sw)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < C * H * W) {
        int w = i % W, h = (i / W) % H, c = i / (W * H);
        out[i] = in[c * sc + h * sh + w * sw];
        in[c * sc + h * sh + w * sw] += 1.0f;
    }
}
"""


@MODES
def test_a_dense_view_in_another_order_is_passed_as_its_memory(check):
    """A channels-last buffer seen as (C, H, W) is one block of memory from its first element on, as a
    Fortran-ordered array is; CuPy passes that address, and a kernel given its strides reads it right.
    The runner refused it as a strided view, advising np.ascontiguousarray, which reorders it."""
    C, H, W = 3, 4, 5
    channels_last = np.arange(H * W * C, dtype=np.float32).reshape(H, W, C)
    view = channels_last.transpose(2, 0, 1)
    assert not view.flags.c_contiguous and not view.flags.f_contiguous
    expected = view.copy()
    out = np.full((C, H, W), np.nan, np.float32)
    strides = [np.int32(stride // view.itemsize) for stride in view.strides]
    RawKernel(STRIDED_COPY, "strided_copy", check=check)((1,), (64,), (view, out, C, H, W, *strides))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(view, expected + 1)  # written in place, through the view's memory
    # a view that skips elements (every other row): CuPy passes its first element's address, and the kernel,
    # given the view's strides, reads and writes the view's elements only, as on a GPU (refused until
    # 2026-11-27, as cupyx's upfirdn was)
    rows = view[:, ::2]
    expected, skipped = rows.copy(), view[:, 1::2].copy()
    out = np.full(rows.shape, np.nan, np.float32)
    strides = [np.int32(stride // rows.itemsize) for stride in rows.strides]
    RawKernel(STRIDED_COPY, "strided_copy", check=check)((1,), (64,), (rows, out, C, 2, W, *strides))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(rows, expected + 1)
    np.testing.assert_array_equal(view[:, 1::2], skipped)  # the rows between, untouched

@MODES
def test_a_grid_of_zero_blocks_runs_one_and_stream_none_is_taken(check):
    """CuPy launches max(1, size) in each dimension (cupy/cuda/function.pyx), so the grid of an empty
    input, (n + 127) // 128 at n = 0, runs one block; its __call__ takes stream=."""
    out = np.full(2, -1, np.int32)
    RawKernel(CODE, "grid_size", check=check)((0,), (1,), (out,), stream=None)
    assert out.tolist() == [1, -1]
    with pytest.raises(TypeError, match=r"grid_size: the CPU runner has no streams"):
        RawKernel(CODE, "grid_size", check=check)((1,), (1,), (out,), stream=object())
    with pytest.raises(ValueError, match=r"grid sizes must be 0 \(launched as 1, as CuPy does\)"):
        RawKernel(CODE, "grid_size", check=check)((-1,), (1,), (out,))


def test_options_nvrtc_and_nvcc_take_are_taken(tmp_path):
    """Options of NVRTC about warnings, relocatable code and the GPU's assembler are ignored, as
    options about GPU code were; --pre-include=<header> reads the header before the code; nvcc's -O3
    is taken with backend='nvcc' and refused with NVRTC, which refuses it on a GPU too."""
    (tmp_path / "scale.cuh").write_text("#define SCALE 7\n")
    code = 'extern "C" __global__ void k(int* out) { out[threadIdx.x] = SCALE * threadIdx.x; }\n'
    options = ("-w", "--diag-suppress=177", "-Xptxas=-v", "--ptxas-options=-v", "-rdc=true", "-dc",
               "--device-int128", "-std=c++03", f"-I{tmp_path}", "--pre-include=scale.cuh")
    out = np.full(3, -1, np.int32)
    RawModule(code=code, options=options).get_function("k")((1,), (3,), (out,))
    assert out.tolist() == [0, 7, 14]
    out[:] = -1
    RawModule(code=code, options=("-O3", "--expt-relaxed-constexpr", "-DSCALE=2"),
              backend="nvcc").get_function("k")((1,), (3,), (out,))
    assert out.tolist() == [0, 2, 4]
    with pytest.raises(ValueError, match=r"'-O3' is an option of nvcc, which NVRTC refuses as well"):
        RawModule(code=code, options=("-O3",))
    with pytest.raises(ValueError, match=r"does not take the option '--no-such-option'"):
        RawModule(code=code, options=("--no-such-option",))
    # ArrayFire's DefineValue makes " -D TILE_DIM=32": a space before the option and after -D, which
    # NVRTC reads; the runner refused the option
    out[:] = -1
    RawModule(code=code, options=(" -D SCALE=3 ", f"-I {tmp_path}")).get_function("k")((1,), (3,), (out,))
    assert out.tolist() == [0, 3, 6]
    # hashcat passes a value as the next option ("--split-compile", "0"), as NVRTC reads them; the value was
    # refused as an option of its own
    out[:] = -1
    RawModule(code=code, options=("--gpu-architecture", "compute_90", "--split-compile", "0", "-D", "SCALE=5",
                                  "--std", "c++14")).get_function("k")((1,), (3,), (out,))
    assert out.tolist() == [0, 5, 10]
    out[:] = -1
    RawModule(code=code, options=("--pre-include", "scale.cuh", "-I", str(tmp_path))).get_function("k")(
        (1,), (3,), (out,))
    assert out.tolist() == [0, 7, 14]


def test_include_paths_of_the_cuda_toolkits_headers_leave_the_runners_in_place(tmp_path, capfd):
    """cuda-python's examples pass the toolkit's include folder and CCCL's; the compiler then found
    the toolkit's cooperative_groups.h, cuda_fp16.h, <cuda/barrier>, ... before the runner's, and the
    build stopped with thousands of its errors. A stand-in toolkit here, whose headers cannot build."""
    toolkit, cccl = tmp_path / "include", tmp_path / "include" / "cccl"
    for folder, names in ((toolkit, ("cuda_runtime_api.h", "driver_types.h", "cuda_device_runtime_api.h",
                                     "cooperative_groups.h", "cuda_fp16.h")),
                          (cccl, ("cuda/std/version", "cuda/std/detail/__config", "cuda/barrier"))):
        for name in names:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text('#error "the toolkit\'s own header"\n')
    code = ("#include <cooperative_groups.h>\n#include <cuda_fp16.h>\n#include <cuda/barrier>\n"
            "namespace cg = cooperative_groups;\n"
            'extern "C" __global__ void k(float* y) { y[cg::this_thread_block().thread_rank()] = '
            "__half2float(__float2half(1.5f)); }\n")
    y = np.zeros(4, np.float32)
    RawModule(code=code, options=(f"--include-path={toolkit}", f"--include-path={cccl}")).get_function("k")(
        (1,), (4,), (y,))
    assert y.tolist() == [1.5] * 4
    assert f"the include path {toolkit} holds the CUDA toolkit's headers (or CCCL's): left out" in \
        capfd.readouterr().err


def test_a_folder_of_the_codes_own_headers_beside_a_stand_in_of_a_cuda_header_is_searched(tmp_path):
    """A project that ships its own cuda_runtime_api.h for NVRTC (which has none) beside its headers:
    that one file made the runner take the folder for the toolkit's and leave it out, and every other
    header of it was "No such file or directory"; NVRTC searches it."""
    (tmp_path / "params.h").write_text("#define VALUE 3\n")
    (tmp_path / "cuda_runtime_api.h").write_text("// a stand-in for NVRTC builds\n")
    code = '#include "params.h"\nextern "C" __global__ void k(int* a) { a[0] = VALUE; }\n'
    a = np.zeros(1, np.int32)
    RawModule(code=code, options=(f"-I{tmp_path}",)).get_function("k")((1,), (1,), (a,))
    assert a[0] == 3


def test_the_tensor_memory_accelerator_stops_the_build_in_one_line():
    """cuda.core's TMA examples: "'cuda::device' has not been declared" and "'CUtensorMap' was not
    declared ... did you mean 'TensorMap'?" read like errors of the code."""
    code = ("#include <cuda/barrier>\n"
            'extern "C" __global__ void k(const __grid_constant__ CUtensorMap map, float* out)\n{\n'
            "    __shared__ float s[32];\n    __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
            "    cuda::device::experimental::cp_async_bulk_tensor_1d_global_to_shared(s, &map, 0, bar);\n}\n")
    with pytest.raises(KernelBuildError) as error:
        RawModule(code=code).get_function("k")
    assert str(error.value) == ("(RawModule code):6: the CPU runner does not support the tensor memory accelerator "
                                "(TMA: bulk tensor copies, cp_async_bulk_tensor_1d_global_to_shared; sm_90)")


OWN_UINT64 = r"""
typedef unsigned long long uint64_t;  // NVRTC has no <cstdint>: CuPy's Monte Carlo example writes this
typedef long long int64_t;
typedef long long ssize_t ;  // as CuPy's QR of B-splines (cupyx/scipy/interpolate/_bspline2.py) writes it
#include <cuda_fp16.h>  // a header of the runner's that uses the host's uint64_t, after the code's

extern "C" __global__ void count(uint64_t* total, int64_t* lowest, const int* values, int n)
{
    ssize_t i = blockIdx.x * blockDim.x + threadIdx.x;
    static_assert(sizeof(ssize_t) == 8, "the code's own ssize_t");
    if (i < n) {
        atomicAdd(total, (uint64_t)values[i]);  // the unsigned long long overload, as on a GPU
        atomicMin(lowest, (int64_t)values[i] - 1000);
        __half unused = __float2half(1.0f);
        (void)unused;
    }
}
"""


@MODES
def test_code_that_declares_its_own_64_bit_integer_types_builds_under_nvrtc(check):
    """`typedef unsigned long long uint64_t;` conflicted with the host's <stdint.h> (`unsigned long`):
    "conflicting declaration" stopped examples/finance/monte_carlo.py's build; `typedef long long
    ssize_t;` the host's <sys/types.h> (`long`), which stopped cupyx's QR of B-splines."""
    values = np.arange(1, 101, dtype=np.int32)
    total, lowest = np.zeros(1, np.uint64), np.full(1, 10**6, np.int64)
    RawModule(code=OWN_UINT64, check=check).get_function("count")((4,), (32,), (total, lowest, values, 100))
    assert (int(total[0]), int(lowest[0])) == (5050, 1 - 1000)



@pytest.mark.parametrize("declaration", ["typedef cuda::std::int64_t int64_t;", "using int64_t = cuda::std::int64_t;",
                                         "typedef long long int64_t;"])
def test_code_that_declares_int64_t_beside_libcuxx_s_builds(declaration):
    # ggml: the code's int64_t became a macro for a name of its own, and so did cuda::std::int64_t,
    # a name libcu++ has not ("'nn_cuda_cpu_code_int64_t' in namespace 'cuda::std' does not name a type")
    code = (f"#include <cuda/std/cstdint>\n{declaration}\n"
            "__device__ cuda::std::int64_t twice(cuda::std::int64_t v) { return 2 * v; }\n"
            'extern "C" __global__ void k(int64_t* out, int64_t n) { out[threadIdx.x] = twice(n) + threadIdx.x; }\n')
    out = np.zeros(4, np.int64)
    RawModule(code=code).get_function("k")((1,), (4,), (out, np.int64(2**40)))
    assert out.tolist() == [2**41 + i for i in range(4)]

def test_name_expressions_with_nvcc_warn_as_cupy_refuses_them():
    code = "template <typename T> __global__ void fill(T* out) { out[threadIdx.x] = T(3); }\n"
    with pytest.warns(UserWarning, match=r"CuPy refuses name_expressions with backend='nvcc' \(ValueError: only nvrtc "
                                         r"supports retrieving the mangled names"):
        module = RawModule(code=code, backend="nvcc", name_expressions=("fill<int>",))
    out = np.zeros(2, np.int32)
    module.get_function("fill<int>")((1,), (2,), (out,))  # the runner still runs it
    assert out.tolist() == [3, 3]
    with pytest.raises(TypeError, match=r"Exactly one of `code` and `path`"):
        RawModule()


def test_a_cooperative_kernel_built_alone_reduces_its_grid():
    code = r"""
    #include <cooperative_groups.h>
    extern "C" __global__ void blocks(int* out) { cooperative_groups::this_grid().sync(); out[blockIdx.x] = 1; }
    """
    out = np.zeros(600, np.int32)
    kernel = RawKernel(code, "blocks", enable_cooperative_groups=True)
    with pytest.warns(UserWarning, match=r"The grid size will be reduced from 600 to 512"):  # the most, any size
        kernel((600,), (1,), (out,))
    assert out.tolist() == [1] * 512 + [0] * 88
    with pytest.raises(KernelError, match=r"grid_group::sync\(\) in thread .* not cooperative"):
        RawKernel(code, "blocks")((2,), (1,), (out,))


def test_a_kernel_and_its_module_pickle_built_or_not():
    """CuPy's RawModule and RawKernel pickle (its TestRawPicklable), as multiprocessing needs; a built
    one held a ctypes library, which does not."""
    import pickle

    module = RawModule(code=CODE)
    kernel = module.get_function("grid_size")  # built
    for thing in (kernel, RawKernel(CODE, "grid_size"), module):
        copy = pickle.loads(pickle.dumps(thing))
        out = np.zeros(3, np.int32)
        launch = copy if isinstance(copy, RawKernel) else copy.get_function("grid_size")
        launch((3,), (1,), (out,))
        assert out.tolist() == [3, 3, 3]


CPP_KERNELS = r"""
// C++ kernels, as nvcc builds them: CuPy's get_function finds them by their mangled names
template <typename T>
__global__ void scale(T* x, T by, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= by;
}

__global__ void count(int* out) { atomicAdd(out, 1); }
"""


def test_a_cpp_kernel_built_by_nvcc_is_found_by_its_mangled_name():
    """With backend='nvcc' CuPy refuses name_expressions and finds a C++ kernel by its mangled name, as
    the GPU module names it; the runner demangles it (c++filt) and builds that instance, at the first
    ask. Until 2026-11-27 only name_expressions reached such a kernel here."""
    module = RawModule(code=CPP_KERNELS, backend="nvcc")
    x = np.arange(4, dtype=np.float32)
    module.get_function("_Z5scaleIfEvPT_S0_i")((1,), (4,), (x, np.float32(3), 4))  # scale<float>
    np.testing.assert_array_equal(x, [0, 3, 6, 9])
    out = np.zeros(1, np.int32)
    module.get_function("_Z5countPi")((2,), (32,), (out,))  # count, not a template
    assert out[0] == 64
    y = np.arange(3, dtype=np.float64)
    RawKernel(CPP_KERNELS, "_Z5scaleIdEvPT_S0_i", backend="nvcc")((1,), (4,), (y, 2.0, 3))  # scale<double>
    np.testing.assert_array_equal(y, [0, 2, 4])
    with pytest.raises(LookupError, match=r"no kernel '_Z6absentPi' in this RawModule"):
        module.get_function("_Z6absentPi")


def test_a_kernel_asked_for_by_its_mangled_name_later_leaves_the_modules_globals_as_they_are():
    # the module is built again with the new instance: its __device__ and __constant__ variables went
    # back to their initial values (ccminer's keccak256 lost the target it had been given, until
    # 2026-11-27), where a GPU's get_function leaves the module's globals alone
    code = ('__constant__ unsigned target[2] = {0, 7};\n'
            'extern "C" __global__ void first(unsigned* out) { out[0] = target[0]; out[1] = target[1]; }\n'
            '__global__ void second(unsigned* out) { out[0] = target[0] + target[1]; }\n')
    module = RawModule(code=code, backend="nvcc")
    module.get_global("target").view(np.uint32)[:] = [1234, 55]
    out = np.zeros(2, np.uint32)
    module.get_function("first")((1,), (1,), (out,))
    assert out.tolist() == [1234, 55]
    module.get_function("_Z6secondPj")((1,), (1,), (out,))
    assert out[0] == 1234 + 55
    module.get_function("first")((1,), (1,), (out,))
    assert out.tolist() == [1234, 55]


HOST_DEFINES = r"""
// crt/host_defines.h's qualifiers, which NVRTC and nvcc see: ccminer redeclares a built-in with
// __device_builtin__ and aligns its vectors with __builtin_align__
extern __device__ __device_builtin__ void __syncthreads(void);
typedef struct __builtin_align__(16) { uint2 low, high; } uint4x2;
struct __device_builtin__ pair { unsigned a, b; };
extern "C" __global__ void qualified(unsigned* out)
{
    uint4x2 q;
    q.low = make_uint2(1, 2);
    __syncthreads();
    const pair p = {3, 4};
    out[0] = q.low.y + p.b + (unsigned)alignof(uint4x2);
}
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_host_defines_qualifiers_build(backend):
    # "`__device_builtin__` does not name a type" until 2026-11-27
    out = np.zeros(1, np.uint32)
    RawModule(code=HOST_DEFINES, backend=backend).get_function("qualified")((1,), (1,), (out,))
    assert out[0] == 2 + 4 + 16



NAMESPACED = r"""
// caffe's way: every kernel in a namespace, one name overloaded for float and double; NVRTC's
// documentation names kernels and variables as "&f", "&f<double>", "&N1::N2::f"
namespace caffe {
__device__ int base = 10;
__global__ void clip(int n, const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x] < 0 ? 0 : 1; }
__global__ void clip(int n, const double* in, double* out) { out[threadIdx.x] = in[threadIdx.x] < 0 ? 0 : 2; }
template <typename T>
__global__ void offset(T* x) { x[threadIdx.x] += base; }
extern "C" __global__ void c_named(int* x) { x[threadIdx.x] = base + 1; }
}  // namespace caffe
"""


def test_kernels_and_variables_of_a_namespace_are_found_as_nvrtc_and_cupy_find_them():
    # "&offset<int>" and "caffe::base" were build errors, an extern "C" kernel of a namespace broke the
    # whole module, and overloaded kernels were not found by their mangled names
    module = RawModule(code=NAMESPACED, name_expressions=("&caffe::offset<int>", "caffe::base"))
    module.get_global("caffe::base")[:] = np.array([20], np.int32).view(np.uint8)
    x = np.arange(3, dtype=np.int32)
    module.get_function("&caffe::offset<int>")((1,), (3,), (x,))
    assert x.tolist() == [20, 21, 22]
    module.get_function("c_named")((1,), (3,), (x,))  # by its C name, as CuPy finds it
    assert x.tolist() == [21, 21, 21]
    nvcc = RawModule(code=NAMESPACED, backend="nvcc")
    for mangled, dtype, want in (("_ZN5caffe4clipEiPKfPf", np.float32, 1), ("_ZN5caffe4clipEiPKdPd", np.float64, 2)):
        out = np.zeros(2, dtype)
        nvcc.get_function(mangled)((1,), (2,), (np.int32(2), np.array([-1, 1], dtype), out))
        assert out.tolist() == [0, want]
    with pytest.raises(LookupError, match=r"name_expressions=\('caffe::clip',\)"):  # named with its namespace
        RawModule(code=NAMESPACED.replace("__global__ void clip(int n, const double*", "__device__ void c2(int n, "
                                                                                         "const double*")
                  ).get_function("clip")

def test_nvrtcs_options_in_both_spellings_and_default_device_are_taken():
    """NVRTC 12.9 compiles with each of these (PolyBench-ACC tried them): the runner refused the long
    or the short spelling of some; and with -default-device NVRTC takes a function without
    __device__ as a device one, so a helper returning cudaError_t is no host function there."""
    code = r"""
    cudaError_t check(int x) { return x < 0 ? cudaErrorInvalidValue : cudaSuccess; }
    extern "C" __global__ void k(int* out) { out[threadIdx.x] = check((int)threadIdx.x - 1); }
    """
    options = ("--device-as-default-execution-space", "-split-compile=0", "--minimal", "-ewp",
               "--extensible-whole-program", "--fdevice-time-trace=trace.json",
               # the long spelling of -dlto, and NVRTC 12's options that caffe's probe found refused
               "--dlink-time-opt", "-jtd=0", "--device-stack-protector=true", "-no-err-no", "--brief-diagnostics=true",
               "-opt-info=inline", "--builtin-move-forward=false", "--no-source-include")
    out = np.full(2, -1, np.int32)
    RawModule(code=code, options=options).get_function("k")((1,), (2,), (out,))
    assert out.tolist() == [1, 0]  # cudaErrorInvalidValue is 1
    out[:] = -1
    RawModule(code=code, options=("-default-device",)).get_function("k")((1,), (2,), (out,))
    assert out.tolist() == [1, 0]
    with pytest.raises(Exception, match=r"check is a host function .* give the option -default-device"):
        RawModule(code=code).get_function("k")


@MODES
def test_an_instance_of_a_constant_variable_template_is_reached_by_its_name_expression(check):
    """HeCBench's convolution1D keeps its mask in `template <typename T> __constant__ T mask[...]`:
    NVRTC takes "&mask<float>" as a name expression and CuPy's get_global finds the instance by it.
    The runner took it for a kernel (the build failed) and looked for a symbol of that name."""
    code = r"""
    template <typename T> __constant__ T mask[8];
    template <typename T> __global__ void masked(const T* x, T* out) { out[threadIdx.x] = mask<T>[threadIdx.x] * x[threadIdx.x]; }
    """
    module = RawModule(code=code, name_expressions=("masked<float>", "masked<double>", "&mask<float>"), check=check)
    module.get_global("&mask<float>").view(np.float32)[:] = np.arange(8)
    module.get_global("mask<double>").view(np.float64)[:] = -np.arange(8)
    x, out = np.full(8, 2, np.float32), np.full(8, np.nan, np.float32)
    module.get_function("masked<float>")((1,), (8,), (x, out))
    np.testing.assert_array_equal(out, 2 * np.arange(8))
    out64 = np.full(8, np.nan)
    module.get_function("masked<double>")((1,), (8,), (np.ones(8), out64))
    np.testing.assert_array_equal(out64, -np.arange(8))


def test_an_integer_scalar_of_the_parameters_size_is_taken_where_its_value_fits():
    """HeCBench's adam takes `adamMode_t mode`, an enum that GCC makes unsigned int; its launcher
    passes a numpy.int32, whose 4 bytes CuPy passes and a GPU reads as the mode. The runner refused it
    ("takes a numpy.uint32"). A wider integer is taken too (CuPy passes its bytes, whose first ones a GPU
    reads); a value the type does not hold, or a narrower integer, is still refused."""
    code = r"""
    typedef enum { MODE_0 = 0, MODE_1 = 1 } mode_t_;
    extern "C" __global__ void mode(int* out, mode_t_ m, unsigned short u) { out[0] = (m == MODE_1) ? 11 : 10; out[1] = u; }
    """
    kernel = RawKernel(code, "mode")
    out = np.zeros(2, np.int32)
    kernel((1,), (1,), (out, np.int32(1), np.int16(7)))
    assert out.tolist() == [11, 7]
    with pytest.raises(TypeError, match=r"argument 1 \(unsigned int\): -1 is outside the range of uint32"):
        kernel((1,), (1,), (out, np.int32(-1), np.int16(7)))
    kernel((1,), (1,), (out, np.int32(1), np.int32(9)))
    assert out.tolist() == [11, 9]
    with pytest.raises(TypeError, match=r"argument 2 \(unsigned short\) takes a numpy.uint16, got a numpy.int8"):
        kernel((1,), (1,), (out, np.int32(1), np.int8(7)))


UNUSED_TEMPLATE_WITH_A_TYPO = r"""
// MXNet's RTC reducer-inl.h, in every kernel it compiles: a template no kernel uses, with a typo
struct nrm2 {
    template <typename AType, typename DType>
    __device__ static void Reduce(volatile AType& sum_of_squares, volatile DType src)
    {
        sum_of_squares = sum_of_square + src * src;  // { a brace in a comment
    }
};
// ArrayFire's kernel files: a kernel of a -D that the options of another kernel leave out
template <typename T>
__global__ void staged(T* out) { __shared__ T stage[THREADS]; stage[0] = T(1); out[0] = stage[0]; }
extern "C" __global__ void k(float* y) { y[threadIdx.x] = 2.0f * threadIdx.x; }
"""


def test_function_templates_whose_bodies_do_not_compile_are_left_out_where_no_kernel_instantiates_them(capfd):
    """NVRTC 12.9 builds an undeclared name, an undeclared type, even a syntax error in a template that
    no kernel instantiates (measured with the NVRTC wheel): MXNet's RTC kernels and seven of ArrayFire's
    kernel files build through CuPy, and GCC refused every one of them. The bodies are left out of the
    CPU build, where no kernel instantiates them, and a line says so; where one does, the code's
    errors stand, as NVRTC reports them then; an error in a plain function stands too."""
    y = np.full(4, np.nan, np.float32)
    capfd.readouterr()
    RawModule(code=UNUSED_TEMPLATE_WITH_A_TYPO).get_function("k")((1,), (4,), (y,))
    assert y.tolist() == [0, 2, 4, 6]
    told = [line for line in capfd.readouterr().err.splitlines() if "left out" in line]
    assert len(told) == 1 and "the bodies of function templates at lines 6, 12 do not compile" in told[0], told
    class_template = UNUSED_TEMPLATE_WITH_A_TYPO.replace("struct nrm2 {", "template <int N> struct nrm2 {").replace(
        "template <typename AType, typename DType>\n", "").replace("volatile AType&", "volatile float&").replace(
        "volatile DType", "volatile float")
    y[:] = np.nan
    RawModule(code=class_template).get_function("k")((1,), (4,), (y,))  # a member of a class template
    assert y.tolist() == [0, 2, 4, 6]
    with pytest.raises(KernelBuildError) as error:  # a kernel instantiates one: NVRTC refuses it then
        RawModule(code=UNUSED_TEMPLATE_WITH_A_TYPO, name_expressions=("staged<float>",)).get_function("staged<float>")
    assert "'THREADS' was not declared" in str(error.value).replace("‘", "'").replace("’", "'")
    assert "a kernel of the module instantiates one of these, so NVRTC refuses the code too" in str(error.value)
    with pytest.raises(KernelBuildError) as error:  # an error in a plain function: NVRTC refuses it
        RawModule(code=UNUSED_TEMPLATE_WITH_A_TYPO + "__device__ float twice(float x) { return 2 * x + typo; }\n"
                  ).get_function("k")
    assert "'typo' was not declared" in str(error.value).replace("‘", "'").replace("’", "'")
    assert "function template" not in str(error.value)
    # a body the runner does not find (a function-try-block's): the build stops, saying what NVRTC does
    with pytest.raises(KernelBuildError, match=r"where none does CuPy builds this code on a GPU; the CPU build could "
                                               r"not leave it out: fix the error, or remove the template\)$"):
        RawModule(code="template <typename T> void tried(T x) try { x = undeclared; } catch (...) {}\n"
                       'extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n').get_function("k")


@pytest.mark.parametrize("head, is_body", [
    ("template <typename T> void f(T x) {", True), ("void f() const noexcept & {", True),
    ("auto f(int a) -> const std::vector<int>& {", True), ("void f(int a)" + " " * 100_000 + "{", True),
    ("struct xconst {", False), ("void f() xconst {", False), ("int a = b->c; {", False),
    ("namespace n {", False)])
def test_a_function_body_is_told_from_other_braces_after_any_run_of_spaces(head, is_body):
    """Where a build's errors lie in a function's body (unread_templates.py): after its parameters'
    `)`, qualifiers or a trailing return type. A blanked header of long comments is a run of spaces;
    the test of a pattern searched from the text's start took minutes there (2026-11-27)."""
    text = " " * 50_000 + "\n" + head  # a comment of 50,000 characters before, blanked
    assert unread_templates._is_function_body(text, len(text) - 1) is is_body


def test_a_constexpr_constructor_that_reads_a_volatile_is_refused_saying_why():
    """nvFuser's complex_number.cu: `constexpr complex(const volatile complex<float>& other)`, which NVRTC
    builds for every fusion and GCC refuses ("lvalue-to-rvalue conversion of a volatile lvalue"),
    a message that did not say what to change."""
    code = ("struct C {\n    float re;\n    constexpr C(float r = 0.f) : re(r) {}\n"
            "    constexpr C(const volatile C& o) : re(o.re) {}\n    constexpr C(const C& o) : re(o.re) {}\n};\n"
            'extern "C" __global__ void k(float* out) { C c(2.f); C d(c); out[0] = d.re; }\n')
    with pytest.raises(KernelBuildError, match=r"NVRTC takes a constexpr function that reads a volatile, .* GCC, "
                                               r"which builds the code for the CPU, refuses it: leave `constexpr` out "
                                               r"of that function\)$"):
        RawModule(code=code).get_function("k")


def test_a_constexpr_function_that_calls_a_cuda_conversion_is_refused_saying_why():
    """ArrayFire's half.hpp, which NVRTC builds: constexpr conversions that call __half2float, which
    is no constexpr function; GCC refuses them, and its message alone did not say what to change."""
    code = ("#include <cuda_fp16.h>\nconstexpr __device__ float h2f(__half v) { return __half2float(v); }\n"
            'extern "C" __global__ void k(float* out, const __half* in) { out[0] = h2f(in[0]); }\n')
    with pytest.raises(KernelBuildError, match=r"GCC, which builds the code for the CPU, refuses it: leave `constexpr` "
                                               r"out of that function\)$"):
        RawModule(code=code).get_function("k")


@MODES
def test_a_one_element_array_is_passed_by_value_as_cupy_passes_it(check):
    """CuPy passes a NumPy array of size one by value (cupy/cuda/function.pyx, _pointer), so CuPy code
    may give a scalar parameter as np.array([n], np.int32) or np.array(2, np.float32); the runner took
    one for a struct only, and refused it for an int or a float ("takes a numpy.int32")."""
    code = r"""
    extern "C" __global__ void scale(float* y, float a, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] *= a;
    }
    """
    kernel = RawKernel(code, "scale", check=check)
    y = np.ones(4, np.float32)
    kernel((1,), (4,), (y, np.array(2, np.float32), np.array([3], np.int32)))
    assert y.tolist() == [2, 2, 2, 1]
    with pytest.raises(TypeError, match=r"argument 1 \(float\) takes a numpy.float32, got a numpy.float64"):
        kernel((1,), (4,), (y, np.array([2.0]), 4))  # the element's dtype is checked as a scalar's
    with pytest.raises(TypeError, match=r"argument 2 \(int\) takes a numpy.int32 or a Python int, got an array of "
                                        r"int32"):
        kernel((1,), (4,), (y, np.float32(2), np.array([3, 4], np.int32)))  # more than one element: refused


STRIDED_GATHER = r"""
// out[i] = in[i * stride], as cupyx's upfirdn reads the strided view it is given
extern "C" __global__ void gather(const double* in, long long stride, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i * stride];
}
"""


@MODES
def test_a_view_that_skips_elements_passes_its_first_elements_address(check):
    """cupyx.scipy.signal.upfirdn passes a strided view as it is, with its stride in elements as an
    argument; CuPy passes the view's first element's address. The runner refused the view, advising
    np.ascontiguousarray, with which that stride reads past the copy's end."""
    base = np.arange(20, dtype=np.float64)
    x = base[3::2]  # a view from the middle of its array
    out = np.full(x.size, np.nan)
    RawKernel(STRIDED_GATHER, "gather", check=check)((1,), (32,), (x, np.int64(2), out, np.int32(x.size)))
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("check", [False, True])
def test_a_pointer_to_an_enum_takes_integers_of_its_size_signed_or_not(check):
    """An array of an enum's values is NumPy's int32, as the enumerators are ints; GCC makes the
    underlying type of an enum with no negative enumerator unsigned int, which the code does not
    choose. Until 2026-11-27 the pointer took only uint32, and the message named "const unsigned int*"
    for the `const Kind*` the code declares."""
    code = r"""
    enum Kind { LEAF, BRANCH, ROOT };
    extern "C" __global__ void branches(const Kind* kinds, int* out) { out[threadIdx.x] = kinds[threadIdx.x] == BRANCH; }
    """
    kernel = RawModule(code=code, check=check).get_function("branches")
    for dtype in (np.int32, np.uint32):
        out = np.full(4, -1, np.int32)
        kernel((1,), (4,), (np.array([0, 1, 2, 1], dtype), out))
        assert out.tolist() == [0, 1, 0, 1]
    with pytest.raises(TypeError, match=r"argument 0 \(const enum of 4 bytes\*\) takes an array of 4-byte "
                                        r"integers, signed or not .* got an array of int64"):
        kernel((1,), (4,), (np.array([0, 1, 2, 1]), out))


@MODES
def test_an_integer_address_of_device_memory_is_taken_for_a_pointer_as_cupy_takes_data_ptr(check):
    """CuPy passes a Python int as 8 bytes, which a pointer parameter reads as the address: code that
    passes `x.data.ptr` (PyCUDA's demo_struct passes `numpy.uintp(a.gpudata)`) ran on a GPU and was
    refused here. An address within an array of device memory is that array from there (a view of
    the whole, so the checking mode guards the whole array); 0 is NULL; any other number is refused."""
    from nn_cuda.cuda_cpu.device_memory import to_device
    code = r"""
    extern "C" __global__ void twice(float* y, const float* bias, int n)
    {
        int i = threadIdx.x;
        if (i < n) y[i] = 2.0f * y[i] + (bias ? bias[i] : 0.0f);
    }
    """
    kernel = RawKernel(code, "twice", check=check)
    y = to_device(np.arange(8, dtype=np.float32))
    kernel((1,), (4,), (np.uintp(y.ctypes.data + 4 * 4), 0, np.int32(4)))  # y[4:], no bias
    assert y.tolist() == [0, 1, 2, 3, 8, 10, 12, 14]
    bias = to_device(np.full(4, 0.5, np.float32))
    kernel((1,), (2,), (y.ctypes.data, bias.ctypes.data, np.int32(2)))
    assert y.tolist() == [0.5, 2.5, 2, 3, 8, 10, 12, 14]
    if check:  # a read past the array an address lies in is caught as any other
        with pytest.raises(KernelError, match=r"past the end of args\[0\]"):
            kernel((1,), (8,), (y.ctypes.data + 4 * 4, 0, np.int32(8)))
    with pytest.raises(TypeError, match=r"argument 1 \(const float\*\) takes a NumPy array, or the address of an "
                                        r"element of device memory"):
        kernel((1,), (4,), (y, np.arange(4, dtype=np.float32).ctypes.data, np.int32(4)))
    # an address off the elements, of another type: the bytes from there as the kernel's type, as a GPU
    # reads them (MegEngine sums a uint32_t* one byte off with byte loads)
    raw = to_device(np.arange(4, dtype=np.float32).view(np.uint8))
    bytes_off = to_device(np.zeros(8, np.float32))
    bytes_off.view(np.uint8)[1:17] = raw
    kernel((1,), (4,), (y, bytes_off.ctypes.data + 1, np.int32(4)))
    assert y.tolist() == [1, 6, 6, 9, 8, 10, 12, 14]
