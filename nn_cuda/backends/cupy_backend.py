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

from .. import kernel_info, kernel_launch
from .base import BackendUnavailable, check_cuda_wheels
from .cuda_kernels import CudaKernelBackend

_CUDA_LIBRARIES_HINT = (
    "install the CUDA libraries that CuPy loads with pip install 'cupy-cuda12x[ctk]' "
    "(or 'cupy-cuda13x[ctk]'), or install a CUDA toolkit"
)

# ---- compiled modules, shared by every CupyBackend of the process that compiles the same code -------

_MODULES: dict = {}  # (code, options, name expressions) -> its cupy.RawModule


def _module(filename: str):
    """The RawModule of kernels/<filename> (or of $NN_CUDA_KERNEL_DIR's copy), with all its template
    instances.

    Kept for the process, under what CuPy compiles: the code, which carries the digest of the headers
    (kernel_info), and the options, which name the kernel folder. So backends made for other kernel
    folders (grade --kernels of a class, in one process) or after an edit each get the module of their
    own files, never the one compiled first. CuPy compiles the source (NVRTC) the first time a kernel
    is taken from the module; its disk cache is keyed by the same code and options.
    """
    arguments = kernel_info.cupy_module_arguments(filename)
    key = (arguments["code"], tuple(arguments["options"]), tuple(arguments["name_expressions"]))
    module = _MODULES.get(key)
    if module is None:
        module = _MODULES[key] = cupy.RawModule(**arguments)
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


class CupyBackend(CudaKernelBackend):
    name = "cupy"
    gemm_algos = (*kernel_info.KERNEL_GEMMS, "cublas")
    on_device = True
    array_kind = "a CuPy array"
    array_type = cupy.ndarray

    def __init__(self, gemm=None):
        super().__init__(gemm)
        check_cuda_wheels()
        try:
            device_count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as error:
            raise BackendUnavailable(
                f"backend 'cupy' cannot reach a GPU ({error}); check the NVIDIA driver, "
                "or on a machine without one use --backend cuda-cpu (these kernels on the CPU), numpy or numba-sim"
            ) from None
        if device_count == 0:
            raise BackendUnavailable(
                "backend 'cupy' needs an NVIDIA GPU and found none; "
                "on a machine without one use --backend cuda-cpu (these kernels on the CPU), numpy or numba-sim"
            )
        self._modules: dict = {}  # kernel file -> its RawModule, looked up at the first launch of one of its kernels
        self._kernels: dict = {}  # name expression -> its RawKernel

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

    # ---- kernels -----------------------------------------------------------------------------
    def address(self, x) -> int:
        return x.data.ptr

    def run_kernel(self, launch):
        kernel = self._kernels.get(launch.kernel)
        if kernel is None:  # its first launch
            kernel_launch.check_arguments(launch, self.is_array)
            kernel = self._kernel(launch.file, launch.kernel)
        kernel(launch.grid, launch.block, launch.args)

    def vendor_gemm(self, A, B, C, alpha, beta, trans_a, trans_b, algo):
        # cuBLAS does not read C when beta == 0, so a NaN-poisoned C is fine here as well.
        scalar = C.dtype.type
        _cublas().gemm(
            "T" if trans_a else "N", "T" if trans_b else "N", A, B, out=C, alpha=scalar(alpha), beta=scalar(beta),
        )

    # ---- read-backs (not on the hot path: plain CuPy) -----------------------------------------
    def cross_entropy_sum(self, P, labels):
        rows, _ = self._check_matrix("cross_entropy_sum", P=P)
        self._check_labels("cross_entropy_sum", labels, rows)
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
                module = self._modules.get(filename)
                if module is None:
                    module = self._modules[filename] = _module(filename)
                kernel = module.get_function(name_expression)
            except cupy.cuda.compiler.CompileException:
                raise  # a bug in the kernel source: CuPy's message holds the compiler's log
            except (ImportError, RuntimeError) as error:
                raise BackendUnavailable(
                    f"could not compile or load kernels/{filename} ({error}); CuPy compiles it with "
                    "NVRTC: " + _CUDA_LIBRARIES_HINT
                ) from error
            self._kernels[name_expression] = kernel
        return kernel
