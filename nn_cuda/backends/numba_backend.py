"""The Numba backend: the kernels of numba_kernels/ on a GPU, or in Numba's CUDA simulator.

Arrays are Numba device arrays (`cuda.device_array`, `cuda.to_device`, and their views: row slices
X[a:b] and reshapes of C-contiguous arrays). Every operation checks its arguments (device arrays,
float32 or float64, C-contiguous, matching shapes) and raises a ValueError naming the problem, then
launches one kernel with a grid computed from the shapes. Launches are asynchronous on a GPU;
`synchronize` waits for them, and the read-backs (to_host, the loss, the argmax) wait by copying.

Nothing here assumes a GPU or the simulator: with NUMBA_ENABLE_CUDASIM=1 set before Numba is first
imported, the same kernels run on the CPU, one Python thread per CUDA thread (tiny sizes only).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from numba import config as numba_config
from numba import cuda

from .base import WITHOUT_A_GPU, Backend, BackendUnavailable, check_cuda_wheels
from .numba_kernels import GEMM_MODULES, launch_gemm, nn_ops

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: CUDA's limit on gridDim.y, which counts blocks of rows in the 2-D launches
MAX_GRID_Y = 65535


def quiet_low_occupancy_warnings() -> None:
    """Numba warns about every launch of fewer than 128 blocks. The network's small matrices (10
    columns) make such launches by design, and the warning would repeat at every step. Numba may wrap
    the message in terminal colour codes, so the pattern may start anywhere (on an H200 the warnings
    got past a pattern anchored at the message's start)."""
    warnings.filterwarnings("ignore", message=r".*Grid size \d+ will likely result in GPU under-utilization")


def _is_device_array(x) -> bool:
    # Numba's device arrays (and the simulator's stand-ins) carry this marker.
    return bool(getattr(x, "__cuda_ndarray__", False))


def _check_array(name: str, x, ndim: int | None = None, float_only: bool = True) -> None:
    """Raise a ValueError unless x is a C-contiguous Numba device array of the expected kind."""
    if not _is_device_array(x):
        if isinstance(x, np.ndarray):
            raise ValueError(
                f"{name} is a NumPy array; the numba backend works on device arrays: "
                "copy it with backend.to_device(array) first"
            )
        raise ValueError(
            f"{name} is a {type(x).__name__}, not a Numba device array; "
            "create it with backend.empty(...) or backend.to_device(array)"
        )
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(x.shape)}")
    if float_only and np.dtype(x.dtype) not in FLOAT_DTYPES:
        raise ValueError(
            f"{name} has dtype {x.dtype}; the numba backend computes in float32 or float64"
        )
    if not x.is_c_contiguous():
        raise ValueError(
            f"{name} (shape {tuple(x.shape)}) is not C-contiguous; pass a contiguous array "
            "(row slices X[a:b] are fine; instead of a transposed view pass trans_a/trans_b)"
        )


def _check_same_dtype(**arrays) -> np.dtype:
    dtypes = {name: np.dtype(a.dtype) for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name} {dt}" for name, dt in dtypes.items())
        raise ValueError(f"arrays must share one dtype, got {listed}; convert them to one dtype")
    return next(iter(dtypes.values()))


def _check_shape(name: str, x, shape: tuple) -> None:
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(x.shape)}, expected {tuple(shape)}")


def _check_rows(op: str, rows: int, rows_per_block: int) -> None:
    if _blocks(rows, rows_per_block) > MAX_GRID_Y:
        raise ValueError(
            f"{op}: {rows} rows are more than one launch covers ({MAX_GRID_Y * rows_per_block}); "
            "process the rows in chunks"
        )


def _flat(x):
    """A 1-D view of a C-contiguous device array (no copy)."""
    return x.reshape(x.size)


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


class NumbaBackend(Backend):
    name = "numba"
    gemm_algos = tuple(GEMM_MODULES)
    default_gemm = "regblock"  # the fastest of the course's hand-written kernels
    on_device = True

    def __init__(self, gemm=None):
        if numba_config.ENABLE_CUDASIM:  # however it was asked for (numba-sim, or the environment)
            self.name, self.emulated = "numba-sim", True
        super().__init__(gemm)
        self.compiles_at_first_launch = not self.emulated  # Numba's JIT; the simulator compiles nothing
        quiet_low_occupancy_warnings()
        if not self.emulated:
            check_cuda_wheels()
        if not cuda.is_available():  # always True in the simulator
            raise BackendUnavailable(
                f"backend 'numba' needs an NVIDIA GPU and its driver and found none; {WITHOUT_A_GPU}"
            )

    def launch_scope(self):
        """The CUDA context attached to this thread for the scope. Each of Numba's calls (a launch, a
        device array) otherwise asks the driver for the current context and looks up the device's
        primary context again; Numba's own require_context attaches it for the length of one call,
        this holds it for a whole training step. On an H200 the tiled and register-blocked steps went
        from 2.3 and 2.0 ms to 1.6 ms (docs/benchmarks.md). The scope is numba-cuda's own
        (`_Runtime.ensure_context`, what require_context enters), which tests/test_gpu_install.py
        checks is there; without it the steps run as before, only slower."""
        if self.emulated:  # the simulator has no context to attach
            return contextlib.nullcontext()
        from numba.cuda.cudadrv import devices

        runtime = getattr(devices, "_runtime", None)
        return runtime.ensure_context() if hasattr(runtime, "ensure_context") else contextlib.nullcontext()

    # ---- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype):
        return cuda.device_array(shape, dtype=np.dtype(dtype))

    def fill(self, out, value):
        _check_array("out", out, float_only=False)
        n = out.size
        if n:
            nn_ops.fill_flat[_blocks(n, nn_ops.FLAT_BLOCK), nn_ops.FLAT_BLOCK](
                _flat(out), np.dtype(out.dtype).type(value)
            )

    def to_device(self, host_array):
        return cuda.to_device(np.ascontiguousarray(host_array))

    def to_host(self, array):
        _check_array("array", array, float_only=False)
        return array.copy_to_host()

    def copy(self, src, dst):
        _check_array("src", src, float_only=False)
        _check_array("dst", dst, float_only=False)
        _check_same_dtype(src=src, dst=dst)
        _check_shape("dst", dst, src.shape)
        dst.copy_to_device(src)

    def synchronize(self):
        cuda.synchronize()

    def take_rows(self, src, rows, out):
        _check_array("src", src, float_only=False)
        _check_array("rows", rows, ndim=1, float_only=False)
        _check_array("out", out, float_only=False)
        _check_same_dtype(src=src, out=out)
        if rows.dtype != np.int32 or out.shape != (rows.shape[0],) + tuple(src.shape[1:]):
            raise ValueError(f"take_rows: rows must be int32 with one entry per row of out; got "
                             f"rows {rows.dtype} {rows.shape}, src {src.shape}, out {out.shape}")
        as_matrix = (lambda x: x.reshape(x.shape[0], 1)) if src.ndim == 1 else (lambda x: x)
        M, N = rows.shape[0], (src.shape[1] if src.ndim == 2 else 1)
        _check_rows("take_rows", M, nn_ops.BLOCK_Y)
        if M and N:
            grid = (_blocks(N, nn_ops.BLOCK_X), _blocks(M, nn_ops.BLOCK_Y))
            nn_ops.take_rows[grid, (nn_ops.BLOCK_X, nn_ops.BLOCK_Y)](as_matrix(src), rows, as_matrix(out))

    # ---- linear algebra -----------------------------------------------------------------------
    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        algo = algo or self.gemm_algo
        if algo not in GEMM_MODULES:
            raise ValueError(
                f"backend 'numba' has no GEMM algorithm {algo!r}; "
                f"choose one of {', '.join(self.gemm_algos)}"
            )
        for name, x in (("A", A), ("B", B), ("C", C)):
            _check_array(name, x, ndim=2)
        dtype = _check_same_dtype(A=A, B=B, C=C)
        M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
        K_b, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
        if K != K_b or tuple(C.shape) != (M, N):
            raise ValueError(
                f"gemm shapes do not match: op(A) is {M}x{K}, op(B) is {K_b}x{N}, "
                f"C is {C.shape[0]}x{C.shape[1]} (trans_a={trans_a}, trans_b={trans_b}); "
                "C must be rows(op(A)) x cols(op(B)) and cols(op(A)) must equal rows(op(B))"
            )
        if M == 0 or N == 0:
            return
        launch_gemm(algo, A, B, C, dtype.type(alpha), dtype.type(beta), trans_a, trans_b)

    # ---- fused element-wise and reduction operations ------------------------------------------
    def bias_sigmoid(self, Z, b, out):
        self._check_bias_op(Z, b, out)
        M, N = out.shape
        _check_rows("bias_sigmoid", M, nn_ops.BLOCK_Y)
        if M and N:
            grid = (_blocks(N, nn_ops.BLOCK_X), _blocks(M, nn_ops.BLOCK_Y))
            nn_ops.bias_sigmoid[grid, (nn_ops.BLOCK_X, nn_ops.BLOCK_Y)](Z, b, out)

    def bias_softmax(self, Z, b, out):
        self._check_bias_op(Z, b, out)
        M, N = out.shape
        if M and N:
            nn_ops.bias_softmax[_blocks(M, nn_ops.ROW_BLOCK), nn_ops.ROW_BLOCK](Z, b, out)

    def softmax_grad(self, P, labels, scale, out):
        _check_array("P", P, ndim=2)
        _check_array("out", out, ndim=2)
        _check_array("labels", labels, ndim=1, float_only=False)
        dtype = _check_same_dtype(P=P, out=out)
        if np.dtype(labels.dtype) != np.int32:
            raise ValueError(f"labels have dtype {labels.dtype}; they must be int32 class indices")
        _check_shape("out", out, P.shape)
        _check_shape("labels", labels, (P.shape[0],))
        M, N = out.shape
        _check_rows("softmax_grad", M, nn_ops.BLOCK_Y)
        if M and N:
            grid = (_blocks(N, nn_ops.BLOCK_X), _blocks(M, nn_ops.BLOCK_Y))
            block = (nn_ops.BLOCK_X, nn_ops.BLOCK_Y)
            nn_ops.softmax_grad[grid, block](P, labels, dtype.type(scale), out)

    def sigmoid_backward(self, dA, A, out):
        self._check_elementwise(dA=dA, A=A, out=out)
        n = out.size
        if n:
            nn_ops.sigmoid_backward[_blocks(n, nn_ops.FLAT_BLOCK), nn_ops.FLAT_BLOCK](
                _flat(dA), _flat(A), _flat(out)
            )

    def col_sum(self, M, out):
        _check_array("M", M, ndim=2)
        _check_array("out", out, ndim=1)
        _check_same_dtype(M=M, out=out)
        _check_shape("out", out, (M.shape[1],))
        cols = M.shape[1]
        if cols:
            block = (nn_ops.BLOCK_X, nn_ops.BLOCK_Y)
            nn_ops.col_sum[_blocks(cols, nn_ops.BLOCK_X), block](M, out)

    def sgd_update(self, param, grad, lr, decay):
        dtype = self._check_elementwise(param=param, grad=grad)
        n = param.size
        if n:
            nn_ops.sgd_update[_blocks(n, nn_ops.FLAT_BLOCK), nn_ops.FLAT_BLOCK](
                _flat(param), _flat(grad), dtype.type(lr), dtype.type(decay)
            )

    def pgd_step(self, X_adv, grad, X_clean, alpha, eps, pixel_max, out):
        dtype = self._check_elementwise(X_adv=X_adv, grad=grad, X_clean=X_clean, out=out)
        n = out.size
        if n:
            nn_ops.pgd_step[_blocks(n, nn_ops.FLAT_BLOCK), nn_ops.FLAT_BLOCK](
                _flat(X_adv), _flat(grad), _flat(X_clean), dtype.type(alpha), dtype.type(eps),
                dtype.type(pixel_max), _flat(out)
            )

    # ---- read-backs (not on the hot path: copy to the host and use NumPy) ---------------------
    def cross_entropy_sum(self, P, labels):
        P_host = self.to_host(P)
        labels_host = self.to_host(labels)
        picked = P_host[np.arange(P_host.shape[0]), labels_host].astype(np.float64)
        return float(-np.log(np.maximum(picked, np.finfo(P_host.dtype).tiny)).sum())

    def sum_squares(self, X):
        flat = self.to_host(X).ravel().astype(np.float64, copy=False)
        return float(flat @ flat)

    def argmax_rows(self, P):
        return np.argmax(self.to_host(P), axis=1)

    # ---- argument checks ----------------------------------------------------------------------
    @staticmethod
    def _check_bias_op(Z, b, out) -> None:
        _check_array("Z", Z, ndim=2)
        _check_array("b", b, ndim=1)
        _check_array("out", out, ndim=2)
        _check_same_dtype(Z=Z, b=b, out=out)
        _check_shape("out", out, Z.shape)
        _check_shape("b", b, (Z.shape[1],))

    @staticmethod
    def _check_elementwise(**arrays) -> np.dtype:
        """Same-shape, same-dtype, contiguous float arrays; returns their dtype."""
        for name, x in arrays.items():
            _check_array(name, x)
        dtype = _check_same_dtype(**arrays)
        (first_name, first), *rest = arrays.items()
        for name, x in rest:
            if tuple(x.shape) != tuple(first.shape):
                raise ValueError(
                    f"{name} has shape {tuple(x.shape)} but {first_name} has {tuple(first.shape)}; "
                    "they must match"
                )
        return dtype
