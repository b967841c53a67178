"""The backend interface: the few operations the network needs, and nothing else.

`nn_cuda.model` writes the forward and backward passes once, in terms of these operations. A backend
(NumPy on the CPU, CuPy with the kernels of `kernels/*.cu`, Numba on a GPU or in its simulator)
supplies them for its own array type. Every operation writes into an output array the caller
allocated once, so a training step allocates nothing.

Conventions (see DESIGN.md):
- arrays are row-major (C-contiguous), float32 or float64; labels are int32 vectors;
- a batch is a matrix with one sample per row; W1 is (H, 784), W2 is (10, H);
- "row vector" arguments (biases) broadcast over the rows of a matrix.
"""

from __future__ import annotations

import abc
import contextlib

from ..errors import BackendUnavailable


def check_cuda_wheels() -> None:
    """BackendUnavailable when NVIDIA wheels of two CUDA major versions are installed (a GPU backend
    would compile with one and load with the other: nn_cuda.cuda_wheels)."""
    from ..cuda_wheels import MixedCudaVersions, check_one_major

    try:
        check_one_major()
    except MixedCudaVersions as error:
        raise BackendUnavailable(str(error)) from None


#: the end of a GPU backend's "no GPU here" error: the backends that run the kernels without one
WITHOUT_A_GPU = ("without a GPU use --backend cuda-cpu (the CUDA C kernels on the CPU), numba-sim "
                 "(the Numba kernels in Numba's simulator, tiny sizes only) or numpy (the reference)")


class Backend(abc.ABC):
    """Operations on one kind of array. Subclasses set `name` and `gemm_algos`."""

    name: str = "abstract"
    #: the GEMM algorithms this backend offers, in the order of the course's ladder
    gemm_algos: tuple = ()
    #: the algorithm used when none is asked for (the first of gemm_algos when None)
    default_gemm: str | None = None
    #: True when arrays live on a GPU (or the Numba simulator's stand-in for one)
    on_device: bool = False
    #: True when the GPU kernels run emulated on the CPU (Numba's simulator, cuda-cpu): right but slow,
    #: so the default GEMM is the first of the ladder (naive: no shared memory and no barriers, the
    #: cheapest to emulate) and the commands evaluate on a few images unless told otherwise
    emulated: bool = False
    #: True when the backend compiles and runs the CUDA C files of kernels/ (or NN_CUDA_KERNEL_DIR)
    runs_kernel_files: bool = False
    #: True when a kernel is compiled or loaded at its first launch (NVRTC, Numba's JIT, the host C++
    #: compiler): training launches the step's kernels once before its clock starts (model.load_step_kernels)
    compiles_at_first_launch: bool = False
    #: what a grade on this backend cannot see, for the grading harness to say (None: nothing)
    grading_note: str | None = None
    #: the largest matrix dimension the backend's kernels index (None: no limit of its own)
    largest_dimension: int | None = None

    def __init__(self, gemm: str | None = None):
        gemm = gemm or (None if self.emulated else self.default_gemm) or self.gemm_algos[0]
        if gemm not in self.gemm_algos:
            raise ValueError(
                f"backend {self.name!r} has no GEMM algorithm {gemm!r}; "
                f"choose one of {', '.join(self.gemm_algos)}"
            )
        self.gemm_algo = gemm

    # ---- memory -------------------------------------------------------------------------------
    @abc.abstractmethod
    def empty(self, shape, dtype):
        """An uninitialised array of the backend's kind."""

    def zeros(self, shape, dtype):
        out = self.empty(shape, dtype)
        self.fill(out, 0)
        return out

    @abc.abstractmethod
    def fill(self, out, value) -> None:
        """out[...] = value."""

    @abc.abstractmethod
    def to_device(self, host_array):
        """A backend copy of a NumPy array (same dtype, C-contiguous)."""

    @abc.abstractmethod
    def to_host(self, array):
        """A NumPy copy of a backend array."""

    @abc.abstractmethod
    def copy(self, src, dst) -> None:
        """dst[...] = src, same shape and dtype."""

    def take_rows(self, src, rows, out) -> None:
        """out[i] = src[rows[i]] for an int32 backend vector `rows` (the --shuffle permutation)."""
        raise NotImplementedError(f"backend {self.name!r} cannot gather rows (needed by --shuffle)")

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op on the CPU)."""

    def launch_scope(self):
        """A context manager around a run of calls on one thread (model.training_step holds one for
        each step), for a backend whose every call pays a fixed cost that the scope can pay once:
        nothing by default."""
        return contextlib.nullcontext()

    # ---- linear algebra -----------------------------------------------------------------------
    @abc.abstractmethod
    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None) -> None:
        """C <- alpha * op(A) @ op(B) + beta * C, in place.

        op(X) is X or X.T; A, B, C are 2-D, C-contiguous, of one dtype. With beta == 0, C is not
        read (it may hold NaN). `algo` defaults to the algorithm chosen at construction.
        """

    # ---- fused element-wise and reduction operations ------------------------------------------
    @abc.abstractmethod
    def bias_sigmoid(self, Z, b, out) -> None:
        """out[i, j] = sigmoid(Z[i, j] + b[j]), without overflow for any finite input."""

    @abc.abstractmethod
    def bias_softmax(self, Z, b, out) -> None:
        """out[i, :] = softmax(Z[i, :] + b), subtracting the row maximum first."""

    @abc.abstractmethod
    def softmax_grad(self, P, labels, scale, out) -> None:
        """out[i, j] = scale * (P[i, j] - (j == labels[i])): dLoss/dZ2 without a one-hot matrix."""

    @abc.abstractmethod
    def sigmoid_backward(self, dA, A, out) -> None:
        """out = dA * A * (1 - A) element-wise (out may be dA)."""

    @abc.abstractmethod
    def col_sum(self, M, out) -> None:
        """out[j] = sum_i M[i, j] (bias gradients)."""

    @abc.abstractmethod
    def sgd_update(self, param, grad, lr, decay) -> None:
        """param <- param - lr * (grad + decay * param), element-wise over same-shape arrays."""

    def pgd_step(self, X_adv, grad, X_clean, alpha, eps, pixel_max, out) -> None:
        """One signed-gradient attack step (FGSM, PGD), element-wise over same-shape arrays:

            out = clip(clip(X_adv + alpha * sign(grad), X_clean - eps, X_clean + eps), 0, pixel_max)

        a step up the loss, projected onto the L-infinity ball of radius eps around the clean
        images, then onto the valid pixel range [0, pixel_max] (1, or 255 for raw pixels); alpha and
        eps are in the same units as the pixels. sign(0) = 0. `out` may be X_adv.
        """
        raise NotImplementedError(f"backend {self.name!r} has no pgd_step (needed by nn_cuda.adversarial)")

    # ---- read-backs (not on the hot path) -----------------------------------------------------
    @abc.abstractmethod
    def cross_entropy_sum(self, P, labels) -> float:
        """sum_i -log(P[i, labels[i]]) as a Python float (clamped away from log(0))."""

    @abc.abstractmethod
    def sum_squares(self, X) -> float:
        """sum of X**2 as a Python float."""

    @abc.abstractmethod
    def argmax_rows(self, P):
        """NumPy int array: the argmax of each row of P."""
