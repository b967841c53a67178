"""NVIDIA's CUDA compilers as pip installs them, usable without a GPU: NVRTC, ptxas and nvcc.

The CUDA 12 wheels nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 (which the `dev` and `gpu`
extras install through numba-cuda[cu12]) put the NVRTC library and ptxas under the `nvidia` namespace
package, in nvidia/cuda_nvrtc/lib and nvidia/cuda_nvcc/bin; CUDA 13's wheels would put them in
nvidia/cu13/{lib,bin}.
This module finds them there, and only there (a toolkit on PATH or in /usr/local is not what the
project's users and CI install), and compiles CUDA C to PTX with NVRTC through ctypes, the way CuPy's
RawModule does on a GPU:

    from nn_cuda import nvrtc
    compiled = nvrtc.compile_source(source, "gemm2_tiled.cu", ["-std=c++17", "-arch=compute_80"],
                                    ["gemm_tiled<float, false, true>"])
    compiled.ptx, compiled.log, compiled.lowered_names["gemm_tiled<float, false, true>"]

Nothing is searched or loaded at import time: the library is loaded on first use.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import importlib.util
import os
import re
from pathlib import Path

INSTALL_HINT = "pip install -e '.[dev]' installs them (the nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 wheels)"

#: folders of the `nvidia` namespace package that hold a CUDA release's files, newest layout first:
#: one folder per CUDA major version (CUDA 13 wheels), or one per component (CUDA 12 wheels)
_RELEASE_FOLDERS = ("cu13", "cu12", "cuda_nvrtc", "cuda_nvcc")
_LIBRARY_NAMES = re.compile(r"(libnvrtc\.so(\.\d+)*|nvrtc64_\d+(_\d+)?\.dll)")

NVRTC_SUCCESS = 0
NVRTC_ERROR_COMPILATION = 6


class CompilerNotFound(RuntimeError):
    """NVIDIA's compiler wheels are not installed."""


class CompileError(RuntimeError):
    """NVRTC rejected a source; the message holds the file name, the options and the NVRTC log."""

    def __init__(self, filename: str, options, log: str):
        self.filename = filename
        self.options = list(options)
        self.log = log
        super().__init__(f"NVRTC could not compile {filename} (options: {' '.join(self.options)}):\n{log}")


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What NVRTC made of one source."""

    ptx: str
    #: the compiler's messages (empty when it had nothing to say)
    log: str
    #: name expression (e.g. 'col_sum<double>') -> its lowered, mangled name in the PTX
    lowered_names: dict


# ---- finding the wheels' files ------------------------------------------------------------------


def release_folders() -> list[Path]:
    """The folders of the installed `nvidia` wheels that hold CUDA's lib/ and bin/, newest first."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    roots = [Path(location) for location in spec.submodule_search_locations]
    return [root / name for name in _RELEASE_FOLDERS for root in roots if (root / name).is_dir()]


def find_library() -> Path:
    """The NVRTC shared library of the nvidia-cuda-nvrtc wheel."""
    for folder in release_folders():
        for subfolder in ("lib", "bin"):  # bin/ on Windows
            found = sorted(
                path for path in (folder / subfolder).glob("*nvrtc*") if _LIBRARY_NAMES.fullmatch(path.name)
            )
            if found:
                return found[-1]
    raise CompilerNotFound(f"the NVRTC library (libnvrtc) is not installed; {INSTALL_HINT}")


def find_tool(name: str) -> Path:
    """An executable of the nvidia-cuda-nvcc wheel, e.g. 'ptxas'."""
    for folder in release_folders():
        for filename in (name, f"{name}.exe"):
            path = folder / "bin" / filename
            if path.is_file() and os.access(path, os.X_OK):
                return path
    raise CompilerNotFound(f"{name} is not installed; {INSTALL_HINT}")


# ---- NVRTC through ctypes -----------------------------------------------------------------------


@functools.cache
def _library() -> ctypes.CDLL:
    """The NVRTC library, loaded once, with the C signatures of the functions used here."""
    lib = ctypes.CDLL(str(find_library()))
    program, program_pointer = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    strings, size = ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)
    signatures = {
        "nvrtcVersion": (ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)),
        "nvrtcGetErrorString": (ctypes.c_int,),
        "nvrtcCreateProgram": (
            program_pointer, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, strings, strings,  # no headers
        ),
        "nvrtcDestroyProgram": (program_pointer,),
        "nvrtcAddNameExpression": (program, ctypes.c_char_p),
        "nvrtcCompileProgram": (program, ctypes.c_int, strings),
        "nvrtcGetProgramLogSize": (program, size),
        "nvrtcGetProgramLog": (program, ctypes.c_char_p),
        "nvrtcGetPTXSize": (program, size),
        "nvrtcGetPTX": (program, ctypes.c_char_p),
        "nvrtcGetLoweredName": (program, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)),
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_char_p if name == "nvrtcGetErrorString" else ctypes.c_int
    return lib


def _check(status: int, call: str) -> None:
    if status != NVRTC_SUCCESS:
        reason = _library().nvrtcGetErrorString(status).decode()
        raise RuntimeError(f"{call} failed: {reason} (NVRTC status {status})")


def version() -> tuple[int, int]:
    """(major, minor) of the installed NVRTC, e.g. (13, 0)."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(_library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _string_array(items) -> ctypes.Array:
    encoded = [item.encode() for item in items]
    return (ctypes.c_char_p * len(encoded))(*encoded)


def _read(program, size_function, read_function) -> str:
    size = ctypes.c_size_t()
    _check(size_function(program, ctypes.byref(size)), size_function.__name__)
    buffer = ctypes.create_string_buffer(size.value)
    _check(read_function(program, buffer), read_function.__name__)
    return buffer.value.decode(errors="replace")


def compile_source(source: str, filename: str, options=(), name_expressions=()) -> Compiled:
    """Compile CUDA C `source` to PTX with NVRTC, instantiating every name expression.

    `filename` names the program in NVRTC's messages. Raises CompileError (with the log) when NVRTC
    rejects the source, CompilerNotFound when the NVRTC wheel is not installed.
    """
    lib = _library()
    program = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), filename.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        for expression in name_expressions:
            _check(lib.nvrtcAddNameExpression(program, expression.encode()), "nvrtcAddNameExpression")
        status = lib.nvrtcCompileProgram(program, len(options), _string_array(options))
        log = _read(program, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog)
        if status == NVRTC_ERROR_COMPILATION:
            raise CompileError(filename, options, log)
        _check(status, f"nvrtcCompileProgram of {filename}")
        ptx = _read(program, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        return Compiled(ptx=ptx, log=log, lowered_names=_lowered_names(program, name_expressions))
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def _lowered_names(program, name_expressions) -> dict:
    lowered = {}
    for expression in name_expressions:
        name = ctypes.c_char_p()
        _check(_library().nvrtcGetLoweredName(program, expression.encode(), ctypes.byref(name)),
               f"nvrtcGetLoweredName({expression!r})")
        lowered[expression] = name.value.decode()
    return lowered
