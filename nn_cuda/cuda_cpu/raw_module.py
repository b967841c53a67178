"""CuPy's RawModule on the CPU: any CUDA C source, built by the host C++ compiler and run by the runner.

    mod = RawModule(code=SOURCE, options=("-DN=4",), name_expressions=("scale<float>",))
    kern = mod.get_function("scale<float>")  # a name expression, or an extern "C" kernel's name
    kern((4,), (32,), (x, np.float32(2), np.int32(x.size)))  # NumPy arrays where CuPy takes CuPy arrays
    kern = RawKernel(SOURCE, "saxpy")        # one extern "C" kernel, as cupy.RawKernel(code, name)

The module holds the instances named in `name_expressions` and every extern "C" __global__ kernel of
the code (found in the code as the preprocessor leaves it, so one under `#if 0` is not); it is built
at the first get_function (or compile()) through the private build cache (build.load_code), keyed
by every file the preprocessor read. Options are NVRTC's, mapped by build.host_flags. Each argument
is checked against the kernel's compiled C signature (arguments.py). The launch is the runner's
(runner.LoadedKernels): a fault, or a thread that skips a barrier, raises KernelError naming the
kernel; `check=True` (by default NN_CUDA_CPU_CHECK) runs it in the checking mode, where array
arguments are named args[0], args[1], ... in its messages.

The cuda-cpu backend builds each kernels/*.cu file as a RawModule too (backends/cuda_cpu_backend.py).

`get_global(name)` gives the bytes of a __device__ or __constant__ variable as a writable NumPy array.

What CuPy refuses is refused here too: a grid or block that is not a tuple, a scalar CuPy would pass
as other bytes than the parameter reads (arguments.py), and with backend="nvrtc" an #include of a C
or C++ standard header, which NVRTC does not have (nvrtc_headers.py).

`extern __shared__ T name[];` is sized by the launch's shared_mem (dynamic_shared_as_references).

`enable_cooperative_groups=True` launches the module's kernels cooperatively, as CuPy does: every block
of the grid stays resident (as many as the runtime's stacks hold: 4 blocks of 1024 threads, 372 of 10,
at most 512), taking turns on one host thread, so grid_group::sync() waits for the whole grid. A
larger 1-D grid is reduced to that many blocks with CuPy's warning, as CuPy reduces one larger than
the GPU holds; a larger 2-D or 3-D grid raises ValueError, as there.

Not supported: cubin or PTX files (path=), references as parameters (arguments.py),
translate_cucomplex and jitify.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import re
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np

from . import arguments, build, device_memory, inline_ptx, nvrtc_headers, shared_headers, source_text
from .runner import (STATIC_SHARED_LIMIT, KernelError, LoadedKernels, check_mode_from_environment, demangled,
                     function_shared_statics, race_check_from_environment, static_shared_by_function,
                     static_shared_over_limit)

_MAX_DIMENSION = 2**31 - 1
#: a block's dynamic shared memory on a GPU unless the kernel's attribute raises it, to at most what
#: sm_90 gives a block (the CPU runtime's region: runtime.h kDynamicSharedBytes, 227 KiB)
DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024


class RawModule:
    """CUDA C code compiled for the CPU; keyword arguments as cupy.RawModule's, plus `check` (the
    checking mode; None: NN_CUDA_CPU_CHECK) and `name` (what the compiler's messages and the build
    cache call the code, e.g. its file's path; None: "(RawModule code)")."""

    def __init__(self, *, code: str | None = None, path=None, options=(), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 name_expressions=None, jitify: bool = False, check: bool | None = None,
                 name: str | None = None):
        if (code is None) == (path is None):
            raise TypeError("Exactly one of `code` and `path` keyword arguments must be given (as CuPy says)")
        if path is not None:
            raise ValueError("the CPU runner builds CUDA C source: pass it as code= (a cubin or PTX file, "
                             "path=, runs on a GPU only)")
        if not isinstance(code, str):
            raise TypeError(f"code must be the CUDA C source as a str, got {type(code).__name__}")
        if backend not in ("nvrtc", "nvcc"):
            raise ValueError(f"backend must be 'nvrtc' or 'nvcc', got {backend!r}")
        for flag, value in (("translate_cucomplex", translate_cucomplex), ("jitify", jitify)):
            if value:
                raise ValueError(f"{flag}=True is not supported by the CPU runner")
        if isinstance(name_expressions, str) or not all(isinstance(n, str) for n in name_expressions or ()):
            raise TypeError(f"name_expressions must be a tuple of strings, got {name_expressions!r}")
        if name_expressions is not None and backend != "nvrtc":
            warnings.warn("CuPy refuses name_expressions with backend='nvcc' (ValueError: only nvrtc supports "
                          "retrieving the mangled names for the given name expressions): on a GPU, build with "
                          "the default backend, or ask get_function for the kernel's mangled name or an "
                          "extern \"C\" kernel's", stacklevel=2)
        # a byte-order mark (an editor's, Visual Studio's): nvcc and g++ skip one at a file's start, where the
        # CPU build puts the runner's lines before the code (refused, "does not name a type", until 2026-11-28)
        code = code.removeprefix("\ufeff")
        self.code = code
        self.backend = backend
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self.check = check_mode_from_environment() if check is None else bool(check)
        #: every load and store of a checked launch looked at (NN_CUDA_CPU_RACECHECK=1; runtime.cpp "races")
        self.race_check = self.check and race_check_from_environment()
        #: its kernels are launched cooperatively, as CuPy's (grid_group::sync)
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.name = name
        self._flags = build.host_flags(self.options, backend)  # a wrong option fails here, not at the build
        if self.race_check:
            self._flags += build.RACE_CHECK_FLAGS
        # extern __shared__ arrays as references to the runtime's region, and __shared__ variables
        # at file scope marked, in the code and in the headers it includes
        headers = shared_headers.reachable(code, self._flags)
        if any(dynamic_shared_as_references(text) != text for text in (code, *headers.values())):
            self._flags.append(DYNAMIC_SHARED_FLAG)  # the checking mode watches the end of that memory
        self._cpu_code = shared_headers.rewritten(cpu_declarations(code), self._flags, cpu_declarations)
        pre_included = build.pre_included(self.options)  # nvcc's --pre-include too
        if backend == "nvcc":  # the runtime API's host functions, which nvcc declares in every file
            pre_included = build.NVCC_HOST_API + pre_included
        if any(inline_ptx.has_asm(text) for text in (code, *headers.values())):
            pre_included += inline_ptx.HELPERS  # the calls the translated inline PTX makes
        if backend == "nvrtc":  # the C library's macros as NVRTC shows them: none without a cuda/std header
            self._cpu_code = (nvrtc_headers.prelude(nvrtc_headers.option_macros(self._flags))
                              + nvrtc_headers.own_integer_types(code)
                              + pre_included + build.line_one(name) + self._cpu_code)
        elif nvrtc_headers.includes_cuda_headers_only(code):  # nvcc's: no float or stdint limits
            self._cpu_code = (nvrtc_headers.nvcc_prelude(nvrtc_headers.option_macros(self._flags)) + pre_included
                              + build.line_one(name) + self._cpu_code)
        elif pre_included:
            self._cpu_code = pre_included + build.line_one(name) + self._cpu_code
        self._kernels: LoadedKernels | None = None
        self._shared_statics: dict[str, int] = {}  # set when built
        self._static_shared: dict[str, int] | None = None  # {kernel's name: bytes}, read at first need
        self._index: dict[str, int] = {}
        #: the kernels asked for by their mangled names (as CuPy finds a C++ kernel built by nvcc),
        #: mangled name -> the name expression of the instance built for it
        self._mangled: dict[str, str] = {}

    def __getstate__(self) -> dict:
        """A module pickles as its code and options (as CuPy's does), and is built again, or loaded
        from the cache, at its first use where it is unpickled."""
        return {**self.__dict__, "_kernels": None, "_index": {}, "_static_shared": None}

    def _arrays_reached(self, library: str, instances) -> dict[str, int]:
        """{symbol: bytes} of the __shared__ arrays the code's functions declare
        (runner.function_shared_statics), less the references that stand for its extern __shared__ arrays (8 bytes each) and, where a
        function seems to pass the 48 KiB limit, the arrays of branches the compiler removes
        (build.live_shared_statics), which a GPU's compiler removes too."""
        references = set(_DYNAMIC_REFERENCE.findall(self._cpu_code))
        statics = {symbol: size for symbol, size in function_shared_statics(library).items()
                   if _local_name(symbol) not in references}
        if static_shared_over_limit(statics):
            live = build.live_shared_statics(self._cpu_code, self._flags, instances, self.check, self.name,
                                             workers=not self.enable_cooperative_groups)
            statics = {symbol: size for symbol, size in statics.items() if live is None or symbol in live}
        return statics

    def static_shared_bytes(self, kernel: str) -> int:
        """The bytes of the __shared__ arrays the kernel `kernel` (a name expression, an extern "C"
        kernel's name or a mangled one) declares in its own body, which a launch's dynamic shared
        memory adds to on a GPU; those of the device functions it calls are not counted (0 where nm
        or c++filt is missing)."""
        if not self._shared_statics:
            return 0
        if self._static_shared is None:
            self._static_shared = {_function_key(function): size
                                   for function, size in static_shared_by_function(self._shared_statics).items()}
        if kernel not in self._static_shared:  # a mangled name demangled once
            asked = demangled([kernel])[0] if kernel.startswith("_Z") else kernel
            self._static_shared[kernel] = self._static_shared.get(_function_key(asked), 0)
        return self._static_shared[kernel]

    def compile(self, log_stream=None) -> None:
        """Build the module now (or load it from the cache) instead of at the first get_function."""
        if self._kernels is not None:
            return
        refused = self.backend == "nvrtc" and (
            nvrtc_headers.refusal(self.code, self.name or build.CODE_NAME, self.options,
                                  lambda text: _preprocessed(text, [*self._flags, NVRTC_MACRO]))
            or (self._includes_own_headers() and nvrtc_headers.header_refusal(
                _headers_read(self.code, [*self._flags, NVRTC_MACRO]))))
        if refused:
            raise build.KernelBuildError(refused)
        preprocessed = _preprocessed(self.code, self._flags)  # once: the extern "C" kernels and the bounds read it
        instances = self._instances(preprocessed)
        cooperative = self.enable_cooperative_groups
        kernels = LoadedKernels(*build.load_code(self._cpu_code, self._flags, instances, self.check, self.name,
                                                 workers=not cooperative), self.check, cooperative)
        if kernels.count() != len(instances):
            raise KernelError(f"the CPU build of the RawModule code does not hold {len(instances)} instances")
        self._shared_statics = self._arrays_reached(kernels.tool_path, instances)
        _refuse_too_much_static_shared(self._shared_statics, self.name or build.CODE_NAME)
        self._index = {name: i for i, name in enumerate(instances)}
        self._launch_bounds = _bounds_of_instances(self._index, launch_bounds(preprocessed or ""))
        for name, i in list(self._index.items()):  # an extern "C" kernel of a namespace, by its C name too
            if "::" in name and name not in self.name_expressions and name not in self._mangled.values():
                self._index.setdefault(name.rsplit("::", 1)[1], i)
        self._kernels = kernels

    def _includes_own_headers(self) -> bool:
        """Whether the code may include headers of its own: an #include in quotes, or an -I option."""
        return '#include "' in self.code or any(flag.startswith("-I") for flag in self._flags)

    def get_global(self, name: str) -> np.ndarray:
        """The bytes of the code's __device__ or __constant__ variable `name`, writable unless it is
        `const` (a uint8 array over the module's memory; `.view(np.float32)` reads them as floats),
        where cupy.RawModule's get_global gives a device pointer: write them before a launch, read
        them after. A `static` one is found too, as CuPy's finds it."""
        self.compile()
        return self._kernels.global_variable(name.lstrip("&").strip())  # "&c", as a name expression names it

    def library_path(self) -> Path:
        """The module's library in the build cache, built first if needed (not loaded)."""
        return build.code_library(self._cpu_code, self._flags, self._instances(), self.check, self.name,
                                  workers=not self.enable_cooperative_groups)

    def _instances(self, preprocessed: str | None = None) -> list[str]:
        """The name expressions that name no variable, then the extern "C" kernels of the code, then the
        kernels asked for by their mangled names (last, so that a rebuild for one more keeps the
        others' places)."""
        kernels = [name for name in self.name_expressions if not names_a_variable(name, self.code)]
        found = extern_c_kernels(self.code, self._flags, preprocessed)
        return list(dict.fromkeys([*kernels, *found, *self._mangled.values()]))

    def refuse_beyond_launch_bounds(self, index: int, name: str, block: tuple) -> None:
        """KernelError for a block of more threads than the kernel's `__launch_bounds__` allow, whose
        launch a GPU refuses (its compiled kernel takes at most that many: .maxntid)."""
        bound, threads = self._launch_bounds.get(index), block[0] * block[1] * block[2]
        if bound is not None and threads > bound:
            raise KernelError(f"{name}: a block of {threads} threads, more than the {bound} of the kernel's "
                              "__launch_bounds__: a GPU refuses the launch, its compiled kernel taking at most that "
                              "many threads a block (.maxntid)")

    def index_of(self, name: str) -> int | None:
        """The place of kernel `name` (a name expression, an extern "C" kernel's name, or a mangled
        name) in the built module, or None."""
        return self._index.get(self._mangled.get(name, name))

    def _find_mangled(self, name: str) -> None:
        """A C++ kernel asked for by its mangled name (`_Z6reduceIfEvPKT_PS0_i`), as CuPy's get_function
        finds one in an nvcc build: built as the instance its demangled name expresses (a rebuild of
        the module with one more instance, at the first ask)."""
        text = demangled([name])[0]
        expression = _name_expression(text) if text != name else None
        if expression is None or expression in self._mangled.values():
            if expression is not None:
                self._mangled[name] = expression
            return
        self._mangled[name] = expression
        if expression not in self._index:
            before, self._kernels = self._kernels, None
            try:
                self.compile()
            except build.KernelBuildError:
                del self._mangled[name]  # names no kernel of the code: the module as it was
                self.compile()
            if before is not None:  # on a GPU get_function leaves the module's globals as they are
                self._kernels.take_variables(before)

    def get_function(self, name: str) -> RawKernel:
        """The kernel `name`: one of name_expressions, an extern "C" kernel of the code, or a C++
        kernel's mangled name."""
        self.compile()
        if name.startswith("_Z") and self.index_of(name) is None:
            self._find_mangled(name)
        if self.index_of(name) is None:
            if name in self.name_expressions and names_a_variable(name, self.code):
                raise LookupError(f"{name!r} names a variable of this RawModule, not a kernel: get_global"
                                  f"({name.lstrip('&').strip()!r}) gives its bytes")
            kernel = re.search(rf"\b__global__\b[^;{{}}]*?\b{re.escape(name)}\s*\(", self.code)
            declared = self.code[max(self.code.rfind(c, 0, kernel.start()) for c in ";{}") + 1:kernel.start()] \
                if kernel else ""
            if kernel and not re.search(r"\btemplate\b", declared):
                # one in a namespace is named with it, as NVRTC takes it: `caffe::scale`
                expression = _namespace_at(self.code, kernel.start()) + name
                how = (f"{name} is a C++ kernel of the code (not extern \"C\"), which CuPy finds through "
                       f"name_expressions too: RawModule(..., name_expressions=({expression!r},)), or with "
                       "backend='nvcc' by its mangled name (get_function('_Z...'))")
            elif re.search(rf"\b{re.escape(name.split('<')[0].split('::')[-1].strip())}\b", self.code):
                how = "a template instance must be listed in name_expressions, spelled the same"
            else:
                close = difflib.get_close_matches(name, list(self._index), n=1)
                how = "the code declares nothing of that name" + (f"; did you mean {close[0]!r}?" if close else "")
            raise LookupError(
                f"no kernel {name!r} in this RawModule; it holds {', '.join(map(repr, self._index)) or 'none'} "
                f"({how})"
            )
        return RawKernel._of_module(self, name)


#: the bytes a kernel's parameters may take on a GPU (CUDA 12.1 and later, Volta and later; 4,096 before)
PARAMETER_BYTES = 32_764


def _name_expression(function: str) -> str | None:
    """The address of a kernel as c++filt writes it, with its parameters, so that it picks one of
    overloaded kernels (caffe's ClipForward of float and of double): "void reduce<float>(float const*,
    int)" -> "static_cast<void (*)(float const*, int)>(&reduce<float>)", "ns::k(float*)" ->
    "static_cast<void (*)(float*)>(&ns::k)"; None for what is no function, or one of an unnamed
    namespace, which no expression outside it names."""
    depth = 0
    for position, character in enumerate(function):
        depth += {"<": 1, ">": -1}.get(character, 0)
        if character == "(" and depth == 0:
            head = function[:position].strip().removeprefix("void ").strip()  # a template instance's has its type
            parameters = function[position + 1:function.rfind(")")]
            if not head or "(anonymous namespace)" in head:
                return None
            return f"static_cast<void (*)({parameters})>(&{head})"
    return None


#: the name of each reference to the runtime's dynamic shared region that dynamic_shared_as_references
#: made of an `extern __shared__` array
_DYNAMIC_REFERENCE = re.compile(r"\(&(\w+)\)\[\][^=;]*= \*reinterpret_cast<[^;]*>\(::nn_cuda_cpu::dynamic_shared\);")
#: a function-local static's own name in its symbol: _ZZ1kE3dyn, _ZZ1kE3dyn_0
_LOCAL_NAME = re.compile(r"E(\d+)([A-Za-z_]\w*?)(?:_\d+)?$")


def _local_name(symbol: str) -> str:
    found = _LOCAL_NAME.search(symbol)
    return found[2] if found and len(found[2]) == int(found[1]) else ""


def _function_key(function: str) -> str:
    """A function's name as c++filt writes it and as a name expression names it, alike: "void
    k<float, 32>(float*, int)" and "k<float,32>" -> "k<float,32>" (no return type, no parameters, no
    spaces)."""
    depth = 0
    for position, character in enumerate(function):  # the name ends at its parameters' parenthesis
        depth += character in "<[" and 1 or character in ">]" and -1 or 0
        if character == "(" and depth == 0:
            function = function[:position]
            break
    head = function.split(" ")
    name = function.removeprefix(head[0] + " ") if len(head) > 1 and "<" not in head[0] else function
    return name.replace(" ", "")


def _refuse_too_much_static_shared(statics: dict[str, int], name: str) -> None:
    """A function whose __shared__ arrays (`statics`: runner.function_shared_statics) pass a GPU's
    48 KiB fails to compile there (ptxas: "uses too much shared data"): here too, at the same moment."""
    for function, size in static_shared_over_limit(statics).items():
        raise KernelError(
            f"{name}: {function} declares {size} bytes of __shared__ memory, more than the "
            f"{STATIC_SHARED_LIMIT} (48 KiB) a GPU allows statically; ptxas refuses it there. Declare "
            "the array `extern __shared__` and give its size as the launch's shared_mem (up to 227 KiB "
            "after cudaFuncSetAttribute on sm_90)")


@dataclasses.dataclass(frozen=True)
class _Launch:
    """What runner.LoadedKernels.launch reads of a launch (as of a kernel_launch.KernelLaunch)."""

    kernel: str
    grid: tuple
    block: tuple
    args: tuple
    signature: tuple
    write_only: tuple = ()
    shared_mem: int = 0


class RawKernel:
    """A kernel, as a cupy.RawKernel: `RawKernel(code, name, options=(), backend="nvrtc")` builds the
    code's extern "C" kernel `name` at its first call (or compile()), and RawModule.get_function gives
    one of its module. `kern(grid, block, args, shared_mem=0)` launches it."""

    def __init__(self, code: str, name: str, options=(), backend: str = "nvrtc", *,
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 jitify: bool = False, check: bool | None = None):
        if not isinstance(name, str):
            raise TypeError(f"name must be the kernel's name as a str, got {type(name).__name__}")
        self._bind(RawModule(code=code, options=tuple(options), backend=backend,
                             translate_cucomplex=translate_cucomplex,
                             enable_cooperative_groups=enable_cooperative_groups, jitify=jitify, check=check), name)

    @classmethod
    def _of_module(cls, module: RawModule, name: str) -> RawKernel:
        """The kernel `name` of a built module (RawModule.get_function), its signature checked now."""
        kernel = cls.__new__(cls)
        kernel._bind(module, name)
        kernel._bound()
        return kernel

    def _bind(self, module: RawModule, name: str) -> None:
        self.name = name
        self._module = module
        self._found: tuple[int, tuple] | None = None  # (its index in the module, its signature), once built
        #: the dynamic shared memory a launch may ask for, as CuPy's RawKernel attribute
        self.max_dynamic_shared_size_bytes = DEFAULT_DYNAMIC_SHARED_BYTES

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_found": None}  # found again in the module, built again where unpickled

    # what cupy.RawKernel shows of its code
    code = property(lambda self: self._module.code)
    options = property(lambda self: self._module.options)
    backend = property(lambda self: self._module.backend)
    enable_cooperative_groups = property(lambda self: self._module.enable_cooperative_groups)

    def compile(self, log_stream=None) -> None:
        """Build the kernel now (or load it from the cache) instead of at its first call."""
        self._module.compile(log_stream)
        self._bound()

    def _bound(self) -> tuple[int, tuple]:
        """(index, signature) of the kernel in its built module, found once: LookupError when the
        module holds no kernel of this name, TypeError when a parameter cannot be passed."""
        if self._found is None:
            self._module.compile()
            if self._module.index_of(self.name) is None:
                self._module.get_function(self.name)  # finds a mangled name, or raises LookupError
            index = self._module.index_of(self.name)
            signature = self._module._kernels.signature(index)
            bad = arguments.unsupported(signature)
            if bad:
                raise TypeError(
                    f"{self.name}: parameter {bad[0]} has a type the CPU runner cannot pass (a reference, or a type "
                    "it cannot name, shown as ?): "
                    f"({', '.join(signature)})")
            total = arguments.parameter_bytes(signature)
            if total > PARAMETER_BYTES:
                raise build.KernelBuildError(
                    f"{self.name}: its parameters take {total:,} bytes, more than the {PARAMETER_BYTES:,} a kernel's "
                    "parameters may take on a GPU (CUDA 12.1 and later, compute capability 7.0 and up); NVRTC "
                    "refuses it (\"Formal parameter space overflowed\"): pass the data in an array")
            self._found = index, signature
        return self._found

    @property
    def signature(self) -> tuple:
        """The C parameter types, as runtime.h names them."""
        return self._bound()[1]

    def __call__(self, grid, block, args, *, shared_mem: int = 0, stream=None):
        if stream is not None:
            raise TypeError(f"{self.name}: the CPU runner has no streams; a launch runs to its end before the call "
                            "returns, as on one stream followed by its synchronize() (leave stream=None)")
        index, signature = self._found or self._bound()
        kernels = self._module._kernels
        grid, block = _dimensions("grid", grid), _dimensions("block", block)
        self._module.refuse_beyond_launch_bounds(index, self.name, block)
        if self._module.enable_cooperative_groups:
            grid = _cooperative_grid(grid, kernels.resident_blocks(block[0] * block[1] * block[2]))
        packed, names = arguments.pack(self.name, signature, args), [f"args[{i}]" for i in range(len(args))]
        shared_mem = self._shared_bytes(shared_mem, kernels.dynamic_shared_capacity())
        # outside the checking mode, which guards copies of its own, the arrays go to device memory
        with (contextlib.nullcontext(packed) if kernels.check
              else device_memory.guarded(packed, signature)) as launched:
            kernels.launch(index, _Launch(self.name, grid, block, launched, signature, shared_mem=shared_mem), names)
            if not kernels.check:  # the copies made for this launch alone (the checking mode looks at its own)
                copies = [(device_memory.place_in_whole(value)[0], name)
                          for value, given, name in zip(launched, packed, names)
                          if value is not given and isinstance(value, np.ndarray)]
                written = [(name, value) for value, c_type, name in zip(launched, signature, names)
                           if isinstance(value, np.ndarray) and c_type.endswith("*") and not c_type.startswith("const ")]
                kernels.assert_no_address_kept(self.name, [(copy.ctypes.data, copy.ctypes.data + copy.nbytes, name)
                                                           for copy, name in copies], checking=False, outputs=written)

    def _shared_bytes(self, shared_mem, capacity: int) -> int:
        """shared_mem, checked against the GPU's limit: max_dynamic_shared_size_bytes (48 KiB unless
        raised, as with cudaFuncSetAttribute; at most `capacity`, the runtime's region, sm_90's 227 KiB),
        less the kernel's own static __shared__ arrays: by default the two together get 48 KiB, and
        a raised attribute plus the static arrays at most `capacity` (cudaFuncSetAttribute fails
        beyond it). FastFold's softmax asked for 48 KiB beside its CUB storage, which a GPU refuses;
        until 2026-11-27 the static arrays were not counted."""
        if isinstance(shared_mem, bool) or not hasattr(shared_mem, "__index__") or shared_mem < 0:
            raise TypeError(f"{self.name}: shared_mem must be a number of bytes, got {shared_mem!r}")
        limit = min(self.max_dynamic_shared_size_bytes, capacity)
        if shared_mem > limit:
            raise ValueError(f"{self.name}: shared_mem={shared_mem} bytes is more than a block may have ({limit}; "
                             f"set max_dynamic_shared_size_bytes, up to {capacity}, as on a GPU)")
        static = self._module.static_shared_bytes(self.name) if shared_mem else 0
        total = DEFAULT_DYNAMIC_SHARED_BYTES if self.max_dynamic_shared_size_bytes == DEFAULT_DYNAMIC_SHARED_BYTES \
            else capacity
        if shared_mem + static > total:
            raise ValueError(f"{self.name}: shared_mem={shared_mem} bytes and the kernel's {static} bytes of static "
                             f"__shared__ arrays are more than a block may have together ({total}"
                             + ("; set max_dynamic_shared_size_bytes to raise it, as on a GPU)"
                                if total < capacity else ", sm_90's most)"))
        return int(shared_mem)

    def run_launch(self, launch, parameter_names) -> None:
        """Run a launch whose arguments its launcher has already checked against this kernel's
        signature (nn_cuda.kernel_launch's table: a KernelLaunch), with its parameter names for the
        checking mode's messages and its `write_only` arguments NaN-filled there."""
        index, _ = self._found or self._bound()  # found when get_function made it: no call on this path
        self._module._kernels.launch(index, launch, list(parameter_names))


def _cooperative_grid(grid: tuple, resident: int) -> tuple:
    """A cooperative launch's grid as CuPy launches it when the device holds `resident` blocks at once:
    a larger 1-D grid reduced to that, with CuPy's warning; a larger 2-D or 3-D one refused."""
    if grid[0] * grid[1] * grid[2] <= resident:
        return grid
    if grid[1] == grid[2] == 1:
        warnings.warn(f"The grid size will be reduced from {grid[0]} to {resident}, as the specified grid size "
                      f"exceeds the limit (CuPy's warning; the CPU runner keeps {resident} blocks of this size "
                      "of a cooperative launch resident, where a GPU keeps as many as its SMs hold)", stacklevel=3)
        return (resident, 1, 1)
    raise ValueError(f"The specified grid size ({grid[0]} * {grid[1]} * {grid[2]}) exceeds the limit ({resident}) "
                     "(CuPy's error; the CPU runner keeps that many blocks of this size of a cooperative launch "
                     "resident)")


def _dimensions(what: str, value) -> tuple:
    """A grid or block as CuPy takes it (a tuple of 1 to 3 ints; CuPy refuses an int or a list with
    "Argument 'grid' has incorrect type") -> (x, y, z). A size of 0 is launched as 1, as CuPy launches
    it (an empty input's grid, (n + 127) // 128 at n = 0, runs one block)."""
    if not isinstance(value, tuple):
        hint = f" ({value},)" if isinstance(value, int) else f" {tuple(value)}" if isinstance(value, list) else ""
        raise TypeError(f"{what} must be a tuple of 1 to 3 ints, as CuPy's RawKernel takes it, got "
                        f"{type(value).__name__} {value!r} (write{hint or ' a tuple'})")
    if not 1 <= len(value) <= 3:
        raise ValueError(f"{what} must be a tuple of 1 to 3 ints, got {value!r}")
    for size in value:
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"{what} must be a tuple of 1 to 3 ints, got {value!r}")
        if not 0 <= size <= _MAX_DIMENSION:
            raise ValueError(f"{what} sizes must be 0 (launched as 1, as CuPy does) to {_MAX_DIMENSION}, got {value!r}")
    return tuple(max(1, int(size)) for size in value) + (1,) * (3 - len(value))


# ---- extern __shared__ ------------------------------------------------------------------------------

#: the build of a code with extern __shared__ memory: runtime.cpp then pins a write past the launch's
#: shared_mem on the thread that made it, in the checking mode
DYNAMIC_SHARED_FLAG = "-DNN_CUDA_CPU_DYNAMIC_SHARED"

# A declaration `... name[];`: an extern __shared__ array when the words before the name hold both
# `extern` and `__shared__`, in any order, as CUDA allows.
#: an alignment's parentheses: `(16)`, `(sizeof(double))`, `(2 * alignof(float4))`
_PARENTHESES = r"\((?:[^()]|\([^()]*\))*\)"
_UNSIZED_ARRAY = re.compile(r"(?P<specifiers>(?:[^;{}()]|" + _PARENTHESES
                            + r")*?)\b(?P<name>[A-Za-z_]\w*)[ \t]*\[[ \t]*\][ \t]*"
                            + r"(?P<dims>(?:\[[^\[\];]+\][ \t]*)*)"  # `int s[][4];`: sgl-kernel's top-k
                            + r"(?:__align__[ \t]*" + _PARENTHESES + r"[ \t]*)?;")  # `char smem[] __align__(16);`
_ALIGNMENT = re.compile(r"\b(?:__align__|alignas)\s*" + _PARENTHESES)
#: blank space, line continuations (in a macro), comments and preprocessor lines (what may stand
#: between a declaration and the last ;)
_LEADING_NON_CODE = re.compile(r"(?:(?<![^\n])[ \t]*#[^\n]*|(?:[ \t]*\n)+|[ \t]+|\\\n|//[^\n]*|/\*.*?\*/)*",
                               re.DOTALL)  # a directive first, indented too (sgl-kernel's `    #ifdef`)


#: `__shared__ alignas(...)`: C++'s alignas may not follow a specifier here (__shared__ is `static`)
_ALIGNAS_AFTER_SHARED = re.compile(r"\b__shared__(?P<space>\s+)(?P<alignas>alignas\s*" + _PARENTHESES + ")")


#: `static` beside `__shared__`, which CUDA allows (NVIDIA's warp-shuffle reduction writes
#: `static __shared__ float shared[32];`) and which is `static` already here
_STATIC_BESIDE_SHARED = re.compile(r"\bstatic(?P<before>\s+)(?=__shared__\b)|(?<=\b__shared__)(?P<after>\s+)static\b")


def alignas_before_shared(code: str) -> str:
    """`__shared__ alignas(16) float t[64];` as `alignas(16) __shared__ float t[64];`, which CUDA takes
    alike and C++ takes with `__shared__` a storage class, and `static __shared__` as `__shared__` (on
    the same lines)."""
    code = _STATIC_BESIDE_SHARED.sub(lambda m: m["before"] or m["after"], code)
    return _ALIGNAS_AFTER_SHARED.sub(lambda m: f"{m['alignas']}{m['space']}__shared__", code)


def dynamic_shared_as_references(code: str) -> str:
    """`extern __shared__ T name[];` (the words in any order, `__align__(n)` allowed) as a reference
    to an array of unknown bound in the CPU runtime's dynamic shared region, on the same lines (the
    compiler's line numbers stay the code's). A reference, not a pointer: `&name` is then the
    region's address, as on a GPU (`(T*)&name` is a common spelling of `name`)."""
    blanked = source_text.blanked(code)  # a `;` in a comment before it is no statement's end (gsplat's)
    pieces, done = [], 0
    for shared in re.finditer(r"\b__shared__\b", blanked):
        start = max(blanked.rfind(brace, 0, shared.start()) for brace in ";{}") + 1
        macro = _macro_around(blanked, shared.start())  # (its replacement's start, its end) in a #define
        start = _LEADING_NON_CODE.match(blanked, max(start, macro[0]) if macro else start).end()
        end = blanked.find(";", shared.end()) + 1
        # in a macro that leaves the `;` to its use (TensorFlow's GPU_DYNAMIC_SHARED_MEM_DECL), the macro's end
        in_macro = macro is not None and not 0 < end <= macro[1]
        if in_macro:
            end = macro[1]
            while end > start and blanked[end - 1] in " \t\\\n":
                end -= 1
        declaration = (_UNSIZED_ARRAY.fullmatch(blanked[:end] + ";", start) if in_macro else
                       _UNSIZED_ARRAY.fullmatch(blanked, start, end)) if start >= done and end > 0 else None
        if declaration is None or "extern" not in declaration["specifiers"].split():
            continue
        specifiers = declaration["specifiers"]
        leading = specifiers[:len(specifiers) - len(specifiers.lstrip())]
        element = " ".join(word for word in _ALIGNMENT.sub(" ", specifiers).split()
                           if word not in ("extern", "__shared__"))
        # the same lines, continued where they were (a declaration inside a macro's definition)
        lines = "".join("\\\n" if code[k - 1] == "\\" else "\n" for k in range(start + len(leading), end)
                        if code[k] == "\n")
        # each host thread has its own region (runtime.h): a reference at file scope is one per thread too;
        # static, as a GPU's __shared__ memory is: a [=] lambda does not capture it (RAFT's histograms)
        dims = "".join(declaration["dims"].split())
        reference = f"static NN_CUDA_CPU_PER_WORKER {element} (&{declaration['name']})[]{dims}"
        pieces += [code[done:start], f"{leading}{reference} = "
                   f"*reinterpret_cast<{element} (*)[]{dims}>(::nn_cuda_cpu::dynamic_shared){'' if in_macro else ';'}"
                   f"{lines}"]
        done = end
    return "".join(pieces) + code[done:]


#: a #define's name and parameters: what stands before its replacement
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+(?:\([^)\n]*\))?")


def _macro_around(text: str, at: int) -> tuple[int, int] | None:
    """(where its replacement starts, where it ends) of the #define whose replacement holds `at`,
    its continued lines included; None where `at` is in no #define."""
    line = text.rfind("\n", 0, at) + 1
    while line >= 2 and text[line - 2] == "\\":  # a continued line: the directive starts above
        line = text.rfind("\n", 0, line - 1) + 1
    header = _DEFINE.match(text, line)
    if header is None or header.end() > at:
        return None
    end = text.find("\n", at)
    while end > 0 and text[end - 1] == "\\":
        end = text.find("\n", end + 1)
    return header.end(), len(text) if end < 0 else end


#: what opens a scope, closes one, or declares shared memory: a namespace's or a linkage block's
#: brace (still at file scope), any other brace, `__shared__`
_SCOPE_OR_SHARED = re.compile(r'\bnamespace\b[\w:\s]*\{|\bextern\s*"[^"\n]*"\s*\{|[{}]|\b__shared__\b')


def file_scope_shared(code: str) -> str:
    """`__shared__` declarations at file (namespace) scope marked NN_CUDA_CPU_FILE_SCOPE_SHARED
    (runtime.h), which the checking mode finds by their section; a function's are found by name.
    A macro's `__shared__` outside braces is marked too, for the declarations it makes at file
    scope (marked inside an inline function, it fails as every __shared__ there did before)."""
    scopes: list[bool] = []  # True: a namespace or linkage block, still file scope
    marks = []
    for token in _SCOPE_OR_SHARED.finditer(source_text.blanked(code, quotes=True)):
        word = token.group()
        if word == "}":
            if scopes:
                scopes.pop()
        elif word.endswith("{"):
            scopes.append(word != "{")
        elif all(scopes):
            marks.append(token.end())
    pieces = [code[start:end] for start, end in zip([0, *marks], [*marks, len(code)])]
    return " NN_CUDA_CPU_FILE_SCOPE_SHARED".join(pieces)


#: `__device__` where it declares a variable: the first of `( ; = [ {` after it is no `(`, and no
#: `operator` comes before it (a member `operator+=(`, `operator[](` or `operator==(` is a function:
#: marked `used`, a class template's would be compiled with its class, unused or not)
_DEVICE_VARIABLE = re.compile(r"\b__device__\b(?![^;=\[{}()]*\boperator\b)(?=[^;=\[{}()]*[;=\[{])")


def device_variables_kept(code: str) -> str:
    """`__device__` variables marked `used`, as runtime.h's __constant__ makes those, on the same
    lines: GCC drops a `static` one that the code only reads, its value folded into the kernels,
    where NVRTC keeps it in memory that CuPy's get_global finds. An `extern` declaration and a
    preprocessor directive (a macro that stands for `__device__`) are left as they are."""
    blanked = source_text.blanked(code)
    pieces, done = [], 0
    for keyword in _DEVICE_VARIABLE.finditer(blanked):
        start = max(blanked.rfind(brace, 0, keyword.start()) for brace in ";{}") + 1
        end = blanked.find(";", keyword.end())
        line = blanked[blanked.rfind("\n", 0, keyword.start()) + 1:keyword.start()]
        if line.lstrip().startswith("#") or re.search(r"\bextern\b", blanked[start:end if end >= 0 else None]):
            continue
        pieces += [code[done:keyword.end()], " __attribute__((used))"]
        done = keyword.end()
    return "".join(pieces) + code[done:]


def cpu_declarations(code: str) -> str:
    """A source's shared memory and __device__ variables declared as the CPU build takes them (the
    rewrites above; in a header the code includes too, where FasterTransformer keeps its block
    reductions' `static __shared__` arrays), and the inline PTX the runner translates (inline_ptx.py)."""
    return inline_ptx.translated(
        device_variables_kept(file_scope_shared(dynamic_shared_as_references(alignas_before_shared(code)))))


#: a __device__ or __constant__ variable's declaration: its name, followed by its size, initializer or `;`
_VARIABLE = r"\b(?:__device__|__constant__)\b[^;(){{}}]*?\b{name}\s*(?:\[|=|;|\{{)"


def names_a_variable(expression: str, code: str) -> bool:
    """Whether a name expression names a __device__ or __constant__ variable of `code` (`c` or `&c`,
    as NVRTC takes them): such a one is no kernel of the module's instance table; CuPy's get_global
    finds the variable by its name all the same."""
    name = expression.lstrip("&").strip()
    name = name.split("<", 1)[0].strip() if name.endswith(">") else name  # an instance of a variable template
    name = name.split("::")[-1].strip()  # one in a namespace: `N1::N2::V2`, as NVRTC's example names it
    return re.fullmatch(r"[A-Za-z_]\w*", name) is not None and \
        re.search(_VARIABLE.format(name=re.escape(name)), code) is not None


# ---- the extern "C" kernels of a code ---------------------------------------------------------------

#: a kernel's qualifiers with arguments, between `void` and its name
_KERNEL_QUALIFIER = re.compile(r"\b(?:__launch_bounds__|__maxnreg__|__cluster_dims__)\s*\(")
_EXTERN_C = re.compile(r'\bextern\s*"C"\s*')
_KERNEL = re.compile(r"\b__global__\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")


def without_kernel_qualifiers(text: str) -> str:
    """`text` with each `__launch_bounds__(...)`, `__maxnreg__(...)` and `__cluster_dims__(...)` a space,
    however deep the parentheses in its arguments (PyTorch's C10_LAUNCH_BOUNDS_1(256) becomes
    `__launch_bounds__((((((256)) <= 1024) ? ...))))`)."""
    pieces, done = [], 0
    for bounds in _KERNEL_QUALIFIER.finditer(text):
        if bounds.start() < done:
            continue
        depth, end = 1, bounds.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        pieces += [text[done:bounds.start()], " "]
        done = end
    return "".join(pieces) + text[done:]


def launch_bounds(text: str) -> dict[str, int]:
    """{kernel name: the most threads a block may have} of the kernels of `text`, code after the
    preprocessor, whose `__launch_bounds__` is a constant there (`256`, PyTorch's `((((256)) <= 1024) ?
    (256) : 1024)`); one that depends on a template's parameter is not known (left out). The largest
    where a name has two."""
    bounds: dict[str, int] = {}
    for found in re.finditer(r"\b__launch_bounds__\s*\(", text):
        depth, end = 1, found.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        name = re.match(r"[^;{}()]*?\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>\s*)?\(", text[end:])
        threads = _integer_constant(_first_argument(text[found.end():end - 1]))
        if name and threads:
            bounds[name[1]] = max(bounds.get(name[1], 0), threads)
    return bounds


def _bounds_of_instances(index: dict[str, int], bounds: dict[str, int]) -> dict[int, int]:
    """{instance's place: its kernel's bound} from the module's index of instances ({name expression:
    place}) and the bounds by kernel name (launch_bounds)."""
    found = {}
    for expression, place in index.items():
        expression = re.sub(r"^static_cast<.*>\(&(.*)\)$", r"\1", expression)  # a cast that picks an overload
        kernel = re.sub(r"<.*", "", expression.removeprefix("&")).split("::")[-1].strip()
        if kernel in bounds:
            found[place] = bounds[kernel]
    return found


def _first_argument(arguments: str) -> str:
    depth = 0
    for position, character in enumerate(arguments):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if character == "," and depth == 0:
            return arguments[:position]
    return arguments


def _integer_constant(text: str) -> int | None:
    """The value of an integer constant expression of C (numbers, + - * / %, comparisons, ?:), or None."""
    text = re.sub(r"\b(\d+)[uUlL]*\b", r"\1", text).strip()
    if not re.fullmatch(r"[\d\s()+\-*/%<>=!?:]+", text):
        return None
    while text.startswith("(") and _closes_at_end(text):
        text = text[1:-1].strip()
    depth, question = 0, None
    for position, character in enumerate(text):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0 and character == "?" and question is None:
            question = position
        elif depth == 0 and character == ":" and question is not None:
            nested = text[question + 1:position].count("?") - text[question + 1:position].count(":")
            if nested == 0:
                condition = _integer_constant(text[:question])
                return None if condition is None else _integer_constant(
                    text[question + 1:position] if condition else text[position + 1:])
    try:
        value = eval(text.replace("/", "//"), {"__builtins__": {}})  # digits and operators only (above)
    except (SyntaxError, ZeroDivisionError, TypeError):
        return None
    return int(value)


def _closes_at_end(text: str) -> bool:
    """Whether the parenthesis that opens `text` closes at its end."""
    depth = 0
    for position, character in enumerate(text):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0:
            return position == len(text) - 1
    return False


def extern_c_kernels(code: str, flags, preprocessed: str | None = None) -> list[str]:
    """The names of the extern "C" __global__ kernels the code defines or declares, in order: in the
    code as the host preprocessor leaves it with `flags` (so -D and #if count; `preprocessed`, where
    the caller has it already), or, when it cannot preprocess it (the build will say why), in the code
    as written."""
    text = preprocessed if preprocessed is not None else _preprocessed(code, flags)
    if text is None:
        text = source_text.COMMENT_OR_TEXT.sub(lambda m: m.group() if m.group()[0] in "\"'" else " ", code)
    text = without_kernel_qualifiers(text)
    found: list[str] = []
    for match in _EXTERN_C.finditer(text):
        rest = text[match.end():]
        # extern "C" { ... } or one declaration, up to its body or its semicolon
        end = _closing_brace(rest) if rest.startswith("{") else len(re.split(r"[;{]", rest, maxsplit=1)[0]) + 1
        scope = _namespace_at(text, match.start())
        found += [scope + name for name in _KERNEL.findall(rest[:end]) if scope + name not in found]
    return found


_NAMESPACE_OR_BRACE = re.compile(r"\bnamespace\s+(?P<name>[A-Za-z_][\w:]*)?\s*\{|[{}]")


def _namespace_at(text: str, position: int) -> str:
    """The namespaces around `position` of `text` as a qualifier ("N1::N2::", or ""): an extern "C"
    kernel declared in one is `N1::N2::k` to the instance table, and `k` to CuPy's get_function. An
    unnamed namespace adds nothing (its names are seen from the file's scope)."""
    scopes: list[str | None] = []  # a namespace's name ("" if unnamed), or None for any other brace
    for token in _NAMESPACE_OR_BRACE.finditer(text, 0, position):
        if token.group() == "}":
            if scopes:
                scopes.pop()
        else:
            scopes.append(None if token.group() == "{" else token["name"] or "")
    return "".join(f"{scope}::" for scope in scopes if scope)


def _closing_brace(text: str) -> int:
    depth = 0
    for brace in re.finditer(r"[{}]", text):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return brace.end()
    return len(text)


#: what NVRTC defines besides what build.DEVICE_MACROS has (which the build leaves out: code may declare
#: under it what the host's headers declare)
NVRTC_MACRO = "-D__CUDACC_RTC__"


def _headers_read(code: str, flags) -> list[tuple[int, str]]:
    """(depth, path) of each file the host preprocessor reads for the code, in order (g++'s and clang's
    -H), or [] where it cannot run."""
    result = _preprocessor(code, flags, "-H", "-o", os.devnull)
    read = re.findall(r"^(\.+) (.+)$", result.stderr, re.M) if result is not None else []
    return [(len(dots), path) for dots, path in read]


def _preprocessed(code: str, flags) -> str | None:
    """The code after the host preprocessor (runtime.h left out, so __global__ stays), or None."""
    result = _preprocessor(code, flags, "-P")
    return result.stdout if result is not None and result.returncode == 0 else None


def _preprocessor(code: str, flags, *options) -> subprocess.CompletedProcess | None:
    """The host preprocessor's run over the code with `options`, or None where it cannot run. The
    runner's own CUDA headers (cuda_bf16.h, cooperative_groups.h, ...) are on the include path and the
    device macros defined, as in the build: without the headers the preprocessor would fail at their
    #include and every #if be ignored."""
    with tempfile.TemporaryDirectory(prefix="nn_cuda_cpu_") as work:
        source = Path(work) / "raw_module.cu"
        source.write_text(code)
        try:
            return subprocess.run([build.find_compiler(), "-x", "c++", "-std=c++17", *build.DEVICE_MACROS, *flags,
                                   f"-isystem{build.INCLUDE_DIR}", "-E", *options, str(source)],
                                  capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return None
