"""Building CUDA C for the CPU: the host C++ compiler, one shared library per code.

A library holds runtime.h (what a kernel sees of CUDA), the kernel code (unchanged but for its
`#pragma unroll` lines in GCC's checking build: `gcc_unroll_pragmas`), a table of its instances, and
the runtime that runs its launches (runtime.cpp, compiled once per set of flags: "the runtime"
below). The instances are, in the order given, its name expressions and extern "C" kernels
(RawModule, raw_module.py; the cuda-cpu backend builds each kernels/*.cu file that way, with the
instances that `nn_cuda.kernel_info.name_expressions` lists). Options are NVRTC's, mapped by
`host_flags`. It is built once into the private build cache, `$NN_CUDA_CACHE_DIR/cuda_cpu` (default
`~/.cache/nn_cuda/cuda_cpu`; build_cache.py), so a second run loads it at once.

A library is named by the files it was built from, the way ccache's direct mode finds a result:
every build writes the compiler's own list of the files its preprocessor read (-MD), the headers at
any depth, a header named by a macro, runtime.h and the system headers, into a manifest keyed by what
is known before compiling (the translation unit with the code, the compiler and its version, the
flags). A lookup reads that manifest and hashes the files it lists, now: an edit to any of them gives
another name, which is not in the cache, so the code is built again; the runtime's object is
found the same way, and its name is part of a library's key. The build writes temporary
files and renames them, so concurrent ranks are safe. `load_code` loads a library only after
checking that it is what was built, and rebuilds one that is not, saying so in one line. The
compiler's messages call the code by the name it is given (a file's path), its lines numbered from 1.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import host_compiler
from ..errors import BackendUnavailable, KernelFailure
from . import build_cache, unread_templates

RUNTIME_HEADER = Path(__file__).with_name("runtime.h")
#: the part of the runtime that runs launches, compiled once per set of flags ("the runtime", below)
RUNTIME_SOURCE = Path(__file__).with_name("runtime.cpp")
#: what follows a kernel's __shared__ arrays where they are per host thread (runtime.h, shared_guard)
SHARED_GUARD_SOURCE = Path(__file__).with_name("shared_guard.cpp")
#: the CUDA headers a kernel may include that the CPU runner provides (<cooperative_groups.h>)
INCLUDE_DIR = Path(__file__).with_name("include")

#: the CUDA release NVRTC 12.9 and nvcc 12.9 name (code that tests `CUDART_VERSION >= 9000` took its
#: legacy branch here, and `__shfl_down` failed to build there)
VERSION_MACROS = ("-D__CUDACC_VER_MAJOR__=12", "-D__CUDACC_VER_MINOR__=9", "-D__CUDACC_VER_BUILD__=86",
                  "-DCUDART_VERSION=12090")
#: what a CUDA compiler defines for device code, so that code takes its device branches here too:
#: __CUDACC__, and the __CUDA_ARCH__ of sm_80, whose device functions the runner has (the warp
#: reduce functions, cuda::barrier); not NVRTC's __CUDACC_RTC__, under which code may declare what the
#: host headers the runner includes already declare (uint64_t, ...)
DEVICE_MACROS = ("-D__CUDACC__", "-D__CUDA_ARCH__=800", *VERSION_MACROS)

# -O2: the kernels' loops are worth optimising; -U_FORTIFY_SOURCE: the fibers switch stacks, which
# glibc's fortified longjmp checks would take for stack corruption; #pragma unroll is CUDA's.
# -fstack-clash-protection: a frame larger than a page touches each page as it grows, so a thread
# whose locals outgrow its fiber stack hits the guard page below it (reported as such), never the
# stack of the thread next to it.
# -g1: line tables only, so that a fault is reported at its kernel's file:line (runner.source_at);
# DWARF 4, whose line tables name the file of a #line directive where binutils 2.40 reads DWARF 5's
# as the generated .cpp.
# -fno-optimize-sibling-calls: a call a function ends with stays a call, so that a fault in a function
# of the runner's that a kernel calls last (an atomicAdd through an index past the end) leaves the
# kernel's line on the stack, where the launcher finds it (runner.LoadedKernels._caller_at).
BASE_FLAGS = ("-O2", "-g1", "-gdwarf-4", "-std=c++17", "-fPIC", "-shared", "-U_FORTIFY_SOURCE",
              "-Wno-unknown-pragmas", "-fstack-clash-protection", "-fno-strict-aliasing", "-Wno-narrowing",
              "-fno-optimize-sibling-calls")
# -Wno-narrowing: a constant narrowed in braces (`int y[2] = {0.0, 1.5}`, SHOC's NeuralNet) is an error
# of GCC's and clang's by default, a warning of NVRTC's and nvcc's (#2361-D), which build it.
# -fno-strict-aliasing: CUDA code moves floats as int4 or float4 (`*reinterpret_cast<int4*>(&b[4 * v]) =
# ...` into a float array, as vectorized GEMMs do), which the GPU's compilers take as written; with
# C++'s aliasing rules GCC at -O2 let the float reads miss such a store, and a GEMM came out all wrong.
# GCC gives the __shared__ arrays of a template kernel (function-local statics of a template) the
# binding STB_GNU_UNIQUE, which the dynamic linker makes one object across every library of the
# process: a second build of the same kernel (a student's edited copy beside the project's) would
# then use the first one's arrays, and the checking mode would fill the wrong ones with NaN.
# -fno-gnu-unique makes them ordinary weak symbols, each library's own (clang never makes them unique).
# -fno-var-tracking-assignments: GCC tracks variables' locations at -O2 whenever -g is on, which line
# tables do not use (0.1 of the 1.2 s a build of an empty kernel takes on the 2-core machine).
# -fno-ipa-icf: GCC at -O2 folds functions of identical code into one, so that a fault in the second
# of two kernels with the same body was named at the first one's lines (at the second's header).
# -fno-tree-slp-vectorize: GCC 12.2's SLP vectorizer (on at -O2) folds (float)(x - (double)(float)x) of two
# neighbouring doubles to 0, where the float rounding error of x is meant (OpenMM's mixed precision keeps
# positions so: `posq.x - (float) posq.x` into a float4 correction); a two-line C++ function shows it, and
# the tiled and register-blocked GEMMs' training epoch took the same time without it (1.17-1.21 s, 0.78-0.83 s).
GCC_ONLY_FLAGS = ("-fno-gnu-unique", "-fno-var-tracking-assignments", "-fno-ipa-icf", "-fno-tree-slp-vectorize")
# -fno-finite-loops: C++ lets a compiler take a loop without side effects for one that ends, and GCC
# at -O2 (10 and later) deletes it: `while (flag[0] != 1) {}` on a plain flag that nothing sets (Ansorge's
# deadlock.cu, which deadlocks on the book's GPUs) returned at once. Kept, it spins until the watchdog
# names it. Where the compiler lacks the option (GCC 9) it deletes no such loop either.
KEPT_LOOPS_FLAG = "-fno-finite-loops"
# Floating point (docs/kernels.md, "Floating point: what differs from a GPU"). By default nothing is
# contracted, on every host and compiler (clang would contract within an expression), so a host
# gives the same bits whatever its compiler. NN_CUDA_CPU_FMA=1 fuses a * b + c into one FMA as
# NVRTC does on a GPU; vectorising a loop first would split its multiply-adds into vector multiplies
# and ordered adds, so it is turned off there. On an H200 that build gave the naive and tiled GEMMs'
# bits exactly (docs/kernels.md); it costs the naive GEMM 1.7x on the AMD EPYC of the tables.
FMA_VARIABLE = "NN_CUDA_CPU_FMA"
NO_CONTRACTION_FLAGS = ("-ffp-contract=off",)
FMA_FLAGS = {"gcc": ("-ffp-contract=fast", "-fno-tree-vectorize"),
             "clang": ("-ffp-contract=fast", "-fno-vectorize", "-fno-slp-vectorize")}
# The checking mode traps indices outside a fixed-size array (__shared__ tiles, c[16]) with no
# run-time library: the trap instruction raises SIGILL, which the launcher reports.
CHECK_FLAGS = ("-fsanitize=bounds", "-fsanitize-undefined-trap-on-error")
# With GCC and its libubsan, it also checks each conversion of a float to an integer: NaN, or out of
# the integer's range, is undefined in C++, and a GPU's cvt clamps it (NaN gives 0) where x86's gives
# INT_MIN, so the results part from a GPU's there (an index (int)NaN faults here, reads element 0
# there). Trapping cannot tell the two checks apart, so both call the runtime's handlers
# (runtime.cpp, NN_CUDA_CPU_CAST_CHECK), which report them; the link needs libubsan, unused.
# So are shifts by the width of the type or more (or by a negative count): a GPU's shift clamps the
# count to the width (`1u << 32` is 0), x86's takes it modulo the width (1). A conversion's handler
# may return (recover): below the range of a 32- or 64-bit signed type (-inf, -3e9 to int) x86 gives
# the type's minimum, as a GPU's clamp does, and the kernel goes on (FasterTransformer's T5 buckets
# convert logf(0) and drop the value).
CAST_CHECK_FLAGS = ("-fsanitize=bounds,float-cast-overflow,shift-exponent",
                    "-fno-sanitize-recover=bounds,shift-exponent", "-fsanitize-recover=float-cast-overflow",
                    "-DNN_CUDA_CPU_CAST_CHECK")

# The race check (NN_CUDA_CPU_RACECHECK=1, runtime.cpp "races"): GCC's ThreadSanitizer instrumentation of
# the code's loads and stores, whose calls the runtime answers itself. -static-libtsan with -shared links
# no libtsan at all (GCC's link spec adds it to a shared library only as a shared one), which could not
# be loaded into Python after its start; the runtime's object is compiled without the instrumentation.
RACE_CHECK_FLAGS = ("-fsanitize=thread", "-static-libtsan", "--param=tsan-instrument-func-entry-exit=0",
                    "--param=tsan-distinguish-volatile=1", "-DNN_CUDA_CPU_RACE_CHECK")  # GCC 11 and later
_INSTRUMENTATION_FLAGS = RACE_CHECK_FLAGS[:4]


def is_gcc(compiler: str) -> bool:
    """Whether the host compiler is GCC (not clang, which answers to g++ on macOS)."""
    version = host_compiler.compiler_version(compiler)
    return "Free Software Foundation" in version and "clang" not in version


def check_flags(compiler: str) -> tuple:
    """The checking build's flags: with the float-to-integer and shift checks where GCC can link them."""
    return CAST_CHECK_FLAGS if is_gcc(compiler) and host_compiler.has_ubsan_runtime(compiler) else CHECK_FLAGS


# With more than one host thread (NN_CUDA_CPU_THREADS, by default the cores this process may use),
# the plain mode runs a launch's blocks on them all (runtime.cpp, "workers"): what a running block owns
# is thread_local there, each function finding its module's thread-local block once (local-dynamic).
# That costs one thread about 1.4x on a kernel with barriers, so one thread builds without it.
WORKER_FLAGS = ("-DNN_CUDA_CPU_WORKERS", "-pthread", "-ftls-model=local-dynamic")
# The code's names are its own, as on a GPU: an extern "C" kernel, __device__ function or variable named
# like a symbol of the C library (`step`, `getpid`, `error`, `opterr`, as PyCUDA's game of life names its
# kernel `step`) bound, in a shared library, to the C library's definition, loaded first, so that the
# C library's function ran in the kernel's place (`error` ended the process). -Bsymbolic binds the
# library's references to its own definitions. (Mach-O's two-level names never had that problem.)
# The kernels' malloc, free, new and delete reach the runtime's record of the device heap first
# (runtime.cpp, "the device heap", which the macro turns on), then the C library's and libstdc++'s.
_DEVICE_HEAP_WRAPS = ("malloc", "free", "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm")
DEVICE_HEAP_FLAGS = () if sys.platform == "darwin" else ("-DNN_CUDA_CPU_DEVICE_HEAP",)
LINK_FLAGS = () if sys.platform == "darwin" else (
    "-Wl,-Bsymbolic", "-Wl," + ",".join(f"--wrap={name}" for name in _DEVICE_HEAP_WRAPS))



class KernelBuildError(KernelFailure):
    """A kernel file or RawModule code does not compile for the CPU; the message holds the compiler's
    diagnostics."""


# ---- NVRTC's options for the host compiler ----------------------------------------------------------

#: NVRTC options about GPU code only (architecture, registers, float modes of the GPU): ignored
_GPU_ONLY_OPTIONS = ("-arch", "--gpu-architecture", "-use_fast_math", "--use_fast_math", "-ftz", "--ftz",
                     "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-lineinfo",
                     "--generate-line-info", "-G", "--device-debug", "-maxrregcount", "--maxrregcount",
                     "-restrict", "--restrict", "-default-device", "--device-as-default-execution-space",
                     "--extra-device-vectorization", "-extra-device-vectorization", "-minimal", "--minimal",
                     "-ewp", "--extensible-whole-program", "-fdevice-time-trace", "--fdevice-time-trace",
                     # relocatable device code, the GPU assembler's options, 128-bit integers (the host has them)
                     "-dc", "-rdc", "--relocatable-device-code", "-dlto", "--dlto", "-dopt", "--dopt",
                     "-Xptxas", "--ptxas-options", "--device-int128", "-split-compile", "--split-compile",
                     "--dlink-time-opt", "-gen-opt-lto", "--gen-opt-lto", "-jtd", "--jump-table-density",
                     "-device-stack-protector", "--device-stack-protector", "-modify-stack-limit",
                     "--modify-stack-limit", "-builtin-move-forward", "--builtin-move-forward",
                     "-builtin-initializer-list", "--builtin-initializer-list", "-no-source-include",
                     "--no-source-include", "-fdevice-syntax-only", "--fdevice-syntax-only",
                     # the compiler's warnings, their numbers and its reports: the runner shows only a build's errors
                     "-w", "--disable-warnings", "-diag-suppress", "--diag-suppress", "-diag-warn",
                     "--diag-warn", "-diag-error", "--diag-error", "-err-no", "--display-error-number",
                     "-no-err-no", "--no-display-error-number", "-brief-diag", "--brief-diagnostics",
                     "-opt-info", "--optimization-info", "-time", "--time")
#: nvcc's options (not NVRTC's, which refuses them) that the host compiler's build does not need:
#: optimisation levels, and language extensions it has by itself
_NVCC_ONLY_OPTIONS = ("-O0", "-O1", "-O2", "-O3", "--expt-relaxed-constexpr", "-expt-relaxed-constexpr",
                      "--extended-lambda", "-extended-lambda", "--expt-extended-lambda", "-expt-extended-lambda")
#: NVRTC's options that take a value, which NVRTC takes in the next option too (hashcat passes
#: "--split-compile", "0"): `--split-compile=0` alike
_VALUE_OPTIONS = ("-arch", "--gpu-architecture", "-maxrregcount", "--maxrregcount", "-split-compile", "--split-compile",
                  "-Xptxas", "--ptxas-options", "-diag-suppress", "--diag-suppress", "-diag-warn", "--diag-warn",
                  "-diag-error", "--diag-error", "-std", "--std", "--pre-include", "-include", "--include-path",
                  "--define-macro", "--undefine-macro", "-I", "-D", "-U", "-ftz", "--ftz", "-prec-div", "--prec-div",
                  "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-jtd", "--jump-table-density",
                  "-modify-stack-limit", "--modify-stack-limit", "-dopt", "--dopt", "-time", "--time",
                  "-fdevice-time-trace", "--fdevice-time-trace", "-device-stack-protector", "--device-stack-protector")
#: -std values: the runtime needs C++17, which compiles C++03, C++11 and C++14 code too
_STANDARDS = {"c++03": "c++17", "c++11": "c++17", "c++14": "c++17", "c++17": "c++17", "c++20": "c++20"}


#: the macro of an nvcc build (host_flags): nvcc defines it, NVRTC does not
NVCC_MACRO = "-D__NVCC__"


def host_flags(options, backend: str = "nvrtc") -> list[str]:
    """The host compiler's flags for NVRTC-style `options` (CuPy's RawModule options): -I<dir> and
    --include-path=<dir> (made absolute; a folder of the CUDA toolkit's or CCCL's headers left out:
    the runner has its own), -D<name>[=value] and --define-macro=, -U<name> and
    --undefine-macro=, -std=c++03|11|14|17|20 (03 to 14 build as C++17), --pre-include=<header>
    (-include); options about GPU code only (-arch, --use_fast_math, -lineinfo, -Xptxas, -rdc, ...) and
    warnings (-w, --diag-suppress) are ignored, and with backend="nvcc" nvcc's -O levels and
    --expt-relaxed-constexpr / --extended-lambda (and __NVCC__ is defined, as nvcc defines it). Any
    other raises ValueError naming it."""
    if isinstance(options, str) or not all(isinstance(option, str) for option in options):
        raise TypeError(f"options must be a tuple of strings, like NVRTC's, got {options!r}")
    flags = [NVCC_MACRO] if backend == "nvcc" else []  # nvcc defines it in both of its passes, NVRTC not
    for given in _values_joined(options):
        option = _short_form(given)
        name, _, value = option.partition("=")
        if option.startswith("-I") and len(option) > 2:
            folder = Path(option[2:]).expanduser().resolve()  # as NVRTC, from the current folder
            if not _cuda_toolkit_headers(folder):
                flags.append(f"-I{folder}")
        elif option.startswith(("-D", "-U")) and len(option) > 2:
            flags.append(option)
        elif name in ("-std", "--std") and value in _STANDARDS:
            flags.append(f"-std={_STANDARDS[value]}")
        elif name in ("--pre-include", "-include") and value:
            continue  # pre_included: the code's first line
        elif name in _GPU_ONLY_OPTIONS or backend == "nvcc" and name in _NVCC_ONLY_OPTIONS:
            continue
        elif name in _NVCC_ONLY_OPTIONS:
            raise ValueError(f"{given!r} is an option of nvcc, which NVRTC refuses as well: build with "
                             "backend='nvcc', or leave it out")
        else:
            raise ValueError(f"the CPU runner does not take the option {given!r}: it takes -I<dir>, "
                             "-D<name>[=value], -U<name>, -std=c++03|11|14|17|20, --pre-include=<header> and "
                             "ignores GPU-only options and warnings' options")
    return flags


#: what a build with backend="nvcc" reads first: the runtime API's common host functions, which nvcc declares
#: in every file, so that a host helper that calls one builds (a call from a kernel is a KernelError)
NVCC_HOST_API = "#include <nn_cuda_cpu_host_api.h>\n"


def pre_included(options) -> str:
    """The --pre-include=<header> options (NVRTC's and nvcc's) as the #include lines a GPU build reads
    before the code (after the runtime, which the host compiler's own -include would come before)."""
    names = [option.partition("=")[2] for option in _values_joined(options)
             if option.strip().partition("=")[0] in ("--pre-include", "-include")]
    return "".join(f'#include "{name}"\n' for name in names if name)


#: the host threads that run a launch's blocks in the plain mode (1: the calling thread alone)
THREADS_VARIABLE = "NN_CUDA_CPU_THREADS"


def threads_from_environment() -> int:
    """$NN_CUDA_CPU_THREADS, else the cores this process may use: how many host threads run the
    blocks of a plain-mode launch (runtime.cpp takes at most 4)."""
    text = os.environ.get(THREADS_VARIABLE, "")
    if not text:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"{THREADS_VARIABLE}={text!r} is not a number of threads; set it to one (1: the blocks "
                         "one after another, as the checking mode runs them) or unset it")
    return threads


def fma_from_environment() -> bool:
    return os.environ.get(FMA_VARIABLE, "0") not in ("", "0")


def floating_point_flags(compiler: str, gcc: bool) -> tuple:
    """No contraction, or with $NN_CUDA_CPU_FMA set, FMA as on a GPU (BackendUnavailable on an
    x86-64 processor without the FMA instruction)."""
    if not fma_from_environment():
        return NO_CONTRACTION_FLAGS
    flags = FMA_FLAGS["gcc" if gcc else "clang"]
    if host_compiler.is_x86_64():
        if not host_compiler.has_fma(compiler):
            raise BackendUnavailable(f"{FMA_VARIABLE}=1 asks for fused multiply-adds, and this processor has "
                                     "no FMA instruction; unset it to run without them")
        flags = (*flags, "-mfma")
    return flags


#: files that together tell the CUDA toolkit's include folder, CCCL's, CUB's and Thrust's: one of them
#: alone may be a project's own stand-in (DualSPHysics-like code ships a cuda_runtime_api.h for NVRTC)
_TOOLKIT_SIGNS = (("cuda_runtime_api.h", "driver_types.h", "cuda_device_runtime_api.h"),
                  ("cuda/std/version", "cuda/std/detail/__config"), ("cub/cub.cuh", "cub/version.cuh"),
                  ("thrust/version.h", "thrust/detail/config.h"))
#: the toolkit's folders already said to be left out (once a process)
_TOLD_TOOLKIT: set[Path] = set()


def _cuda_toolkit_headers(folder: Path) -> bool:
    """Whether `folder` holds the CUDA toolkit's own headers or CCCL's (cuda-python's examples pass
    both as include paths): the runner has its own of those, which a GPU's build finds there; the
    toolkit's, found first, stopped the build with thousands of the compiler's errors until 2026-11-27.
    Until the night of 2026-11-27 one file told it, and a project's folder holding its own
    cuda_runtime_api.h was left out whole, its other headers "No such file or directory"."""
    toolkit = any(all((folder / name).is_file() for name in sign) for sign in _TOOLKIT_SIGNS)
    if toolkit and folder not in _TOLD_TOOLKIT:
        _TOLD_TOOLKIT.add(folder)
        print(f"nn_cuda: the include path {folder} holds the CUDA toolkit's headers (or CCCL's): left out, the "
              "CPU runner has its own", file=sys.stderr)
    return toolkit


def _values_joined(options) -> list[str]:
    """`options` with the value an option takes from the next one joined to it, as NVRTC reads them:
    ("--split-compile", "0") -> "--split-compile=0", ("-D", "N=4") -> "-DN=4"."""
    joined, pending = [], list(options)
    while pending:
        option = pending.pop(0)
        name = option.strip()
        if name in _VALUE_OPTIONS and pending and not pending[0].strip().startswith("-"):
            value = pending.pop(0).strip()
            option = name + value if name in ("-I", "-D", "-U") else f"{name}={value}"
        joined.append(option)
    return joined


def _short_form(option: str) -> str:
    """--include-path=DIR -> -IDIR, --define-macro=X -> -DX, --undefine-macro=X -> -UX; spaces around
    the option and after -D, -U or -I left out, as NVRTC reads them (ArrayFire passes " -D TILE_DIM=32")."""
    option = option.strip()
    for long, short in (("--include-path=", "-I"), ("--define-macro=", "-D"), ("--undefine-macro=", "-U")):
        if option.startswith(long):
            return short + option[len(long):]
    if option.startswith(("-D", "-U", "-I")):
        return option[:2] + option[2:].lstrip()
    return option


def find_compiler() -> str:
    """The host C++ compiler: $CXX, else g++, clang++ or c++ on PATH."""
    try:
        return host_compiler.find_compiler()
    except host_compiler.CompilerMissing as missing:
        raise BackendUnavailable(str(missing)) from None


def instance_address(expression: str) -> str:
    """The address a row of the instance table takes: a name expression as NVRTC takes it, `scale<float>`
    or `&scale<float>`, or a cast that picks one overload (`static_cast<void (*)(int*)>(&g)`)."""
    text = expression.strip()
    return text if text.startswith(("&", "static_cast<")) else f"&{text}"


def _unit(body: str, instances) -> str:
    rows = "".join(f"    NN_CUDA_CPU_INSTANCE({instance_address(name)}),\n" for name in instances)
    return (
        f'#include "{RUNTIME_HEADER.as_posix()}"\n{body}\n'
        f"static const nn_cuda_cpu::Instance nn_cuda_cpu_instances[] = {{\n{rows}}};\n"
        "NN_CUDA_CPU_EXPORT(nn_cuda_cpu_instances)\n"
    )


#: CUDA's unroll pragma on a line of its own: `#pragma unroll`, `#pragma unroll 4`, `#pragma unroll (N)`
_UNROLL_PRAGMA = re.compile(r"^(?P<indent>[ \t]*)#[ \t]*pragma[ \t]+unroll\b(?P<count>[^\n]*)$", re.M)
#: what CUDA's `#pragma unroll` without a count (unroll completely where the count is constant, leave
#: rolled where it is not) becomes: GCC's pragma needs a factor, which it applies to a loop of a run-time
#: count too. 16 unrolls a thread's register tile (c[16]) completely; 64 made the checking build of
#: Tongkaio's SGEMM kernel 5 (loops of run-time counts, nested) take 63 s, 11 s with 16 (2026-11-27)
FULL_UNROLL = 16
#: beyond this many unroll pragmas in a unit, the checking build leaves them to GCC's own unrolling:
#: candle's quantized.cu (85, in nested loops of template counts) took 344 s to build checked, 7 s
#: plain; a prefix of it 45 s with the pragmas translated, 10 s without (2026-11-27)
MOST_UNROLL_PRAGMAS = 32


def gcc_unroll_pragmas(code: str) -> str:
    """`code` with CUDA's `#pragma unroll [N]` lines as GCC's `#pragma GCC unroll N`, for the checking
    build (clang reads CUDA's spelling itself). GCC ignores CUDA's, and where the checking mode's
    bounds checks make a loop's body larger than GCC unrolls on its own, the loop stays rolled and
    the local arrays it indexes (a thread's c[16]) live in memory. Measured on the AMD EPYC of the
    tables, 800x1000x784 in the checking mode: the register-blocked GEMM 1.40 -> 1.09 s, the tiled
    3.48 -> 3.04 s. The plain build is left as it is: GCC unrolls those loops there already (the
    same pragmas gained nothing), and a count-less pragma on a loop whose count is only known at run
    time would be unrolled FULL_UNROLL times where CUDA leaves it rolled. A count that is not a
    number (a macro, a template parameter) unrolls by FULL_UNROLL; the pragma changes speed, never
    results. Each line stays a line, so the compiler's line numbers still match the file's. Code of
    more than MOST_UNROLL_PRAGMAS of them is left as it is: its build would take minutes."""
    def gcc(match):
        count = match["count"].split("//")[0].strip().strip("()").strip()
        factor = count if count.isdigit() else FULL_UNROLL
        return f"{match['indent']}#pragma GCC unroll {factor}"
    if len(_UNROLL_PRAGMA.findall(code)) > MOST_UNROLL_PRAGMAS:
        return code
    return _UNROLL_PRAGMA.sub(gcc, code)


#: how the compiler's messages name a RawModule's code given no name (its lines are numbered from 1)
CODE_NAME = "(RawModule code)"


def code_unit(code: str, instances, name: str | None = None) -> str:
    """The C++ source of a library: the runtime, the code (called `name` in messages), its instances."""
    return _unit(f"{line_one(name)}{code}\n#line 1 {_quoted(f'({_table_of(name)})')}\n", instances)


def line_one(name: str | None) -> str:
    """The directive that makes the next line the first of the code called `name` in messages."""
    return f"#line 1 {_quoted(name or CODE_NAME)}\n"


def _quoted(text: str) -> str:
    """`text` as a C string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _table_of(name: str | None) -> str:
    return f"the instance table of {Path(name).name if name else 'the RawModule code'}"


@dataclasses.dataclass(frozen=True)
class _Plan:
    """One build: what is compiled, how, where its manifest is, and how messages name it."""

    compiler: str
    flags: list
    unit: str
    manifest: Path
    stem: str  # names the generated source: "gemm_naive" -> gemm_naive_cpu.cpp
    what: str  # "kernels/gemm1_naive.cu"
    table: str  # what the generated source file holds: "the instance table of gemm1_naive.cu"
    suffix: str = ".so"  # what it builds: a library, (".o") a runner's object, or (".h.gch") runtime.h's
    runner: "_Runner | None" = None  # a library's: how its build gets the runner's parts


@dataclasses.dataclass(frozen=True)
class _Runner:
    """The runner's parts a library links (the runtime's object, the shared guard's) and reads (runtime.h
    precompiled), found or built when the library is compiled."""

    version: str  # the compiler's
    flags: tuple  # the runner's own: the library's flags less the code's -I, -D, -U and the link's
    guard: bool  # whether the shared guard follows the code (WORKER_FLAGS)
    precompiled: bool  # whether runtime.h is read precompiled (GCC)


#: the runner's own macros, which a RawModule adds to the code's flags (raw_module.DYNAMIC_SHARED_FLAG)
_RUNNER_MACROS = ("-DNN_CUDA_CPU_", "-UNN_CUDA_CPU_")


def _plan(unit: str, extra_flags, stem: str, what: str, table: str, check: bool, workers: bool = True) -> _Plan:
    compiler = find_compiler()
    version = host_compiler.compiler_version(compiler)
    gcc = is_gcc(compiler)
    if gcc and check:
        unit = gcc_unroll_pragmas(unit)
    own = [*BASE_FLAGS, *DEVICE_MACROS, *DEVICE_HEAP_FLAGS, *(GCC_ONLY_FLAGS if gcc else ()),
           *((KEPT_LOOPS_FLAG,) if host_compiler.accepts(compiler, KEPT_LOOPS_FLAG) else ()),
           *floating_point_flags(compiler, gcc),
           *(check_flags(compiler) if check else WORKER_FLAGS if workers and threads_from_environment() > 1
             else ())]
    flags = [*own, *extra_flags, *LINK_FLAGS, f"-isystem{INCLUDE_DIR}"]
    if RACE_CHECK_FLAGS[0] in extra_flags and not gcc:
        raise KernelBuildError(f"{what}: the race check (NN_CUDA_CPU_RACECHECK=1) needs GCC as the host compiler, "
                               f"which instruments every load and store; {compiler} is not GCC (set CXX=g++)")
    runner = _Runner(version, (*own, *(flag for flag in extra_flags if flag.startswith(("-std=", *_RUNNER_MACROS))
                                       or flag in _INSTRUMENTATION_FLAGS),
                               f"-isystem{INCLUDE_DIR}"), WORKER_FLAGS[0] in flags, gcc)
    manifest = _manifest(stem, unit, compiler, version, " ".join(flags))
    return _Plan(compiler, flags, unit, manifest, stem, what, table, runner=runner)


def _manifest(stem: str, *key_parts: str) -> Path:
    """The manifest of a build, named by what is known before compiling it."""
    key = hashlib.sha256()
    for part in key_parts:
        key.update(part.encode())
        key.update(b"\0")
    return build_cache.folder() / f"{stem}-{key.hexdigest()[:16]}{_MANIFEST}"


# ---- the runner's parts: built once per set of flags ------------------------------------------------
#
# runtime.cpp (the block scheduler, the checking mode, faults, the C interface) is most of what a
# library holds, and runtime.h with the C++ headers it includes most of what the compiler reads for
# it. On the 2-core AMD EPYC of the tables a library of a one-line kernel took 1.17 s to build when it
# compiled the runtime too; 0.35 s with the runtime's object compiled once per set of flags and linked
# in; and its compilation 0.40 -> 0.15 s with GCC's precompiled header of runtime.h.
#
# Both are built with the runner's own flags: the library's less the code's -I folders, -D and -U
# macros (and the link's). So one object and one header serve code of any -D, as a test run or a
# class's workspaces build: a -D the code defines is the code's. Where it touches what runtime.h
# declares (NDEBUG, a macro named `min`, -U__CUDA_ARCH__), GCC finds that the precompiled header does
# not hold what the code would read (it checks each macro the header uses), and the runtime is
# compiled with the code's flags instead, and runtime.h read as it is: both parts then see the same
# declarations, as they must. Clang refuses a precompiled header whose macros differ where GCC sets it
# aside, so with clang the parts are built with the code's flags, as they were before.
#
# The parts are cached and verified as a library is (the folder is private: the file the compiler reads
# is the one verified). A library's manifest lists the files its parts were built from along with its
# own, so an edit of runtime.cpp or runtime.h rebuilds every library (-fpch-deps would list the
# header's generated source instead).


@dataclasses.dataclass(frozen=True)
class _RunnerParts:
    """What a library's compile command adds of the runner."""

    include: tuple  # the flags that read runtime.h precompiled, or none
    before: tuple  # the objects linked before the code: the runtime's
    after: tuple  # and after it: the shared guard's (runtime.h)
    files: tuple  # the files they were built from


def _runner_parts(plan: _Plan) -> _RunnerParts:
    """The runner's parts for a library's build, built (and verified) first if missing."""
    runner, include, files = plan.runner, (), []
    flags = plan.flags
    if runner.precompiled:
        header, header_files = _precompiled_header(_header_plan(plan.compiler, runner.version, runner.flags))
        if _header_serves(plan.compiler, tuple(plan.flags), runner.flags, header):
            include, flags = ("-include", str(header)), runner.flags
            files += header_files
    runtime, runtime_files = _object(RUNTIME_SOURCE, plan.compiler, runner.version, flags,
                                     "the runner's runtime (runtime.cpp)")
    guard = (_object(SHARED_GUARD_SOURCE, plan.compiler, runner.version, flags,
                     "the shared guard (shared_guard.cpp)"),) if runner.guard else ()
    for _, guard_files in guard:
        files += guard_files
    return _RunnerParts(include, (runtime,), tuple(path for path, _ in guard), (*files, *runtime_files))


def _object(source: Path, compiler: str, version: str, flags, what: str) -> tuple[Path, list[Path]]:
    """(the cached object of one of the runner's sources for these flags, the files it was built from),
    built (and verified) first if missing."""
    unit = f'#include "{source.as_posix()}"\n'
    flags = [*(flag for flag in flags if not flag.startswith(("-I", "-Wl,")) and flag not in _INSTRUMENTATION_FLAGS),
             "-c"]
    plan = _Plan(compiler, flags, unit, _manifest(source.stem, unit, compiler, version, " ".join(flags)),
                 source.stem, what, source.name, suffix=".o")
    descriptor, target = _verified_build(plan)
    os.close(descriptor)
    return target, _listed(plan.manifest)


#: names runtime.h's precompiled form in the cache, and the source it is compiled from
_HEADER_STEM, _HEADER_SUFFIX = "runtime_header", ".h.gch"


def _header_plan(compiler: str, version: str, flags) -> _Plan:
    unit = f'#include "{RUNTIME_HEADER.as_posix()}"\n'
    flags = [*flags, "-x", "c++-header"]
    return _Plan(compiler, flags, unit, _manifest(_HEADER_STEM, unit, compiler, version, " ".join(flags)),
                 _HEADER_STEM, "the runner's header (runtime.h, precompiled)", RUNTIME_HEADER.name,
                 suffix=_HEADER_SUFFIX)


def _precompiled_header(plan: _Plan) -> tuple[Path, list[Path]]:
    """(the header to -include, whose precompiled form is beside it; the files it was built from),
    built first if missing. It is verified once per process and contents (it is 40-50 MB)."""
    target = _built(plan)
    info = target.stat()
    if _verified_header(target, info.st_ino, info.st_mtime_ns, info.st_size) is None:
        build_cache.discard(target)
        target = _built(plan)
    stub = target.with_suffix("")  # runtime_header-<key>-<files>.h: GCC reads its .gch where it is valid
    if not stub.is_file():
        build_cache.write_private_text(stub, plan.unit)
    return stub, _listed(plan.manifest)


@functools.cache
def _verified_header(target: Path, inode: int, modified: int, size: int) -> Path | None:
    descriptor, problem = build_cache.open_verified(target)
    if descriptor is None:
        print(f"nn_cuda: the cached {target.name} {problem}; building it again", file=sys.stderr)
        return None
    os.close(descriptor)
    return target


@functools.cache
def _header_serves(compiler: str, flags: tuple, runner_flags: tuple, header: Path) -> bool:
    """Whether GCC reads the precompiled `header` for code built with `flags`: with no macro of the
    code's, or none that runtime.h or a header it includes uses."""
    if not any(flag.startswith(("-D", "-U")) and flag not in runner_flags for flag in flags):
        return True
    check = [compiler, *(flag for flag in flags if flag != "-shared" and not flag.startswith("-Wl,")),
             "-include", str(header), "-Werror=invalid-pch", "-fsyntax-only", "-x", "c++", os.devnull]
    try:
        return subprocess.run(check, capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _listed(manifest: Path) -> list[Path]:
    """The files a manifest lists."""
    return [Path(line) for line in manifest.read_text().splitlines() if line]


def _code_plan(code: str, flags, instances, check: bool, name: str | None, workers: bool) -> _Plan:
    """The build of a code string with host compiler `flags` (see host_flags) and `instances`; its
    blocks on one host thread when not `workers` (a cooperative module's: its __shared__ arrays are
    then plain statics, which its resident blocks take turns with)."""
    return _plan(code_unit(code, instances, name), list(flags), Path(name).stem if name else "raw_module",
                 name or "the RawModule code", _table_of(name), check, workers)


#: the manifest's suffix: the files the preprocessor read for one translation unit, one per line
_MANIFEST = ".deps"


def _library_named_by(manifest: Path, files_read: list[Path], suffix: str) -> Path:
    """The library (or object) built from the current contents of `files_read` under this manifest's key."""
    digest = host_compiler.files_digest(files_read)
    return manifest.with_name(f"{manifest.name[:-len(_MANIFEST)]}-{digest[:16]}{suffix}")


def _cached_library(manifest: Path, suffix: str) -> Path | None:
    """The library the manifest names for the files as they are now; None when there is no
    manifest, when a file it lists is gone, or when the library for today's contents is not built."""
    try:
        listed = [Path(line) for line in manifest.read_text().splitlines() if line]
    except (OSError, UnicodeDecodeError):
        return None
    if not listed or not all(path.is_file() for path in listed):
        return None
    library = _library_named_by(manifest, listed, suffix)
    return library if library.is_file() else None


def _built(plan: _Plan) -> Path:
    """The cached library of a plan, built first if missing or if a file it was built from changed."""
    cached = _cached_library(plan.manifest, plan.suffix)
    if cached:
        return cached
    with build_cache.building(plan.manifest):  # another process may be building it: then it is there after
        return _cached_library(plan.manifest, plan.suffix) or _compile(plan)


def code_library(code: str, flags, instances, check: bool, name: str | None = None, workers: bool = True) -> Path:
    """The cached shared library of a code string (host compiler `flags`, from host_flags) holding
    `instances`, in that order (name expressions or names of extern "C" kernels); built first if
    missing or if a file it was built from has changed since."""
    return _built(_code_plan(code, flags, instances, check, name, workers))


def live_shared_statics(code: str, flags, instances, check: bool, name: str | None = None,
                        workers: bool = True) -> set[str] | None:
    """The names of the function-local statics that the code's build keeps when its __shared__
    arrays are not kept `used` (runtime.h, NN_CUDA_CPU_LIVE_SHARED_ONLY): the build's unit compiled
    once more, to an object that nm reads, so that the arrays of branches the compiler removes are
    gone, as NVRTC removes them (StyleGAN3's filtered_lrelu declares a 64 MiB array in a branch its
    template arguments rule out). None where that build fails or nm is missing. Seconds, once (the
    object is cached as the library is): asked for only where a function seems to pass 48 KiB."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    library = _code_plan(code, flags, instances, check, name, workers)
    flags = [*(flag for flag in library.flags if not flag.startswith("-Wl,")), "-DNN_CUDA_CPU_LIVE_SHARED_ONLY", "-c"]
    plan = dataclasses.replace(library, flags=flags, suffix=".o", runner=None, stem=f"{library.stem}_live",
                               what=f"the __shared__ arrays that {library.what} reaches",
                               manifest=_manifest(f"{library.stem}_live", library.unit, library.manifest.name,
                                                  " ".join(flags)))
    try:
        descriptor, target = _verified_build(plan)
    except KernelBuildError:
        return None
    os.close(descriptor)
    listing = subprocess.run([nm, "--defined-only", str(target)], capture_output=True, text=True, timeout=60)
    return {line.split()[-1] for line in listing.stdout.splitlines() if line.strip()}


def load_code(code: str, flags, instances, check: bool, name: str | None = None,
              workers: bool = True) -> tuple[ctypes.CDLL, str]:
    """(the loaded library of code_library, a name under which another process reads it).

    A cached library that is not what was built (build_cache.open_verified) is never loaded: it is
    built again, and one line on stderr says why. In an nvcc build, a function the code declares and
    never defines is given a stand-in (host_function_stubs) and the code built again.
    """
    undefined: list[str] = []

    def may_stand_in(function: str) -> bool:  # a host function's callee, as far as the code shows
        return NVCC_MACRO in flags and len(undefined) < _MOST_STAND_INS and not _declared_on_the_device(code, function)

    while True:
        try:
            return _load(_code_plan(code + host_function_stubs(undefined), flags, instances, check, name, workers),
                         may_stand_in)
        except _UndefinedFunction as missing:
            undefined.append(missing.symbol)


#: how many functions declared and never defined an nvcc build gives stand-ins before it gives up
_MOST_STAND_INS = 16


class _UndefinedFunction(Exception):
    """A function the library calls that nothing defines (load_code gives it a stand-in and builds again)."""

    def __init__(self, symbol: str):
        super().__init__(symbol)
        self.symbol = symbol


def host_function_stubs(symbols: list[str]) -> str:
    """For an nvcc build, a definition of each function of `symbols` (mangled names) that the code declares
    and never defines: `nvcc --cubin` (CuPy's nvcc backend) compiles device code alone, so a host function
    that calls one defined in another file of the project (a tutorial's launcher) builds there. The CPU
    build compiles the host function too; its call would find no definition when the library is loaded.
    The stand-in ends the launch with a KernelError naming the function, should a kernel call it (where
    ptxas refuses the build on a GPU)."""
    names = demangled(symbols) if symbols else []
    return "".join(f'\nextern "C" [[noreturn]] void nn_cuda_cpu_stand_in_{i}() __asm__("{symbol}");\n'
                   f'extern "C" void nn_cuda_cpu_stand_in_{i}() {{ nn_cuda_cpu::defined_nowhere({_quoted(name)}); }}'
                   for i, (symbol, name) in enumerate(zip(symbols, names)))


def _declared_on_the_device(code: str, function: str) -> bool:
    """Whether the code declares `function` (demangled: "float scale(int)") as a __device__ one (a GPU build
    then needs its definition: ptxas refuses the kernel that calls it)."""
    name = function.split("(")[0].split("<")[0].split()[-1].split("::")[-1]
    return re.search(rf"\b__device__\b[^;{{}}]*\b{re.escape(name)}\s*[<(]", code) is not None


def _load(plan: _Plan, may_stand_in=None) -> tuple[ctypes.CDLL, str]:
    descriptor, target = _verified_build(plan)
    # The descriptor stays open: the library is never unloaded, and nm reads it through it.
    try:
        library = ctypes.CDLL(build_cache.loader_path(descriptor, target))
    except OSError as error:
        missing = re.search(r"undefined symbol: (\S+)", str(error))
        if missing is None:
            raise
        symbol = missing.group(1)
        function = demangled([symbol])[0]
        if may_stand_in and symbol.startswith("_Z") and "(" in function and may_stand_in(function):
            raise _UndefinedFunction(symbol) from None
        if symbol.startswith("__") and not symbol.startswith("__Z"):
            # glibc's <math.h> declares an internal __name beside each function (__tanhf beside tanhf):
            # TensorRT-LLM defines its own __tanhf in a header a kernel file may forget
            raise KernelBuildError(
                f"{plan.what}: `{symbol}` is called and defined nowhere: the host's C library declares "
                f"that name (its own, beside {symbol.lstrip('_')}), NVRTC does not (\"identifier "
                f"\"{symbol}\" is undefined\"); define it in the code, or call CUDA's function") from None
        raise KernelBuildError(
            f"{plan.what}: `{function}` is declared and called but never defined in the code "
            f"(a GPU build fails too, ptxas: \"Unresolved extern function '{symbol}'\"); define it, or, for "
            "a template, the instance the kernel calls") from None
    return library, build_cache.tool_path(descriptor, target)


def demangled(symbols) -> list[str]:
    """Each symbol as c++filt demangles it ("_Z1kPf" -> "k(float*)"); the symbols themselves without
    c++filt (binutils')."""
    symbols = list(symbols)
    tool = shutil.which("c++filt")
    try:
        plain = subprocess.run([tool], input="\n".join(symbols), capture_output=True, text=True, timeout=30,
                               check=True).stdout.splitlines() if tool else symbols
    except (OSError, subprocess.SubprocessError):
        plain = symbols
    return plain if len(plain) == len(symbols) else symbols


def _verified_build(plan: _Plan) -> tuple[int, Path]:
    """(an open descriptor of the plan's cached build, its path), built again first if it is not what
    was built (build_cache.open_verified), which one line on stderr says."""
    target = _built(plan)
    descriptor, problem = build_cache.open_verified(target)
    if descriptor is None:
        print(f"nn_cuda: the cached CPU build of {plan.what} ({target.name}) {problem}; building it again",
              file=sys.stderr)
        build_cache.discard(target)
        _built(plan)
        descriptor, problem = build_cache.open_verified(target)
        if descriptor is None:
            raise KernelBuildError(f"the CPU build of {plan.what} {problem} right after it was built, in "
                                   f"{target.parent}; set NN_CUDA_CACHE_DIR to a folder of your own")
    return descriptor, target


#: the compiler's note on the brace or parenthesis a missing `}` or `)` leaves open (GCC quotes it in
#: Unicode or ASCII)
_UNCLOSED = re.compile(r"^(?P<where>.+?:\d+):\d+: note: to match this [‘'`](?P<opener>[{(])[’']", re.M)
#: the compiler's error where a `}` was due (the instance table, compiled inside an initializer's braces)
_EXPECTED_BRACE = re.compile(r"expected [‘'`]\}[’']")


def _missing_brace(log: str) -> str:
    """": a `}` is missing ...": the line that says why, when the code ends inside a block, or inside
    a parenthesis (a kernel's header left unfinished). The library's instance table, which follows the
    code, is then compiled inside it, and the compiler's first messages are about the table, not
    about the code."""
    opened = {opener: where for where, opener in _UNCLOSED.findall(log)
              if not where.startswith("(the instance table")} if "note: to match this" in log else {}
    if "{" in opened and ("at end of input" in log or _EXPECTED_BRACE.search(log)):
        return f": a `}}` is missing (the brace opened at {opened['{']}, or one inside it, is never closed)"
    first_error = re.search(r"^.*\berror: ", log, re.M)
    if "(" in opened and first_error and first_error[0].startswith("(the instance table"):
        return f": a `)` is missing (the parenthesis opened at {opened['(']} is never closed)"
    return ""


#: GCC's and clang's error on a name of the instance table (a name expression) that the code does not
#: declare, with GCC's guess at the name meant
_UNDECLARED_INSTANCE = re.compile(r"^\(the instance table of [^)\n]*\):\d+:\d+: error: (?:[‘'`](?P<name>[^’'\n]+)[’'] "
                                  r"was not declared in this scope(?P<guess>; did you mean [‘'`][^’'\n]+[’']\?)?|"
                                  r"use of undeclared identifier '(?P<clang>[^'\n]+)'|"
                                  r"[‘'`](?P<member>[^’'\n]+)[’'] is not a member of [‘'`](?P<scope>[^’'\n]+)[’']"
                                  r"(?P<member_guess>; did you mean [‘'`][^’'\n]+[’']\?)?|"
                                  r"no member named '(?P<clang_member>[^'\n]+)' in namespace '(?P<clang_scope>[^'\n]+)')",
                                  re.M)


#: GCC's errors where the code redeclares what the host's standard library declares: a fixed-width
#: integer type as another type, a std:: template
_OWN_STANDARD_LIBRARY = re.compile(r"error: (?:conflicting declaration [‘'`](?:using |typedef )?[^’'\n]*\bu?int\d+_t\b|"
                                   r"redefinition of [‘'`](?:struct|class) std::)")


#: GCC's line above the errors in a function's body, naming the function
_IN_FUNCTION = re.compile(r": In (?:static )?(?:member )?function [‘'`](?P<signature>[^’'\n]+)[’']:$")


def _errors_in_template_bodies_only(log: str, unit: str) -> bool:
    """Whether every error of a failed build is in the body of a function template (a member of a class
    template, or a function that `unit` declares after a `template <...>` header), none of them in an
    instantiation."""
    if "In instantiation of" in log or "required from" in log:
        return False
    function, seen = None, False
    for line in log.splitlines():
        context = _IN_FUNCTION.search(line)
        if context or line.endswith(": At global scope:"):
            function = context["signature"] if context else None
        elif ": error: " in line:
            name = re.search(r"([\w:<>, ]*?)(\w+)\(", function or "")
            if name is None:
                return False
            declared = rf"\btemplate\s*<[^;{{]*>\s*[^;{{()]*\b{name[2]}\s*\("  # after a template header
            if not (re.search(r">\s*::\s*$", name[1]) or re.search(declared, unit)):  # or a class template's
                return False
            seen = True
    return seen


def _hint(log: str, unit: str, instantiated: bool = False) -> str:
    """What a compiler message about the source `unit` means for CUDA code, where the message itself
    does not say it (`instantiated`: a kernel instantiates a template whose body does not compile)."""
    if instantiated:
        return ("\n(every error is in the body of a function template, which NVRTC reads only where a kernel "
                "instantiates the template: a kernel of the module instantiates one of these, so NVRTC refuses "
                "the code too)")
    if re.search(r"error: call to non-[‘'`]constexpr[’'] function", log):
        # ArrayFire's half.hpp: constexpr conversions that call __half2float, __float2half, ...
        return ("\n(NVRTC takes a constexpr function that calls a function which is not one, such as CUDA's "
                "__half2float, where nothing evaluates it at compile time; GCC, which builds the code for the CPU, "
                "refuses it: leave `constexpr` out of that function)")
    if re.search(r"error: lvalue-to-rvalue conversion of a volatile lvalue", log) and re.search(r"[‘'`]constexpr ",
                                                                                                  log):
        # nvFuser's complex_number.cu: `constexpr complex(const volatile complex<float>& other)`
        return ("\n(NVRTC takes a constexpr function that reads a volatile, where nothing evaluates it at compile "
                "time (C++17 asks for no diagnostic there); GCC, which builds the code for the CPU, refuses it: "
                "leave `constexpr` out of that function)")
    if _errors_in_template_bodies_only(log, unit):  # and they could not be left out of the build
        return ("\n(every error is in the body of a function template: NVRTC, CuPy's compiler, reads such a body only "
                "where a kernel instantiates the template, so where none does CuPy builds this code on a GPU; the "
                "CPU build could not leave it out: fix the error, or remove the template)")
    # GCC 12: "conflicting specifiers in declaration"; GCC 13: "'static' specifier conflicts with
    # 'extern'"; clang: "cannot combine with previous 'extern' declaration specifier"
    if any(words in log for words in ("conflicting specifiers in declaration", "specifier conflicts with",
                                      "cannot combine with previous")):
        return ("\n(an `extern __shared__` or `static __shared__` array declared in an included header: the CPU "
                "runner rewrites those of the code and of the headers it reaches through #include \"...\" or "
                "through #include <...> in the folders of its -I options, not those of a header included through "
                "a macro or found elsewhere; include it so, or declare the array in the code)")
    if _OWN_STANDARD_LIBRARY.search(log):
        return ("\n(the code declares a piece of the C or C++ standard library itself, as code for NVRTC, which "
                "has none, may (tiny-cuda-nn's ministd.h: `using int8_t = char;`, `namespace std { struct "
                "remove_const ... }`): the CPU build compiles with the host's standard library, whose own "
                "declarations these collide with; the CPU runner cannot build such code)")
    undeclared = _UNDECLARED_INSTANCE.search(log)
    if undeclared:
        named = undeclared["name"] or undeclared["clang"] or (
            f"{undeclared['scope']}::{undeclared['member']}" if undeclared["member"] else
            f"{undeclared['clang_scope']}::{undeclared['clang_member']}")
        guess = undeclared["guess"] or undeclared["member_guess"] or ""
        return (f"\n(name_expressions names {named!r}, which the code does not declare{guess}: each entry is a "
                "__global__ function or a template instance of one, spelled as the code spells it, its template "
                "arguments too)")
    return ""


#: GCC's and clang's error at the `<<<` of a kernel launch
_LAUNCH_SYNTAX = re.compile(r"^(?P<where>\S.*?:\d+):\d+: error: expected (?:primary-)?expression(?: before [‘'`]<[’'] token)?$",
                            re.M)


def _kernel_launch(log: str, unit: str) -> str | None:
    """The one-line message for a kernel launch, kernel<<<...>>>(...), in the code, or None."""
    # `<<<` spelt with spaces too (`k << <grid, block >> > (x)`, as Visual Studio formats it: Gaussian splatting)
    launch = re.compile(r"<\s*<\s*<.*>\s*>\s*>")
    errors = list(_LAUNCH_SYNTAX.finditer(log))
    # the compiler shows the line of each error below it: a launch in a header the code includes
    # (AutoDock-GPU's kernelN.cu, each with its launcher) is found there
    found = next((error for error in errors if launch.search(log[error.end():].lstrip("\n").partition("\n")[0])),
                 errors[0] if errors and launch.search(unit) else None)
    if found is None:
        return None
    return (f"{found['where']}: a kernel launch, kernel<<<...>>>(...): the CPU runner does not support one in device "
            "code (dynamic parallelism), and one in host code (a launcher, which nvcc compiles) has no place in a "
            "RawModule, whose kernels Python launches: leave it out of the code")


#: the functions of the CUDA runtime API (cudaMemcpy, ...) and of its driver API (cuMemAlloc, cuGetErrorString, ...)
_API_FUNCTION = (r"cuda[A-Z]\w*|cu(?:Init|Driver|Device|Ctx|Mem|Module|Launch|Stream|Event|GetError|TensorMap|Func|"
                 r"Graph|Link|Occupancy|Pointer|Array|Library|Kernel)\w*")
#: GCC's and clang's error on a call of one, which host code beside the kernels makes (Rodinia's dwt2d times
#: its kernels in a helper class of common.h; MIT 6.S894's tma-interface.cuh checks a CUresult)
_RUNTIME_API_CALL = re.compile(
    rf"^(?P<where>.+?:\d+):\d+: error: (?:[‘'`](?P<gcc>{_API_FUNCTION})[’'] was not declared in this scope|there are "
    rf"no arguments to [‘'`](?P<dependent>{_API_FUNCTION})[’']|use of undeclared identifier "
    rf"'(?P<clang>{_API_FUNCTION})')", re.M)


def _runtime_api_call(log: str, unit: str) -> str | None:
    """The one-line message for a call of the CUDA runtime or driver API in the code (`unit`), or of one
    of its constants, or None."""
    found = _RUNTIME_API_CALL.search(log)
    if found is None:
        return None
    name = found["gcc"] or found["dependent"] or found["clang"]
    api = "runtime" if name.startswith("cuda") else "driver"
    # a name that the code holds and never calls is one of the API's constants (cudaDevAttrComputeMode)
    if re.search(rf"\b{name}\b", unit) and not re.search(rf"\b{name}\s*\(", unit):
        return (f"{found['where']}: `{name}` is a constant of the CUDA {api} API that the CPU runner does not declare "
                "(with backend='nvcc' it declares those of the functions it has): leave the host code that uses it "
                "out of the code")
    declared = ("nvcc compiles it, NVRTC refuses it; with backend='nvcc' the runner declares the common ones, "
                "cudaGetErrorString, cudaMalloc, cudaMemcpy, events and streams, and not this one"
                if api == "runtime" else
                "nvcc compiles it where the code includes cuda.h, NVRTC refuses it; with backend='nvcc' the runner's "
                "cuda.h declares the common ones, cuGetErrorString, cuInit, cuMemAlloc, cuModuleGetFunction, "
                "cuLaunchKernel and streams")
    return (f"{found['where']}: `{name}` is a function of the CUDA {api} "
            "API, which the CPU runner does not have: a RawModule holds device code, whose kernels Python launches; "
            f"leave the host code that calls it out of the code ({declared}; in a kernel it is dynamic parallelism, "
            "which the runner does not support either)")


#: the warp shuffles and votes of CUDA 8 and before, without a mask: GPUs of sm_70 and later (CUDA 9
#: on) have none (NVRTC 12.9 for compute_90: 'identifier "__shfl_down" is undefined'; __any, __all and
#: __ballot compile to PTX that ptxas refuses for sm_70 and later: "Instruction 'vote' without '.sync'
#: is not supported"), nor has the runner; GCC's and clang's error on a call of one: a shuffle is
#: undeclared (also in a template, as NVRTC's), a vote declared with an error attribute (device_functions.h)
_LEGACY_WARP_FUNCTION = re.compile(
    r"^(?P<where>.+?:\d+):\d+: error: (?:[‘'`](?P<gcc>__shfl(?:_up|_down|_xor)?)[’'] was not declared in this "
    r"scope|there are no arguments to [‘'`](?P<dependent>__shfl(?:_up|_down|_xor)?)[’']|use of undeclared "
    r"identifier '(?P<clang>__shfl(?:_up|_down|_xor)?)'|call to [‘'`](?P<vote>__(?:any|all|ballot))[’'] declared "
    r"with (?:attribute error|'error' attribute))", re.M)


def _legacy_warp_function(log: str) -> str | None:
    """The one-line message for a call of a warp function without _sync, or None: a GPU's compiler
    refuses it too, so the rest of the compiler's messages would only hide that."""
    found = _LEGACY_WARP_FUNCTION.search(log)
    if found is None:
        return None
    function = found["gcc"] or found["dependent"] or found["clang"] or found["vote"]
    what = "shuffle" if function.startswith("__shfl") else "vote"
    return (f"{found['where']}: {function}, a warp {what} without a mask, was removed for GPUs of sm_70 and later "
            f"(CUDA 9), whose compilers refuse it too: use {function}_sync(mask, ...), the mask naming the lanes "
            "that take part (0xffffffff: the whole warp)")


#: the runner's own refusal in a compiler's log: a static_assert of its headers (device_functions.h,
#: cooperative_groups.h, ...) or the #error of a header it lacks (mma.h)
_UNSUPPORTED = re.compile(r'^(?P<at>\S.*?:\d+):\d+: error: (?:static assertion failed: |#error "|.* is unavailable: |'
                          r'.* declared with attribute error: )(?P<what>the CPU runner does not support [^"\n]*)', re.M)
#: where an unavailable function (runtime.h's __cluster_dims__ on a kernel) is declared
_DECLARED_HERE = re.compile(r"^(?P<where>\S.*?:\d+):\d+: note: declared here", re.M)
#: where the code asked for it: a line of the chain of instantiations that led to the static_assert
#: (the innermost one in the code's files is its use), or the #include
_REQUIRED_FROM = re.compile(r"^(?P<where>\S.*?):(?P<line>\d+):\d+:\s+required from ", re.M)
_INCLUDED_FROM = re.compile(r"^(?:In file included from|\s+from) (?P<where>.+?:\d+)[:,]$", re.M)


def _unsupported_feature(log: str) -> str | None:
    """The one-line message for what the runner refuses ("(RawModule code):4: the CPU runner does not
    support __isShared (address space queries)"), or None: the compiler's errors that follow it (each
    use of a type the refused header would have declared) say nothing more."""
    found = _UNSUPPORTED.search(log)
    if found is None:
        return None
    before = log[:found.start()]
    chain = before[max(before.rfind("In instantiation of"), 0):]  # that of the first refusal
    called = [f"{m['where']}:{m['line']}" for m in _REQUIRED_FROM.finditer(chain) if not _runner_file(m["where"])]
    chain = before[before.rfind("In file included from"):] if "In file included from" in before else ""
    included = [m["where"] for m in _INCLUDED_FROM.finditer(chain)]  # the header's own #include first
    declared = _DECLARED_HERE.search(log, found.end()) if "is unavailable" in found.group() else None
    at_call = found["at"] if "attribute error" in found.group() and not _runner_file(found["at"]) else None
    where = declared["where"] if declared else at_call or (called[0] if called else included[0] if included else None)
    return f"{where}: {found['what']}" if where else found["what"]


def _runner_file(path: str) -> bool:
    """Whether a file a compiler's message names is one of the runner's own (runtime.h, its headers)
    or its instance table, which the code's author never sees."""
    return path.startswith("(the instance table") or Path(path).parent == RUNTIME_HEADER.parent or \
        INCLUDE_DIR in Path(path).parents


#: GCC's note on a macro of the options (-DT=64) that a name of the runner's own files expanded into
_RUNNER_MACRO = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):\d+: note: in expansion of macro "
                           r"[‘'`](?P<macro>\w+)[’']", re.M)


def _runners_own(path: Path) -> bool:
    """Whether a file the compiler names is one of the runner's own (runtime.h and its CUDA headers)."""
    return path.parent == RUNTIME_HEADER.parent or INCLUDE_DIR in path.parents


def _option_macro_in_runner(log: str, flags) -> str | None:
    """The one-line message for a -D macro of the options (`flags`) whose name the runner's own headers
    use (a template parameter `T`, `A`, `P`, ...), or None: every build then fails inside those headers."""
    defined = {flag[2:].partition("=")[0] for flag in flags
               if flag.startswith("-D") and not flag.startswith(("-D__", "-DNN_CUDA_CPU_"))}  # not the runner's own
    for found in _RUNNER_MACRO.finditer(log):
        path = Path(found["file"])
        if found["macro"] in defined and _runners_own(path):
            macro = found["macro"]
            return (f"-D{macro}: the option's macro `{macro}` also replaces that name in the CPU runner's own "
                    f"headers ({path.name}:{found['line']}), which the build includes before the code; give the "
                    "macro a longer name")
    return None


#: what the host's compiler or assembler says of inline PTX: an instruction of the GPU's (assembler),
#: a register constraint of PTX's that a CPU has not ("=f", "=h": GCC and clang)
_INLINE_PTX = ("no such instruction", "unknown mnemonic", "must specify a single register", "impossible constraint",
               "invalid output constraint", "invalid input constraint", "nested assembly dialect alternatives")
#: the first error the compiler places in a source file
_FIRST_ERROR_AT = re.compile(r"^(?P<where>\S.*?:\d+):\d+: error: ", re.M)


#: GCC's and clang's error for a name the runner's CUB (a subset of CUB's) lacks
_CUB_NAME = re.compile(r"^(?P<where>\S.*?:\d+):\d+: error: (?:[‘'`](?P<gcc>\w+)[’'] is not a member of [‘'`]cub[’']|"
                       r"[‘'`](?P<gcc_type>\w+)[’'] in namespace [‘'`]cub[’'] does not name a (?:template )?type|"
                       r"no (?:type|template|member) named '(?P<clang>\w+)' in namespace 'cub')", re.M)


def _missing_cub_name(log: str) -> str | None:
    """The one-line message for a name of CUB's that the runner's CUB does not have, or None."""
    found = _CUB_NAME.search(log)
    if found is None:
        return None
    name = found["gcc"] or found["gcc_type"] or found["clang"]
    return (f"{found['where']}: the CPU runner does not support cub::{name} (its CUB is a subset of CUB's: "
            "docs/kernels.md lists what it has)")


def _inline_ptx(log: str) -> str | None:
    """The one-line message for inline PTX (asm("...") in the code), or None: the host's compiler says
    so in as many errors as the code has asm statements (8,000 characters for YHs' SGEMM)."""
    if not any(words in log for words in _INLINE_PTX):
        return None
    found = _FIRST_ERROR_AT.search(log) or _ASSEMBLER_ERROR_AT.search(log)
    where = f"{found['where']}: " if found else ""
    return f"{where}the CPU runner does not support inline PTX assembly, asm(\"...\"), which runs on a GPU only"


#: the assembler's error at an asm statement of the code, placed by the compiler's line markers:
#: "(RawModule code):9: Error: no such instruction: ..." (it named no place here until 2026-11-27)
_ASSEMBLER_ERROR_AT = re.compile(r"^(?P<where>\S.*?:\d+): Error: ", re.M)


#: the file of each error the compiler places ("(RawModule code):3:5: error: ...")
_ERROR_AT = re.compile(r"^(\S.*?):\d+:(?:\d+:)? error: ", re.M)


def _instance_row(log: str, plan: _Plan) -> str | None:
    """The one-line message for a row of the instance table that does not build, or None: a name
    expression that names a __device__ function of the code, not a __global__ one (NVRTC refuses it on
    a GPU: "Name expression cannot form address of a non-__global__ function"), or an extern "C"
    kernel that the C library's C++ overloads make ambiguous (`index`, `rindex`); the host compiler's
    message is about the runner's instance table."""
    code, _, table = plan.unit.partition(f"#line 1 {_quoted(f'({plan.table})')}\n")
    # (the instance table's macro expands in runtime.h, the runner's own)
    if any(where != f"({plan.table})" and not _runners_own(Path(where)) for where in _ERROR_AT.findall(log)):
        return None  # the code's own errors come first, as in NVRTC's log
    rows = table.splitlines()
    for line in re.findall(rf"^{re.escape(f'({plan.table})')}:(\d+):", log, re.M):
        row = re.search(r"NN_CUDA_CPU_INSTANCE\((.*)\),$", rows[int(line) - 1]) if int(line) <= len(rows) else None
        if row is None:
            continue
        expression = row[1].removeprefix("&")
        name = re.sub(r"<.*", "", expression).split("::")[-1].strip()
        # what stands between __global__ and the name, `__launch_bounds__(T::N)`'s parentheses too
        declared = rf"(?:[^;{{}}()=]|\([^;{{}}]*?\))*?\b{re.escape(name)}\s*\("
        kernel = re.search(rf"\b__global__\b{declared}", code)
        if re.search(rf"\b__device__\b{declared}", code) and not kernel:
            return (f"name_expressions names {expression!r}, a __device__ function of the code: a name expression "
                    "takes a __global__ kernel (or a __device__ or __constant__ variable, for get_global), and NVRTC "
                    "refuses this one on a GPU too (\"Name expression cannot form address of a non-__global__ "
                    "function\")")
        if expression == name and "no matches converting function" in log and _kernel_candidates(log, code) > 1:
            return _overloads_named(expression, name)
        if kernel and expression == name and "no matches converting function" in log:
            directives = list(re.finditer(r'^#line 1 "(?P<file>(?:\\.|[^"\\])*)"\n', code[:kernel.start()], re.M))
            where = f"{directives[-1]['file']}:{code.count(chr(10), directives[-1].end(), kernel.start()) + 1}" \
                if directives else plan.what  # the kernel's line in the code's own lines
            return f"{where}: {_c_library_function(name)}"
        if kernel and expression != name and "no matches converting function" in log:
            unknown = re.search(rf"^{re.escape(f'({plan.table})')}:{line}:\d+: error: [‘'`](?P<name>[^’'\n]+)[’'] "
                                rf"(?:was not declared in this scope|is not a member of [‘'`](?P<scope>[^’'\n]+)[’'])"
                                rf"(?:; did you mean (?P<guess>[‘'`][^’'\n]+[’'])\?)?", log, re.M)
            if unknown and unknown["scope"] and unknown["name"] == name:
                unknown = None  # the kernel itself in another namespace: below
            if unknown:  # a type, an enumerator or a namespace of the arguments (LightSeq's ActivationType::kRelu)
                guess = f" (did you mean {unknown['guess']}?)" if unknown["guess"] else ""
                named = f"{unknown['scope']}::{unknown['name']}" if unknown["scope"] else unknown["name"]
                return (f"name_expressions names {expression!r}, whose `{named}` the code does not declare"
                        f"{guess}: a typo, or a header the code does not include (cuda_fp16.h for __half); NVRTC "
                        "refuses it on a GPU too")
            if "note: candidates are:" in log:  # the compiler's list of the overloads it could not choose from
                return _overloads_named(expression, name)
            if not re.search(rf"\btemplate\b[^;{{}}]*?\b__global__\b{declared}", code):
                return (f"name_expressions names {expression!r}, but the kernel `{name}` is no template: name it "
                        f"{name!r}; NVRTC refuses {expression!r} on a GPU too")
            candidate = re.search(r"note: candidate is: [‘'`](.*?)[’']$", log, re.M)
            if candidate and "nn_cuda_cpu::run_thread" in candidate[1]:  # the name is no template where it looks
                qualified = re.sub(r"<.*", "", expression).strip()
                return (f"name_expressions names {expression!r}, but no kernel template of the code is named "
                        f"`{qualified}` (a namespace left out of the name, or a kernel that is no template?); NVRTC "
                        "refuses it on a GPU too")
            return (f"name_expressions names {expression!r}, which is no instance of the kernel template `{name}`"
                    + (f" ({candidate[1]})" if candidate else "") + ": its template arguments do not fit the "
                    "template's parameters (too few or too many, or a class template given without its own "
                    "arguments?); NVRTC refuses it on a GPU too")
    return None


def _overloads_named(expression: str, name: str) -> str:
    """The message for a name expression that names several kernels of the code (overloads) at once."""
    alone = "" if expression == name else ", which template arguments alone do not tell apart"
    return (f"name_expressions names {expression!r}, but the code declares several kernels named `{name}` "
            f"(overloads){alone}: name one by its type, as `static_cast<void(*)(float*, int)>({expression})` names "
            f"the one whose parameters are (float*, int) (CuPy takes such a name expression); NVRTC refuses "
            f"{expression!r} on a GPU too")


#: a function the compiler lists among the overloads it could not choose from: "FILE:LINE:COLUMN: note:
#: candidates are: ‘void f(float*)’", then a "note:" line for each other one
_CANDIDATE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):\d+: note:\s+(?:candidates? (?:are|is):\s+)?[‘'`][^’'\n]+[’']$", re.M)


def _kernel_candidates(log: str, code: str) -> int:
    """How many of the candidates in the compiler's `log` are __global__ kernels: declared on their line in
    the code (`code`, the unit's text before the instance table, with its #line directives) or in a header
    of it (read from its file). The C library's overloads of an extern "C" kernel's name (`index`) are none."""
    count = 0
    for candidate in _CANDIDATE.finditer(log):
        directive = code.rfind(f"#line 1 {_quoted(candidate['file'])}\n")
        if directive >= 0:
            lines = code[code.index("\n", directive) + 1:].splitlines()
        else:
            try:
                lines = Path(candidate["file"]).read_text(errors="replace").splitlines()
            except OSError:
                continue
        line = int(candidate["line"])
        before = lines[line - 2] if 2 <= line <= len(lines) + 1 else ""  # `__global__` on a line of its own
        count += line <= len(lines) and ("__global__" in lines[line - 1]
                                         or "__global__" in before and not re.search(r"[;{}]", before))
    return count


#: GCC's and clang's error on an extern "C" function of the code that the C library declares too
_C_LIBRARY_NAME = re.compile(r"^(?P<where>.+?:\d+):\d+: error: (?:conflicting declaration of C function "
                             r"[‘'`][^’'\n(]*?(?P<gcc>\w+)\(|conflicting types for '(?P<clang>\w+)')", re.M)


def _c_library_name(log: str) -> str | None:
    """The one-line message for an extern "C" kernel, function or variable named like a function of the
    C library (`select`, `time`, `index`, `random`), which the host headers the runner includes declare
    and NVRTC's build does not, or None."""
    found = _C_LIBRARY_NAME.search(log)
    if found is None:
        return None
    name = found["gcc"] or found["clang"]
    return f"{found['where']}: {_c_library_function(name)}"


#: the C library's functions that CUDA's device library declares too (its math API, malloc, printf,
#: ...): a kernel or function of the code named like one fails with NVRTC as well
_CUDA_DECLARES = frozenset("malloc free memcpy memset printf clock abs labs llabs".split() + [
    f"{name}{suffix}" for name in """sqrt cbrt exp exp2 exp10 expm1 log log2 log10 log1p pow sin cos tan asin acos
    atan atan2 sinh cosh tanh asinh acosh atanh fabs floor ceil trunc round rint nearbyint lround llround lrint
    llrint fmod remainder remquo fmin fmax fdim fma hypot erf erfc tgamma lgamma frexp ldexp modf scalbn scalbln
    ilogb logb copysign nextafter nan sincos j0 j1 jn y0 y1 yn""".split() for suffix in ("", "f")])
#: the functions of CUDA's math API that the C library lacks, which NVRTC declares with C linkage too: a
#: kernel so named fails there ("more than one instance of overloaded function "norm" has "C" linkage",
#: NVRTC 13.0 on an H200, for norm, rnorm, rhypot, erfcx, erfinv, rcbrt, sinpi, cospi, sincospi,
#: cyl_bessel_i0, normcdf, rsqrt, fdividef and more)
_CUDA_MATH_API = frozenset(["fdividef"] + [
    f"{name}{suffix}" for name in """norm rnorm norm3d rnorm3d norm4d rnorm4d rhypot erfcx erfinv erfcinv normcdf
    normcdfinv rcbrt sinpi cospi sincospi cyl_bessel_i0 cyl_bessel_i1 rsqrt""".split() for suffix in ("", "f")])


def _c_library_function(name: str) -> str:
    """Why the code's `name`, a function of the C library or of CUDA's math API, does not build here, and
    whether it does on a GPU."""
    if name in _CUDA_DECLARES:
        return (f"`{name}` is also a function of the C library and of CUDA's device library, which declares it "
                "for NVRTC too: CuPy's build of this code fails on a GPU as well; rename it")
    if name in _CUDA_MATH_API:
        return (f"`{name}` is also a function of CUDA's math API, which NVRTC declares too: CuPy's build of this "
                "code fails on a GPU as well; rename it")
    return (f"`{name}` is also a function of the C library, which the CPU build includes (NVRTC declares no such "
            "function, so on a GPU the name is free): rename it")


def _runner_names_taken(objects, library: Path) -> list[str]:
    """The names that the runner's `objects` (runtime.cpp's) take from the C library (`sysconf`,
    `sigaction`, ...) and that the built `library` defines itself: LINK_FLAGS binds the runner's
    calls to those definitions, so a kernel named `sysconf` would be called in the C library's place.
    Empty without nm (binutils), which RawModule's own checks need anyway."""
    if shutil.which("nm") is None or not objects:
        return []
    return sorted(_imported(tuple(map(str, objects))) & _nm_names("--dynamic", "--defined-only", str(library)))


@functools.cache
def _imported(objects: tuple) -> set:
    """What the runner's objects take from the C library, less the linker's reserved "__" names and the
    C++ runtime's mangled ones (`_Znwm`, `_ZSt9terminatev`): a host compiler that links the C++
    runtime into each library (GCC 13 of Ubuntu 24.04 on an H200 machine) makes the library define
    those, and a kernel file defines none of them. An object's name holds the digest of its bytes, so
    each is listed once per process."""
    return {name for name in _nm_names("--undefined-only", *objects) if not name.startswith(("__", "_Z"))}


def _nm_names(*arguments) -> set:
    listing = subprocess.run(["nm", *arguments], capture_output=True, text=True, timeout=60).stdout
    return {line.split()[-1] for line in listing.splitlines() if line.strip()}


#: libraries of headers a GPU build finds and the runner has not: the first folder of an #include
#: path -> what it is (nvcc and NVRTC through CuPy find CCCL's CUB and Thrust, CuPy's own headers)
MISSING_LIBRARIES = {"cub": "this part of CUB (it has CUB's block and warp reductions and scans, its block loads "
                            "and stores, and its binary searches, only)",
                     "thrust": "Thrust (CCCL)",
                     "cupy": "CuPy's headers (cupy/complex.cuh, cupy/carray.cuh, ...; it has "
                             "cupy/math_constants.h only)",
                     "cutlass": "CUTLASS", "cute": "CUTLASS's CuTe"}
#: the headers of CUDA's host libraries, which nvcc finds among CUDA's headers and the runner has not
#: (darknet's kernel files include curand.h and cublas_v2.h for their host code)
HOST_LIBRARY_HEADERS = {
    **dict.fromkeys(("cublas_v2.h", "cublas.h", "cublas_api.h", "cublasLt.h"), "cuBLAS"),
    "curand.h": "cuRAND's host API (its device API, <curand_kernel.h>, is here)",
    **dict.fromkeys(("cufft.h", "cufftXt.h"), "cuFFT"), "cusparse.h": "cuSPARSE",
    **dict.fromkeys(("cusolverDn.h", "cusolverSp.h"), "cuSOLVER"), "cudnn.h": "cuDNN", "nccl.h": "NCCL",
    **dict.fromkeys(("nvToolsExt.h", "nvtx3/nvToolsExt.h"), "NVTX"),
    "library_types.h": "the host libraries' types"}
#: GCC's and clang's error on an #include it cannot find
_NOT_FOUND = re.compile(r"^(?P<where>.+?:\d+):\d+: fatal error: [‘'`]?(?P<path>(?:(?P<folder>[\w.]+)/)?[^:’'\n]*)[’']?"
                        r"(?:: No such file or directory| file not found)", re.M)


def _missing_library(log: str) -> str | None:
    """The one-line message for an #include of a library the runner lacks (MISSING_LIBRARIES) or of a
    host library's header (HOST_LIBRARY_HEADERS), or None."""
    found = _NOT_FOUND.search(log)
    if found is None:
        return None
    if found["path"] in HOST_LIBRARY_HEADERS:
        return (f"{found['where']}: the CPU runner has no <{found['path']}>, the header of "
                f"{HOST_LIBRARY_HEADERS[found['path']]}, which host code calls: a RawModule holds device code, whose "
                "kernels Python launches; leave the host code that uses it out of the code (nvcc finds it among "
                "CUDA's headers, NVRTC cannot compile it)")
    if found["folder"] == "cuda" and "." in Path(found["path"]).name:
        # a header of the code's own under a folder named cuda/ (Ginkgo's cuda/components/*.cuh): libcu++'s
        # have no suffix
        return None
    if found["folder"] == "cuda":  # libcu++: the runner has some of its headers, the host's under cuda::std
        has = ", ".join(sorted(path.name for path in (INCLUDE_DIR / "cuda" / "std").iterdir()))
        what = f"this header of libcu++ (it has <cuda/std/...> of {has}; C++20's span, bit and mdspan are not)"
    elif found["folder"] in MISSING_LIBRARIES:
        what = MISSING_LIBRARIES[found["folder"]]
    else:
        return None
    return (f"{found['where']}: the CPU runner does not support {what}: "
            f"#include <{found['path']}> has no counterpart here (a GPU build finds it among CUDA's or CuPy's headers "
            "where it is one of them; NVRTC says \"cannot open source file\" where it is none)")


#: GCC's warning on `#pragma once` in the code, which is the main file here (the code is often a
#: header's text), with the lines that quote it; GCC has no flag to silence it, clang names its own
_PRAGMA_ONCE_WARNING = re.compile(r"^[^\n]*: warning: #pragma once in main file[^\n]*\n(?:[ \t]+\d*[ \t]*\|[^\n]*\n?)*",
                                  re.M)


def _without_pragma_once_warnings(log: str) -> str:
    """The compiler's messages less its warnings on `#pragma once` in the code."""
    return _PRAGMA_ONCE_WARNING.sub("", log)


#: what the compiler says when it could not write its output (the kernel is not at fault)
_WRITE_FAILURES = ("No space left on device", "Read-only file system", "Permission denied",
                   "cannot open output file", "Disk quota exceeded")


#: the generated source runtime.h's precompiled form was compiled from, which GCC names in a library's
#: messages as the file that included runtime.h (deleted since; the library's own source said it before)
_PRECOMPILED_SOURCE = re.compile(rf"\S*/nn_cuda_cpu_\w+/{_HEADER_STEM}_cpu\.cpp(?=:1\b)")


def _without_unread_template_bodies(plan: _Plan, source: Path, command: list, temporary: Path,
                                    failed: subprocess.CompletedProcess) -> tuple[subprocess.CompletedProcess, bool]:
    """The build made again with the function templates' bodies that hold its errors left out
    (unread_templates.py): its result where no kernel instantiates one of them, else `failed`; and
    whether a kernel does. Where that build fails too, its own errors are the code's (inline PTX in a
    function beside a host launcher, which the assembler meets only once the launcher is out: Gunrock's
    queue was refused for its launcher until 2026-11-28)."""
    left_out = unread_templates.without_failing_bodies(plan.unit, failed.stderr)
    if left_out is None:
        return failed, False
    unit, lines = left_out
    source.write_text(unit)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:  # the left-out bodies' own (a constexpr one's call named) are no answer
        return (failed if unread_templates.MARKER in result.stderr else result), False
    if unread_templates.instantiated(_nm_names("--undefined-only", str(temporary))):
        temporary.unlink(missing_ok=True)
        return failed, True
    first_error = next(line for line in failed.stderr.splitlines() if ": error: " in line).split(": error: ", 1)[1]
    print(f"nn_cuda: {plan.what}: the bodies of function templates at line{'s' if len(lines) > 1 else ''} "
          f"{', '.join(map(str, lines))} do not compile ({first_error}) and no kernel instantiates them: left out "
          "of the CPU build, as NVRTC leaves them out", file=sys.stderr, flush=True)
    return result, False


#: GCC's errors that NVRTC and nvcc do not make and -fpermissive turns into warnings: a name a class
#: uses, then declares as a member (`using R = R<T, 1>;`); a member of a dependent base class called
#: without `this->` (GCC's note then says where it is)
_PERMISSIVE_ONLY = re.compile(r"error: declaration of .* changes meaning of .*\[-fpermissive\]$|"
                              r"error: .* was not declared in this scope, and no declarations were found by "
                              r"argument-dependent lookup at the point of instantiation \[-fpermissive\]$")
_IN_DEPENDENT_BASE = re.compile(r"note: declarations in dependent base .* are not found by unqualified lookup")


def _only_permissive_errors(log: str) -> bool:
    """Whether every error of a failed build is one of _PERMISSIVE_ONLY's, each name not declared
    where GCC looked found in a dependent base."""
    errors = [line for line in log.splitlines() if ": error: " in line]
    undeclared = sum("argument-dependent lookup" in line for line in errors)
    return (bool(errors) and all(_PERMISSIVE_ONLY.search(line) for line in errors)
            and len(_IN_DEPENDENT_BASE.findall(log)) >= undeclared)


def _compile(plan: _Plan) -> Path:
    """Build the library, then store it under the name of the files it was built from, and the list
    of those files as the manifest; return the library's path."""
    manifest, what = plan.manifest, plan.what
    # A build takes seconds: say so, once per library (the next runs load it from the cache).
    print(f"nn_cuda: compiling {what} for the CPU (once: cached in {manifest.parent})", file=sys.stderr, flush=True)
    # Built under a name of this process's, then renamed: another rank may build the same library.
    temporary = manifest.with_name(f".{manifest.stem}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="nn_cuda_cpu_") as work:
        source = Path(work) / f"{plan.stem}_cpu.cpp"
        source.write_text(plan.unit)
        depfile = Path(work) / "files_read.d"
        parts = _runner_parts(plan) if plan.runner else _RunnerParts((), (), (), ())
        # the runtime first: what follows the code's per-thread __shared__ arrays is the guard, not its state
        command = [plan.compiler, *plan.flags, *parts.include, "-MD", "-MF", str(depfile), "-o", str(temporary),
                   *map(str, parts.before), str(source), *map(str, parts.after)]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if result.returncode != 0 and _only_permissive_errors(result.stderr):
                # GCC's "changes meaning" errors alone: the C++ rule needs no diagnostic, and NVRTC and
                # clang take the code (TransformerEngine's `using Reducer = Reducer<T, 1, WARPS_M, 1>;`
                # in a class); or a dependent base's member called without this->, which nvcc's front
                # end finds (DGL's GPU hash table: `Hash(id)` of its base class's); -fpermissive makes
                # exactly these warnings
                command.insert(1 + len(plan.flags), "-fpermissive")
                result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            instantiated = False  # a kernel instantiates a template whose body does not compile
            if result.returncode != 0 and _errors_in_template_bodies_only(result.stderr, plan.unit):
                result, instantiated = _without_unread_template_bodies(plan, source, command, temporary, result)
            if result.returncode != 0:
                written = next((line for line in result.stderr.splitlines()
                                if any(failure in line for failure in _WRITE_FAILURES)), None)
                if written is not None:
                    raise BackendUnavailable(
                        f"the CPU build of {what} could not be written to {manifest.parent} "
                        f"({written.strip()}); free space there or set NN_CUDA_CACHE_DIR to a writable folder")
                # The generated file is deleted with `work`: name it by what it holds (runtime.h's
                # precompiled form names the file it was compiled from as the one that included it).
                log = _without_pragma_once_warnings(_PRECOMPILED_SOURCE.sub(
                    f"({plan.table})", result.stderr.strip().replace(str(source), f"({plan.table})")))
                # code left inside a brace or a parenthesis: the instance table's errors that follow are
                # its consequence, not names the code lacks
                missing = _missing_brace(log)
                raise KernelBuildError(_option_macro_in_runner(log, plan.flags) or _unsupported_feature(log) or
                                       _missing_cub_name(log) or
                                       _instance_row(log, plan) or
                                       _legacy_warp_function(log) or _kernel_launch(log, plan.unit) or
                                       _runtime_api_call(log, plan.unit) or
                                       _missing_library(log) or _c_library_name(log) or _inline_ptx(log) or (
                    f"{what} does not compile for the CPU{missing} ({Path(plan.compiler).name} "
                    f"exited with status {result.returncode}):\n{log}"
                    + ("" if missing else _hint(log, plan.unit, instantiated))
                ))
            taken = _runner_names_taken(parts.before, temporary)
            if taken:
                temporary.unlink()
                raise KernelBuildError(
                    f"{what} defines {', '.join(f'`{name}`' for name in taken)}, which the CPU runner itself calls "
                    "in the C library: the CPU build would call the code's in its place (on a GPU the name is "
                    "free); rename it")
            # The unit itself is in the manifest's key; the files it reads name the library.
            read = list(dict.fromkeys([*(path.resolve() for path in host_compiler.dependency_list(depfile.read_text())
                                         if path != source), *parts.files]))
            target = _library_named_by(manifest, read, plan.suffix)
            build_cache.store(temporary, target)
            build_cache.write_private_text(manifest, "".join(f"{path}\n" for path in read))
            if plan.suffix == _HEADER_SUFFIX:  # a header of files since edited: 40-50 MB that nothing reads
                for stale in manifest.parent.glob(f"{manifest.stem}-*{_HEADER_SUFFIX}"):
                    if stale != target:
                        build_cache.discard(stale)
            return target
        except OSError as error:
            raise BackendUnavailable(
                f"the CPU build of {what} could not be written to {manifest.parent} "
                f"({error.strerror or error}); free space there or set NN_CUDA_CACHE_DIR to a writable folder"
            ) from None
        finally:
            temporary.unlink(missing_ok=True)
            build_cache.digest_path(temporary).unlink(missing_ok=True)
