"""Every Numba CUDA kernel compiled and linked as Numba does it on a GPU, without one.

`link_report(cc)` takes each case of `nn_cuda.backends.numba_kernels.kernel_cases()` (a kernel, its
argument types, its launch block), compiles it to PTX for compute capability `cc` with Numba
(`numba.cuda.compile_ptx`, NVVM), links the PTX into a cubin with the linker Numba launches with
(nvJitLink through cuda.core: the step that failed on every GPU when CUDA 12 and 13 wheels were
mixed), and assembles it with ptxas -v for its registers, so that registers x threads can be checked
against the per-block limit:

    from nn_cuda.numba_link import link_report
    rows = link_report((9, 0))      # [{"kernel": "gemm_tiled<float32, NT>", "registers": ..., "fits": ...}]

Numba must be imported without its simulator (NUMBA_ENABLE_CUDASIM unset or 0), and the CUDA 12
wheels of the `dev` or `gpu` extra must be installed.
"""

from __future__ import annotations

import math

from . import kernel_resources


class SimulatorActive(RuntimeError):
    """Numba was imported with its CUDA simulator, which compiles nothing."""


def link_report(cc: tuple = (8, 0)) -> list[dict]:
    """One row per Numba kernel case: its PTX compiled, linked and assembled for `cc`."""
    from numba import config, cuda
    from numba.cuda.cudadrv.driver import _Linker

    if config.ENABLE_CUDASIM:
        raise SimulatorActive("Numba runs its CUDA simulator here; start Python with NUMBA_ENABLE_CUDASIM=0")
    from .backends.numba_kernels import kernel_cases

    arch = f"sm_{cc[0]}{cc[1]}"
    limits = kernel_resources.SM_LIMITS.get(arch, kernel_resources.SMLimits(shared_memory=0))
    rows = []
    for name, dispatcher, argument_types, block in kernel_cases():
        ptx, _ = cuda.compile_ptx(dispatcher.py_func, argument_types, cc=cc)
        linker = _Linker(cc=cc)
        linker.add_ptx(ptx.encode())
        cubin = linker.complete()
        _, result = kernel_resources.run_ptxas(ptx, arch)
        (info,) = [entry for entry in kernel_resources.parse_ptxas(result.stdout + result.stderr).values()
                   if entry["registers"] is not None]
        threads = math.prod(block)
        violations = kernel_resources.block_limit_violations(threads, info["registers"], info["smem_bytes"],
                                                             limits)
        rows.append({"kernel": name, "arch": arch, "linked_bytes": len(bytes(cubin.code)), "threads": threads,
                     "registers": info["registers"], "smem_bytes": info["smem_bytes"],
                     "spill_stores": info["spill_stores"], "spill_loads": info["spill_loads"],
                     "fits": not violations, "violations": violations})
    return rows
