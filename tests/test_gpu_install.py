"""The GPU install (pip install -e '.[mpi,dev,gpu]'), checked on a machine without a GPU.

.ci/run installs the gpu extra in a virtual environment of its own and runs this file there with
NUMBA_ENABLE_CUDASIM=0 (Numba as a GPU user gets it). Without a device nothing can run a kernel, but
everything up to the launch can be done with the very code a GPU run uses:
- every kernels/*.cu file goes through CuPy's own compile path (its options, its cache, NVRTC) for
  sm_80 and sm_90, and an edit of a header the kernels include changes what CuPy loads;
- every launch's arguments are packed by CuPy's own scalar packing and compared, parameter by
  parameter, with the C signature NVRTC compiled (its mangled names, demangled);
- every Numba kernel case is compiled to PTX and linked by the linker Numba uses, and its registers
  times its block fit the per-block limit;
- NCCL loads, and the commands refuse a GPU backend in one line when there is no GPU.
In the README's environment (no CuPy, Numba's simulator) the whole file is one skip.
"""

import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="the GPU install is checked where pip install -e '.[gpu]' was run")
from numba import config as numba_config  # noqa: E402

if numba_config.ENABLE_CUDASIM:
    pytest.skip("Numba runs its simulator here; .ci/run checks the GPU install with NUMBA_ENABLE_CUDASIM=0",
                allow_module_level=True)

import cupy.cuda.compiler as cupy_compiler  # noqa: E402
from cupy._core._scalar import CScalar  # noqa: E402
from cupy.cuda._compiler_cache import DiskKernelCacheBackend  # noqa: E402

from nn_cuda import kernel_info  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
ARCHS = ("80", "90")  # sm_80 (A100) and sm_90 (H100)


def _no_gpu() -> bool:
    try:
        return cupy.cuda.runtime.getDeviceCount() == 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return True


# ---- CuPy's compile path, up to the point where a GPU would load the binary ----------------------


class LoadedModule:
    """Stands for cupy.cuda.function.Module, whose load() needs a GPU: keeps what would be loaded."""

    loaded: list = []

    def __init__(self):
        self.mapping = None

    def load(self, cubin):
        LoadedModule.loaded.append(bytes(cubin))

    def _set_mapping(self, mapping):
        self.mapping = mapping


@pytest.fixture
def cupy_compile(monkeypatch, tmp_path):
    """compile(filename, arch) -> (cubin CuPy would load, {name expression: mangled name}), through
    cupy.cuda.compiler._compile_module_with_cache, the function RawModule calls, with CuPy's disk
    cache in tmp_path. Only what asks the GPU is replaced: the module's load, and the per-device
    memo of the -arch option (computed as CuPy computes it for that arch)."""
    monkeypatch.setattr(cupy_compiler, "function", types.SimpleNamespace(Module=LoadedModule))
    monkeypatch.setattr(cupy_compiler, "_kernel_cache_backend", DiskKernelCacheBackend(str(tmp_path / "cupy")))

    def arch_option(arch=None):
        if not cupy_compiler._use_ptx and int(arch) <= int(cupy_compiler._get_max_compute_capability()):
            return f"-arch=sm_{arch}", "cubin"
        return f"-arch=compute_{arch}", "ptx"

    monkeypatch.setattr(cupy_compiler, "_get_arch_for_options_for_nvrtc", arch_option)

    def compile(filename, arch):
        arguments = kernel_info.cupy_module_arguments(filename)
        LoadedModule.loaded.clear()
        module = cupy_compiler._compile_module_with_cache(
            arguments["code"], arguments["options"], arch=arch, name_expressions=arguments["name_expressions"])
        (cubin,) = LoadedModule.loaded
        return cubin, module.mapping

    return compile


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("filename", [path.name for path in kernel_info.kernel_files()])
def test_every_kernel_compiles_through_cupys_own_path(cupy_compile, filename, arch):
    cubin, mapping = cupy_compile(filename, arch)
    assert cubin.startswith(b"\x7fELF"), "CuPy would load a cubin (an ELF file) for this GPU"
    assert set(mapping) == set(kernel_info.name_expressions(filename))
    for mangled in mapping.values():
        assert mangled.encode() in cubin


def test_an_edit_of_a_header_changes_what_cupy_loads(cupy_compile, tmp_path, monkeypatch):
    copy = tmp_path / "kernels"
    shutil.copytree(kernel_info.kernel_dir(), copy)
    monkeypatch.setenv(kernel_info.KERNEL_DIR_VARIABLE, str(copy))
    before, _ = cupy_compile("gemm2_tiled.cu", "80")
    assert cupy_compile("gemm2_tiled.cu", "80")[0] == before  # the cache answers the second time

    header = copy / "common.cuh"
    header.write_text(header.read_text() + "\n#error common.cuh was edited\n")
    with pytest.raises(cupy_compiler.CompileException, match="common.cuh was edited"):
        cupy_compile("gemm2_tiled.cu", "80")  # compiled again: the stale binary is not loaded


def test_each_kernel_folder_gets_a_module_of_its_own_files(tmp_path):
    # what CuPy's backend compiles is kept per process under its code and options, not its file
    # name: grade --kernels of a class (folder after folder, in one process) ran the first folder's
    # kernels for every folder after it (tests/test_cuda_kernels.py launches it where there is a GPU)
    from nn_cuda.backends import cupy_backend

    student = tmp_path / "kernels"
    shutil.copytree(kernel_info.project_kernel_dir(), student)
    tiled = student / "gemm2_tiled.cu"
    tiled.write_text(tiled.read_text().replace("j < N)", "j < N - 1)"))
    project = cupy_backend._module("gemm2_tiled.cu")
    with kernel_info.kernels_from(student):
        theirs = cupy_backend._module("gemm2_tiled.cu")
        assert theirs is not project and "j < N - 1)" in theirs.code and "j < N - 1)" not in project.code
        assert f"-I{student}" in theirs.options
        assert cupy_backend._module("gemm2_tiled.cu") is theirs  # the same files: the same module
    assert cupy_backend._module("gemm2_tiled.cu") is project


# ---- CuPy's argument packing against the compiled signatures ------------------------------------

C_SIZES = {"int": 4, "unsigned int": 4, "long long": 8, "float": 4, "double": 8}
C_DTYPES = {"int": np.int32, "float": np.float32, "double": np.float64}


def every_launch() -> list:
    """The launches of every kernel instance, made by the launch code both backends share (run on
    the CPU runner here)."""
    from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend

    launches = []
    backend = CudaCpuBackend()
    run_kernel = backend.run_kernel

    def recording(launch):
        launches.append(launch)
        run_kernel(launch)

    backend.run_kernel = recording
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        A, B, C = (rng.random(shape).astype(dtype) for shape in ((3, 5), (5, 4), (3, 4)))
        for algo in kernel_info.GEMM_KERNEL_FILES:
            for trans_a in (False, True):
                for trans_b in (False, True):
                    a, b = (A.T.copy() if trans_a else A), (B.T.copy() if trans_b else B)
                    backend.gemm(a, b, C, 1.5, 0.5, trans_a=trans_a, trans_b=trans_b, algo=algo)
        Z, bias, out = rng.random((6, 10)).astype(dtype), rng.random(10).astype(dtype), np.empty((6, 10), dtype)
        backend.bias_sigmoid(Z, bias, out)
        backend.bias_softmax(Z, bias, out)
        backend.softmax_grad(Z, np.arange(6, dtype=np.int32) % 10, 0.5, out)
        backend.sigmoid_backward(Z, Z, out)
        backend.col_sum(Z, np.empty(10, dtype))
        backend.sgd_update(out, Z, 0.1, 1e-4)
        backend.pgd_step(Z, Z, Z, 0.01, 0.1, 1.0, out)
    return launches


def demangled_parameters(mangled: str) -> list[str]:
    """The parameter types of a compiled kernel, from its mangled name (c++filt)."""
    text = subprocess.run(["c++filt", mangled], capture_output=True, text=True, check=True).stdout.strip()
    inside = text[text.rindex("(") + 1:text.rindex(")")]
    return [parameter.strip() for parameter in inside.split(",")]


def test_every_launch_packs_each_argument_as_its_compiled_parameter(cupy_compile):
    if shutil.which("c++filt") is None:
        pytest.fail("c++filt (binutils, installed with g++) is needed to read the compiled signatures")
    mappings = {}
    launches = every_launch()
    assert {launch.kernel for launch in launches} == {
        name for path in kernel_info.kernel_files() for name in kernel_info.name_expressions(path.name)}
    for launch in launches:
        if launch.file not in mappings:
            mappings[launch.file] = cupy_compile(launch.file, "80")[1]
        parameters = demangled_parameters(mappings[launch.file][launch.kernel])
        assert len(parameters) == len(launch.args), (launch.kernel, parameters)
        for position, (value, parameter) in enumerate(zip(launch.args, parameters)):
            where = f"{launch.kernel} argument {position} ({parameter})"
            if parameter.endswith("*"):
                pointee = parameter.replace("const", "").rstrip("*").strip()
                assert isinstance(value, np.ndarray) and value.dtype == C_DTYPES[pointee], where
            else:
                packed = CScalar(value)  # what cupy.RawKernel's call packs for this argument
                assert packed.dtype.itemsize == C_SIZES[parameter], where
                assert packed.dtype.kind == ("f" if parameter in ("float", "double") else "i"), where


# ---- Numba: compiled, linked, within the limits ----------------------------------------------------


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_every_numba_kernel_links_and_fits_its_block(cc):
    from nn_cuda.numba_link import link_report

    rows = link_report(cc)
    assert len(rows) >= 40
    for row in rows:
        assert row["linked_bytes"] > 0, row
        assert row["fits"], row
        assert row["threads"] * row["registers"] <= 65536, row


def test_numba_still_has_the_context_scope_the_numba_backend_holds_for_a_step():
    # NumbaBackend.launch_scope enters it for each training step (1.6 instead of 2.0-2.3 ms a step on
    # an H200); should numba-cuda rename it, the backend falls back to no scope, and this test says so.
    from numba.cuda.cudadrv import devices

    assert callable(getattr(getattr(devices, "_runtime", None), "ensure_context", None))


def _numba_gemm_ptx(algo: str, trans_a: bool, trans_b: bool) -> str:
    from numba import cuda, types

    from nn_cuda.backends.numba_kernels import GEMM_MODULES

    matrix = types.Array(types.float32, 2, "C")
    ptx, _ = cuda.compile_ptx(GEMM_MODULES[algo].kernel(trans_a, trans_b).py_func,
                              (matrix, matrix, matrix, types.float32, types.float32), cc=(9, 0))
    return ptx


@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True)], ids=["NN", "TN", "NT"])
def test_numba_gemm_k_loops_compile_to_counted_loops(transposes):
    # With `for k in range(K)` the naive kernel's PTX had 17 selects (four per step of its unrolled K
    # loop) and the tiled kernel's 32-step inner loop was unrolled 8 times (9 FMAs); see the notes on
    # loops in nn_cuda/backends/numba_kernels.
    naive = _numba_gemm_ptx("naive", *transposes)
    assert "selp" not in naive
    tiled = _numba_gemm_ptx("tiled", *transposes)
    assert len(re.findall(r"\bfma\.rn\.f32\b", tiled)) >= 32  # the inner loop fully unrolled
    assert len(re.findall(r"\bselp\b", tiled)) <= 2  # setting up the transposed tile's index, outside the loops


def test_numba_softmax_row_loops_compile_to_counted_loops():
    from numba import cuda, types

    from nn_cuda.backends.numba_kernels import nn_ops

    matrix, vector = types.Array(types.float32, 2, "C"), types.Array(types.float32, 1, "C")
    ptx, _ = cuda.compile_ptx(nn_ops.bias_softmax.py_func, (matrix, vector, matrix), cc=(9, 0))
    assert "selp" not in ptx  # 49 with its three loops written `for j in range(...)`


# ---- NCCL, and the refusals without a GPU ----------------------------------------------------------


def test_nccl_comes_with_the_gpu_install():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl
    assert nccl.available, "pip install -e '.[gpu]' must install NCCL (nvidia-nccl-cu12) for --comm nccl"


REFUSED = [
    ["nn_cuda.train", "--backend", "cupy", "--dataset", "mnist-sample", "-e", "1"],
    ["nn_cuda.grade", "--mode", "4", "--backend", "cupy"],
    ["nn_cuda.bench", "gemm", "--backend", "cupy"],
    ["{repo}/scripts/gpu_check.py", "--out", "{tmp}"],
    ["nn_cuda.train", "--backend", "numba", "--dataset", "mnist-sample", "-e", "1"],
]


@pytest.mark.parametrize("command", REFUSED, ids=[" ".join(c[:2]).replace("{repo}/", "") for c in REFUSED])
def test_without_a_gpu_a_gpu_backend_is_refused_in_one_line(command, tmp_path):
    if not _no_gpu():
        pytest.skip("this machine has a GPU")
    arguments = [part.replace("{tmp}", str(tmp_path)).replace("{repo}", str(REPOSITORY)) for part in command]
    environment = {**os.environ, "NN_CUDA_OFFLINE": "1"}
    started = [] if arguments[0].endswith(".py") else ["-m"]
    result = subprocess.run([sys.executable, *started, *arguments], capture_output=True, text=True, cwd=tmp_path,
                            env=environment, timeout=300)
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1, result.stderr
    assert re.search(r"GPU", errors[0]), errors[0]
