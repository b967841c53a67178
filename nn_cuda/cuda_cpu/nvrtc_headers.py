"""What NVRTC, CuPy's default compiler, cannot include: the C and C++ standard library's headers.

NVRTC compiles device code without a host toolchain: `#include <cassert>`, `<cmath>`, `<cstdint>`,
`<type_traits>`, `<stdio.h>` and the like fail there ("cannot open source file", every one of 23
tried through CuPy 14.2 on an H100, 2026-11-26), while libcu++'s `<cuda/std/...>` headers and CUDA's
own (`cuda_fp16.h`, `curand_kernel.h`, `cooperative_groups.h`, ...) are found. The host C++ compiler
of the CPU runner has them all, so a RawModule with backend="nvrtc" refuses such an include at its
build, as CuPy's build would fail on a GPU; backend="nvcc" takes them, as nvcc does.

Only `#include <name>` lines of the code itself are read (not the headers it includes, nor an include
through a macro), and none at all in code that tests `__CUDACC_RTC__`, which may keep them from NVRTC.
"""

from __future__ import annotations

import re

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
#: their libcu++ counterparts, which NVRTC finds and the CPU runner has (include/cuda/std/)
CUDA_STD_COUNTERPARTS = ("array", "atomic", "cassert", "cfloat", "climits", "cmath", "cstddef", "cstdint",
                         "limits", "type_traits", "utility")

_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<(?P<name>[^>\n]+)>", re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def refused_includes(code: str) -> list[tuple[int, str]]:
    """(line, header) of each `#include <standard header>` of `code`, in order."""
    if "__CUDACC_RTC__" in code:
        return []
    text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), code)  # lines stay where they are
    return [(text.count("\n", 0, m.start()) + 1, m["name"].strip()) for m in _INCLUDE.finditer(text)
            if m["name"].strip() in STANDARD_HEADERS]


def refusal(code: str, name: str) -> str | None:
    """The one-line message for the first refused include, or None."""
    found = refused_includes(code)
    if not found:
        return None
    line, header = found[0]
    counterpart = header if header in CUDA_STD_COUNTERPARTS else None
    instead = (f"<cuda/std/{counterpart}> (libcu++, which NVRTC has)" if counterpart
               else "CUDA's own headers (assert and printf need no #include)")
    return (f"{name}:{line}: NVRTC, CuPy's default compiler, has no <{header}> (no C or C++ standard library "
            f"header): CuPy's build of this code fails on a GPU. Include {instead}, or build with "
            "backend='nvcc', which has them")
