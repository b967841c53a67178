"""Numba CUDA kernels: the mirrors of kernels/*.cu, with the same tile shapes and thread mapping.

    gemm_naive.py     one thread per element of C
    gemm_tiled.py     32x32 tiles of op(A) and op(B) staged in shared memory
    gemm_regblock.py  the course's register-blocked GEMM: 64 threads compute a 16x64 tile of C
    nn_ops.py         the fused element-wise and reduction kernels of the network

Every GEMM module offers the same three things:

    kernel(trans_a, trans_b)     the @cuda.jit kernel for one transpose combination
    launch(A, B, C, alpha, beta, trans_a, trans_b)
                                 computes the grid from the shapes and runs the kernel
    ROWS_PER_BLOCK               rows of C per block (gridDim.y = ceil(M / ROWS_PER_BLOCK))

Two choices shared by all of them:

- Transposes are compile-time constants. `kernel(trans_a, trans_b)` is a small factory: the
  kernel it builds reads `trans_a` and `trans_b` from its closure, which Numba freezes as
  constants, so each of the four variants is compiled with the untaken branches removed (as a C++
  template would be). The four variants are built once and cached. Passing the flags as arguments
  would also work but leaves a run-time branch in the innermost loop.
- The element type follows the arguments. Numba compiles each variant once per argument types
  (float32 or float64), and the kernels declare their shared and local arrays with `dtype=C.dtype`
  and their constants with `C.dtype.type(0)`, which Numba resolves when it compiles (and the
  simulator when it runs). So float32 kernels do float32 arithmetic with no float64 promotion and no
  per-dtype copy of the source.

The kernels do not check their arguments: `nn_cuda.backends.numba_backend` validates shapes, dtypes
and contiguity before it launches them. They run on a GPU and, unchanged, in Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1).
"""

from . import gemm_naive, gemm_regblock, gemm_tiled

#: algorithm name -> module with `kernel(trans_a, trans_b)` and `launch(...)`
GEMM_MODULES = {
    "naive": gemm_naive,
    "tiled": gemm_tiled,
    "regblock": gemm_regblock,
}

