"""Every kernels/*.cu file compiles with nvcc for sm_80 and sm_90, with no register spills.

The files hold templates only; nn_cuda.kernel_info compiles each one through a generated
translation unit that instantiates every kernel CuPy will ask for, and parses `ptxas -v`.
Skipped, with a reason, where nvcc is not installed.
"""

import pytest

from nn_cuda import kernel_info

ARCHS = ("sm_80", "sm_90")
KERNEL_FILES = [path.name for path in kernel_info.kernel_files()]

needs_nvcc = pytest.mark.skipif(
    kernel_info.find_nvcc() is None, reason="nvcc not found (no CUDA toolkit on PATH or in CUDA_HOME)"
)

_reports = {}


def _report(filename, arch):
    """Compile once per (file, arch) for the whole module (each compilation takes seconds)."""
    key = (filename, arch)
    if key not in _reports:
        _reports[key] = kernel_info.compile_report(filename, arch)
    return _reports[key]


def test_every_kernel_file_has_an_instance_list():
    expected = {*kernel_info.GEMM_KERNEL_FILES.values(), kernel_info.NN_OPS_FILE}
    assert set(KERNEL_FILES) == expected
    for filename in KERNEL_FILES:
        names = kernel_info.name_expressions(filename)
        assert len(names) == len(set(names)) > 0


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_kernel_file_compiles_without_spills(filename, arch):
    report = _report(filename, arch)
    assert report.ok, f"{filename} does not compile for {arch}: {report.reason}\n{report.log}"

    # ptxas reported every instance CuPy will ask for, and nothing went to local memory.
    expected = set(kernel_info.name_expressions(filename))
    entries = {name: info for name, info in report.kernels.items() if info["registers"] is not None}
    assert len(entries) == len(expected), report.log
    if any("<" in name for name in entries):  # demangled (c++filt present)
        assert set(entries) == expected
    assert report.spills() == {}, f"register spills for {arch}: {report.spills()}"
    for name, info in report.kernels.items():
        assert info["stack_bytes"] == 0, f"{name} uses a {info['stack_bytes']}-byte stack frame on {arch}"
        if info["registers"] is not None:
            assert 0 < info["registers"] <= 255


@needs_nvcc
def test_regblock_keeps_its_row_of_c_in_registers():
    # c[16] must live in registers: at least 16 (float) / 32 (double) of them hold it alone.
    report = _report(kernel_info.GEMM_KERNEL_FILES["regblock"], "sm_80")
    assert report.ok, report.log
    for dtype, at_least in (("float32", 16), ("float64", 32)):
        name = kernel_info.gemm_kernel_name("regblock", dtype, False, False)
        if name in report.kernels:
            assert report.kernels[name]["registers"] >= at_least


@needs_nvcc
def test_tiled_kernel_uses_two_padded_32x32_tiles():
    report = _report(kernel_info.GEMM_KERNEL_FILES["tiled"], "sm_80")
    assert report.ok, report.log
    for dtype, size in (("float32", 4), ("float64", 8)):
        name = kernel_info.gemm_kernel_name("tiled", dtype, True, False)
        if name in report.kernels:
            assert report.kernels[name]["smem_bytes"] == 2 * 32 * 33 * size


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
    kernels = kernel_info.parse_ptxas(SYNTHETIC_PTXAS)
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

    report = kernel_info.CompileReport(file="x.cu", arch="sm_80", ok=True, kernels=kernels)
    assert report.spills() == {"_Z6helperv": (12, 8), "_Z7spillerPd": (40, 24)}


def test_demangled_names_are_the_name_expressions():
    mangled = "_Z10gemm_tiledIfLb0ELb1EEvPKT_S2_PS0_iiiS0_S0_"
    readable = kernel_info.demangle([mangled])[mangled]
    if readable == mangled:
        pytest.skip("no c++filt to demangle with")
    assert readable == kernel_info.gemm_kernel_name("tiled", "float32", False, True)


def test_missing_nvcc_gives_a_clear_result(monkeypatch):
    monkeypatch.setattr(kernel_info, "find_nvcc", lambda: None)
    monkeypatch.setattr(kernel_info, "_REPORTS", {})  # no compilation cached by earlier tests
    report = kernel_info.compile_report("gemm_naive.cu", "sm_80")
    assert not report.ok and "nvcc not found" in report.reason
    assert kernel_info.gemm_registers("naive", "float32", "sm_90") == {}
