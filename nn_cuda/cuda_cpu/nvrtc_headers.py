"""What NVRTC, CuPy's default compiler, lacks that a host compiler has: the C and C++ standard
library's headers, and the C library's macros.

NVRTC compiles device code without a host toolchain: `#include <cassert>`, `<cmath>`, `<cstdint>`,
`<type_traits>`, `<stdio.h>` and the like fail there ("cannot open source file", every one of 23
tried through CuPy 14.2 on an H100, 2026-11-26), while libcu++'s `<cuda/std/...>` headers and CUDA's
own (`cuda_fp16.h`, `curand_kernel.h`, `cooperative_groups.h`, ...) are found. The host C++ compiler
of the CPU runner has them all, so a RawModule with backend="nvrtc" refuses such an include at its
build, as CuPy's build would fail on a GPU; backend="nvcc" takes them, as nvcc does.

Only `#include <name>` lines of the code itself are read (not the headers it includes, nor an include
through a macro), and none at all in code that tests `__CUDACC_RTC__`, which may keep them from NVRTC.
CUDA's driver API header `<cuda.h>` is refused too: NVRTC finds it only with CUDA's include folder on
its path (CuPy adds that folder when it finds the toolkit), and then stops at the `<stdlib.h>` it
includes (NVRTC 12.9, compute_90); the runner's own cuda.h serves backend="nvcc".

NVRTC compiles device code only: a function without `__device__` or `__global__`, even a prototype,
fails there ("A function without execution space annotations (__host__/__device__/__global__) is
considered a host function, and host functions are not allowed in JIT mode", NVRTC 12.9). NVRTC
declares the runtime API's types itself (cudaError_t, cudaStream_t, ... build there without an
include), so a host prototype such as `cudaError_t initConstFilter(const float*, int);`, left in a
kernel file, compiles with the runner's cuda_runtime.h and fails on a GPU: `refusal` names one that
returns an error code at file scope (other host functions are not looked for: a declaration is not
told from a variable's by its text alone).

nvcc has the host's headers, and its implicit cuda_runtime.h brings the LIMITS, MATH and NONE
groups of the macros below, but not <float.h>'s nor <stdint.h>'s: an nvcc build through CuPy on an
H100 (2026-11-26) refused FLT_MAX without an include, and CUDA 12.9's cuda_runtime.h, preprocessed
as nvcc does with the host's g++, defines every macro of those three groups and none of the other
two. `nvcc_prelude()` hides those two from code that includes CUDA's headers only (a header of the
host or of the code's own may define them: then they stay).

The C library's macros are NVRTC's too: without an include NVRTC defines none of INT_MAX, FLT_MAX,
INFINITY, NAN, M_PI, HUGE_VALF, EOF (only NULL); libcu++'s <cuda/std/climits>, <cfloat>, <cstdint>,
<cmath> and <limits> define the groups of MACRO_GROUPS their entries name (measured through CuPy on
the same H100). `prelude()` is what an NVRTC build puts between the runtime and the code: each macro
of the host's headers pushed and undefined, so that the code sees what NVRTC shows it, and the
restoring macro each of the runner's <cuda/std/...> headers calls (NN_CUDA_CPU_RESTORE_FOR_cmath, ...).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from .build import INCLUDE_DIR

#: the C++ standard library's headers, and the C library's in both spellings
_CPP_HEADERS = frozenset("""
    algorithm any array atomic barrier bit bitset charconv chrono codecvt compare complex concepts
    condition_variable coroutine deque exception execution expected filesystem format forward_list
    fstream functional future initializer_list iomanip ios iosfwd iostream istream iterator latch
    limits list locale map memory memory_resource mutex new numbers numeric optional ostream print
    queue random ranges ratio regex scoped_allocator semaphore set shared_mutex source_location span
    sstream stack stdexcept stop_token streambuf string string_view syncstream system_error thread
    tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray variant vector
    version
""".split())
_C_HEADERS = frozenset("""
    assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal stdalign
    stdarg stdbool stddef stdint stdio stdlib string tgmath time uchar wchar wctype
""".split())
STANDARD_HEADERS = _CPP_HEADERS | {f"c{name}" for name in _C_HEADERS} | {f"{name}.h" for name in _C_HEADERS}

#: the C library's macros by the libcu++ headers that define them under NVRTC (CUDA 13)
MACRO_GROUPS = {
    "LIMITS": """CHAR_BIT SCHAR_MIN SCHAR_MAX UCHAR_MAX CHAR_MIN CHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX INT_MIN
        INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX LLONG_MIN LLONG_MAX ULLONG_MAX MB_LEN_MAX""".split(),
    "FLOATS": """FLT_RADIX FLT_MANT_DIG DBL_MANT_DIG LDBL_MANT_DIG FLT_DIG DBL_DIG LDBL_DIG FLT_MIN_EXP
        DBL_MIN_EXP LDBL_MIN_EXP FLT_MIN_10_EXP DBL_MIN_10_EXP LDBL_MIN_10_EXP FLT_MAX_EXP DBL_MAX_EXP
        LDBL_MAX_EXP FLT_MAX_10_EXP DBL_MAX_10_EXP LDBL_MAX_10_EXP FLT_MAX DBL_MAX LDBL_MAX FLT_EPSILON
        DBL_EPSILON LDBL_EPSILON FLT_MIN DBL_MIN LDBL_MIN FLT_TRUE_MIN DBL_TRUE_MIN LDBL_TRUE_MIN
        DECIMAL_DIG FLT_EVAL_METHOD FLT_ROUNDS""".split(),
    "STDINT": """INT8_MIN INT16_MIN INT32_MIN INT64_MIN INT8_MAX INT16_MAX INT32_MAX INT64_MAX UINT8_MAX
        UINT16_MAX UINT32_MAX UINT64_MAX INTPTR_MIN INTPTR_MAX UINTPTR_MAX INTMAX_MIN INTMAX_MAX UINTMAX_MAX
        PTRDIFF_MIN PTRDIFF_MAX SIZE_MAX INT8_C INT16_C INT32_C INT64_C UINT8_C UINT16_C UINT32_C UINT64_C
        INTMAX_C UINTMAX_C""".split(),
    "MATH": "INFINITY NAN FP_NAN FP_INFINITE FP_ZERO FP_SUBNORMAL FP_NORMAL".split(),
    #: defined by no header NVRTC finds: never restored
    # (and the C library's names that code takes for its own: `#ifdef BIG_ENDIAN` took the big-endian
    # branch here, `int errno` and `const int PATH_MAX` failed to build)
    "NONE": """HUGE_VAL HUGE_VALF HUGE_VALL EOF RAND_MAX EXIT_SUCCESS EXIT_FAILURE BIG_ENDIAN LITTLE_ENDIAN
        PDP_ENDIAN BYTE_ORDER errno PATH_MAX""".split() + [
        # M_PI and glibc's variants of it of other types (M_PIf, M_PIl, M_PIf128, ...), which GCC
        # suggests for an undefined M_PI ("did you mean 'M_PIf'?")
        f"M_{constant}{suffix}" for constant in "E LOG2E LOG10E LN2 LN10 PI PI_2 PI_4 1_PI 2_PI 2_SQRTPI SQRT2 "
        "SQRT1_2".split() for suffix in ("", "f", "l", "f16", "f32", "f64", "f128", "f32x", "f64x", "f128x")],
}
#: the groups each of the runner's <cuda/std/...> headers restores, as libcu++'s defines them; and
#: "cuda_header", what the runner's CUDA headers built on libcu++ restore (cooperative_groups.h,
#: cuda/barrier, cuda/pipeline, cuda_pipeline.h, curand_kernel.h, cuda_fp16.h, cuda_bf16.h): on the
#: H100 a kernel used INT_MAX after cooperative_groups.h alone, and INFINITY failed there; the float
#: and stdint limits are given too, not measured, so that no code that builds on a GPU fails here
RESTORED_BY = {"climits": ("LIMITS",), "cfloat": ("FLOATS",), "cstdint": ("LIMITS", "STDINT"),
               "cmath": ("LIMITS", "FLOATS", "STDINT", "MATH"), "limits": ("LIMITS", "FLOATS", "STDINT"),
               "cuda_header": ("LIMITS", "FLOATS", "STDINT")}


def option_macros(flags) -> tuple[tuple[str, str], ...]:
    """(name, value) of each macro of MACRO_GROUPS that the build's -D options (`flags`: "-DM_PI=3.0",
    "-UM_PI") define: the preludes hide the host's macro of that name and give the option's value,
    as NVRTC, which defines none of them, gives it (detectron2's ROIAlignRotated is built with -DM_PI=...;
    until 2026-11-27 the prelude undefined the option's macro with the host's)."""
    hidden = {name for names in MACRO_GROUPS.values() for name in names}
    defined: dict[str, str] = {}
    for flag in flags:
        name, equals, value = flag[2:].partition("=")
        if name in hidden and flag.startswith("-D"):
            defined[name] = value if equals else "1"
        elif name in hidden and flag.startswith("-U"):
            defined.pop(name, None)
    return tuple(defined.items())


def _hidden(names, defined: tuple[tuple[str, str], ...]) -> tuple[list[str], str]:
    """The lines that push and undefine each of `names`, the options' value of those `defined` after,
    and the pops that put back the others (an option's macro stays the option's)."""
    given = dict(defined)
    lines = [f'#pragma push_macro("{name}")\n#undef {name}'
             + (f"\n#define {name} {given[name]}" if name in given else "") for name in names]
    return lines, " ".join(f'_Pragma("pop_macro(\\"{name}\\")")' for name in names if name not in given)


@functools.cache
def prelude(defined: tuple[tuple[str, str], ...] = ()) -> str:
    """The lines an NVRTC build puts before the code: every macro of MACRO_GROUPS pushed and undefined
    (given the options' value where they define it: `defined`, option_macros),
    NN_CUDA_CPU_RESTORE_<GROUP> popping each group but NONE, and NN_CUDA_CPU_RESTORE_FOR_<header>
    popping the groups RESTORED_BY gives that header (the headers call it at their end)."""
    lines = []
    for group, names in MACRO_GROUPS.items():
        hides, pops = _hidden(names, defined)
        lines += hides
        if group != "NONE":
            lines.append(f"#define NN_CUDA_CPU_RESTORE_{group} {pops}")
    for header, groups in RESTORED_BY.items():
        restores = " ".join(f"NN_CUDA_CPU_RESTORE_{group}" for group in groups)
        lines.append(f"#define NN_CUDA_CPU_RESTORE_FOR_{header} {restores}")
    return "\n".join(lines) + "\n"


#: the integer types NVRTC code declares itself (NVRTC has no <cstdint> or <sys/types.h>), which the
#: host's headers declare with another type: `long`, where such code writes `long long` (CuPy's QR of
#: B-splines writes `typedef long long ssize_t;`)
OWN_INTEGER_TYPES = ("int64_t", "uint64_t", "ssize_t")
_OWN_TYPES = "|".join(OWN_INTEGER_TYPES)
_OWN_TYPE = re.compile(rf"\btypedef\b[^;{{}}()]*?\b(?P<typedef>{_OWN_TYPES})\s*;|\busing\s+(?P<using>{_OWN_TYPES})\s*=")


def own_integer_types(code: str) -> str:
    """The lines an NVRTC build puts before code that declares int64_t, uint64_t or ssize_t itself
    (`typedef unsigned long long uint64_t;`, as CuPy's Monte Carlo example writes under NVRTC, which has
    no <cstdint>): each such name a macro for a name of the code's own, so that the declaration is not
    one of the host's `unsigned long` again (GCC: "conflicting declaration"). The runner's headers
    that use the host's type put the name back around their text (nn_cuda_cpu_narrow_float.h)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.DOTALL)
    names = dict.fromkeys(m["typedef"] or m["using"] for m in _OWN_TYPE.finditer(text))
    return "".join(f"#define {name} nn_cuda_cpu_code_{name}\n" for name in names)


#: the groups nvcc's implicit cuda_runtime.h does not define
NVCC_HIDDEN = ("FLOATS", "STDINT")


@functools.cache
def nvcc_prelude(defined: tuple[tuple[str, str], ...] = ()) -> str:
    """The lines an nvcc build of code that includes CUDA's headers only puts before the code: the
    macros of NVCC_HIDDEN pushed and undefined (given the options' value where they define it:
    `defined`, option_macros), and every restoring macro the runner's headers call
    popping them (whether nvcc's versions of those headers bring them is not measured: a header
    restores them, so that no code that builds on a GPU fails here)."""
    names = [name for group in NVCC_HIDDEN for name in MACRO_GROUPS[group]]
    lines, pops = _hidden(names, defined)
    lines += [f"#define NN_CUDA_CPU_RESTORE_FOR_{header} {pops}" for header in RESTORED_BY]
    # each group alone, for a header whose nvcc version is known to bring that one (cuda.h: <stdint.h>)
    lines += [f"#define NN_CUDA_CPU_RESTORE_{group} {_hidden(MACRO_GROUPS[group], defined)[1]}" for group in NVCC_HIDDEN]
    return "\n".join(lines) + "\n"


_ANY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?P<name>[^>"\n]+)[>"]', re.M)


def includes_cuda_headers_only(code: str) -> bool:
    """True when every `#include` line of `code` names one of CUDA's headers (those the runner has)."""
    text = _COMMENT.sub("", code)
    return all((INCLUDE_DIR / m["name"].strip()).is_file() for m in _ANY_INCLUDE.finditer(text))


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

#: CUDA's headers that NVRTC cannot compile, with why
NVRTC_CANNOT_COMPILE = {"cuda.h": "CUDA's driver API header includes <stdlib.h>, which NVRTC has not",
                        "cuda_profiler_api.h": "the profiler's header declares host functions, which NVRTC refuses"}


def _blank_comments(code: str) -> str:
    """`code` with its comments as spaces: lines stay where they are."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), code)


def refused_includes(code: str) -> list[tuple[int, str]]:
    """(line, header) of each `#include <header>` of `code` that NVRTC has not (a standard one) or
    cannot compile (NVRTC_CANNOT_COMPILE), in order."""
    if "__CUDACC_RTC__" in code:
        return []
    text = _blank_comments(code)
    # <standard headers>, and CUDA's that NVRTC cannot compile also as "cuda.h" (CUDA by Example's
    # spelling), which NVRTC finds on CUDA's include folder all the same
    return [(text.count("\n", 0, m.start()) + 1, m["name"].strip()) for m in _ANY_INCLUDE.finditer(text)
            if (m["name"].strip() in STANDARD_HEADERS and m[0].rstrip().endswith(">"))
            or m["name"].strip() in NVRTC_CANNOT_COMPILE]


#: a declaration or definition that returns one of the API's error codes: a host function's, unless
#: it says __device__ (checked apart, as the words before it may stand on the lines above)
_ERROR_CODE_FUNCTION = re.compile(r"\b(?:cudaError_t|cudaError|CUresult)[ \t]+(?P<function>[A-Za-z_]\w*)\s*\(")
#: what text between two of a file's declarations holds: strings, character literals and preprocessor lines
_LITERALS_AND_DIRECTIVES = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M)


def host_functions(code: str) -> list[tuple[int, str]]:
    """(line, name) of each function at file scope of `code` that returns cudaError_t (or CUresult)
    with neither __device__ nor __global__ (nor __host__ __device__): a host function, which NVRTC
    refuses. Namespaces and extern "C" blocks are not looked into, nor typedefs."""
    if "__CUDACC_RTC__" in code:
        return []
    text = _LITERALS_AND_DIRECTIVES.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), _blank_comments(code))
    found, depth, start = [], 0, 0  # start: where the current file-scope declaration began
    for match in re.finditer(r"[{};]|" + _ERROR_CODE_FUNCTION.pattern, text):
        token = match[0]
        if token == "{":
            depth += 1
        elif token == "}":
            depth = max(depth - 1, 0)
            start = match.end()
        elif token == ";":
            start = match.end() if depth == 0 else start
        elif depth == 0 and not re.search(r"\b(?:__device__|__global__|typedef)\b", text[start:match.start()]):
            found.append((text.count("\n", 0, match.start()) + 1, match["function"]))
    return found


#: NVRTC's option that makes a function without __host__, __device__ or __global__ a device function
DEFAULT_DEVICE_OPTIONS = ("-default-device", "--device-as-default-execution-space")


def live_includes(code: str, includes: list[tuple[int, str]], preprocess) -> list[tuple[int, str]]:
    """Those of `includes` ((line, header)) that the preprocessor reads: one in a branch of an #if that
    it leaves out (ggml-common.h's `#if defined(GGML_COMMON_DECL_C)`, `#if 0`) NVRTC never reads either.
    `preprocess(text)` is the text after the host's preprocessor, with NVRTC's macros, or None (then
    all of them: the build will say why)."""
    if not includes:
        return includes
    lines = code.split("\n")
    for line, _ in includes:
        lines[line - 1] = f"nn_cuda_cpu_include_at_{line}"
    text = preprocess("\n".join(lines))
    if text is None:
        return includes
    return [(line, header) for line, header in includes if re.search(rf"\bnn_cuda_cpu_include_at_{line}\b", text)]


def refusal(code: str, name: str, options=(), preprocess=lambda text: None) -> str | None:
    """The one-line message for the first refused include that the preprocessor reads (`preprocess`:
    live_includes) or host function (none with -default-device among NVRTC's `options`), or None."""
    default_device = any(option in DEFAULT_DEVICE_OPTIONS for option in options)
    includes = live_includes(code, refused_includes(code), preprocess)
    functions = [] if default_device else host_functions(code)
    if functions and (not includes or functions[0][0] < includes[0][0]):
        line, function = functions[0]
        return (f"{name}:{line}: {function} is a host function (no __device__ or __global__), which NVRTC, CuPy's "
                "default compiler, refuses even as a prototype (\"host functions are not allowed in JIT mode\"): "
                "CuPy's build of this code fails on a GPU. Remove it, mark it __device__, give the option "
                "-default-device (NVRTC then takes such functions as device ones), or build with backend='nvcc', "
                "which takes host code")
    if not includes:
        return None
    return _refused_include(name, *includes[0])


def header_refusal(tree: list[tuple[int, str]]) -> str | None:
    """The one-line message for the first header that one of the code's own headers includes and NVRTC
    has not (warp-ctc's ctc_helper.h includes <limits>, <cmath> and <algorithm>), or None. `tree`:
    (depth, path) of each file the preprocessor read, in order (g++ -H, with NVRTC's macros); a file
    outside the runner's headers that the code or another such file includes is the code's own."""
    parents, code_files = [], {}  # the code's own files -> their refused includes, read once
    for depth, path in tree:
        del parents[depth - 1:]
        parent = parents[-1] if parents else None
        parents.append(path)
        if parent is not None and parent not in code_files:
            continue  # read by the runner's headers, or by the host's
        if parent is not None:
            if code_files[parent] is None:
                code_files[parent] = refused_includes(Path(parent).read_text(errors="replace"))
            for line, header in code_files[parent]:
                if path.endswith("/" + header):
                    return _refused_include(parent, line, header)
        if not Path(path).resolve().is_relative_to(INCLUDE_DIR.resolve()):
            code_files[path] = None
    return None


def _refused_include(name: str, line: int, header: str) -> str:
    """The message for `#include <header>` at line `line` of `name`, which NVRTC refuses."""
    if header in NVRTC_CANNOT_COMPILE:
        return (f"{name}:{line}: NVRTC, CuPy's default compiler, cannot compile <{header}> "
                f"({NVRTC_CANNOT_COMPILE[header]}): CuPy's build of this code fails on a GPU. "
                "Drop the #include (a kernel needs nothing of it), or build with backend='nvcc', which has it")
    counterpart = (INCLUDE_DIR / "cuda" / "std" / header).is_file()  # the runner's libcu++ headers
    instead = (f"<cuda/std/{header}> (libcu++, which NVRTC has)" if counterpart
               else "CUDA's own headers (assert and printf need no #include)")
    return (f"{name}:{line}: NVRTC, CuPy's default compiler, has no <{header}> (no C or C++ standard library "
            f"header): CuPy's build of this code fails on a GPU. Include {instead}, or build with "
            "backend='nvcc', which has them")
