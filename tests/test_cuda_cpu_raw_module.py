"""RawModule on the CPU: any CUDA C source, run as CuPy's RawModule runs it on a GPU.

Small kernels written here: an extern "C" kernel, a template instance named by a name expression,
every scalar type, -D and -I options, arguments that do not fit the signature, a fault in the
checking mode, and the project's own gemm1_naive.cu through the public API. The builds go to the
test session's cache (tests/conftest.py), so a code built once is loaded by the next test.
"""

import platform
import re

from pathlib import Path

import numpy as np
import pytest

from nn_cuda import kernel_info
from nn_cuda.cuda_cpu import KernelError, RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # each test builds a library (about a second)

SAXPY = r"""
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"""


@pytest.fixture(autouse=True)
def plain_mode_unless_asked(monkeypatch):
    monkeypatch.delenv("NN_CUDA_CPU_CHECK", raising=False)
    monkeypatch.delenv("NN_CUDA_CPU_FMA", raising=False)


def test_an_extern_c_kernel_runs_by_its_name():
    kernel = RawModule(code=SAXPY).get_function("saxpy")
    assert kernel.signature == ("float*", "const float*", "float", "int")
    n = 70  # three blocks of 32, the last one partly outside
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, dtype=np.float32)
    kernel((3,), (32,), (y, x, np.float32(2.0), np.int32(n)))
    np.testing.assert_array_equal(y, 2 * x + 0.5)
    # a Python int reaches an int parameter as itself, as from CuPy (a long long whose first bytes a GPU reads)
    kernel((3,), (32,), (y, x, np.float32(-1.0), n))
    np.testing.assert_array_equal(y, x + 0.5)
    # CuPy refuses an int grid or block ("expected tuple, got int"; measured on an H100): so does the runner
    with pytest.raises(TypeError, match=r"grid must be a tuple of 1 to 3 ints, as CuPy's RawKernel takes it, got int "
                                        r"3 \(write \(3,\)\)"):
        kernel(3, (32,), (y, x, np.float32(1), n))
    with pytest.raises(TypeError, match=r"block must be a tuple .* got list \[32\] \(write \(32,\)\)"):
        kernel((3,), [32], (y, x, np.float32(1), n))


def test_a_template_instance_runs_by_its_name_expression():
    code = r"""
    template <typename T, int TILE>
    __global__ void reverse_tiles(const T* in, T* out, int n)
    {
        __shared__ T tile[TILE];
        const int base = blockIdx.x * TILE;
        const int t = threadIdx.x;
        tile[t] = base + t < n ? in[base + t] : T(0);
        __syncthreads();
        if (base + t < n) {
            out[base + t] = tile[TILE - 1 - t];
        }
    }
    """
    module = RawModule(code=code, name_expressions=("reverse_tiles<double, 8>", "reverse_tiles<float, 4>"))
    values = np.arange(16, dtype=np.float64)
    out = np.full(16, np.nan)
    module.get_function("reverse_tiles<double, 8>")((2, 1), (8, 1, 1), (values, out, 16))
    np.testing.assert_array_equal(out, np.concatenate([values[7::-1], values[:7:-1]]))
    small = np.full(8, np.nan, dtype=np.float32)
    module.get_function("reverse_tiles<float, 4>")((2,), (4,), (values[:8].astype(np.float32), small, 8))
    np.testing.assert_array_equal(small, [3, 2, 1, 0, 7, 6, 5, 4])
    with pytest.raises(LookupError, match=r"no kernel 'reverse_tiles<double,8>'.*name_expressions"):
        module.get_function("reverse_tiles<double,8>")  # spelled otherwise: not the listed instance


def test_every_scalar_type_reaches_the_kernel_with_its_value():
    code = r"""
    extern "C" __global__ void scalars(double* out, unsigned char u8, signed char i8, short i16,
                                       unsigned short u16, unsigned int u32, long long i64,
                                       unsigned long long u64, size_t size, bool flag, float f, double d)
    {
        out[0] = u8; out[1] = i8; out[2] = i16; out[3] = u16; out[4] = u32; out[5] = (double)i64;
        out[6] = (double)(u64 - 18446744073709551000ull); out[7] = (double)size; out[8] = flag ? 1.0 : -1.0;
        out[9] = f; out[10] = d;
    }
    """
    kernel = RawModule(code=code).get_function("scalars")
    assert kernel.signature[1:] == ("unsigned char", "signed char", "short", "unsigned short", "unsigned int",
                                    "long long", "unsigned long long", "unsigned long", "bool", "float", "double")
    out = np.full(11, np.nan)
    kernel((1,), (1,), (out, np.uint8(250), np.int8(-100), np.int16(-30000), np.uint16(60000), np.uint32(4000000000),
                  np.int64(-2**40), np.uint64(18446744073709551615), np.uint64(2**33), np.bool_(True),
                  np.float32(0.25), np.float64(-1e300)))
    np.testing.assert_array_equal(out, [250, -100, -30000, 60000, 4000000000, -2**40, 615, 2**33, 1, 0.25, -1e300])
    # the same values as Python scalars where CuPy passes them as the number (ints to integers, a bool to
    # bool, a float to double); a float parameter takes a numpy.float32 only
    out[:] = np.nan
    kernel((1,), (1,), (out, 250, -100, -30000, 60000, 4000000000, -2**40, 18446744073709551615, 2**33, False,
                  np.float32(0.25), -1e300))
    np.testing.assert_array_equal(out, [250, -100, -30000, 60000, 4000000000, -2**40, 615, 2**33, -1, 0.25, -1e300])


def test_a_cpp_kernel_is_found_through_name_expressions_as_with_cupy_and_a_wrong_one_is_named():
    # Most code a student writes declares `__global__ void sum_reduction(...)` without extern "C":
    # CuPy, and the runner, find such a kernel only through name_expressions; the messages say so.
    code = "__global__ void sum_reduction(int* v) { v[threadIdx.x] = 2 * threadIdx.x; }\n"
    with pytest.raises(LookupError, match=r"sum_reduction is a C\+\+ kernel of the code \(not extern \"C\"\).*"
                                          r"name_expressions=\('sum_reduction',\)"):
        RawModule(code=code).get_function("sum_reduction")
    out = np.zeros(4, np.int32)
    RawModule(code=code, name_expressions=("sum_reduction",)).get_function("sum_reduction")((1,), (4,), (out,))
    assert out.tolist() == [0, 2, 4, 6]
    with pytest.raises(KernelBuildError, match=r"name_expressions names 'sumReduction', which the code does not "
                                               r"declare; did you mean .sum_reduction.\?: each entry is a __global__ "
                                               r"function"):
        RawModule(code=code, name_expressions=("sumReduction",)).get_function("sumReduction")



OVERLOADED = ("template <typename T> __global__ void k(T* out, int n);\n"
              "template <typename T> __global__ void k(T* out, int n) { if (threadIdx.x < n) out[threadIdx.x] = 1; }\n"
              "template <typename T> __global__ void k(T* out, const T* in, int n) { out[threadIdx.x] = in[0]; }\n"
              "__global__ void k2(float* out) { out[0] = 2; }\n")
PLAIN_OVERLOADS = "__global__ void f(int* p) { p[0] = 1; }\n__global__\nvoid f(float* p) { p[0] = 2; }\n"
NESTED = "namespace a { namespace b {\ntemplate <typename T> __global__ void k(T* x) { x[0] = 1; }\n} }\n"
ENUM = ("namespace a {\nenum class E { x, y };\nnamespace b {\n"
        "template <a::E e> __global__ void k(float* out) { out[0] = 1; }\n} }\n")
BOUNDED = ("struct Size { static constexpr int N = 64; };\n"
           "template <typename T, bool Flag> __global__ void __launch_bounds__(T::N) b(int* out) { out[0] = Flag; }\n")


@pytest.mark.parametrize("code, expression, message", [
    # DeepSpeed declares bias_add_transform_0213<T> with 18 parameters and with 7
    (OVERLOADED, "k<float>", r"^name_expressions names 'k<float>', but the code declares several kernels named `k` "
                             r"\(overloads\).*static_cast<void\(\*\)\(float\*, int\)>\(k<float>\)"),
    (OVERLOADED, "k2<float>", r"^name_expressions names 'k2<float>', but the kernel `k2` is no template: name it 'k2'"),
    # CUDA by Example's book.h: two kernels float_to_color(unsigned char*, ...) and (uchar4*, ...); a name alone
    # was taken for an extern "C" kernel that the C library's overloads make ambiguous ("rename it")
    (PLAIN_OVERLOADS, "f", r"^name_expressions names 'f', but the code declares several kernels named `f` "
                           r"\(overloads\): name one by its type, as `static_cast<void\(\*\)\(float\*, int\)>\(f\)`"),
    # FasterTransformer's kernels sit in nested namespaces: one left out named the runner's run_thread
    (NESTED, "a::k<float>", r"^name_expressions names 'a::k<float>', but no kernel template of the code is named "
                            r"`a::k` \(a namespace left out of the name"),
    (NESTED, "a::nosuch<float>", r"\(name_expressions names 'a::nosuch', which the code does not declare: .*\)$"),
    # LightSeq's ls_dropout_act_bias_kernel<ActivationType::kRelu>: an enumerator or its enum misspelt, which
    # was taken for an argument count, or, named in a cast, for the entry
    (ENUM, "a::b::k<a::E::z>", r"^name_expressions names 'a::b::k<a::E::z>', whose `a::E::z` the code does not "
                               r"declare"),
    (ENUM, "a::b::k<a::b::E::x>", r"^name_expressions names 'a::b::k<a::b::E::x>', whose `a::b::E` the code does "
                                  r"not declare \(did you mean [‘'`]a::E[’']\?\)"),
    (ENUM, "static_cast<void(*)(float*)>(&a::b::k<a::b::E::x>)",
     r"\(name_expressions names 'a::b::E', which the code does not declare; did you mean [‘'`]a::E[’']\?"),
    (OVERLOADED, "k<flaot>", r"^name_expressions names 'k<flaot>', whose `flaot` the code does not declare \(did you "
                             r"mean [‘'`]float[’']\?\)"),
    # TransformerEngine's norms: a template behind __launch_bounds__(T::N), given too few arguments
    (BOUNDED, "b<Size>", r"^name_expressions names 'b<Size>', which is no instance of the kernel template `b` .*too "
                         r"few or too many"),
    # the code's own error comes first, as NVRTC reports it: a kernel whose template line was lost
    ("__global__ void k(T* out) { out[0] = T(1); }\n", "k<float>",
     r"(?s)does not compile for the CPU.*\n\(RawModule code\):1:\d+: error: [‘'`]T[’'] was not declared"),
], ids=["overloads", "no-template", "plain-overloads",
        "namespace-left-out", "no-such-kernel", "no-such-enumerator", "enum-elsewhere",
        "enum-elsewhere-in-a-cast", "unknown-type", "launch-bounds", "template-line-lost"])
def test_a_name_expression_that_names_no_instance_says_why(code, expression, message):
    # until 2026-11-27 each said its template arguments "do not fit the template's parameters", named the
    # runner's own run_thread, or was the compiler's page about the runner's instance table
    with pytest.raises(KernelBuildError, match=message):
        RawModule(code=code, name_expressions=(expression,)).get_function(expression)


def test_overloaded_kernels_of_a_header_named_alone_are_refused_in_one_line(tmp_path):
    # the header's overloads were GCC's page about the runner's instance table
    (tmp_path / "book.h").write_text(PLAIN_OVERLOADS)
    module = RawModule(code='#include "book.h"\n', options=(f"-I{tmp_path}",), name_expressions=("f",))
    with pytest.raises(KernelBuildError, match=r"^name_expressions names 'f', but the code declares several kernels "
                                               r"named `f` \(overloads\): .*NVRTC refuses 'f' on a GPU too$"):
        module.get_function("f")
    chosen = "static_cast<void(*)(float*)>(f)"
    out = np.zeros(1, np.float32)
    RawModule(code='#include "book.h"\n', options=(f"-I{tmp_path}",), name_expressions=(chosen,)).get_function(
        chosen)((1,), (1,), (out,))
    assert out.tolist() == [2]


def test_one_of_overloaded_kernel_templates_is_named_by_its_type():
    chosen = "static_cast<void(*)(float*, int)>(k<float>)"
    out = np.zeros(4, np.float32)
    RawModule(code=OVERLOADED, name_expressions=(chosen,)).get_function(chosen)((1,), (4,), (out, np.int32(3)))
    assert out.tolist() == [1, 1, 1, 0]


@pytest.mark.parametrize("check", [False, True])
def test_a_name_expression_of_a_device_function_is_refused_in_one_line_as_nvrtc_refuses_it(check):
    # NVRTC: "Name expression cannot form address of a non-__global__ function"; the host compiler's
    # message was about the runner's instance table, with the code's kernel instance beside it.
    code = ("template <typename T> __device__ T twice(T x) { return 2 * x; }\n"
            "template <typename T> __global__ void double_all(T* v) { v[threadIdx.x] = twice(v[threadIdx.x]); }\n")
    module = RawModule(code=code, name_expressions=("double_all<float>", "twice<float>"), check=check)
    with pytest.raises(KernelBuildError, match=r"^name_expressions names 'twice<float>', a __device__ function of "
                                               r"the code: .*non-__global__ function\"\)$"):
        module.get_function("double_all<float>")
    values = np.arange(4, dtype=np.float32)
    RawModule(code=code, name_expressions=("double_all<float>",), check=check).get_function("double_all<float>")(
        (1,), (4,), (values,))
    assert values.tolist() == [0, 2, 4, 6]


def test_an_extern_c_kernel_is_found_behind_launch_bounds_with_parentheses_in_them():
    # PyTorch's C10_LAUNCH_BOUNDS_1(256) is __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((256)))): the
    # kernel finder stopped at the first inner parenthesis and took `__launch_bounds__` for the
    # kernel's name (a build error about a name expression the call never gave)
    code = """
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 1024)
#define C10_LAUNCH_BOUNDS_1(max_threads) __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((max_threads))))
extern "C" __global__ void C10_LAUNCH_BOUNDS_1(256) fill_macro(int* out) { out[threadIdx.x] = 1; }
extern "C" __global__ void __launch_bounds__((128), (2)) fill_nested(int* out) { out[threadIdx.x] = 2; }
"""
    module = RawModule(code=code)
    for name, value in (("fill_macro", 1), ("fill_nested", 2)):
        out = np.zeros(4, np.int32)
        module.get_function(name)((1,), (4,), (out,))
        assert out.tolist() == [value] * 4

POINTER_IN_A_STRUCT = r"""
// A column of a matrix as a struct that holds its elements' address, as course solutions pass
// matrices: data[i] += 1 (a read and a write of memory that is no argument).
struct Column {
    int rows;
    float* data;
};
extern "C" __global__ void increment(Column column, float* scaled, const float* x)
{
    const int i = threadIdx.x;
    if (i < column.rows) {
        column.data[i] += 1.0f;
        scaled[i] = 2.0f * x[i];
    }
}
"""


def test_the_checking_mode_runs_once_a_kernel_that_reaches_memory_through_a_struct(capfd):
    # The checking mode runs a launch twice from the same start (its arguments put back between the
    # runs). Memory reached through a pointer in a struct is no argument: run twice, it was
    # incremented twice. The launch now runs once, saying why.
    module = RawModule(code=POINTER_IN_A_STRUCT, check=True)
    data, scaled, x = np.zeros(8, np.float32), np.full(8, np.nan, np.float32), np.arange(8, dtype=np.float32)
    column = np.array((8, data.ctypes.data), dtype=np.dtype([("rows", np.int32), ("data", np.uint64)], align=True))
    for _ in range(2):
        module.get_function("increment")((1,), (8,), (column, scaled, x))
    np.testing.assert_array_equal(data, 2.0)
    np.testing.assert_array_equal(scaled, 2 * x)
    err = capfd.readouterr().err
    assert err.count("increment: args[0] (its bytes 8 to 15) holds a pointer to memory that is no argument") == 1
    # each pointer of the struct is named (gsplat's accumulators hold five; the first alone was named)
    twice = np.array((8, data.ctypes.data, scaled.ctypes.data), dtype=np.dtype(
        [("rows", np.int32), ("data", np.uint64), ("more", np.uint64)], align=True))
    RawModule(code=POINTER_IN_A_STRUCT.replace("float* data;", "float* data;\n    float* more;"),
              check=True).get_function("increment")((1,), (8,), (twice, scaled, x))
    assert "increment: args[0] (its bytes 8 to 15 and 16 to 23) holds a pointer" in capfd.readouterr().err
    # and each struct argument that holds one (faiss's transposeAny: its input and its output; the
    # first alone was named until 2026-11-27)
    two = POINTER_IN_A_STRUCT.replace("float* scaled,", "Column other,").replace("scaled[i] = 2.0f * x[i];",
                                                                                 "other.data[i] = 2.0f * x[i];")
    other = np.array((8, scaled.ctypes.data), dtype=column.dtype)
    RawModule(code=two, check=True).get_function("increment")((1,), (8,), (column, other, x))
    assert ("increment: args[0] (its bytes 8 to 15) and args[1] (its bytes 8 to 15) each hold a pointer to memory "
            "that is no argument") in capfd.readouterr().err
    # a struct of values (the same bytes, no address in them) keeps the comparison of two orders
    RawModule(code=BY_VALUE, check=True).get_function("by_value")(
        (1,), (4,), (scaled, x, np.array([(2.0, 3)], dtype=[("s", np.float32), ("t", np.int32)]),
               np.zeros(1, [(c, np.float32) for c in "xyzw"]), np.int16(1)))
    assert "holds a pointer" not in capfd.readouterr().err


def test_define_and_include_options_reach_the_code(tmp_path):
    headers = tmp_path / "headers"
    headers.mkdir()
    (headers / "offset.cuh").write_text("#define OFFSET 100\n")
    code = r"""
    #include "offset.cuh"
    #if SCALE == 3
    extern "C" __global__ void affine(int* out) { out[threadIdx.x] = SCALE * threadIdx.x + OFFSET; }
    #else
    extern "C" __global__ void other(int* out) { out[threadIdx.x] = -1; }
    #endif
    """
    module = RawModule(code=code, options=("-std=c++17", "-DSCALE=3", f"-I{headers}", "--use_fast_math"))
    out = np.full(5, -7, dtype=np.int32)
    module.get_function("affine")((1,), (5,), (out,))
    np.testing.assert_array_equal(out, 3 * np.arange(5) + 100)
    # the kernel under the #if branch not taken is not part of the module
    with pytest.raises(LookupError, match="no kernel 'other'"):
        module.get_function("other")
    # an edit to the header builds again (the cache is keyed by every file the preprocessor read)
    (headers / "offset.cuh").write_text("#define OFFSET 200\n")
    RawModule(code=code, options=("-DSCALE=3", f"-I{headers}")).get_function("affine")((1,), (5,), (out,))
    np.testing.assert_array_equal(out, 3 * np.arange(5) + 200)
    with pytest.raises(ValueError, match=r"'-O3' is an option of nvcc, which NVRTC refuses as well"):
        RawModule(code=code, options=("-O3",))


def test_an_array_whose_integers_differ_only_in_sign_is_told_how_to_pass_its_bytes():
    # OpenMM passes one buffer as unsigned long long* to one kernel and long long* to the next: CuPy passes
    # the pointer whatever the dtype; the runner checks the dtype, and says since 2026-11-28 how to pass it
    code = r"""
    extern "C" __global__ void halve(const long long* a, long long* out) { out[threadIdx.x] = a[threadIdx.x] / 2; }"""
    halve = RawModule(code=code).get_function("halve")
    grid = np.array([2**40, 6], np.uint64)
    out = np.zeros(2, np.int64)
    with pytest.raises(TypeError, match=r"argument 0 \(const long long\*\) takes an array of int64, got an array of "
                                        r"uint64: pass x.view\(np.int64\) to give its bytes as int64$"):
        halve((1,), (2,), (grid, out))
    halve((1,), (2,), (grid.view(np.int64), out))
    assert out.tolist() == [2**39, 3]
    with pytest.raises(TypeError, match=r"argument 0 \(const long long\*\) takes an array of int64, got an array of "
                                        r"float64$"):  # no view of other bytes is offered
        halve((1,), (2,), (np.ones(2), out))


def test_arguments_that_do_not_fit_the_signature_raise_a_type_error_naming_the_parameter():
    kernel = RawModule(code=SAXPY).get_function("saxpy")
    y, x = np.zeros(4, np.float32), np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"saxpy takes 4 arguments \(float\*, const float\*, float, int\), got 3"):
        kernel((1,), (4,), (y, x, np.float32(1)))
    with pytest.raises(TypeError, match=r"argument 1 \(const float\*\) takes an array of float32, got an array "
                                        r"of float64"):
        kernel((1,), (4,), (y, np.ones(4), np.float32(1), 4))
    with pytest.raises(TypeError, match=r"argument 3 \(int\) takes a numpy.int32, got a numpy.int16"):
        kernel((1,), (4,), (y, x, np.float32(1), np.int16(4)))  # 2 bytes, of which a GPU would read 4
    with pytest.raises(TypeError, match=r"argument 3 \(int\): 4294967296 is outside the range of int32"):
        kernel((1,), (4,), (y, x, np.float32(1), np.int64(2**32)))
    wider = np.zeros(4, np.float32)
    kernel((1,), (4,), (wider, x, np.float32(2), np.int64(3)))  # a wider integer: its first bytes, the number
    np.testing.assert_array_equal(wider, [2, 2, 2, 0])
    with pytest.raises(TypeError, match=r"argument 2 \(float\) takes a numpy.float32, got a numpy.float64"):
        kernel((1,), (4,), (y, x, np.float64(1), 4))
    with pytest.raises(TypeError, match=r"argument 3 \(int\): 4294967296 is outside the range of int32"):
        kernel((1,), (4,), (y, x, np.float32(1), 2**32))
    with pytest.raises(TypeError, match=r"argument 0 \(float\*\) takes an array whose elements lie forward from its "
                                        r"first one, got a view with a negative or zero stride"):
        kernel((1,), (4,), (np.zeros(8, np.float32)[::-2], x, np.float32(1), 4))
    # what CuPy passes as other bits than the number on a GPU (a Python float is a double, an int a long
    # long: an H100 read 1.5 as 0.0 and 3 as 4.2e-45 in a float parameter)
    with pytest.raises(TypeError, match=r"argument 2 \(float\) takes a numpy.float32, got a Python float: CuPy "
                                        r"passes a Python float as a double"):
        kernel((1,), (4,), (y, x, 1.5, 4))
    with pytest.raises(TypeError, match=r"argument 2 \(float\) takes a numpy.float32, got a Python int: CuPy "
                                        r"passes a Python int as a long long"):
        kernel((1,), (4,), (y, x, 3, 4))
    with pytest.raises(TypeError, match=r"argument 0 \(float\*\) takes a NumPy array, or the address of an element "
                                        r"of device memory .*, got 0x3039, which lies in no such array: pass the array"):
        kernel((1,), (4,), (12345, x, 1.0, 4))
    assert not y.any()  # nothing ran
    # a parameter of a type no argument can be passed to is refused when the kernel is asked for
    references = RawModule(code='extern "C" __global__ void rows(int* out, float& row) {}\n')
    with pytest.raises(TypeError, match=r"rows: parameter 1 has a type the CPU runner cannot pass .*\(int\*, float&\)"):
        references.get_function("rows")


BY_VALUE = r"""
#include <cuda/std/type_traits>

struct Affine {
    float scale;
    int shift;
};
enum class Op : short { add = 1, multiply = 2 };

// out[i] = op(x[i] * a.scale + a.shift, v.x + v.w): a struct, a vector type and an enum by value.
extern "C" __global__ void by_value(float* out, const float* x, Affine a, float4 v, Op op)
{
    const int i = threadIdx.x;
    const float y = x[i] * a.scale + a.shift;
    out[i] = op == Op::add ? y + (v.x + v.w) : y * (v.x + v.w);
}

// Each thread swaps the halves of its float4: vector types pointed to.
extern "C" __global__ void swap_halves(float4* out, const float4* in)
{
    const float4 v = in[threadIdx.x];
    out[threadIdx.x] = make_float4(v.z, v.w, v.x, v.y);
}

// An empty tag type picks the instance, as llm.c's matmul_backward_bias kernels 8 and 9 do.
template <bool Accumulate>
__global__ void tagged(float* out, cuda::std::bool_constant<Accumulate>)
{
    out[threadIdx.x] = Accumulate ? out[threadIdx.x] + 1.0f : 1.0f;
}
"""


def test_structs_vector_types_enums_and_tags_pass_by_value_as_cupy_passes_them():
    module = RawModule(code=BY_VALUE, name_expressions=("tagged<true>",))
    kernel = module.get_function("by_value")
    assert kernel.signature == ("float*", "const float*", "struct of 8 bytes", "struct of 16 bytes", "short")
    affine = np.array([(2.0, 3)], dtype=[("scale", np.float32), ("shift", np.int32)])  # a one-element array
    vector = np.array((0.5, 9.0, 9.0, 1.0), dtype=[(c, np.float32) for c in "xyzw"])[()]  # a scalar (numpy.void)
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    kernel((1,), (4,), (out, x, affine, vector, np.int16(2)))
    np.testing.assert_array_equal(out, (2 * x + 3) * 1.5)
    kernel((1,), (4,), (out, x, affine, vector, 1))
    np.testing.assert_array_equal(out, 2 * x + 3 + 1.5)
    with pytest.raises(TypeError, match=r"argument 2 \(struct of 8 bytes\) takes a NumPy scalar or a one-element "
                                        r"array of 8 byte\(s\) .*, got an array of float32 of 4 byte\(s\)"):
        kernel((1,), (4,), (out, x, np.ones(1, np.float32), vector, 1))
    swap = module.get_function("swap_halves")
    assert swap.signature == ("struct of 16 bytes*", "const struct of 16 bytes*")
    data = np.arange(8, dtype=np.float32)
    swapped = np.zeros(8, np.float32)
    swap((1,), (2,), (swapped, data))  # float32 arrays, as a CuPy user passes them
    np.testing.assert_array_equal(swapped, [2, 3, 0, 1, 6, 7, 4, 5])
    tagged = module.get_function("tagged<true>")
    assert tagged.signature == ("float*", "struct of 1 byte")
    tagged((1,), (4,), (out, np.bool_(True)))  # CuPy passes the tag as one byte too
    np.testing.assert_array_equal(out, 2 * x + 3 + 2.5)


def test_a_write_past_the_end_in_the_checking_mode_raises_kernel_error(monkeypatch):
    monkeypatch.setenv("NN_CUDA_CPU_CHECK", "1")  # check=None follows the environment
    module = RawModule(code=SAXPY)
    assert module.check
    kernel = module.get_function("saxpy")
    y, x = np.zeros(40, np.float32), np.ones(64, np.float32)  # y is read: it is not poisoned
    kernel((2,), (32,), (y, x, np.float32(3.0), 40))  # the correct bound: runs
    np.testing.assert_array_equal(y, 3)
    # n larger than y: threads 8..31 of block 1 write past its end (in a shuffled order)
    with pytest.raises(KernelError, match=r"saxpy: an invalid memory access: an access (\d+) element\(s\) past the "
                                          r"end of args\[0\] in thread \((\d+), 0, 0\) of block \(1, 0, 0\)") as raised:
        kernel((2,), (32,), (y, x, np.float32(3.0), 64))
    past, thread = (int(v) for v in re.search(r"an access (\d+) .* thread \((\d+),", str(raised.value)).groups())
    assert past == 32 + thread - 40 + 1 and thread >= 8
    np.testing.assert_array_equal(y, 3)  # a failed launch leaves the arrays as they were
    kernel((2,), (32,), (y, x, np.float32(1.0), 40))  # Python survives, and the module still runs
    np.testing.assert_array_equal(y, 4)


def test_the_projects_naive_gemm_runs_through_raw_module():
    filename = kernel_info.GEMM_KERNEL_FILES["naive"]
    module = RawModule(code=kernel_info.kernel_source(filename), options=kernel_info.compile_options(),
                       name_expressions=kernel_info.name_expressions(filename))
    M, N, K = 19, 37, 11
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((M, K)), rng.standard_normal((N, K))  # B transposed
    for dtype, name, tolerance in ((np.float64, "double", 1e-14), (np.float32, "float", 1e-6)):
        kernel = module.get_function(kernel_info.gemm_kernel_name("naive", dtype, False, True))
        assert kernel.signature[:3] == (f"const {name}*", f"const {name}*", f"{name}*")
        C = np.full((M, N), np.nan, dtype=dtype)
        kernel(((N + 31) // 32, (M + 7) // 8), (32, 8), (A.astype(dtype), B.astype(dtype), C, M, N, K, dtype(1), dtype(0)))
        reference = A @ B.T
        assert np.linalg.norm(C - reference) / np.linalg.norm(reference) < tolerance


def test_an_unwritten_shared_element_is_caught_in_a_kernel_that_is_not_a_template(monkeypatch):
    # __shared__ arrays of extern "C" and plain kernels are local symbols the library does not export:
    # the checking mode NaN-fills them too (it used to reach template instances only).
    code = r"""
    extern "C" __global__ void mirror(float* out)
    {
        __shared__ float tile[32];
        if (threadIdx.x != 5) {
            tile[threadIdx.x] = 1.0f;
        }
        __syncthreads();
        out[threadIdx.x] = tile[31 - threadIdx.x];
    }
    __global__ void plain_mirror(float* out)
    {
        __shared__ float tile[32];
        if (threadIdx.x != 5) {
            tile[threadIdx.x] = 1.0f;
        }
        __syncthreads();
        out[threadIdx.x] = tile[31 - threadIdx.x];
    }
    """
    module = RawModule(code=code, name_expressions=("plain_mirror",), check=True)
    for name in ("mirror", "plain_mirror"):
        # the array is named: the launch runs again with one __shared__ array NaN-filled at a time
        with pytest.raises(KernelError, match=rf"{name}: 1 element\(s\) of args\[0\] hold NaN after the first of its two runs "
                                              r"\(first at index \(26,\)\) though no input did: the kernel read "
                                              rf"__shared__ `tile` \(in {name}\) where no thread of the block had "
                                              r"written it"):
            module.get_function(name)((1,), (32,), (np.zeros(32, np.float32),))


def test_function_local_statics_that_are_no_shared_arrays_are_left_alone_by_the_checking_mode():
    # A library may hold function-local statics that are not __shared__ arrays: GCC 13 (Ubuntu 24.04)
    # links the C++ runtime's per-thread exception globals into it, a thread_local whose symbol value
    # is an offset in the thread's storage, not an address. Taken for a __shared__ array, it was
    # NaN-filled at the library's load address, and every launch in the checking mode faulted there
    # (seen on an H200 machine, 2026-11-26). A thread_local of the code itself is the same case here.
    code = r"""
    static int& calls() { static thread_local int count[4]; return count[0]; }
    extern "C" int touch_calls() { return ++calls(); }
    extern "C" __global__ void scale(float* out)
    {
        __shared__ float tile[32];
        tile[threadIdx.x] = 2.0f * threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = tile[31 - threadIdx.x];
    }
    """
    out = np.full(32, np.nan, np.float32)
    RawModule(code=code, check=True).get_function("scale")((1,), (32,), (out,))
    np.testing.assert_array_equal(out, 2.0 * np.arange(31, -1, -1))


def test_a_diagnosis_rerun_that_faults_leaves_the_first_report():
    # The rerun that names the array fills shared memory with zeros, which takes this kernel to a
    # store past the end of its output: that rerun's fault must not replace the first run's report.
    code = r"""
    extern "C" __global__ void zero_goes_astray(float* out)
    {
        __shared__ float tile[32];
        if (threadIdx.x != 5) {
            tile[threadIdx.x] = 1.0f;
        }
        __syncthreads();
        const float v = tile[31 - threadIdx.x];
        if (v == 0.0f) {
            out[blockDim.x] = v;  // past the end (a guard page): only ever reached with the rerun's zeros
        }
        out[threadIdx.x] = v;
    }
    """
    kernel = RawModule(code=code, check=True).get_function("zero_goes_astray")
    out = np.zeros(32, np.float32)
    # (the zeros' rerun ends in a fault; the mirrored run's 0x7F fill names the array without one)
    with pytest.raises(KernelError, match=r"zero_goes_astray: the result depends on what __shared__ memory held "
                                          r"before the launch: args\[0\]\[26\] is nan with the first fill .* the "
                                          r"kernel read __shared__ `tile` \(in zero_goes_astray\) where no thread"):
        kernel((1,), (32,), (out,))
    tile_written = RawModule(code=code.replace("threadIdx.x != 5", "true"), check=True)
    tile_written.get_function("zero_goes_astray")((1,), (32,), (out,))  # the process and the runner go on
    assert out.tolist() == [1.0] * 32


CHAIN = r"""
// Block b reads what block b + 1 writes: a race between blocks, whose result depends on their order.
extern "C" __global__ void chain(int* out, int n)
{
    if (threadIdx.x == 0) {
        out[blockIdx.x] = out[(blockIdx.x + 1) % n] + 1;
    }
}
"""


def test_the_checking_mode_runs_blocks_in_random_orders_so_a_race_between_blocks_shows(monkeypatch):
    out = np.zeros(32, np.int32)
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "1")  # the plain mode with its blocks one after another
    RawModule(code=CHAIN, check=False).get_function("chain")((32,), (32,), (out, np.int32(32)))  # in order: no report
    assert out.tolist() == [1] * 31 + [2]
    with pytest.raises(KernelError, match=r"chain: the result depends on the order"):
        RawModule(code=CHAIN, check=True).get_function("chain")((32,), (32,), (np.zeros(32, np.int32), np.int32(32)))


SCRATCH = r"""
// Each block reverses its 32 values of x through one global scratch array that all blocks share (the
// bug: it should be __shared__, or indexed by block). One block at a time, as the plain mode runs
// them on one host thread, it gives the right result in any order of the blocks.
__device__ float scratch[32];
extern "C" __global__ void reverse_through_global(const float* x, float* out)
{
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    scratch[t] = x[base + t];
    __syncthreads();
    out[base + t] = scratch[blockDim.x - 1 - t];
}

// The same through a __shared__ array declared at file scope, which is each block's own; with
// `skip`, thread 0 leaves its element unwritten.
__shared__ float file_tile[32];
extern "C" __global__ void reverse_through_file_shared(const float* x, float* out, int skip)
{
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    if (!(skip && t == 0)) {
        file_tile[t] = x[base + t];
    }
    __syncthreads();
    out[base + t] = file_tile[blockDim.x - 1 - t];
}
"""


def test_blocks_take_turns_in_the_checking_mode_so_global_scratch_shared_by_blocks_shows(monkeypatch):
    x = np.arange(8 * 32, dtype=np.float32)
    reversed_blocks = x.reshape(8, 32)[:, ::-1].reshape(-1)
    out = np.full_like(x, np.nan)
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "1")  # the plain mode with its blocks one after another
    RawModule(code=SCRATCH, check=False).get_function("reverse_through_global")((8,), (32,), (x, out))
    np.testing.assert_array_equal(out, reversed_blocks)  # one block at a time: the bug cannot show
    # in the checking mode up to 4 blocks are resident and take turns barrier to barrier, as on a GPU
    with pytest.raises(KernelError, match=r"reverse_through_global: the result depends on the order .* or blocks "
                                          r"share global memory that one of them writes"):
        RawModule(code=SCRATCH, check=True).get_function("reverse_through_global")((8,), (32,), (x, out))


def test_a_file_scope_shared_array_is_each_blocks_own_and_filled_with_nan_in_the_checking_mode():
    module = RawModule(code=SCRATCH, check=True)
    kernel = module.get_function("reverse_through_file_shared")
    x = np.arange(8 * 32, dtype=np.float32)
    out = np.full_like(x, np.nan)
    kernel((8,), (32,), (x, out, np.int32(0)))  # blocks take turns, each with its own copy: no race
    np.testing.assert_array_equal(out, x.reshape(8, 32)[:, ::-1].reshape(-1))
    with pytest.raises(KernelError, match=r"reverse_through_file_shared: 8 element\(s\) of args\[1\] hold NaN after "
                                          r"the first of its two runs \(first at index \(31,\)\) though no input did: the kernel "
                                          r"read __shared__ `file_tile` where no thread"):
        kernel((8,), (32,), (x, out, np.int32(1)))


FIRST_WARP_REDUCES = r"""
// The warps after the first return at once; the first sums the block's 32 values of x in shared
// memory over five barriers, which the returned threads must not hold up (as on a GPU).
extern "C" __global__ void first_warp_sums(const float* x, float* out)
{
    __shared__ float s[32];
    if (threadIdx.x >= 32) {
        return;
    }
    s[threadIdx.x] = x[blockIdx.x * 32 + threadIdx.x];
    for (int half = 16; half > 0; half /= 2) {
        __syncthreads();
        if (threadIdx.x < half) {
            s[threadIdx.x] += s[threadIdx.x + half];
        }
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = s[0];
    }
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_warps_that_return_before_the_barriers_do_not_hold_them_up(check):
    kernel = RawModule(code=FIRST_WARP_REDUCES, check=check).get_function("first_warp_sums")
    x = np.random.default_rng(3).random(6 * 32).astype(np.float32)
    out = np.full(6, np.nan, np.float32)
    kernel((6,), (128,), (x, out))
    np.testing.assert_allclose(out, x.reshape(6, 32).sum(axis=1, dtype=np.float64), rtol=1e-6)


@pytest.mark.parametrize("grid, block", [((1, 70000), (1,)), ((1,), (1, 1, 128)), ((1,), (2048,)),
                                         ((1,), (64, 32))])
def test_a_launch_beyond_a_gpus_limits_is_refused(grid, block):
    with pytest.raises(KernelError, match=r"chain: invalid launch shape: .* a GPU takes 1 to 1024 threads a block"):
        RawModule(code=CHAIN).get_function("chain")(grid, block, (np.zeros(4, np.int32), np.int32(4)))


def test_more_than_48_kib_of_static_shared_memory_is_refused_as_ptxas_refuses_it():
    # 64 KiB of static __shared__ fails in ptxas on every GPU; 48 KiB is the most a block declares.
    code = """
    extern "C" __global__ void big(float* out)
    {
        __shared__ float tile[SIZE];
        tile[threadIdx.x] = threadIdx.x;
        tile[SIZE - 1 - threadIdx.x] = 0;  // the array's last elements: the whole size is used
        __syncthreads();
        out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] + tile[SIZE - 1 - threadIdx.x];
    }
    """
    with pytest.raises(KernelError, match=r"big declares 65536 bytes of __shared__ memory, more than the 49152 "
                                          r"\(48 KiB\) a GPU allows statically"):
        RawModule(code=code, options=("-DSIZE=16384",)).get_function("big")
    out = np.full(32, np.nan, np.float32)
    RawModule(code=code, options=("-DSIZE=12288",)).get_function("big")((1,), (32,), (out,))  # 48 KiB: runs
    assert np.array_equal(out, np.arange(31, -1, -1, dtype=np.float32))
    # a template kernel's arrays are weak symbols where blocks run on several host threads: such a kernel
    # built in the plain mode until 2026-11-27
    template = code.replace('extern "C" __global__ void big', "template <int N> __global__ void big")
    with pytest.raises(KernelError, match=r": big<1>\(float\*\) declares 65536 bytes of __shared__ memory"):
        RawModule(code=template, options=("-DSIZE=16384",), name_expressions=("big<1>",),
                  check=False).get_function("big<1>")


DEAD_BRANCH_ARRAY = r"""
// StyleGAN3's filtered_lrelu: an instance for 96 KiB takes its buffer from extern __shared__ memory,
// and the branch that declares a static one, sized absurdly for that instance, is ruled out by the
// template argument: NVRTC drops the array, as GCC does here when nothing keeps it
extern __shared__ float dynamic_buffer[];
template <int SHARED_KB> __global__ void reverse(const float* x, float* y)
{
    float* buffer;
    if (SHARED_KB <= 48) {
        __shared__ float own[(SHARED_KB > 48) ? (1 << 24) : 256];
        buffer = own;
    } else {
        buffer = dynamic_buffer;
    }
    buffer[threadIdx.x] = 2.0f * x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = buffer[255 - threadIdx.x];
}
"""


@pytest.mark.parametrize("check", [False, True])
def test_a_static_shared_array_of_a_branch_the_compiler_removes_is_not_counted(check):
    # the 64 MiB array of the dead branch stopped the whole module until 2026-11-27
    module = RawModule(code=DEAD_BRANCH_ARRAY, name_expressions=("reverse<48>", "reverse<96>"), check=check)
    x = np.arange(256, dtype=np.float32)
    for name, shared in (("reverse<48>", 0), ("reverse<96>", 96 * 1024)):
        kernel, y = module.get_function(name), np.full(256, np.nan, np.float32)
        kernel.max_dynamic_shared_size_bytes = max(shared, 48 * 1024)
        kernel((1,), (256,), (x, y), shared_mem=shared)
        assert np.array_equal(y, 2 * x[::-1]), name
    # where the branch is live, the array counts: a GPU refuses it too
    with pytest.raises(KernelError, match=r"reverse<96>\(.*\) declares 67108864 bytes of __shared__ memory"):
        RawModule(code=DEAD_BRANCH_ARRAY.replace("if (SHARED_KB <= 48)", "if (x[0] < 1e30f)"),
                  name_expressions=("reverse<96>",), check=check).get_function("reverse<96>")

def test_the_static_shared_limit_is_per_function_and_a_device_array_in_a_namespace_is_not_shared():
    # Two kernels of 40 KiB each are two blocks' worth, each within the limit; the 80,000-byte
    # __device__ array of a namespace was counted as __shared__ memory of a function named `table`
    # and refused
    code = """
    namespace table { __device__ float big[20000]; }
    #define TILE_KERNEL(name, offset) \\
    extern "C" __global__ void name(float* out) \\
    { \\
        __shared__ float tile[10240]; \\
        tile[10239 - threadIdx.x] = threadIdx.x + offset; \\
        table::big[19999 - threadIdx.x] = 2 * threadIdx.x; \\
        __syncthreads(); \\
        out[threadIdx.x] = tile[10239 - threadIdx.x] + table::big[19999 - threadIdx.x]; \\
    }
    TILE_KERNEL(first, 0)
    TILE_KERNEL(second, 100)
    """
    module = RawModule(code=code)
    for name, offset in (("first", 0), ("second", 100)):
        out = np.full(32, np.nan, np.float32)
        module.get_function(name)((1,), (32,), (out,))
        assert np.array_equal(out, 3 * np.arange(32, dtype=np.float32) + offset)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts the process's memory mappings (Linux)")
def test_every_library_runs_its_threads_on_the_process_pool_of_stacks():
    # Each library used to map stacks of its own, a stack and its guard page two mappings: 8,200 for
    # a checking launch of 1024 threads, so a process that had loaded 8 such libraries reached the
    # kernel's limit (vm.max_map_count, 65,530) and could load no more (CI: "failed to map segment").
    code = 'extern "C" __global__ void fill(float* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }\n'

    def mappings():
        return len(Path("/proc/self/maps").read_text().splitlines())

    out = np.zeros(8 * 1024, np.float32)
    RawModule(code=code, check=True).get_function("fill")((8,), (1024,), (out,))
    before = mappings()
    for copy in range(2):
        RawModule(code=code + f"// copy {copy}\n", check=True).get_function("fill")((8,), (1024,), (out,))
    assert mappings() - before < 2 * 100  # a library's own segments, not thousands of stacks
    assert out.tolist() == [1.0] * out.size


MULTIPLY_ADD = r"""
extern "C" __global__ void multiply_add(float* out, const float* a, const float* b, const float* c)
{
    out[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x] + c[threadIdx.x];
}
"""


@pytest.mark.parametrize("fma", [False, True])
def test_nn_cuda_cpu_fma_fuses_a_multiply_add_as_nvrtc_does(monkeypatch, fma):
    """(1 + 2^-12)^2 - 1 is 2^-11 + 2^-24 exactly. Rounded after the multiply (no contraction, the
    default), the 2^-24 is lost (a tie, rounded to even); fused (NVRTC's default on a GPU, and
    NN_CUDA_CPU_FMA=1 here) it stays."""
    from nn_cuda import host_compiler
    from nn_cuda.cuda_cpu import build

    if fma and host_compiler.is_x86_64() and not host_compiler.has_fma(build.find_compiler()):
        pytest.skip("this processor has no FMA instruction")
    if fma:
        monkeypatch.setenv("NN_CUDA_CPU_FMA", "1")
    a = np.full(4, 1 + 2.0**-12, dtype=np.float32)
    c = np.full(4, -1.0, dtype=np.float32)
    out = np.full(4, np.nan, dtype=np.float32)
    RawModule(code=MULTIPLY_ADD).get_function("multiply_add")((1,), (4,), (out, a, a, c))
    expected = 2.0**-11 + 2.0**-24 if fma else 2.0**-11
    assert np.all(out == np.float32(expected)), out


FILE_SCOPE_DYNAMIC = r"""
extern __shared__ float buffer[];  // at file scope: one region per host thread all the same
extern "C" __global__ void reverse_through_dynamic(const float* x, float* out)
{
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buffer[t] = x[base + t];
    __syncthreads();
    out[base + t] = buffer[blockDim.x - 1 - t];
}
"""


ALIGNED_DECLARATIONS = ("__shared__ __align__(16) float tile[64];", "__shared__ alignas(16) float tile[64];",
                        "__align__(16) __shared__ float tile[64];",
                        "alignas(alignof(float4)) __shared__ float tile[64];", "__shared__ float __align__(16) tile[64];",
                        # `static` beside __shared__, as CUDA allows it (it stopped the build: `static static`)
                        "static __shared__ __align__(16) float tile[64];", "__shared__ static __align__(16) float tile[64];")


def test_an_aligned_shared_array_compiles_in_every_order_cuda_takes():
    # `__shared__ __align__(16) float tile[...]`, common in GEMM code, did not compile: __align__ was
    # C++'s alignas, which may not follow `static` (what __shared__ is here) among the specifiers.
    code = "".join(f'extern "C" __global__ void reverse{i}(float* out, unsigned long long* address)\n{{\n'
                   f"    {declaration}\n    tile[threadIdx.x] = threadIdx.x;\n    __syncthreads();\n"
                   "    out[threadIdx.x] = tile[63 - threadIdx.x];\n"
                   "    address[0] = reinterpret_cast<unsigned long long>(tile);\n}\n"
                   for i, declaration in enumerate(ALIGNED_DECLARATIONS))
    module = RawModule(code=code)
    for i in range(len(ALIGNED_DECLARATIONS)):
        out, address = np.zeros(64, np.float32), np.zeros(1, np.uint64)
        module.get_function(f"reverse{i}")((1,), (64,), (out, address))
        np.testing.assert_array_equal(out, np.arange(64)[::-1])
        assert address[0] % 16 == 0, ALIGNED_DECLARATIONS[i]


SHARED_MEMORY_HEADER = """#pragma once
// cuda-samples' idiom: a struct whose conversion hands out the block's dynamic shared memory
template <class T> struct SharedMemory {
    __device__ inline operator T*() { extern __shared__ int __smem[]; return (T*)__smem; }
};
#define BUILD_SHARED_DOUBLES(n) \\
    __device__ double* shared_doubles() \\
    { \\
        extern __shared__ double n[]; \\
        return n; \\
    }
BUILD_SHARED_DOUBLES(s_double)
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_extern_shared_in_an_included_header_is_the_dynamic_shared_memory(tmp_path, check):
    # A header reached through quoted includes (two levels, one inside a macro's definition) declared
    # extern __shared__ arrays the runner did not rewrite: the build stopped ("conflicting specifiers").
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "shared_memory.cuh").write_text(SHARED_MEMORY_HEADER)
    (tmp_path / "outer.cuh").write_text('#pragma once\n#include "inner/shared_memory.cuh"\n')
    code = r"""
    #include "outer.cuh"
    // out = x reversed, through the dynamic shared memory as floats; sums[0] = the sum as doubles
    extern "C" __global__ void reverse(const float* x, float* out, double* sums, int n)
    {
        float* tile = SharedMemory<float>();
        tile[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        out[threadIdx.x] = tile[n - 1 - threadIdx.x];
        __syncthreads();
        double* total = shared_doubles();
        if (threadIdx.x == 0) {
            total[0] = 0.0;
            for (int i = 0; i < n; ++i) {
                total[0] += out[i];
            }
            sums[0] = total[0];
        }
    }
    """
    module = RawModule(code=code, options=(f"-I{tmp_path}",), check=check)
    x, out, sums = np.arange(64, dtype=np.float32), np.full(64, np.nan, np.float32), np.full(1, np.nan)
    module.get_function("reverse")((1,), (64,), (x, out, sums, np.int32(64)), shared_mem=64 * 4)
    np.testing.assert_array_equal(out, x[::-1])
    assert sums[0] == x.sum()
    # an edit of the header builds again; an error in it names the header's own file and line
    (tmp_path / "inner" / "shared_memory.cuh").write_text(SHARED_MEMORY_HEADER + "oops\n")
    with pytest.raises(KernelBuildError, match=rf"{re.escape(str(tmp_path / 'inner' / 'shared_memory.cuh'))}:13:"):
        RawModule(code=code, options=(f"-I{tmp_path}",), check=check).get_function("reverse")


def test_extern_shared_at_file_scope_is_each_host_threads_own(monkeypatch):
    # The blocks run on two host threads at once: one pointer for both would let them overwrite
    # each other's block (20 launches of 256 blocks, so that they meet)
    monkeypatch.setenv("NN_CUDA_CPU_THREADS", "2")
    kernel = RawModule(code=FILE_SCOPE_DYNAMIC).get_function("reverse_through_dynamic")
    x = np.arange(256 * 64, dtype=np.float32)
    out = np.full_like(x, np.nan)
    for _ in range(20):
        out[:] = np.nan
        kernel((256,), (64,), (x, out), shared_mem=64 * 4)
        np.testing.assert_array_equal(out, x.reshape(256, 64)[:, ::-1].reshape(-1))


UNROLLED = r"""
template <int N>
__global__ void unrolled_sums(const float* x, float* out, int n)
{
    float local[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        local[i] = x[threadIdx.x * N + i];
    }
    float sum = 0.0f;
    #pragma unroll 4
    for (int i = 0; i < N; ++i) {
        sum += local[i];
    }
#pragma unroll (N)  // a count that is a template parameter
    for (int i = 0; i < N; ++i) {
        sum += 2.0f * local[i];
    }
#pragma unroll 1
    for (int i = 0; i < n; ++i) {  // a count known only at run time
        sum += x[i];
    }
    out[threadIdx.x] = sum;
}
"""


def test_cuda_unroll_pragmas_become_gccs_and_keep_their_lines():
    from nn_cuda.cuda_cpu.build import FULL_UNROLL, gcc_unroll_pragmas

    code = "#pragma unroll\n  # pragma unroll 4\n#pragma unroll (N)  // why\n#pragma unroll 1\n#pragma unrolled\n"
    assert gcc_unroll_pragmas(code).splitlines() == [
        f"#pragma GCC unroll {FULL_UNROLL}", "  #pragma GCC unroll 4", f"#pragma GCC unroll {FULL_UNROLL}",
        "#pragma GCC unroll 1", "#pragma unrolled"]


def test_code_of_many_unroll_pragmas_is_left_to_gccs_own_unrolling_in_the_checking_build():
    """candle's quantized.cu has 85 of them, in nested loops of template counts: with each a GCC unroll
    by 16, its checking build took 344 s (7 s plain); a prefix of it 45 s, 10 s left as written."""
    from nn_cuda.cuda_cpu.build import MOST_UNROLL_PRAGMAS, gcc_unroll_pragmas

    few = "#pragma unroll\nfor (;;) {}\n" * MOST_UNROLL_PRAGMAS
    assert gcc_unroll_pragmas(few).count("#pragma GCC unroll") == MOST_UNROLL_PRAGMAS
    many = few + "#pragma unroll 4\nfor (;;) {}\n"
    assert gcc_unroll_pragmas(many) == many


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_every_form_of_unroll_pragma_builds_and_computes_the_same(check):
    # The checking build gives GCC its own spelling of each pragma (nn_cuda/cuda_cpu/build.py).
    x = np.random.default_rng(0).random(8 * 16).astype(np.float32)
    out = np.full(8, np.nan, dtype=np.float32)
    module = RawModule(code=UNROLLED, name_expressions=("unrolled_sums<16>",), check=check)
    module.get_function("unrolled_sums<16>")((1,), (8,), (x, out, np.int32(5)))
    rows = x.reshape(8, 16).astype(np.float64)
    expected = 3 * rows.sum(axis=1) + x[:5].astype(np.float64).sum()
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-6, out  # 48 float32 additions


EXTERN_SHARED_ROWS = r"""
// sgl-kernel's top-k: extern __shared__ memory as rows of 4 ints, declared after an indented directive
extern "C" __global__ void rows(const int* x, int* out)
{
    #ifdef ROWS_OF_4
    extern __shared__ int rows[][4];
    #endif
    rows[threadIdx.x / 4][threadIdx.x % 4] = x[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = rows[(blockDim.x - 1 - threadIdx.x) / 4][(blockDim.x - 1 - threadIdx.x) % 4];
}
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_extern_shared_rows_after_an_indented_directive_are_the_dynamic_shared_memory(check):
    # `[][4]` and a `#ifdef` indented before the declaration each stopped the build until 2026-11-27
    x, out = np.arange(32, dtype=np.int32), np.zeros(32, np.int32)
    RawModule(code=EXTERN_SHARED_ROWS, options=("-DROWS_OF_4",), check=check).get_function("rows")(
        (1,), (32,), (x, out), shared_mem=32 * 4)
    np.testing.assert_array_equal(out, x[::-1])


BLOCK_SUM_HEADER = """#pragma once
// FasterTransformer's reduce_kernel_utils.cuh: a block sum through a `static __shared__` array
template <typename T> __inline__ __device__ T block_sum(T value)
{
    static __shared__ T warp_sums[32];
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = value;
    __syncthreads();
    value = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x % 32] : T(0);
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}
"""


@pytest.mark.parametrize("by_path", [False, True], ids=["-I", "absolute"])
def test_static_shared_in_an_included_header_builds_as_in_the_code(tmp_path, by_path):
    # `static __shared__` was made `__shared__` in the code only: in a header the build stopped with
    # "conflicting specifiers", and a quoted include of an absolute path was not rewritten at all
    (tmp_path / "reduce.cuh").write_text(BLOCK_SUM_HEADER)
    include = str(tmp_path / "reduce.cuh") if by_path else "reduce.cuh"
    code = (f'#include "{include}"\nextern "C" __global__ void total(const float* x, float* out)\n'
            "{\n    const float sum = block_sum(x[threadIdx.x]);\n    if (threadIdx.x == 0) out[0] = sum;\n}\n")
    x = np.arange(64, dtype=np.float32)
    for check in (False, True):
        out = np.full(1, np.nan, np.float32)
        RawModule(code=code, options=() if by_path else (f"-I{tmp_path}",), check=check).get_function("total")(
            (1,), (64,), (x, out))
        assert out[0] == x.sum()


def test_a_standard_header_nvrtc_lacks_stops_the_build_as_on_a_gpu():
    # NVRTC has no C or C++ standard header: CuPy's build of `#include <cassert>` failed on an H100
    # ("cannot open source file"), where the host compiler has it
    body = 'extern "C" __global__ void k(float* out) { out[0] = cuda::std::numeric_limits<float>::max(); }\n'
    code = "// #include <cmath> in a comment is none\n#include <cassert>\n#include <cuda/std/limits>\n" + body
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):2: NVRTC, CuPy's default compiler, has no "
                                               r"<cassert> .* Include <cuda/std/cassert> .*backend='nvcc'"):
        RawModule(code=code).get_function("k")
    with pytest.raises(KernelBuildError, match=r"kernel.cu:1: .* has no <stdio.h> .* Include CUDA's own headers"):
        RawModule(code="#include <stdio.h>\n" + body, name="kernel.cu").get_function("k")
    # nvcc has them; code that keeps them from NVRTC is left alone; libcu++'s counterpart is there
    for module in (RawModule(code=code, backend="nvcc"),
                   RawModule(code="#ifndef __CUDACC_RTC__\n#include <cassert>\n#endif\n#include <cuda/std/limits>\n"
                                  + body),
                   RawModule(code=code.replace("<cassert>", "<cuda/std/cassert>")),
                   # nor reads one in a branch the preprocessor leaves out (ggml-common.h's), as NVRTC does not
                   RawModule(code="#if defined(GGML_COMMON_DECL_C)\n#include <stdint.h>\n#elif 1\n"
                                  "#include <cuda/std/limits>\n#else\n#include <cassert>\n#endif\n" + body)):
        out = np.zeros(1, np.float32)
        module.get_function("k")((1,), (1,), (out,))
        assert out[0] == np.finfo(np.float32).max
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):2: NVRTC, CuPy's default compiler, has no "
                                               r"<stdint.h>"):  # ... unless the option defines the macro
        RawModule(code="#if defined(GGML_COMMON_DECL_C)\n#include <stdint.h>\n#endif\n" + body,
                  options=("-DGGML_COMMON_DECL_C",)).get_function("k")


def test_a_standard_header_that_a_header_of_the_code_includes_stops_the_build_too(tmp_path):
    # warp-ctc's ctc_helper.h includes <limits>, <cmath> and <algorithm>: NVRTC fails on a GPU, and the
    # runner built it until 2026-11-28, refusing those includes in the code alone
    (tmp_path / "helper.h").write_text("#pragma once\n#ifndef __CUDACC_RTC__\n#include <cstdio>\n#endif\n"
                                       '#include "limits_of.h"\n')
    (tmp_path / "limits_of.h").write_text("#pragma once\n#include <cuda/std/limits>\n#include <limits>\n"
                                          "template <typename T> __device__ T biggest() "
                                          "{ return std::numeric_limits<T>::max(); }\n")
    code = '#include "helper.h"\nextern "C" __global__ void k(float* out) { out[0] = biggest<float>(); }\n'
    with pytest.raises(KernelBuildError, match=rf"^{re.escape(str(tmp_path / 'limits_of.h'))}:3: NVRTC, CuPy's "
                                               r"default compiler, has no <limits> .* Include <cuda/std/limits>"):
        RawModule(code=code, options=(f"-I{tmp_path}",)).get_function("k")
    out = np.zeros(1, np.float32)
    RawModule(code=code, options=(f"-I{tmp_path}",), backend="nvcc").get_function("k")((1,), (1,), (out,))
    assert out[0] == np.finfo(np.float32).max  # nvcc has it; the runner's own headers include the host's freely


@pytest.mark.parametrize("name, header", [("std::vector<int>", "vector"), ("std::thread", "thread"),
                                          ("std::mt19937", "random")])
def test_the_runners_own_headers_declare_no_host_library_a_kernel_did_not_include(name, header):
    # What runs the launches (threads, random orders, vectors) is runtime.cpp's, compiled apart: a
    # kernel that names such a class without including its header fails here as under NVRTC, and
    # builds with the include under nvcc. (A pointer: nvcc refuses an object, whose constructor and
    # destructor are host code, as the H100 showed; the runner cannot tell host code from device code.)
    code = f'extern "C" __global__ void k(int* out) {{ {name}* unused = nullptr; (void)unused; out[0] = 1; }}\n'
    with pytest.raises(KernelBuildError, match=r"is not a member of .std.|no member named .\w+. in namespace .std."):
        RawModule(code=code).get_function("k")
    out = np.zeros(1, np.int32)
    RawModule(code=f"#include <{header}>\n" + code, backend="nvcc").get_function("k")((1,), (1,), (out,))
    assert out[0] == 1


OUT_OF_BOUNDS = r"""
extern "C" __global__ void write_at(float* x, long long offset) { x[threadIdx.x + offset] = 1.0f; }
extern "C" __global__ void add_one(const float* in, float* out) { out[threadIdx.x] = in[threadIdx.x] + 1.0f; }
"""


@pytest.mark.parametrize("check", [False, True], ids=["plain", "checking"])
def test_a_write_past_a_numpy_array_faults_and_leaves_the_heap_alone(check):
    # the arrays are copied between guard spans for the launch (the plain mode used to pass the
    # NumPy array itself, and a write past it landed in Python's heap: no error, 1.0 in memory it
    # does not own); an index off by up to a whole array, or by 1 MiB, lands in a guard
    module = RawModule(code=OUT_OF_BOUNDS, check=check)
    write_at = module.get_function("write_at")
    small, large = np.zeros(32, np.float32), np.zeros(600_000, np.float32)  # 2.4 MB
    for x, offset in ((small, 40), (small, 200_000), (large, 600_000 + 500_000)):
        neighbours = [np.zeros(32, np.float32) for _ in range(8)]
        with pytest.raises(KernelError, match=r"write_at: an invalid memory access"):
            write_at((1,), (32,), (x, np.int64(offset)))
        assert all(not n.any() for n in neighbours)
    write_at((1,), (32,), (small, np.int64(0)))  # in bounds: written back to the caller's array
    assert small.tolist() == [1.0] * 32


def test_an_array_passed_twice_is_one_copy_and_comes_back():
    module = RawModule(code=OUT_OF_BOUNDS, check=False)
    x = np.arange(32, dtype=np.float32)
    module.get_function("add_one")((1,), (32,), (x, x))  # in place, as on a GPU
    assert x.tolist() == list(range(1, 33))
    with pytest.raises(KernelError, match=r"add_one: an invalid memory access"):  # the one copy is guarded
        module.get_function("add_one")((1,), (128,), (x, x))
    halves = np.arange(64, dtype=np.float32)
    module.get_function("add_one")((1,), (32,), (halves[32:], halves[:32]))  # views of one array: their own copies
    assert halves[:32].tolist() == list(range(33, 65)) and halves[32:].tolist() == list(range(32, 64))


#: (header, expression) pairs that build under NVRTC, as measured through CuPy on an H100
MACROS_A_HEADER_BRINGS = [("cuda/std/cmath", "-INFINITY"), ("cuda/std/cfloat", "FLT_MAX"),
                          ("cuda/std/climits", "(float)INT_MAX"), ("cuda/std/cstdint", "(float)(int32_t)INT32_MAX"),
                          ("math_constants.h", "-CUDART_INF_F"), ("cooperative_groups.h", "(float)INT_MAX")]


def macro_kernels(expressions) -> str:
    return "".join(f'extern "C" __global__ void k{i}(float* out) {{ out[0] = {e}; }}\n'
                   for i, e in enumerate(expressions))


@pytest.mark.parametrize("include, expression", [
    ("", "-INFINITY"), ("", "FLT_MAX"), ("", "(float)INT_MAX"), ("", "M_PI"),
    ("", "M_PIf"), ("", "M_El"),  # glibc's of other types, which GCC suggested for M_PI ("did you mean 'M_PIf'?")
    ("<cuda/std/climits>", "FLT_MAX"), ("<cooperative_groups.h>", "-INFINITY"),
])
def test_a_c_library_macro_nvrtc_does_not_define_there_is_not_declared_here(include, expression):
    # without an include NVRTC defines none of them; <cuda/std/climits> no float limit; after
    # cooperative_groups.h INFINITY failed on the H100
    code = (f"#include {include}\n" if include else "\n") + macro_kernels([expression])
    name = expression.strip("-()").split(")")[-1]
    with pytest.raises(KernelBuildError, match=rf"\(RawModule code\):2:\d+: error: .{name}. was not declared"):
        RawModule(code=code).get_function("k0")


def test_the_c_librarys_macros_come_with_the_headers_that_bring_them_under_nvrtc():
    headers = "".join(f"#include <{header}>\n" for header, _ in MACROS_A_HEADER_BRINGS)
    module = RawModule(code=headers + macro_kernels(e for _, e in MACROS_A_HEADER_BRINGS))
    for i in range(len(MACROS_A_HEADER_BRINGS)):
        out = np.zeros(1, np.float32)
        module.get_function(f"k{i}")((1,), (1,), (out,))
        assert out[0] != 0


@pytest.mark.parametrize("backend, name", [("nvrtc", "M_PI"), ("nvrtc", "FLT_MAX"), ("nvrtc", "INT_MAX"),
                                           ("nvrtc", "INFINITY"), ("nvcc", "FLT_MAX"), ("nvcc", "INT32_MAX")])
def test_a_c_library_macro_the_options_define_is_the_options(backend, name):
    # NVRTC defines none of them, so `-DM_PI=...` is what the code sees (detectron2's ROIAlignRotated
    # is built so); the prelude that hides the host's undefined the option's too until 2026-11-27
    module = RawModule(code=macro_kernels([f"(float)({name})"]), options=(f"-D{name}=3",), backend=backend)
    out = np.zeros(1, np.float32)
    module.get_function("k0")((1,), (1,), (out,))
    assert out[0] == 3.0
    # undefined again by a later -U, as on the compiler's command line
    with pytest.raises(KernelBuildError, match=rf"error: .{name}. was not declared"):
        RawModule(code=macro_kernels([f"(float)({name})"]), options=(f"-D{name}=3", f"-U{name}"),
                  backend=backend).get_function("k0")

def test_an_nvcc_build_has_the_macros_of_nvccs_cuda_runtime_h_and_the_limits_of_the_headers_it_includes(tmp_path):
    # nvcc has the host's headers, and its implicit cuda_runtime.h brings math.h's, limits.h's and
    # stdlib.h's macros but no float or stdint limits: FLT_MAX failed in an nvcc build on an H100
    bare = RawModule(code=macro_kernels(["-INFINITY", "(float)INT_MAX", "M_PI"]), backend="nvcc")
    for i in range(3):
        out = np.zeros(1, np.float32)
        bare.get_function(f"k{i}")((1,), (1,), (out,))
        assert out[0] != 0
    for expression in ("FLT_MAX", "(float)INT32_MAX", "(float)SIZE_MAX"):
        name = expression.strip("-()").split(")")[-1]
        with pytest.raises(KernelBuildError, match=rf"\(RawModule code\):1:\d+: error: .{name}. was not declared"):
            RawModule(code=macro_kernels([expression]), backend="nvcc").get_function("k0")
    (tmp_path / "my_limits.h").write_text("#include <float.h>\n")
    for header in ("<cfloat>", "<float.h>", "<cuda/std/cfloat>", '"my_limits.h"'):  # headers that may bring them
        code = f"#include {header}\n" + macro_kernels(["FLT_MAX"])
        out = np.zeros(1, np.float32)
        RawModule(code=code, backend="nvcc", options=(f"-I{tmp_path}",)).get_function("k0")((1,), (1,), (out,))
        assert out[0] == np.finfo(np.float32).max, header
    # nvcc defines __NVCC__ (NVRTC does not): undefined in nvcc builds here until 2026-11-27
    code = 'extern "C" __global__ void k(int* out)\n{\n#ifdef __NVCC__\n    out[0] = 1;\n#else\n    out[0] = 2;\n#endif\n}\n'
    for backend, value in (("nvcc", 1), ("nvrtc", 2)):
        out = np.zeros(1, np.int32)
        RawModule(code=code, backend=backend).get_function("k")((1,), (1,), (out,))
        assert out[0] == value, backend


VECTOR_COPY = r"""
extern "C" __global__ void copy_vec4(float* out, const float* in, int n, int shift)
{
    for (int k = threadIdx.x; k < (n - shift) / 4; k += blockDim.x) {
        reinterpret_cast<float4*>(out)[k] = reinterpret_cast<const float4*>(in + shift)[k];
    }
}
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64's aligned vector moves fault")
def test_a_misaligned_vector_access_is_named_as_such_not_as_a_null_pointer():
    # It read "an invalid memory access at address 0x0, through a null pointer": a general-protection
    # fault has no address. In the checking mode it is the mode's own placement (an array's end
    # against a guard page) where a size is no multiple of 16 bytes: said so, with what to do.
    x = np.arange(103, dtype=np.float32)
    out = np.zeros(103, np.float32)
    RawModule(code=VECTOR_COPY, check=False).get_function("copy_vec4")((1,), (32,), (out, x, np.int32(103), np.int32(0)))
    np.testing.assert_array_equal(out[:100], x[:100])  # every array on a 256-byte boundary, as on a GPU
    with pytest.raises(KernelError, match=r"copy_vec4: a misaligned vector access \(a general-protection fault.*"
                                          r"pad them to a multiple of 16 bytes"):
        RawModule(code=VECTOR_COPY, check=True).get_function("copy_vec4")(
            (1,), (32,), (np.zeros(103, np.float32), x, np.int32(103), np.int32(0)))
    with pytest.raises(KernelError, match=r"copy_vec4: a misaligned vector access \(a general-protection fault: "
                                          r"[^;]*\) in thread \(0, 0, 0\) of block \(0, 0, 0\)"):  # the kernel's own
        RawModule(code=VECTOR_COPY, check=False).get_function("copy_vec4")(
            (1,), (32,), (out, x, np.int32(103), np.int32(1)))


def test_a_device_function_declared_but_never_defined_is_a_build_error_naming_it():
    # llm.c's cast_value<Td, Ts> has specialisations for some types only: another instance was an
    # OSError of the dynamic loader ("undefined symbol: _Z10cast_valueIffET_T0_") until 2026-11-27
    code = ("template <typename Td, typename Ts> __device__ Td cast_value(Ts v);\n"
            "template <typename Td, typename Ts>\n"
            "__global__ void cast(Td* out, const Ts* in) { out[threadIdx.x] = cast_value<Td, Ts>(in[threadIdx.x]); }\n")
    module = RawModule(code=code, name_expressions=["cast<float, float>"])
    with pytest.raises(KernelBuildError, match=r"^the RawModule code: `float cast_value<float, float>\(float\)` is "
                                               r"declared and called but never defined in the code \(a GPU build "
                                               r"fails too, ptxas: \"Unresolved extern function "
                                               r"'_Z10cast_valueIffET_T0_'\"\)"):
        module.get_function("cast<float, float>")
    # a name the host's C library declares itself (glibc's __tanhf beside tanhf), which the code calls
    # without its own definition (TensorRT-LLM defines one in a header a kernel file may forget): no
    # declaration of the code's, and NVRTC stops at the name
    code = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = __tanhf(y[threadIdx.x]); }\n'
    with pytest.raises(KernelBuildError, match=r"^the RawModule code: `__tanhf` is called and defined nowhere: the "
                                               r"host's C library declares that name \(its own, beside tanhf\), "
                                               r"NVRTC does not"):
        RawModule(code=code).get_function("k")


@pytest.mark.parametrize("header, use, value", [
    ("functional", "cuda::std::plus<> add; out[0] = add(2, 3);", 5),
    ("tuple", "auto t = cuda::std::make_tuple(4, 2.0f); out[0] = cuda::std::get<0>(t) + (int)cuda::std::get<1>(t);", 6),
    ("algorithm", "int a[3] = {5, 1, 3}; cuda::std::sort(a, a + 3); out[0] = 100 * a[0] + 10 * a[1] + a[2];", 135),
    ("complex", "cuda::std::complex<float> z(3, 4); out[0] = (int)cuda::std::abs(z);", 5),
    ("numeric", "int a[3] = {1, 2, 4}; out[0] = cuda::std::accumulate(a, a + 3, 0);", 7),
    ("optional", "cuda::std::optional<int> none; out[0] = none.value_or(8);", 8),
    # xgboost's GPU predictor (refused until 2026-11-27)
    ("variant", "cuda::std::variant<int, float> v = 2.5f; out[0] = cuda::std::holds_alternative<float>(v) ? "
                "(int)(2 * cuda::std::get<float>(v)) : -1;", 5),
])
def test_libcuxx_headers_vllm_and_tensorrt_include_build_under_nvrtc(header, use, value):
    # vLLM's layernorm and TensorRT's plugins include <cuda/std/functional>: "No such file or directory"
    out = np.zeros(1, np.int32)
    RawModule(code=f'#include <cuda/std/{header}>\nextern "C" __global__ void k(int* out) {{ {use} }}\n'
              ).get_function("k")((1,), (1,), (out,))
    assert out[0] == value


def test_a_libcuxx_header_the_runner_lacks_is_refused_in_one_line():
    with pytest.raises(KernelBuildError, match=r"^\(RawModule code\):1: the CPU runner does not support this header of "
                                               r"libcu\+\+ \(it has <cuda/std/...> of algorithm, array, .*C\+\+20's span"):
        RawModule(code='#include <cuda/std/span>\nextern "C" __global__ void k(int* out) { out[0] = 1; }\n'
                  ).get_function("k")


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
def test_code_that_starts_with_a_byte_order_mark_builds(backend):
    # six kernel files of Ansorge's "Programming in Parallel with CUDA" start with one (Visual Studio's): nvcc
    # and g++ skip it at a file's start, and the runner's build refused it ("does not name a type") until 2026-11-28
    code = '\ufeffextern "C" __global__ void fill(float* out) { out[threadIdx.x] = 2.0f; }\n'
    out = np.zeros(4, np.float32)
    RawModule(code=code, backend=backend).get_function("fill")((1,), (4,), (out,))
    assert out.tolist() == [2.0] * 4
