"""How each CUDA C kernel of kernels/*.cu is launched: its C signature, block shape, grid and arguments.

This is the one launch table of the project. The CuPy backend (on a GPU) and the cuda-cpu backend
(the same sources compiled for the CPU) both turn a network operation into a `KernelLaunch` here and
differ only in how they allocate memory and call a compiled kernel. A mistake in a grid, a block or
an argument list therefore shows on a CPU too. The block shapes (and the tile of C of a GEMM) are
the kernel files' own `// launch:` lines (nn_cuda.kernel_geometry); the grids are computed here.

Each template's C parameter list is written in `SIGNATURES` (with T for the element type); the
launchers check every argument against it before a launch, because on a GPU a wrong argument type is
silent garbage, and a test checks the list against the signatures the compilers see.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from . import kernel_geometry, kernel_info

# ---- the kernels' C signatures, files and block shapes -------------------------------------------

_GEMM_SIGNATURE = ("const T* A", "const T* B", "T* C", "int M", "int N", "int K", "T alpha", "T beta")

#: template -> its C parameter list, T standing for the element type (float or double)
SIGNATURES = {
    **{gemm.template: _GEMM_SIGNATURE for gemm in kernel_info.GEMM_LADDER},
    "bias_sigmoid": ("const T* Z", "const T* b", "T* out", "int rows", "int cols"),
    "bias_softmax": ("const T* Z", "const T* b", "T* out", "int rows", "int cols"),
    "softmax_grad": ("const T* P", "const int* labels", "T scale", "T* out", "int rows", "int cols"),
    "sigmoid_backward": ("const T* dA", "const T* A", "T* out", "long long n"),
    "col_sum": ("const T* M", "T* out", "int rows", "int cols"),
    "sgd_update": ("T* param", "const T* grad", "T lr", "T decay", "long long n"),
    "pgd_step": ("const T* X_adv", "const T* grad", "const T* X_clean", "T alpha", "T eps", "T pixel_max", "T* out",
                 "long long n"),
}
#: template -> its parameters' names
PARAMETER_NAMES = {template: tuple(p.rsplit(" ", 1)[1] for p in params) for template, params in SIGNATURES.items()}

def kernel_file(template: str) -> str:
    """The file of kernels/ that defines `template`."""
    for gemm in kernel_info.GEMM_LADDER:
        if gemm.template == template:
            return gemm.file
    if template in kernel_info.NN_OPS:
        return kernel_info.NN_OPS_FILE
    raise ValueError(f"no kernel file defines {template!r}")


def geometry(template: str, directory: Path | None = None) -> kernel_geometry.Geometry:
    """The launch geometry `template`'s file declares (its `// launch:` line), read from the kernels
    in use (NN_CUDA_KERNEL_DIR or kernels/), or from `directory`."""
    filename = kernel_file(template)
    path = directory / filename if directory is not None else kernel_info.kernel_path(filename)
    return kernel_geometry.of_kernel(path, template)


class GeometryTable(dict):
    """template -> its Geometry, each file's launch line read at the first launch of its kernels and
    kept: a backend holds one for as long as it holds the modules compiled from the same files, and a
    launch looks its kernel up without touching the file system."""

    def __init__(self, directory: Path | None = None):
        super().__init__()
        self.directory = directory  # None: the kernels in use (NN_CUDA_KERNEL_DIR or kernels/)

    def __missing__(self, template: str) -> kernel_geometry.Geometry:
        found = self[template] = geometry(template, self.directory)
        return found


def block_of(template: str, directory: Path | None = None) -> tuple:
    """Threads per block (x, y, z) of `template`; the kernels' header comments explain each mapping."""
    return geometry(template, directory).block


def gemm_tile(algo: str, directory: Path | None = None) -> tuple:
    """(rows, columns) of C computed by one block of GEMM kernel `algo`."""
    tile = geometry(f"gemm_{algo}", directory).tile
    if tile is None:
        raise kernel_geometry.GeometryError(
            f"the launch line of gemm_{algo} has no C tile: write '// launch: block (X, Y), C tile (ROWS, COLS)'")
    return tile


MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535
MAX_INT32 = 2**31 - 1
_FLAT_GRID_CAP = 65536  # flat kernels loop over the rest (grid-stride)

_C_SCALAR_TYPES = {"int": np.int32, "long long": np.int64, "float": np.float32, "double": np.float64}


def template_of(name_expression: str) -> str:
    """'gemm_tiled<float, false, true>' -> 'gemm_tiled'."""
    return name_expression.split("<", 1)[0]


@functools.lru_cache(maxsize=None)
def c_signature(name_expression: str) -> tuple:
    """The C parameter types of a template instance, T replaced: ('const float*', ..., 'float')."""
    element = name_expression.split("<", 1)[1].split(",")[0].rstrip(">").strip()
    return tuple(
        parameter.rsplit(" ", 1)[0].replace("T", element) for parameter in SIGNATURES[template_of(name_expression)]
    )


# ---- one launch -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KernelLaunch:
    """Everything needed to run one kernel: which instance, the launch shape and the arguments."""

    file: str  # kernels/<file>
    kernel: str  # the template instance (a CuPy name expression)
    grid: tuple
    block: tuple
    args: tuple  # in the C order: arrays (of the backend's kind) and NumPy scalars
    #: indices of the array arguments this launch writes without reading (the checking mode of the
    #: cuda-cpu backend fills them with NaN first, so a kernel that reads them is caught)
    write_only: tuple = ()

    @property
    def signature(self) -> tuple:
        return c_signature(self.kernel)


def check_arguments(launch: KernelLaunch, is_array) -> None:
    """Raise TypeError unless each argument matches the kernel's C parameter (count, pointer or
    scalar, element type, integer width). `is_array(x)` says whether x is an array of the backend."""
    signature = launch.signature
    if len(launch.args) != len(signature):
        raise TypeError(f"{launch.kernel} takes {len(signature)} arguments, the launch passes {len(launch.args)}")
    for position, (value, c_type) in enumerate(zip(launch.args, signature)):
        where = f"{launch.kernel}: argument {position} ({c_type})"
        if c_type.endswith("*"):
            element = c_type.replace("const ", "").rstrip("*")
            if not is_array(value):
                raise TypeError(f"{where} must be an array, got {type(value).__name__}")
            if value.dtype != _C_SCALAR_TYPES[element]:
                raise TypeError(f"{where} points to {element}, got an array of {value.dtype}")
        elif type(value) is not _C_SCALAR_TYPES[c_type]:
            raise TypeError(
                f"{where} must be a numpy.{np.dtype(_C_SCALAR_TYPES[c_type]).name}, got {type(value).__name__}"
            )


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


# ---- the network's operations as launches (shapes already checked by the backend) ----------------


def gemm_grid(algo, M, N, geometries: GeometryTable | None = None) -> tuple[int, int, int]:
    """The grid of GEMM kernel `algo` for an M x N matrix C: one block per tile of C of its launch line
    (the CUDA C kernels and their Numba mirrors both launch it)."""
    tile = geometries[f"gemm_{algo}"].tile if geometries is not None else None
    tile_rows, tile_cols = tile or gemm_tile(algo)
    grid = ((N + tile_cols - 1) // tile_cols, (M + tile_rows - 1) // tile_rows, 1)  # no calls: a launch's cost
    if grid[1] > MAX_GRID_Y:
        raise ValueError(
            f"gemm algorithm {algo!r} handles at most {MAX_GRID_Y * tile_rows} rows of C "
            f"(the grid's y limit), got M = {M}; split the product into blocks of rows"
        )
    return grid


def gemm(geometries, algo, A, B, C, alpha, beta, trans_a, trans_b, M, N, K) -> KernelLaunch:
    """C <- alpha op(A) op(B) + beta C with the course's kernel `algo` (naive, tiled, regblock), the
    launch shapes from `geometries` (the backend's GeometryTable)."""
    kernel = kernel_info.gemm_kernel_name(algo, C.dtype, trans_a, trans_b)
    grid = gemm_grid(algo, M, N, geometries)
    scalar = C.dtype.type
    args = (A, B, C, np.int32(M), np.int32(N), np.int32(K), scalar(alpha), scalar(beta))
    return KernelLaunch(kernel_info.GEMM_KERNEL_FILES[algo], kernel, grid, geometries[f"gemm_{algo}"].block, args,
                        write_only=(2,) if beta == 0 else ())


def _nn_op(geometries, op, dtype, grid, args, write_only) -> KernelLaunch:
    kernel = kernel_info.nn_op_kernel_name(op, dtype)
    return KernelLaunch(kernel_info.NN_OPS_FILE, kernel, grid, geometries[op].block, args, write_only)


def _matrix_grid(geometries, op, rows, cols):
    """threadIdx.x along the columns, a loop over the rows when the grid's y limit is reached."""
    x, y, _ = geometries[op].block
    return ((cols + x - 1) // x, min((rows + y - 1) // y, MAX_GRID_Y), 1)


def _flat_grid(geometries, op, size):
    x = geometries[op].block[0]
    return (max(1, min((size + x - 1) // x, _FLAT_GRID_CAP)), 1, 1)


def bias_sigmoid(geometries, Z, b, out, rows, cols) -> KernelLaunch | None:
    if rows == 0 or cols == 0:  # nothing to write (an empty launch is invalid)
        return None
    args = (Z, b, out, np.int32(rows), np.int32(cols))
    grid = _matrix_grid(geometries, "bias_sigmoid", rows, cols)
    return _nn_op(geometries, "bias_sigmoid", Z.dtype, grid, args, (2,))


def bias_softmax(geometries, Z, b, out, rows, cols) -> KernelLaunch | None:
    if rows == 0 or cols == 0:
        return None
    grid = (min(_blocks(rows, geometries["bias_softmax"].block[0]), MAX_GRID_X), 1, 1)
    return _nn_op(geometries, "bias_softmax", Z.dtype, grid, (Z, b, out, np.int32(rows), np.int32(cols)), (2,))


def softmax_grad(geometries, P, labels, scale, out, rows, cols) -> KernelLaunch | None:
    if rows == 0 or cols == 0:
        return None
    args = (P, labels, P.dtype.type(scale), out, np.int32(rows), np.int32(cols))
    grid = _matrix_grid(geometries, "softmax_grad", rows, cols)
    return _nn_op(geometries, "softmax_grad", P.dtype, grid, args, (3,))


def sigmoid_backward(geometries, dA, A, out) -> KernelLaunch:
    args = (dA, A, out, np.int64(A.size))
    grid = _flat_grid(geometries, "sigmoid_backward", A.size)
    return _nn_op(geometries, "sigmoid_backward", A.dtype, grid, args, (2,))


def col_sum(geometries, M, out, rows, cols) -> KernelLaunch | None:
    if cols == 0:
        return None
    grid = (_blocks(cols, geometries["col_sum"].block[0]), 1, 1)
    return _nn_op(geometries, "col_sum", M.dtype, grid, (M, out, np.int32(rows), np.int32(cols)), (1,))


def sgd_update(geometries, param, grad, lr, decay) -> KernelLaunch:
    scalar = param.dtype.type
    args = (param, grad, scalar(lr), scalar(decay), np.int64(param.size))
    grid = _flat_grid(geometries, "sgd_update", param.size)
    return _nn_op(geometries, "sgd_update", param.dtype, grid, args, ())


def pgd_step(geometries, X_adv, grad, X_clean, alpha, eps, pixel_max, out) -> KernelLaunch:
    scalar = out.dtype.type
    args = (X_adv, grad, X_clean, scalar(alpha), scalar(eps), scalar(pixel_max), out, np.int64(out.size))
    grid = _flat_grid(geometries, "pgd_step", out.size)
    return _nn_op(geometries, "pgd_step", out.dtype, grid, args, (6,))
