"""The network's operations on the CUDA C kernels of kernels/*.cu, whoever runs them.

`CudaKernelBackend` checks each operation's arguments, turns it into a `KernelLaunch` from
`nn_cuda.kernel_launch` (the one launch table) and hands that to `run_kernel`. Its two subclasses
differ only in memory and in how a compiled kernel is called:

- `CupyBackend` (cupy_backend.py): CuPy arrays on a GPU, kernels compiled by NVRTC;
- `CudaCpuBackend` (cuda_cpu_backend.py): NumPy arrays, the same kernel files compiled for the CPU.
"""

from __future__ import annotations

import abc

import numpy as np

from .. import kernel_info, kernel_launch
from .base import Backend

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class CudaKernelBackend(Backend):
    """A backend whose operations are the kernels of kernels/*.cu."""

    #: what the arrays must be, for error messages ("a CuPy array")
    array_kind: str = "an array"
    runs_kernel_files = True
    compiles_at_first_launch = True
    largest_dimension = kernel_launch.MAX_INT32  # the kernels take M, N, K and index as 32-bit ints
    default_gemm = "regblock"  # the fastest of the course's hand-written kernels
    #: the class of this backend's arrays (numpy.ndarray, cupy.ndarray)
    array_type: type = type(None)

    def __init__(self, gemm=None):
        super().__init__(gemm)
        #: each kernel's launch line, read once, for as long as this backend keeps its compiled modules
        self.geometries = kernel_launch.GeometryTable()

    # ---- what a subclass supplies -------------------------------------------------------------
    def is_array(self, x) -> bool:
        """True for an array of this backend's kind."""
        return isinstance(x, self.array_type)

    @abc.abstractmethod
    def address(self, x) -> int:
        """The address of x's first element (to detect overlapping arguments)."""

    @abc.abstractmethod
    def run_kernel(self, launch: kernel_launch.KernelLaunch) -> None:
        """Launch one kernel instance. Its first launch checks the arguments against the kernel's C
        signature (kernel_launch.check_arguments): the operations validate every call's arrays, and
        a launch builds its arguments the same way every time, so one check per kernel finds a
        wrong launch table."""

    def vendor_gemm(self, A, B, C, alpha, beta, trans_a, trans_b, algo) -> None:
        raise ValueError(f"backend {self.name!r} has no GEMM algorithm {algo!r}")

    # ---- linear algebra -----------------------------------------------------------------------
    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        algo = algo or self.gemm_algo
        if algo not in self.gemm_algos:
            raise ValueError(
                f"backend {self.name!r} has no GEMM algorithm {algo!r}; choose one of {', '.join(self.gemm_algos)}"
            )
        M, N, K = self._check_gemm(A, B, C, trans_a, trans_b)
        if algo not in kernel_info.KERNEL_GEMMS:
            self.vendor_gemm(A, B, C, alpha, beta, trans_a, trans_b, algo)
            return
        launch = kernel_launch.gemm(self.geometries, algo, A, B, C, alpha, beta, trans_a, trans_b, M, N, K)
        self.run_kernel(launch)

    # ---- fused element-wise and reduction operations ------------------------------------------
    def bias_sigmoid(self, Z, b, out):
        rows, cols = self._check_matrix("bias_sigmoid", Z=Z, out=out)
        self._check_row_vector("bias_sigmoid", b, cols, Z.dtype)
        self._run(kernel_launch.bias_sigmoid(self.geometries, Z, b, out, rows, cols))

    def bias_softmax(self, Z, b, out):
        rows, cols = self._check_matrix("bias_softmax", Z=Z, out=out)
        self._check_row_vector("bias_softmax", b, cols, Z.dtype)
        self._run(kernel_launch.bias_softmax(self.geometries, Z, b, out, rows, cols))

    def softmax_grad(self, P, labels, scale, out):
        rows, cols = self._check_matrix("softmax_grad", P=P, out=out)
        self._check_labels("softmax_grad", labels, rows)
        self._run(kernel_launch.softmax_grad(self.geometries, P, labels, scale, out, rows, cols))

    def sigmoid_backward(self, dA, A, out):
        self._check_same_arrays("sigmoid_backward", dA=dA, A=A, out=out)
        self._run(kernel_launch.sigmoid_backward(self.geometries, dA, A, out))

    def col_sum(self, M, out):
        rows, cols = self._check_matrix("col_sum", M=M)
        self._check_row_vector("col_sum (out)", out, cols, M.dtype)
        self._run(kernel_launch.col_sum(self.geometries, M, out, rows, cols))

    def sgd_update(self, param, grad, lr, decay):
        self._check_same_arrays("sgd_update", param=param, grad=grad)
        self._run(kernel_launch.sgd_update(self.geometries, param, grad, lr, decay))

    def pgd_step(self, X_adv, grad, X_clean, alpha, eps, pixel_max, out):
        self._check_same_arrays("pgd_step", X_adv=X_adv, grad=grad, X_clean=X_clean, out=out)
        self._run(kernel_launch.pgd_step(self.geometries, X_adv, grad, X_clean, alpha, eps, pixel_max, out))

    def _run(self, launch) -> None:
        if launch is not None:  # None: an empty matrix, nothing to write (an empty launch is invalid)
            self.run_kernel(launch)

    # ---- argument checks: one clear ValueError per mistake -------------------------------------
    def _check_array(self, op, name, x):
        if not self.is_array(x):
            raise ValueError(
                f"{op}: {name} must be {self.array_kind} (use backend.to_device), got {type(x).__name__}"
            )
        if not x.flags.c_contiguous:
            raise ValueError(f"{op}: {name} must be C-contiguous (row-major); pass a contiguous copy of {name}")

    def _check_floats(self, op, arrays) -> tuple:
        """All arrays C-contiguous, float32 or float64, of one shape and dtype; returns the first. The
        usual case is tested in one loop without calls (the launch path's cost), anything else by the
        checks that name the mistake."""
        first, kind = next(iter(arrays.values())), self.array_type
        for x in arrays.values():
            if not (isinstance(x, kind) and x.flags.c_contiguous and x.dtype == first.dtype
                    and x.shape == first.shape):
                break
        else:
            if first.dtype in _FLOAT_DTYPES:
                return first
        first_name, first = next(iter(arrays.items()))
        for name, x in arrays.items():
            self._check_array(op, name, x)
            if x.dtype not in _FLOAT_DTYPES:
                raise ValueError(f"{op}: {name} must be float32 or float64, got {x.dtype}")
            if x.shape != first.shape or x.dtype != first.dtype:
                raise ValueError(
                    f"{op}: {name} {x.shape} {x.dtype} does not match {first_name} {first.shape} {first.dtype}"
                )
        return first

    def _check_matrix(self, op, **arrays):
        """Matrices of one shape and dtype; returns (rows, cols)."""
        first = self._check_floats(op, arrays)
        if first.ndim != 2:
            raise ValueError(f"{op}: {next(iter(arrays))} must be a matrix (2-D), got shape {first.shape}")
        rows, cols = first.shape
        if rows > self.largest_dimension or cols > self.largest_dimension:
            raise ValueError(f"{op}: dimensions must fit in 32 bits, got {first.shape}")
        return rows, cols

    def _check_same_arrays(self, op, **arrays):
        self._check_floats(op, arrays)

    def _check_row_vector(self, op, b, cols, dtype):
        """A bias-like vector: `cols` entries, shape (cols,) or (1, cols), C-contiguous, of `dtype`."""
        usual = isinstance(b, self.array_type) and b.flags.c_contiguous and b.dtype == dtype
        if usual and b.shape in ((cols,), (1, cols)):
            return
        self._check_array(op, "the vector", b)
        if b.shape not in ((cols,), (1, cols)):
            raise ValueError(f"{op}: the vector must have shape ({cols},) to match the matrix, got {b.shape}")
        if b.dtype != dtype:
            raise ValueError(f"{op}: the vector is {b.dtype} but the matrix is {dtype}; use one dtype")

    def _check_labels(self, op, labels, rows):
        if (isinstance(labels, self.array_type) and labels.flags.c_contiguous and labels.dtype == np.int32
                and labels.shape == (rows,)):
            return
        self._check_array(op, "labels", labels)
        if labels.dtype != np.int32:
            raise ValueError(
                f"{op}: labels must be int32, got {labels.dtype}; convert them with labels.astype(numpy.int32)"
            )
        if labels.shape != (rows,):
            raise ValueError(f"{op}: labels must have shape ({rows},), one per row, got {labels.shape}")

    def _check_gemm(self, A, B, C, trans_a, trans_b):
        """Checks of C <- alpha op(A) op(B) + beta C; returns (M, N, K). The usual case (three
        contiguous matrices of one float dtype) is tested in one expression, the launch path's cost;
        anything else goes through the checks that name the mistake."""
        kind = self.array_type
        usual = (isinstance(A, kind) and isinstance(B, kind) and isinstance(C, kind)
                 and A.ndim == B.ndim == C.ndim == 2
                 and A.flags.c_contiguous and B.flags.c_contiguous and C.flags.c_contiguous
                 and A.dtype == B.dtype == C.dtype and C.dtype in _FLOAT_DTYPES)
        if not usual:
            self._explain_gemm_arrays(A, B, C)
        M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
        K_b, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
        if K != K_b or C.shape != (M, N):
            raise ValueError(
                f"gemm shapes do not match: op(A) is {M}x{K}, op(B) is {K_b}x{N}, C is "
                f"{C.shape[0]}x{C.shape[1]}; the inner sizes must be equal and C must be {M}x{N}"
            )
        if min(M, N, K) < 1:
            raise ValueError(f"gemm needs M, N, K >= 1, got M={M}, N={N}, K={K}")
        if max(M, N, K) > self.largest_dimension:
            raise ValueError(f"gemm: M, N, K must fit in 32 bits, got M={M}, N={N}, K={K}")
        a, b, c = self.address(A), self.address(B), self.address(C)
        for name, x, x_start in (("A", A, a), ("B", B, b)):
            if x_start < c + C.nbytes and c < x_start + x.nbytes:
                raise ValueError(f"gemm: C overlaps {name} in memory; C must be a separate output array")
        return M, N, K

    def _explain_gemm_arrays(self, A, B, C) -> None:
        """The ValueError that names what is wrong with the arrays of a GEMM."""
        for name, x in (("A", A), ("B", B), ("C", C)):
            self._check_array("gemm", name, x)
            if x.ndim != 2:
                raise ValueError(f"gemm: {name} must be a matrix (2-D), got shape {x.shape}")
            if x.dtype not in _FLOAT_DTYPES:
                raise ValueError(f"gemm: {name} must be float32 or float64, got {x.dtype}")
        raise ValueError(f"gemm: A, B and C must share one dtype, got {A.dtype}, {B.dtype}, {C.dtype}")
