"""The arguments of a RawModule kernel, checked against its compiled C signature.

runtime.h names each parameter's C type (`nn_cuda_cpu_signature`): a scalar type ("int", "unsigned
long long", "bool", "float", ...; a typedef by its type: size_t is "unsigned long" on Linux) or a
pointer to one ("const float*", "void*"). CuPy packs each argument by its own type and the GPU reads
the bytes whatever the parameter is; here every argument must fit its parameter:
- a pointer takes a contiguous NumPy array (C or Fortran order: its memory, as CuPy passes it) of the
  pointee's dtype (void* and a pointer to a struct, float4* say, take any dtype; char*, whose char is
  signed or not as the platform chooses, int8 or uint8, as text's bytes are; a pointer to an enum,
  "enum of 4 bytes*", integers of its size, signed or not, as its underlying type is one or the other
  as the compiler chooses), and a non-const pointer a writeable one; a view that skips elements
  (positive strides) passes the address of its first element in its array's memory, as CuPy passes
  it; None passes a null pointer, as CuPy passes it; a pointer to pointers ("void**", "float**")
  takes an array of addresses, 8-byte integers (np.array([a.ctypes.data, ...], np.uint64)), as CuPy
  takes an array of device pointers;
- a scalar takes a NumPy scalar (or a one-element array, which CuPy passes by value) of exactly its
  dtype (or of an integer dtype of its size whose value it holds: the same bytes, as an enum's mode
  passed as an int32 to its underlying unsigned int), or a Python value that reaches it on a GPU as
  itself: an int for an integer parameter when it is in range (CuPy passes it as a long long, whose
  first bytes are the value), a float for a double, a bool for bool (an enum is its underlying
  integer type). CuPy passes a Python float to a float parameter as a double, and an int to a float
  or double as a long long: a GPU reads other bits than the number, so here they are refused;
- a struct by value ("struct of N bytes": a vector type, a struct of parameters, an empty tag type
  such as std::true_type, of 1 byte) takes the bytes of a NumPy scalar or one-element array of
  exactly N bytes (a structured dtype for a struct of fields), as CuPy passes them, and one of 16
  bytes (double2, cuDoubleComplex) a Python complex, which CuPy passes as a complex128;
- a 16-bit float ("__half", "__nv_bfloat16") or a pair of them ("__half2", "__nv_bfloat162") takes
  a NumPy scalar of its size (its bits; numpy.float16 for __half, never a Python float, which CuPy
  passes as a double), and a pointer to them an array of 2-byte items (float16, or uint16 bits).
Anything else raises TypeError naming the argument's index, its C type and what was given.
"""

from __future__ import annotations

import ctypes
import math
import re

import numpy as np

from . import device_memory

from .runner import NARROW_FLOATS, SCALAR_CTYPES, STRUCT_TYPE, pointers_to_pointers
#: runtime.h's names of plain char (signed on x86-64, unsigned on ARM): whose signedness code does not
#: choose, so a char* takes int8 or uint8 (text's bytes are uint8), as CuPy passes any array's pointer
_PLAIN_CHAR = ("char", "char (unsigned)")
#: runtime.h's name of an enum pointed to: an array of integers of its size, signed or not
_ENUM = re.compile(r"enum of (\d+) bytes?")


def scalar_dtype(c_type: str) -> np.dtype:
    """The NumPy dtype of a scalar C type as runtime.h names it ('unsigned long' -> uint64 on Linux)."""
    return np.dtype(SCALAR_CTYPES[c_type])


def unsupported(signature) -> list[int]:
    """The positions of the parameters no argument can be passed to."""
    def passable(c_type: str) -> bool:
        if pointers_to_pointers(c_type):
            return True
        if c_type.endswith("*"):
            c_type = c_type[:-1].replace("const ", "", 1)
            if c_type == "void" or _ENUM.fullmatch(c_type):
                return True
        return c_type in SCALAR_CTYPES or c_type in NARROW_FLOATS or STRUCT_TYPE.fullmatch(c_type) is not None

    return [i for i, c_type in enumerate(signature) if not passable(c_type)]


def parameter_bytes(signature) -> int:
    """About the bytes a kernel's parameters take, each aligned to the largest power of two up to 8
    that divides its size: what a GPU's parameter space must hold."""
    total = 0
    for c_type in signature:
        struct = STRUCT_TYPE.fullmatch(c_type)
        size = (8 if c_type.endswith("*") else int(struct[1]) if struct else
                (4 if c_type.endswith("2") else 2) if c_type in NARROW_FLOATS else scalar_dtype(c_type).itemsize)
        alignment = min(8, size & -size) if size else 1  # a struct's as its size allows
        total = -(-total // alignment) * alignment + size
    return total


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
    struct = STRUCT_TYPE.fullmatch(c_type)
    if struct is not None:
        return _struct_bytes(where, int(struct[1]), value)
    if c_type in NARROW_FLOATS:  # its bits, as CuPy passes a NumPy scalar of its size
        if isinstance(value, (int, float)):
            raise TypeError(f"{where} takes a NumPy scalar of its size (numpy.float16 for __half): CuPy passes "
                            f"a Python {type(value).__name__} as 8 bytes, of which a GPU reads the first "
                            f"{4 if c_type.endswith('2') else 2}, not the number")
        return _struct_bytes(where, 4 if c_type.endswith("2") else 2, value)  # a pair, or one
    dtype = scalar_dtype(c_type)
    if isinstance(value, np.ndarray) and value.size == 1:  # CuPy passes a one-element array by value
        value = value.reshape(())[()]
    if value is None and c_type == "function pointer":  # CuPy passes None as a null pointer
        return dtype.type(0)
    if isinstance(value, np.generic):
        if value.dtype == dtype:
            return value
        # an integer of the same size, signed where the parameter is not or the other way, or a wider
        # one: CuPy passes its bytes, whose first ones a GPU reads as the same number where the
        # parameter's type holds it (an enum is its underlying type, which GCC makes unsigned int when
        # no enumerator is negative; cuSignal's convolve2d passes a shape's numpy.int64 for an int), as
        # it reads a Python int, passed as a long long
        if value.dtype.kind in "iu" and dtype.kind in "iu" and value.dtype.itemsize >= dtype.itemsize:
            limits = np.iinfo(dtype)
            if limits.min <= int(value) <= limits.max:
                return dtype.type(int(value))
            raise TypeError(f"{where}: {value} is outside the range of {dtype.name} ({limits.min} to {limits.max})")
        raise TypeError(f"{where} takes a numpy.{dtype.name}, got {_given(value)}")
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
    if dtype != np.float64 or not isinstance(value, float):
        # CuPy passes a Python float as a double and an int as a long long: a GPU reads their first bytes
        python = " or a Python float" if dtype == np.float64 else ""
        why = (f": CuPy passes a Python {type(value).__name__} as a "
               f"{'double' if isinstance(value, float) else 'long long'}, whose bytes a {c_type} parameter "
               f"does not read as the number on a GPU" if type(value) in (int, float) else "")
        raise TypeError(f"{where} takes a numpy.{dtype.name}{python}, got {_given(value)}{why}")
    number = float(value)
    if math.isfinite(number) and abs(number) > np.finfo(dtype).max:
        raise TypeError(f"{where}: {value} is outside the range of {dtype.name}")
    return dtype.type(number)


def _struct_bytes(where: str, size: int, value) -> ctypes.Array:
    """The bytes of a NumPy scalar or one-element array of `size` bytes, in a buffer of their own
    (aligned for any vector type) that the launch passes by address."""
    if type(value) is complex and size == 16:  # CuPy passes a Python complex as a complex128
        value = np.complex128(value)
    fits = isinstance(value, np.generic) or isinstance(value, np.ndarray) and value.size == 1
    if not fits or value.itemsize != size:
        raise TypeError(f"{where} takes a NumPy scalar or a one-element array of {size} byte(s) (a structured "
                        f"dtype for a struct of fields), got {_given(value)}"
                        + (f" of {value.itemsize} byte(s)" if fits else ""))
    return ctypes.create_string_buffer(value.tobytes(), size)


def _array(where: str, c_type: str, value) -> np.ndarray | None:
    if value is None:
        return None  # NULL: kernels test optional pointers against it
    pointee = c_type.replace("const ", "").rstrip("*")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value == 0:
            return None  # NULL, as CuPy passes 0
        # the kernel's type, whatever the array holds, as CuPy passes the number alone
        typed = (np.uint64 if pointers_to_pointers(c_type) else
                 scalar_dtype(pointee) if pointee in SCALAR_CTYPES else None)
        address, value = int(value), device_memory.array_at(int(value), typed)
        if value is None:
            raise TypeError(f"{where} takes a NumPy array, or the address of an element of device memory "
                            f"(nn_cuda.cuda_cpu.device_memory.to_device's arrays, as CuPy takes x.data.ptr), got "
                            f"{address:#x}, which lies in no such array: pass the array")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where} takes a NumPy array, got {_given(value)}")
    if pointers_to_pointers(c_type):  # what its addresses point to is no business of the argument's
        if value.dtype not in (np.uint64, np.int64):
            raise TypeError(f"{where} takes an array of addresses, uint64 or int64 (np.array([a.ctypes.data, ...], "
                            f"np.uint64)), got {_given(value)}")
    elif pointee in NARROW_FLOATS and value.dtype.itemsize != 2:
        raise TypeError(f"{where} takes an array of 2-byte items (float16, or uint16 bits), got {_given(value)}")
    elif enum := _ENUM.fullmatch(pointee):
        if value.dtype.kind not in "iu" or value.dtype.itemsize != int(enum[1]):
            raise TypeError(f"{where} takes an array of {enum[1]}-byte integers, signed or not (int32 or uint32 "
                            f"for an enum of 4 bytes), got {_given(value)}")
    elif pointee in _PLAIN_CHAR:
        if value.dtype not in (np.int8, np.uint8):
            raise TypeError(f"{where} takes an array of int8 or uint8 (plain char is signed or unsigned as the "
                            f"platform chooses), got {_given(value)}")
    elif pointee in SCALAR_CTYPES and value.dtype != scalar_dtype(pointee):  # void and structs: any dtype
        wanted = scalar_dtype(pointee)
        # CuPy passes any array's pointer: where only the sign differs (OpenMM passes one buffer as
        # unsigned long long* to one kernel and long long* to the next), the view is the way to say so
        same_size = value.dtype.kind in "iu" and wanted.kind in "iu" and value.dtype.itemsize == wanted.itemsize
        raise TypeError(f"{where} takes an array of {wanted}, got {_given(value)}"
                        + (f": pass x.view(np.{wanted}) to give its bytes as {wanted}" if same_size else ""))
    if not c_type.startswith("const ") and not value.flags.writeable:
        raise TypeError(f"{where} may be written by the kernel, and the array given is read-only")
    if value.flags.c_contiguous:
        return value
    # One block of memory from its first element on in another order (Fortran order; a channels-last
    # buffer seen as NCHW): CuPy passes its first element's address, and so does the array of its axes
    # in the order of memory.
    in_memory_order = value.transpose(np.argsort([-stride for stride in value.strides], kind="stable"))
    if in_memory_order.flags.c_contiguous:
        return in_memory_order
    span = _span(value)
    if span is not None:
        return span
    raise TypeError(f"{where} takes an array whose elements lie forward from its first one, got a view with a "
                    "negative or zero stride: CuPy would pass the address of its first element, and the kernel "
                    "would read forward from there (pass a contiguous copy, np.ascontiguousarray(view), and copy "
                    "an output back into the view)")


def _span(view: np.ndarray) -> np.ndarray | None:
    """The memory of a view that skips elements (`x[::2]`, a column of a matrix), from its first element
    to its last, as one contiguous array of its dtype within the array it views; None where its strides
    are not all positive or its array is not one C-contiguous block. CuPy passes the view's first
    element's address: a kernel given its strides reads the view's elements (cupyx's upfirdn takes
    `x.strides[axis] // x.itemsize`), and one that indexes it as contiguous reads the elements between,
    as it does on a GPU. The runner refused such a view until 2026-11-27."""
    whole = view
    while isinstance(whole.base, np.ndarray):
        whole = whole.base
    if view.size == 0 or not whole.flags.c_contiguous or any(
            stride <= 0 for size, stride in zip(view.shape, view.strides) if size > 1):
        return None
    offset = view.ctypes.data - whole.ctypes.data
    length = sum((size - 1) * stride for size, stride in zip(view.shape, view.strides)) + view.itemsize
    if offset < 0 or offset + length > whole.nbytes or length % view.itemsize:
        return None
    return whole.reshape(-1).view(np.uint8)[offset:offset + length].view(view.dtype)
