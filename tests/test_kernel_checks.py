"""The kernel checks of grading and of the course (nn_cuda.kernel_checks), the launch lines of the kernel
files (nn_cuda.kernel_geometry) and the GEMM ladder's one registry (nn_cuda.kernel_info.GEMM_LADDER).

The planted bugs are those students write and the course's mode 4 lets pass (its sizes are
multiples of 32 and its beta is 5): each must fail here, on the CPU runner in its checking mode,
with the case and the right hint.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nn_cuda import kernel_checks, kernel_geometry, kernel_info, kernel_launch
from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend
from test_cuda_cpu import edited_kernels as edited_copy  # a copy of kernels/ with one edit (not a test)

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
#: small sizes that are multiples of no tile, and one with full tiles and a partial edge
SMALL_SIZES = ((1, 1, 1), (17, 31, 33), (40, 70, 45))


# ---- launch lines ---------------------------------------------------------------------------------


def test_a_launch_line_is_read_with_the_files_constants():
    source = """
constexpr int TILE = 16;
constexpr int ROWS = TILE / 2;  // a comment
// launch: block (TILE, ROWS), C tile (ROWS * 2, TILE + 16)
template <typename T>
__global__ void __launch_bounds__(TILE * ROWS)
my_gemm(const T* A) {}
// launch: block (256)
__global__ void flat(float* x) {}
"""
    geometries = kernel_geometry.parse(source)
    assert geometries["my_gemm"] == kernel_geometry.Geometry((16, 8, 1), (16, 32))
    assert geometries["flat"] == kernel_geometry.Geometry((256, 1, 1), None)


@pytest.mark.parametrize("line, message", [
    ("// launch: block (TILE, UNKNOWN)", "cannot evaluate 'UNKNOWN'"),
    ("// launch: threads (32)", "a launch line reads"),
    ("// launch: block (32, 0)", "must be positive"),
    ("// launch: block (32), C tile (1, 2, 3)", r"the C tile is \(rows, columns\)"),
])
def test_a_wrong_launch_line_is_named(line, message):
    with pytest.raises(kernel_geometry.GeometryError, match=message) as raised:
        kernel_geometry.parse(f"constexpr int TILE = 32;\n{line}\n__global__ void k() {{}}\n", "k.cu")
    assert "k.cu:2" in str(raised.value)


def test_a_kernel_without_a_launch_line_is_named(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "gemm2_tiled.cu", "// launch: block (TILE, TILE), C tile (TILE, TILE)\n", "")
    with pytest.raises(kernel_geometry.GeometryError, match="declares no launch geometry for gemm_tiled"):
        kernel_launch.gemm_grid("tiled", 64, 64)


def test_the_projects_geometry_and_its_numba_mirrors_agree():
    from nn_cuda.backends.numba_kernels import gemm_regblock, gemm_tiled

    assert [kernel_launch.gemm_tile(algo) for algo in kernel_info.KERNEL_GEMMS] == [(8, 32), (32, 32), (16, 64)]
    assert kernel_launch.block_of("gemm_tiled") == (gemm_tiled.TILE, gemm_tiled.TILE, 1)
    assert kernel_launch.gemm_tile("tiled") == (gemm_tiled.TILE, gemm_tiled.TILE)
    assert kernel_launch.block_of("gemm_regblock") == (gemm_regblock.BLOCK_X, gemm_regblock.BLOCK_Y, 1)
    assert kernel_launch.gemm_tile("regblock") == (gemm_regblock.TILE_M, gemm_regblock.TILE_N)
    assert kernel_launch.block_of("col_sum") == (32, 32, 1)


def test_every_list_of_gemms_derives_from_the_ladder():
    from nn_cuda.backends.numba_backend import NumbaBackend

    ladder = kernel_info.KERNEL_GEMMS
    assert ladder == ("naive", "tiled", "regblock")
    assert CudaCpuBackend.gemm_algos == ladder and NumbaBackend.gemm_algos == ladder
    # no module spells the ladder out again (the CuPy backend, not importable without CuPy, included)
    for path in (ROOT / "nn_cuda").rglob("*.py"):
        text = path.read_text().replace(" ", "")
        assert '"naive","tiled"' not in text and '"tiled","regblock"' not in text, path
    assert [gemm.file for gemm in kernel_info.GEMM_LADDER] == sorted(p.name for p in KERNELS.glob("gemm*.cu"))
    assert all(kernel_launch.SIGNATURES[gemm.template] for gemm in kernel_info.GEMM_LADDER)


# ---- the checks catch the bugs mode 4 misses -----------------------------------------------------


def test_the_reference_kernels_pass_every_small_case():
    backend = CudaCpuBackend(check=True)
    for algo in kernel_info.KERNEL_GEMMS:
        results = kernel_checks.check_gemm(backend, algo, sizes=SMALL_SIZES)
        assert len(results) == 3 * 2 * 2 * 4 and all(r.passed for r in results), [r.line() for r in results]
        # measured: at most 6e-7 (float32) and 1e-15 (float64) relative error
        assert max(r.error for r in results if r.case.dtype == "float32") < 1e-5
    for op in kernel_info.NN_OPS:
        assert all(r.passed for r in kernel_checks.check_op(backend, op)), op


PLANTED = {  # name: (the edit of gemm2_tiled.cu, what the failure must say)
    "edge read": ("const bool a_inside = row0 + a_r < M && k0 + a_k < K;", "const bool a_inside = row0 + a_r < M;",
                  "past the end of A", "guard every load and store"),
    "store off by one": ("if (i < M && j < N) {", "if (i <= M && j < N) {", "past the end of C",
                         "guard every load and store"),
    "reads C when beta = 0": ("*c = (beta == T(0)) ? alpha * acc : alpha * acc + beta * (*c);",
                              "*c = alpha * acc + beta * (*c);", "beta 0", "must not be read"),
    "missing barrier": ("        __syncthreads();\n    }\n", "    }\n", "depends on the order", "__syncthreads()"),
    "K loop too short": ("for (int k0 = 0; k0 < K; k0 += TILE)", "for (int k0 = 0; k0 + TILE <= K; k0 += TILE)",
                         "elements wrong; the first is C[0, 0]", "loop along K"),
}


@pytest.mark.parametrize("bug", PLANTED)
def test_a_planted_bug_fails_with_its_case_and_hint(bug, tmp_path, monkeypatch):
    old, new, detail, hint = PLANTED[bug]
    edited_copy(tmp_path, monkeypatch, "gemm2_tiled.cu", old, new)
    results = kernel_checks.check_gemm(CudaCpuBackend(check=True), "tiled", stop_at_first_failure=True,
                                       sizes=SMALL_SIZES)
    failure = results[-1]
    assert not failure.passed and all(r.passed for r in results[:-1])
    assert detail in str(failure.case) + failure.detail and hint in failure.hint
    assert failure.line().startswith("FAIL  gemm tiled: ")


def test_an_edge_bug_that_writes_in_bounds_is_found_in_the_last_tile(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "gemm2_tiled.cu", "const bool b_inside = k0 + b_k < K && col0 + b_c < N;",
                "const bool b_inside = k0 + b_k < K && col0 + b_c < N - 1;")
    failure = kernel_checks.check_gemm(CudaCpuBackend(check=True), "tiled", True, sizes=((40, 70, 45),))[-1]
    assert not failure.passed and "only the last, partial tiles of C are wrong" in failure.hint
    assert "the first is C[0, 69]" in failure.detail


def test_an_unwritten_element_of_an_element_wise_kernel_is_named(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "nn_ops.cu", "    const int j = blockIdx.x * COL_SUM_COLS + x;",
                "    const int j = blockIdx.x * COL_SUM_COLS + x + 1;")
    failure = kernel_checks.check_op(CudaCpuBackend(check=True), "col_sum", stop_at_first_failure=True)[-1]
    assert not failure.passed and "of out hold NaN after the launch (first at index (0,))" in failure.detail
    assert "never written" in failure.hint


# ---- grade --kernels -----------------------------------------------------------------------------


def test_grade_kernels_writes_one_row_per_folder(tmp_path, monkeypatch):
    from nn_cuda import grade

    monkeypatch.setattr(kernel_checks, "GEMM_SIZES", SMALL_SIZES[:2])
    good, bad = tmp_path / "alice", tmp_path / "bob"
    shutil.copytree(KERNELS, good)
    shutil.copytree(KERNELS, bad)
    source = (bad / "gemm1_naive.cu").read_text()
    (bad / "gemm1_naive.cu").write_text(source.replace("if (i >= M || j >= N) {", "if (i >= M) {"))
    code = grade.main(["--kernels", str(good), str(bad), "--outputs", str(tmp_path / "out")])
    assert code == 1
    lines = (tmp_path / "out" / "kernels.csv").read_text().splitlines()
    assert lines[0].startswith("folder,gemm naive,gemm tiled,gemm regblock,bias_sigmoid")
    assert lines[1].startswith("alice,PASS 32/32,PASS 32/32,PASS 32/32,PASS 8/8")
    assert lines[2].startswith("bob,FAIL 0/32,PASS 32/32,") and "an invalid memory access" in lines[2]
    markdown = (tmp_path / "out" / "kernels.md").read_text().splitlines()
    assert markdown[1].startswith("| --- |") and markdown[3].startswith("| bob | FAIL ")


# ---- a copy with another tile size; a GEMM added with one file and one line ----------------------


def test_a_copy_with_tile_16_trains_and_grades(tmp_path, monkeypatch):
    copy = edited_copy(tmp_path, monkeypatch, "gemm2_tiled.cu", "constexpr int TILE = 32;", "constexpr int TILE = 16;")
    assert kernel_launch.gemm_grid("tiled", 40, 70) == (5, 3, 1)  # 16 x 16 tiles of C
    results = kernel_checks.check_gemm(CudaCpuBackend(check=True), "tiled", sizes=SMALL_SIZES)
    assert all(r.passed for r in results), [r.line() for r in results if not r.passed]
    trained = subprocess.run(
        [sys.executable, "-m", "nn_cuda.train", "--backend", "cuda-cpu", "--gemm", "tiled", "--dataset",
         "mnist-sample", "-n", "8", "-b", "32", "--max-steps", "3", "--eval-limit", "20"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "NN_CUDA_CPU_CHECK": "1"})
    assert trained.returncode == 0, trained.stderr
    assert f"kernels: {copy} (NN_CUDA_KERNEL_DIR)" in trained.stdout and "gemm=tiled" in trained.stdout


def test_a_gemm_is_added_with_one_file_and_one_line(tmp_path):
    """A copy of the project where the ladder gets a fourth rung: gemm4_tiled16.cu (the tiled kernel
    renamed, TILE 16) and its line in GEMM_LADDER; it trains and is graded, nothing else edited."""
    project = tmp_path / "project"
    for folder in ("nn_cuda", "kernels", "data"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = (KERNELS / "gemm2_tiled.cu").read_text().replace("constexpr int TILE = 32;", "constexpr int TILE = 16;")
    (project / "kernels" / "gemm4_tiled16.cu").write_text(source.replace("gemm_tiled(", "gemm_tiled16("))
    info = (project / "nn_cuda" / "kernel_info.py").read_text()
    last = '    GemmKernel("regblock", "gemm3_regblock.cu",'
    assert info.count(last) == 1
    info = info.replace(last, '    GemmKernel("tiled16", "gemm4_tiled16.cu", "16 x 16 tiles"),\n' + last)
    (project / "nn_cuda" / "kernel_info.py").write_text(info)
    env = {key: value for key, value in os.environ.items() if key != "NN_CUDA_KERNEL_DIR"}
    env.update(PYTHONPATH=str(project), NN_CUDA_CPU_CHECK="1")
    trained = subprocess.run(
        [sys.executable, "-m", "nn_cuda.train", "--backend", "cuda-cpu", "--gemm", "tiled16", "--dataset",
         "mnist-sample", "-n", "8", "-b", "32", "--max-steps", "2", "--eval-limit", "20"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert trained.returncode == 0, trained.stderr
    assert f"kernels: {project / 'kernels'} (the project's)" in trained.stdout and "gemm=tiled16" in trained.stdout
    checked = subprocess.run(
        [sys.executable, "-c", "from nn_cuda import kernel_checks as k; from nn_cuda.kernel_grading import "
         "make_backend; r = k.check_gemm(make_backend('cuda-cpu'), 'tiled16', sizes=((17, 31, 33),)); "
         "print(sum(x.passed for x in r), len(r))"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert checked.stdout.split() == ["16", "16"], checked.stderr
