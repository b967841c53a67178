"""Every kernels/*.cu file compiles as CuPy compiles it, with NVIDIA's compilers from pip, no GPU.

NVRTC (nvidia-cuda-nvrtc) compiles each file with every template instance CuPy will ask for, for
compute_75, compute_80 and compute_90, and must say nothing: an error or a warning fails. ptxas
(nvidia-cuda-nvcc) then assembles the PTX for sm_80 and sm_90: no spills, no stack, and every
instance's launch block (its `// launch:` line, nn_cuda.kernel_launch.block_of) within the
per-block limits. Both wheels are in the `dev` extra, so nothing here is skipped.
"""

import json
import math
import re
import shutil
import subprocess
import sys

import pytest

from nn_cuda import kernel_info, kernel_launch, kernel_resources, nvrtc

KERNEL_FILES = [path.name for path in kernel_info.kernel_files()]

_compiled = {}
_reports = {}


def _ptx(filename, compute):
    """NVRTC once per (file, arch) for the whole module."""
    key = (filename, compute)
    if key not in _compiled:
        try:
            _compiled[key] = kernel_resources.compile_ptx(filename, compute)
        except nvrtc.CompileError as error:
            pytest.fail(str(error))
    return _compiled[key]


def _report(filename, arch):
    """NVRTC and ptxas once per (file, arch) for the whole module."""
    key = (filename, arch)
    if key not in _reports:
        _reports[key] = kernel_resources.compile_report(filename, arch)
    report = _reports[key]
    assert report.ok, f"{filename} does not compile for {arch}: {report.reason}\n{report.log}"
    return report


def _threads(name_expression):
    return math.prod(kernel_launch.block_of(kernel_launch.template_of(name_expression)))


def test_every_kernel_file_has_an_instance_list():
    expected = {*kernel_info.GEMM_KERNEL_FILES.values(), kernel_info.NN_OPS_FILE}
    assert set(KERNEL_FILES) == expected
    for filename in KERNEL_FILES:
        names = kernel_info.name_expressions(filename)
        assert len(names) == len(set(names)) > 0


def test_the_options_are_cupys():
    options = kernel_info.compile_options()
    assert options == ("-std=c++17", f"-I{kernel_info.kernel_dir()}")
    added = kernel_resources.cupy_added_options("compute_80", (13, 0))
    assert added == ("-ftz=true", "-arch=compute_80", "--device-as-default-execution-space")
    assert "--device-as-default-execution-space" not in kernel_resources.cupy_added_options("compute_80", (11, 8))


# ---- NVRTC -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("compute", kernel_resources.NVRTC_ARCHS)
@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_nvrtc_compiles_every_instance_without_a_warning(filename, compute):
    compiled = _ptx(filename, compute)
    assert not re.search(r"warning|error", compiled.log, re.IGNORECASE), (
        f"NVRTC's log for {filename} ({compute}):\n{compiled.log}"
    )
    assert f".target sm_{compute[len('compute_'):]}" in compiled.ptx
    names = kernel_info.name_expressions(filename)
    assert set(compiled.lowered_names) == set(names)
    for name, mangled in compiled.lowered_names.items():
        assert mangled.startswith("_Z"), (name, mangled)
        assert f".entry {mangled}(" in compiled.ptx, f"{name} ({mangled}) is not an entry of the PTX"


# ---- ptxas -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", kernel_resources.PTXAS_ARCHS)
@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_ptxas_reports_every_instance_without_spills(filename, arch):
    report = _report(filename, arch)
    assert "warning" not in report.log.lower(), report.log

    # ptxas reported every instance CuPy will ask for, by its name expression, and nothing went to
    # local memory.
    entries = {name for name, info in report.kernels.items() if info["registers"] is not None}
    assert entries == set(kernel_info.name_expressions(filename)), report.log
    assert report.spills() == {}, f"register spills for {arch}: {report.spills()}"
    for name, info in report.kernels.items():
        assert info["stack_bytes"] == 0, f"{name} uses a {info['stack_bytes']}-byte stack frame on {arch}"
        if info["registers"] is not None:
            assert 0 < info["registers"] <= 255


@pytest.mark.parametrize("arch", kernel_resources.PTXAS_ARCHS)
@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_every_launch_block_fits_the_per_block_limits(filename, arch):
    report = _report(filename, arch)
    for name in kernel_info.name_expressions(filename):
        info, threads = report.kernels[name], _threads(name)
        assert threads <= 1024, name
        assert threads * info["registers"] <= 65536, f"{name}: {threads} threads x {info['registers']} registers"
        assert info["smem_bytes"] <= 48 * 1024, f"{name}: {info['smem_bytes']} bytes of static shared memory"


def test_regblock_keeps_its_row_of_c_in_registers():
    # c[16] must live in registers: at least 16 (float) / 32 (double) of them hold it alone.
    report = _report(kernel_info.GEMM_KERNEL_FILES["regblock"], "sm_80")
    for dtype, at_least in (("float32", 16), ("float64", 32)):
        name = kernel_info.gemm_kernel_name("regblock", dtype, False, False)
        assert report.kernels[name]["registers"] >= at_least


def test_tiled_kernel_uses_two_padded_32x33_tiles():
    report = _report(kernel_info.GEMM_KERNEL_FILES["tiled"], "sm_80")
    for dtype, size in (("float32", 4), ("float64", 8)):
        name = kernel_info.gemm_kernel_name("tiled", dtype, True, False)
        assert report.kernels[name]["smem_bytes"] == 2 * 32 * 33 * size


def test_gemm_registers_lists_the_four_transposes():
    registers = kernel_resources.gemm_registers("tiled", "float32", "sm_90")
    assert set(registers) == {kernel_info.gemm_kernel_name("tiled", "float32", a, b)
                              for a in (False, True) for b in (False, True)}
    assert all(0 < count <= 255 for count in registers.values())
    assert kernel_resources.gemm_registers("cublas", "float32", "sm_90") == {}


SYNTHETIC_PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5cleanPf' for 'sm_80'
ptxas info    : Function properties for _Z5cleanPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 8448 bytes smem, 368 bytes cmem[0]
ptxas info    : Function properties for _Z6helperv
    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function '_Z7spillerPd' for 'sm_80'
ptxas info    : Function properties for _Z7spillerPd
    40 bytes stack frame, 40 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 255 registers, 40 bytes cumulative stack size, 368 bytes cmem[0]
"""


def test_ptxas_parser_finds_registers_shared_memory_and_spills():
    kernels = kernel_resources.parse_ptxas(SYNTHETIC_PTXAS)
    assert kernels["_Z5cleanPf"] == {
        "registers": 32, "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0, "smem_bytes": 8448,
        "arch": "sm_80",
    }
    assert kernels["_Z7spillerPd"]["registers"] == 255
    assert (kernels["_Z7spillerPd"]["spill_stores"], kernels["_Z7spillerPd"]["spill_loads"]) == (40, 24)
    assert kernels["_Z7spillerPd"]["smem_bytes"] == 0
    # a device function that was not inlined: no registers of its own, but its spills count
    assert kernels["_Z6helperv"]["registers"] is None
    assert kernels["_Z6helperv"]["spill_stores"] == 12

    report = kernel_resources.CompileReport(file="x.cu", arch="sm_80", ok=True, kernels=kernels)
    assert report.spills() == {"_Z6helperv": (12, 8), "_Z7spillerPd": (40, 24)}


# ---- occupancy, by hand ----------------------------------------------------------------------------


def test_occupancy_follows_the_allocation_rules():
    sm_80, sm_90 = kernel_resources.SM_LIMITS["sm_80"], kernel_resources.SM_LIMITS["sm_90"]
    # 1024 threads: 32 warps, two blocks fill the SM's 64 warps.
    tiled = kernel_resources.occupancy(1024, 32, 8448, sm_80)
    assert (tiled.blocks_per_sm, tiled.warps_per_sm, tiled.fraction) == (2, 64, 1.0)
    # 56 registers: 1792 per warp (a multiple of 256); a quadrant's 16384 hold 9 warps, the SM 36,
    # so 18 blocks of 2 warps (fewer than the 32-block limit).
    regblock = kernel_resources.occupancy(64, 56, 256, sm_90)
    assert (regblock.blocks_per_sm, regblock.warps_per_sm, regblock.limited_by) == (18, 36, ("registers",))
    # 33 registers round up to 1280 per warp: 12 warps per quadrant, 48 per SM, 6 blocks of 8 warps.
    assert kernel_resources.occupancy(256, 33, 0, sm_80).blocks_per_sm == 6
    # 40 KiB + the driver's 1 KiB per block: 4 blocks in 164 KiB, 5 in 228 KiB.
    assert kernel_resources.occupancy(128, 16, 40 * 1024, sm_80).limited_by == ("shared memory",)
    assert kernel_resources.occupancy(128, 16, 40 * 1024, sm_80).blocks_per_sm == 4
    assert kernel_resources.occupancy(128, 16, 40 * 1024, sm_90).blocks_per_sm == 5
    # tiny blocks: the 32-block limit
    assert kernel_resources.occupancy(32, 16, 0, sm_80).limited_by == ("blocks",)
    # a block that cannot launch at all: 1024 threads x 72 registers > 65536
    assert kernel_resources.occupancy(1024, 72, 0, sm_80).blocks_per_sm == 0
    assert kernel_resources.block_limit_violations(1024, 72, 0, sm_80)
    assert kernel_resources.block_limit_violations(64, 56, 49 * 1024, sm_80)


# ---- an edited kernel directory, and the command ---------------------------------------------------


@pytest.fixture
def broken_kernel_dir(tmp_path, monkeypatch):
    """A copy of kernels/ whose gemm2_tiled.cu has a syntax error, chosen by NN_CUDA_KERNEL_DIR."""
    copy = tmp_path / "kernels"
    shutil.copytree(kernel_info.kernel_dir(), copy)
    tiled = copy / "gemm2_tiled.cu"
    tiled.write_text(tiled.read_text() + "\nthis is not C++;\n")
    monkeypatch.setenv(kernel_info.KERNEL_DIR_VARIABLE, str(copy))
    return copy


def test_an_edited_kernel_dir_is_compiled_and_its_error_named(broken_kernel_dir):
    assert kernel_info.kernel_dir() == broken_kernel_dir.resolve()
    assert f"-I{broken_kernel_dir.resolve()}" in kernel_info.compile_options()
    with pytest.raises(nvrtc.CompileError, match=r"gemm2_tiled\.cu") as failure:
        kernel_resources.compile_ptx("gemm2_tiled.cu", "compute_80")
    assert "gemm2_tiled.cu(" in failure.value.log and "error" in failure.value.log
    report = kernel_resources.compile_report("gemm2_tiled.cu", "sm_90")
    assert not report.ok and "gemm2_tiled.cu" in report.reason and "error" in report.log
    assert kernel_resources.gemm_registers("tiled", "float32", "sm_90") == {}
    # the other files of the copy still compile, common.cuh found on its include path
    assert kernel_resources.compile_report("gemm1_naive.cu", "sm_80").ok


def test_registers_follow_an_edit_of_the_kernel_file_within_one_process(tmp_path, monkeypatch):
    # kept per process, but under the code compiled: a file edited after a first report is compiled again
    copy = tmp_path / "kernels"
    shutil.copytree(kernel_info.kernel_dir(), copy)
    monkeypatch.setenv(kernel_info.KERNEL_DIR_VARIABLE, str(copy))
    assert len(kernel_resources.gemm_registers("tiled", "float32", "sm_90")) == 4
    tiled = copy / "gemm2_tiled.cu"
    tiled.write_text(tiled.read_text() + "\nthis is not C++;\n")
    assert kernel_resources.gemm_registers("tiled", "float32", "sm_90") == {}


def test_the_command_fails_on_an_edited_kernel_dir_naming_the_file(broken_kernel_dir):
    job = subprocess.run([sys.executable, "-m", "nn_cuda.kernel_resources"], capture_output=True, text=True)
    assert job.returncode == 1
    assert "gemm2_tiled.cu" in job.stderr and "error" in job.stderr


def test_kernel_dir_variable_must_name_a_directory_of_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv(kernel_info.KERNEL_DIR_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="NN_CUDA_KERNEL_DIR=.*not a directory"):
        kernel_info.kernel_dir()
    monkeypatch.setenv(kernel_info.KERNEL_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no .cu files"):
        kernel_info.kernel_files()


def test_missing_compilers_give_a_clear_result(monkeypatch):
    monkeypatch.setattr(nvrtc, "release_folders", lambda: [])
    monkeypatch.setattr(kernel_resources, "_REPORTS", {})  # no compilation cached by earlier tests
    nvrtc._library.cache_clear()
    try:
        with pytest.raises(nvrtc.CompilerNotFound, match=re.escape("pip install -e '.[dev]'")):
            nvrtc.find_tool("ptxas")
        report = kernel_resources.compile_report("gemm1_naive.cu", "sm_80")
        assert not report.ok and "pip install -e '.[dev]'" in report.reason
        assert kernel_resources.gemm_registers("naive", "float32", "sm_90") == {}
    finally:
        nvrtc._library.cache_clear()  # the next use loads the real library again


def test_the_command_prints_a_row_per_instance_and_writes_json(tmp_path):
    path = tmp_path / "resources.json"
    job = subprocess.run([sys.executable, "-m", "nn_cuda.kernel_resources", "--json", str(path)],
                         capture_output=True, text=True)
    assert job.returncode == 0, job.stderr
    lines = job.stdout.splitlines()
    expected = [(name, arch) for filename in KERNEL_FILES for name in kernel_info.name_expressions(filename)
                for arch in kernel_resources.PTXAS_ARCHS]
    # the report's own table: a row per instance, a column of occupancy per architecture
    header = next(line for line in lines if line.startswith("| kernel |"))
    assert all(f"{arch}: blocks, warps/SM" in header for arch in kernel_resources.PTXAS_ARCHS), header
    for name, _ in expected:
        assert sum(line.startswith(f"| `{name}` |") for line in lines) == 1, name
    data = json.loads(path.read_text())
    assert data["benchmark"] == "resources" and data["machine"]["command"].startswith("python -m nn_cuda.kernel_resources")
    assert [(row["kernel"], row["arch"]) for row in data["results"]] == expected
    tiled = next(row for row in data["results"] if row["kernel"].startswith("gemm_tiled<float"))
    assert tiled["threads"] == 1024 and tiled["blocks_per_sm"] == 2 and tiled["smem_bytes"] == 8448
    assert not list(tmp_path.glob(".*"))  # no temporary file left beside it
