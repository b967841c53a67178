"""Numba CUDA kernels: the mirrors of kernels/*.cu, with the same tile shapes and thread mapping.

    gemm_naive.py     one thread per element of C
    gemm_tiled.py     32x32 tiles of op(A) and op(B) staged in shared memory
    gemm_regblock.py  the course's register-blocked GEMM: 64 threads compute a 16x64 tile of C
    nn_ops.py         the fused element-wise and reduction kernels of the network

Every GEMM module offers `kernel(trans_a, trans_b)`, the @cuda.jit kernel for one transpose
combination; `launch_gemm` runs it with the block and grid of its CUDA C twin
(the twin's `// launch:` line in the project's kernels/, through nn_cuda.kernel_launch), so both are
launched by one description.

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

Notes on loops. The kernels' loops over a count known at run time (the GEMMs' K, a row's classes,
a column's rows) are `while` loops, not `for ... in range(...)`. Numba lowers a range loop through
an iterator that counts down a 64-bit "remaining" value, and LLVM cannot turn that back into a plain
counted loop: in the PTX for sm_90 each iteration of the naive kernel's K loop carried four 64-bit
selects and a recomputed 64-bit address, and the tiled kernel's 32-step inner loop was unrolled only
8 times, with selects in every step. The same loop written `k = 0; while k < K: ...; k += 1`
compiles as NVRTC compiles the CUDA C: a pointer stepped by the stride, the tiled inner loop fully
unrolled into 32 FMAs, no selects (naive: 146 64-bit instructions and 17 selects before, 67 and 0
after; tiled: 233 and 28 before, 68 and 1 after; the softmax: 335 and 49 before, 102 and 0 after).
On an H200 the naive GEMM ran 2.3-3.4x and the tiled one 2.5-3.1x faster for it
(docs/benchmarks.md). Short loops with a constant count that only run outside the K loop stay
`range` loops.

The kernels do not check their arguments: `nn_cuda.backends.numba_backend` validates shapes, dtypes
and contiguity before it launches them. They run on a GPU and, unchanged, in Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1).
"""

import functools
import importlib
import importlib.util

from ... import kernel_info, kernel_launch

#: algorithm name -> module with `kernel(trans_a, trans_b)`: the GEMMs of the ladder
#: (nn_cuda.kernel_info.GEMM_LADDER) that have a mirror here, gemm_<algo>.py
GEMM_MODULES = {
    gemm.algo: importlib.import_module(f".{gemm.template}", __name__)
    for gemm in kernel_info.GEMM_LADDER
    if importlib.util.find_spec(f".{gemm.template}", __name__) is not None
}


@functools.lru_cache(maxsize=None)
def _mirrored_geometries() -> kernel_launch.GeometryTable:
    """The launch lines of the files these kernels mirror: the project's kernels/, not a student's copy."""
    return kernel_launch.GeometryTable(kernel_info.project_kernel_dir())


def launch_gemm(algo, A, B, C, alpha, beta, trans_a: bool, trans_b: bool) -> None:
    """C <- alpha op(A) op(B) + beta C with GEMM kernel `algo` on validated device arrays (alpha, beta
    already of C's dtype), launched as its CUDA C twin is."""
    M, N = C.shape
    geometries = _mirrored_geometries()
    grid = kernel_launch.gemm_grid(algo, M, N, geometries)[:2]
    block = geometries[f"gemm_{algo}"].block[:2]
    GEMM_MODULES[algo].kernel(bool(trans_a), bool(trans_b))[grid, block](A, B, C, alpha, beta)


def kernel_cases():
    """Every (kernel, argument types, block) the numba backend launches, for compiling them without
    a GPU (nn_cuda.numba_link): a name such as 'gemm_tiled<float32, NT>', the @cuda.jit dispatcher,
    a tuple of Numba types, the block (x, y, z).

    The argument types are those of the backend's device arrays (C-contiguous) and of its scalars
    (the arrays' dtype); the blocks are the launches' own constants.
    """
    from numba import types

    from . import nn_ops

    flat, matrix, row = (nn_ops.FLAT_BLOCK, 1, 1), (nn_ops.BLOCK_X, nn_ops.BLOCK_Y, 1), (nn_ops.ROW_BLOCK, 1, 1)
    labels = types.Array(types.int32, 1, "C")
    cases = []
    for scalar in (types.float32, types.float64):
        vector, array = types.Array(scalar, 1, "C"), types.Array(scalar, 2, "C")
        for algo, module in GEMM_MODULES.items():
            block = _mirrored_geometries()[f"gemm_{algo}"].block
            for trans_a in (False, True):
                for trans_b in (False, True):
                    transposes = "TN"[not trans_a] + "TN"[not trans_b]
                    cases.append((f"gemm_{algo}<{scalar}, {transposes}>", module.kernel(trans_a, trans_b),
                                  (array, array, array, scalar, scalar), block))
        cases += [(f"{kernel.py_func.__name__}<{scalar}>", kernel, argument_types, block)
                  for kernel, argument_types, block in (
                      (nn_ops.fill_flat, (vector, scalar), flat),
                      (nn_ops.bias_sigmoid, (array, vector, array), matrix),
                      (nn_ops.bias_softmax, (array, vector, array), row),
                      (nn_ops.softmax_grad, (array, labels, scalar, array), matrix),
                      (nn_ops.sigmoid_backward, (vector, vector, vector), flat),
                      (nn_ops.col_sum, (array, vector), matrix),
                      (nn_ops.sgd_update, (vector, vector, scalar, scalar), flat),
                      (nn_ops.take_rows, (array, labels, array), matrix),
                      (nn_ops.pgd_step, (vector, vector, vector, scalar, scalar, scalar, vector), flat))]
    integers = types.Array(types.int32, 2, "C")  # the labels gathered by --shuffle
    cases.append(("take_rows<int32>", nn_ops.take_rows, (integers, labels, integers), matrix))
    return cases
