"""The CuPy backend: the CUDA C kernels of kernels/*.cu on a GPU, and cuBLAS as the anchor.

Each kernels/*.cu file is compiled once per process (NVRTC, through `cupy.RawModule`) with every
template instance listed by `nn_cuda.kernel_info.name_expressions`, and kept in a module-level
cache. A call then only picks the instance (`gemm_tiled<float, false, true>`), checks its arguments
and launches it on CuPy's current stream. Sizes go to the kernels as 32-bit integers (element
counts of the flat kernels as 64-bit), scalars in the precision of the arrays.

GEMM algorithms: naive, tiled, regblock (the course's ladder, kernels/gemm_*.cu) and cublas
(`cupy.cublas.gemm`, which hands row-major arrays to cuBLAS as their column-major transposes and
works in place).
"""

from __future__ import annotations

import numpy as np

try:
    import cupy
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"the 'cupy' backend needs CuPy, which could not be imported ({error}): run "
        "pip install -e .[gpu] (it installs cupy-cuda12x; with CUDA 13 drivers install cupy-cuda13x)"
    ) from error

from .. import kernel_info
from .base import Backend, BackendUnavailable

_CUDA_LIBRARIES_HINT = (
    "install the CUDA libraries that CuPy loads with pip install 'cupy-cuda12x[ctk]' "
    "(or 'cupy-cuda13x[ctk]'), or install a CUDA toolkit"
)

# ---- compiled modules, one per kernel file, shared by every CupyBackend of the process ----------

_MODULES: dict = {}


def _module(filename: str):
    """The RawModule of kernels/<filename>, with all its template instances (cached).

    CuPy compiles the source (NVRTC) the first time a kernel is taken from the module.
    """
    module = _MODULES.get(filename)
    if module is None:
        module = cupy.RawModule(
            code=kernel_info.kernel_source(filename),
            options=("-std=c++17",),
            name_expressions=kernel_info.name_expressions(filename),
        )
        _MODULES[filename] = module
    return module


def _cublas():
    """cupy.cublas, imported on first use: it loads the cuBLAS library, which may be missing."""
    try:
        import cupy.cublas
    except ImportError as error:
        raise BackendUnavailable(
            f"gemm algorithm 'cublas' needs cuBLAS, which CuPy could not load ({str(error).strip()}); "
            + _CUDA_LIBRARIES_HINT
        ) from None
    return cupy.cublas


# ---- launch shapes (they must match the kernels' thread mappings) -------------------------------

_NAIVE_BLOCK = (32, 8)  # threadIdx.x along the columns of C
_TILE = 32  # gemm_tiled: 32 x 32 threads, one 32 x 32 tile of C per block
_REGBLOCK_BLOCK = (16, 4)  # gemm_regblock: 64 threads, a 16-row x 64-column tile of C per block
_REGBLOCK_TILE = (16, 64)  # (rows, columns) of C per block
_MATRIX_BLOCK = (32, 8)  # bias_sigmoid, softmax_grad
_FLAT_BLOCK = 256  # sigmoid_backward, sgd_update, bias_softmax (threads per block)
_COL_SUM_BLOCK = (32, 32)  # col_sum: 32 columns per block, 32 groups of rows

_MAX_GRID_X = 2**31 - 1
_MAX_GRID_Y = 65535
_MAX_INT32 = 2**31 - 1
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


def _gemm_launch_shape(algo: str, M: int, N: int):
    """(grid, block) covering the M x N matrix C with the tiles of `algo`."""
    if algo == "naive":
        block = _NAIVE_BLOCK
        tile_rows, tile_cols = block[1], block[0]  # one element of C per thread
    elif algo == "tiled":
        block = (_TILE, _TILE)
        tile_rows, tile_cols = _TILE, _TILE
    else:  # regblock
        block = _REGBLOCK_BLOCK
        tile_rows, tile_cols = _REGBLOCK_TILE
    grid = (_blocks(N, tile_cols), _blocks(M, tile_rows))
    if grid[1] > _MAX_GRID_Y:
        raise ValueError(
            f"gemm algorithm {algo!r} handles at most {_MAX_GRID_Y * tile_rows} rows of C "
            f"(the grid's y limit), got M = {M}; split the product into blocks of rows"
        )
    return grid, block


class CupyBackend(Backend):
    name = "cupy"
    gemm_algos = ("naive", "tiled", "regblock", "cublas")
    default_gemm = "regblock"  # the fastest of the course's hand-written kernels
    on_device = True

    def __init__(self, gemm=None):
        super().__init__(gemm)
        try:
            device_count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as error:
            raise BackendUnavailable(
                f"backend 'cupy' cannot reach a GPU ({error}); check the NVIDIA driver, "
                "or use --backend numpy or numba-sim on a machine without one"
            ) from None
        if device_count == 0:
            raise BackendUnavailable(
                "backend 'cupy' needs an NVIDIA GPU and found none; "
                "use --backend numpy or numba-sim on a machine without one"
            )
        self._kernels: dict = {}

    # ---- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        return cupy.empty(shape, dtype=dtype)

    def fill(self, out, value):
        out.fill(value)

    def to_device(self, host_array):
        return cupy.array(np.asarray(host_array), order="C", copy=True)

    def to_host(self, array):
        return cupy.asnumpy(array)

    def take_rows(self, src, rows, out):
        cupy.take(src, rows, axis=0, out=out)

    def copy(self, src, dst):
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise ValueError(
                f"copy needs arrays of one shape and dtype, got {src.shape} {src.dtype} "
                f"and {dst.shape} {dst.dtype}"
            )
        cupy.copyto(dst, src)

    def synchronize(self):
        cupy.cuda.runtime.deviceSynchronize()

    # ---- linear algebra -----------------------------------------------------------------------
    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        algo = algo or self.gemm_algo
        if algo not in self.gemm_algos:
            raise ValueError(
                f"backend 'cupy' has no GEMM algorithm {algo!r}; choose one of {', '.join(self.gemm_algos)}"
            )
        M, N, K = _check_gemm(A, B, C, trans_a, trans_b)
        dtype = C.dtype
        if algo == "cublas":
            # cuBLAS does not read C when beta == 0, so a NaN-poisoned C is fine here as well.
            _cublas().gemm(
                "T" if trans_a else "N", "T" if trans_b else "N", A, B, out=C,
                alpha=dtype.type(alpha), beta=dtype.type(beta),
            )
            return
        grid, block = _gemm_launch_shape(algo, M, N)
        kernel = self._kernel(
            kernel_info.GEMM_KERNEL_FILES[algo], kernel_info.gemm_kernel_name(algo, dtype, trans_a, trans_b)
        )
        sizes = (np.int32(M), np.int32(N), np.int32(K))
        kernel(grid, block, (A, B, C, *sizes, dtype.type(alpha), dtype.type(beta)))

    # ---- fused element-wise and reduction operations ------------------------------------------
    def bias_sigmoid(self, Z, b, out):
        rows, cols = _check_matrix("bias_sigmoid", Z=Z, out=out)
        _check_row_vector("bias_sigmoid", b, cols, Z.dtype)
        args = (Z, b, out, np.int32(rows), np.int32(cols))
        self._launch_matrix_kernel("bias_sigmoid", Z.dtype, rows, cols, args)

    def bias_softmax(self, Z, b, out):
        rows, cols = _check_matrix("bias_softmax", Z=Z, out=out)
        _check_row_vector("bias_softmax", b, cols, Z.dtype)
        if rows == 0 or cols == 0:  # nothing to write (an empty launch is invalid)
            return
        grid = (min(_blocks(rows, _FLAT_BLOCK), _MAX_GRID_X),)
        kernel = self._kernel(kernel_info.NN_OPS_FILE, kernel_info.nn_op_kernel_name("bias_softmax", Z.dtype))
        kernel(grid, (_FLAT_BLOCK,), (Z, b, out, np.int32(rows), np.int32(cols)))

    def softmax_grad(self, P, labels, scale, out):
        rows, cols = _check_matrix("softmax_grad", P=P, out=out)
        _check_labels("softmax_grad", labels, rows)
        args = (P, labels, P.dtype.type(scale), out, np.int32(rows), np.int32(cols))
        self._launch_matrix_kernel("softmax_grad", P.dtype, rows, cols, args)

    def sigmoid_backward(self, dA, A, out):
        _check_same_arrays("sigmoid_backward", dA=dA, A=A, out=out)
        self._launch_flat_kernel("sigmoid_backward", A.dtype, A.size, (dA, A, out, np.int64(A.size)))

    def col_sum(self, M, out):
        rows, cols = _check_matrix("col_sum", M=M)
        _check_row_vector("col_sum (out)", out, cols, M.dtype)
        if cols == 0:  # nothing to write (an empty launch is invalid)
            return
        grid = (_blocks(cols, _COL_SUM_BLOCK[0]),)
        kernel = self._kernel(kernel_info.NN_OPS_FILE, kernel_info.nn_op_kernel_name("col_sum", M.dtype))
        kernel(grid, _COL_SUM_BLOCK, (M, out, np.int32(rows), np.int32(cols)))

    def sgd_update(self, param, grad, lr, decay):
        _check_same_arrays("sgd_update", param=param, grad=grad)
        scalar = param.dtype.type
        args = (param, grad, scalar(lr), scalar(decay), np.int64(param.size))
        self._launch_flat_kernel("sgd_update", param.dtype, param.size, args)

    def pgd_step(self, X_adv, grad, X_clean, alpha, eps, out):
        _check_same_arrays("pgd_step", X_adv=X_adv, grad=grad, X_clean=X_clean, out=out)
        scalar = out.dtype.type
        _pgd_step_kernel()(X_adv, grad, X_clean, scalar(alpha), scalar(eps), out)

    # ---- read-backs (not on the hot path: plain CuPy) -----------------------------------------
    def cross_entropy_sum(self, P, labels):
        rows, _ = _check_matrix("cross_entropy_sum", P=P)
        _check_labels("cross_entropy_sum", labels, rows)
        picked = P[cupy.arange(rows), labels].astype(cupy.float64)
        tiny = np.finfo(P.dtype).tiny
        return float(-cupy.log(cupy.maximum(picked, tiny)).sum())

    def sum_squares(self, X):
        flat = X.ravel().astype(cupy.float64)
        return float((flat * flat).sum())

    def argmax_rows(self, P):
        return cupy.asnumpy(cupy.argmax(P, axis=1))

    # ---- launching ----------------------------------------------------------------------------
    def _kernel(self, filename, name_expression):
        kernel = self._kernels.get(name_expression)
        if kernel is None:
            try:
                kernel = _module(filename).get_function(name_expression)
            except cupy.cuda.compiler.CompileException:
                raise  # a bug in the kernel source: CuPy's message holds the compiler's log
            except (ImportError, RuntimeError) as error:
                raise BackendUnavailable(
                    f"could not compile or load kernels/{filename} ({error}); CuPy compiles it with "
                    "NVRTC: " + _CUDA_LIBRARIES_HINT
                ) from error
            self._kernels[name_expression] = kernel
        return kernel

    def _launch_matrix_kernel(self, op, dtype, rows, cols, args):
        """A kernel with threadIdx.x along the columns and a loop over rows (32 x 8 blocks)."""
        if rows == 0 or cols == 0:
            return
        block = _MATRIX_BLOCK
        grid = (_blocks(cols, block[0]), min(_blocks(rows, block[1]), _MAX_GRID_Y))
        kernel = self._kernel(kernel_info.NN_OPS_FILE, kernel_info.nn_op_kernel_name(op, dtype))
        kernel(grid, block, args)

    def _launch_flat_kernel(self, op, dtype, size, args):
        """A one-thread-per-element kernel with a grid-stride loop (256-thread blocks)."""
        grid = (max(1, min(_blocks(size, _FLAT_BLOCK), 65536)),)  # the loop covers the rest
        kernel = self._kernel(kernel_info.NN_OPS_FILE, kernel_info.nn_op_kernel_name(op, dtype))
        kernel(grid, (_FLAT_BLOCK,), args)


_PGD_STEP_KERNEL = None


def _pgd_step_kernel():
    """The attack step as a CuPy ElementwiseKernel (one thread per pixel, memory-bound: 3 loads and
    one store for a few flops), compiled on first use for each dtype."""
    global _PGD_STEP_KERNEL
    if _PGD_STEP_KERNEL is None:
        _PGD_STEP_KERNEL = cupy.ElementwiseKernel(
            "T x, T g, T clean, T alpha, T eps", "T out",
            """
            T step = g > (T)0 ? alpha : (g < (T)0 ? -alpha : (T)0);
            T v = x + step;
            T low = clean - eps, high = clean + eps;
            v = v < low ? low : (v > high ? high : v);
            out = v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v);
            """,
            "nn_cuda_pgd_step",
        )
    return _PGD_STEP_KERNEL


# ---- argument checks: one clear ValueError per mistake -----------------------------------------


def _check_array(op, name, x):
    if not isinstance(x, cupy.ndarray):
        raise ValueError(
            f"{op}: {name} must be a CuPy array (use backend.to_device), got {type(x).__name__}"
        )
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{op}: {name} must be C-contiguous (row-major); pass cupy.ascontiguousarray({name})"
        )


def _check_matrix(op, **arrays):
    """All arrays 2-D, C-contiguous, float32 or float64, of one shape and dtype; returns the shape."""
    first_name, first = next(iter(arrays.items()))
    for name, x in arrays.items():
        _check_array(op, name, x)
        if x.ndim != 2:
            raise ValueError(f"{op}: {name} must be a matrix (2-D), got shape {x.shape}")
        if x.dtype not in _FLOAT_DTYPES:
            raise ValueError(f"{op}: {name} must be float32 or float64, got {x.dtype}")
        if x.shape != first.shape or x.dtype != first.dtype:
            raise ValueError(
                f"{op}: {name} {x.shape} {x.dtype} does not match {first_name} {first.shape} {first.dtype}"
            )
    rows, cols = first.shape
    if rows > _MAX_INT32 or cols > _MAX_INT32:
        raise ValueError(f"{op}: dimensions must fit in 32 bits, got {first.shape}")
    return rows, cols


def _check_same_arrays(op, **arrays):
    first_name, first = next(iter(arrays.items()))
    for name, x in arrays.items():
        _check_array(op, name, x)
        if x.dtype not in _FLOAT_DTYPES:
            raise ValueError(f"{op}: {name} must be float32 or float64, got {x.dtype}")
        if x.shape != first.shape or x.dtype != first.dtype:
            raise ValueError(
                f"{op}: {name} {x.shape} {x.dtype} does not match {first_name} {first.shape} {first.dtype}"
            )


def _check_row_vector(op, b, cols, dtype):
    """A bias-like vector: `cols` entries, shape (cols,) or (1, cols), C-contiguous, of `dtype`."""
    _check_array(op, "the vector", b)
    if b.shape not in ((cols,), (1, cols)):
        raise ValueError(f"{op}: the vector must have shape ({cols},) to match the matrix, got {b.shape}")
    if b.dtype != dtype:
        raise ValueError(f"{op}: the vector is {b.dtype} but the matrix is {dtype}; use one dtype")


def _check_labels(op, labels, rows):
    _check_array(op, "labels", labels)
    if labels.dtype != np.int32:
        raise ValueError(
            f"{op}: labels must be int32, got {labels.dtype}; convert them with labels.astype(numpy.int32)"
        )
    if labels.shape != (rows,):
        raise ValueError(f"{op}: labels must have shape ({rows},), one per row, got {labels.shape}")


def _check_gemm(A, B, C, trans_a, trans_b):
    """Checks of C <- alpha op(A) op(B) + beta C; returns (M, N, K)."""
    for name, x in (("A", A), ("B", B), ("C", C)):
        _check_array("gemm", name, x)
        if x.ndim != 2:
            raise ValueError(f"gemm: {name} must be a matrix (2-D), got shape {x.shape}")
        if x.dtype not in _FLOAT_DTYPES:
            raise ValueError(f"gemm: {name} must be float32 or float64, got {x.dtype}")
    if not (A.dtype == B.dtype == C.dtype):
        raise ValueError(f"gemm: A, B and C must share one dtype, got {A.dtype}, {B.dtype}, {C.dtype}")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    K_b, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != K_b or C.shape != (M, N):
        raise ValueError(
            f"gemm shapes do not match: op(A) is {M}x{K}, op(B) is {K_b}x{N}, C is "
            f"{C.shape[0]}x{C.shape[1]}; the inner sizes must be equal and C must be {M}x{N}"
        )
    if min(M, N, K) < 1:
        raise ValueError(f"gemm needs M, N, K >= 1, got M={M}, N={N}, K={K}")
    if max(M, N, K) > _MAX_INT32:
        raise ValueError(f"gemm: M, N, K must fit in 32 bits, got M={M}, N={N}, K={K}")
    for name, x in (("A", A), ("B", B)):
        if _overlap(x, C):
            raise ValueError(f"gemm: C overlaps {name} in memory; C must be a separate output array")
    return M, N, K


def _overlap(x, y) -> bool:
    x_start, y_start = x.data.ptr, y.data.ptr
    return x_start < y_start + y.nbytes and y_start < x_start + x.nbytes
