"""The arguments of a RawModule kernel, checked against its compiled C signature.

runtime.h names each parameter's C type (`nn_cuda_cpu_signature`): a scalar type ("int", "unsigned
long long", "bool", "float", ...; a typedef by its type: size_t is "unsigned long" on Linux) or a
pointer to one ("const float*", "void*"). CuPy packs each argument by its own type and the GPU reads
the bytes whatever the parameter is; here every argument must fit its parameter:
- a pointer takes a C-contiguous NumPy array of the pointee's dtype (void* takes any dtype), and a
  non-const pointer a writeable one;
- a scalar takes a NumPy scalar of exactly its dtype, or a Python value converted to it: an int for
  an integer parameter when it is in range, an int or a float for a float or double, a bool for bool.
Anything else raises TypeError naming the argument's index, its C type and what was given.
"""

from __future__ import annotations

import math

import numpy as np

from .runner import SCALAR_CTYPES

#: runtime.h's name of an unsupported type (a struct, a reference, a vector type, a pointer to a pointer)
UNSUPPORTED = "?"


def scalar_dtype(c_type: str) -> np.dtype:
    """The NumPy dtype of a scalar C type as runtime.h names it ('unsigned long' -> uint64 on Linux)."""
    return np.dtype(SCALAR_CTYPES[c_type])


def unsupported(signature) -> list[int]:
    """The positions of the parameters no argument can be passed to."""
    def passable(c_type: str) -> bool:
        if c_type.endswith("*"):
            return c_type[:-1].replace("const ", "", 1) in (*SCALAR_CTYPES, "void")
        return c_type in SCALAR_CTYPES

    return [i for i, c_type in enumerate(signature) if not passable(c_type)]


def pack(kernel: str, signature: tuple, args) -> tuple:
    """`args` as the kernel takes them: arrays as given, scalars as NumPy scalars of the parameter's
    dtype; TypeError on a wrong count or an argument that does not fit its parameter."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"{kernel}: args must be a tuple, got {type(args).__name__}")
    if len(args) != len(signature):
        raise TypeError(f"{kernel} takes {len(signature)} arguments ({', '.join(signature)}), "
                        f"got {len(args)}")
    return tuple(_argument(f"{kernel}: argument {i} ({c_type})", c_type, value)
                 for i, (value, c_type) in enumerate(zip(args, signature)))


def _given(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    if isinstance(value, np.generic):
        return f"a numpy.{value.dtype.name}"
    return f"a Python {type(value).__name__}"


def _argument(where: str, c_type: str, value):
    if c_type.endswith("*"):
        return _array(where, c_type, value)
    dtype = scalar_dtype(c_type)
    if isinstance(value, np.generic):
        if value.dtype != dtype:
            raise TypeError(f"{where} takes a numpy.{dtype.name}, got {_given(value)}")
        return value
    if dtype.kind == "b":
        if not isinstance(value, bool):
            raise TypeError(f"{where} takes a bool or a numpy.bool, got {_given(value)}")
        return dtype.type(value)
    if dtype.kind in "iu":
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where} takes a numpy.{dtype.name} or a Python int, got {_given(value)}")
        limits = np.iinfo(dtype)
        if not limits.min <= value <= limits.max:
            raise TypeError(f"{where}: {value} is outside the range of {dtype.name} "
                            f"({limits.min} to {limits.max})")
        return dtype.type(value)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{where} takes a numpy.{dtype.name} or a Python float, got {_given(value)}")
    number = float(value)
    if math.isfinite(number) and abs(number) > np.finfo(dtype).max:
        raise TypeError(f"{where}: {value} is outside the range of {dtype.name}")
    return dtype.type(number)


def _array(where: str, c_type: str, value) -> np.ndarray:
    pointee = c_type.replace("const ", "").rstrip("*")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where} takes a NumPy array, got {_given(value)}")
    if pointee != "void" and value.dtype != scalar_dtype(pointee):
        raise TypeError(f"{where} takes an array of {scalar_dtype(pointee)}, got {_given(value)}")
    if not value.flags.c_contiguous:
        raise TypeError(f"{where} takes a C-contiguous array (np.ascontiguousarray makes one), got a strided view")
    if not c_type.startswith("const ") and not value.flags.writeable:
        raise TypeError(f"{where} may be written by the kernel, and the array given is read-only")
    return value
