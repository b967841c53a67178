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
import time
from pathlib import Path

import pytest

from nn_cuda import kernel_checks, kernel_geometry, kernel_grading, kernel_info, kernel_launch
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


def test_a_renamed_kernel_is_named_as_missing_not_its_launch_line(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "gemm1_naive.cu", "gemm_naive(", "gemm_naiv(")
    with pytest.raises(kernel_geometry.GeometryError, match=r"gemm1_naive.cu has no __global__ kernel named "
                                                            r"gemm_naive \(it has gemm_naiv\)"):
        kernel_launch.gemm_grid("naive", 64, 64)


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
    "first barrier missing": (": T(0);\n        __syncthreads();\n", ": T(0);\n", "gemm tiled",
                              "a __syncthreads() goes between the stores of a tile and its first reads"),
    # every element wrong, as with a short K loop; the product without transposes passed before it
    "transpose ignored": ("op_element<T, TRANS_A>(A,", "op_element<T, false>(A,", "TN",
                          "with TN, A is stored K x M"),
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


def test_a_loop_that_never_ends_is_stopped_with_its_hint(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "gemm1_naive.cu", "for (int k = 0; k < K; ++k) {", "for (int k = 0; k < K;) {")
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1")
    failure = kernel_checks.check_gemm(CudaCpuBackend(check=False), "naive", True, sizes=((1, 1, 1),))[-1]
    assert not failure.passed and "still running after 1 s" in failure.detail
    assert "a loop whose index never reaches its bound" in failure.hint


def test_an_edge_bug_that_writes_in_bounds_is_found_in_the_last_tile(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "gemm2_tiled.cu", "const bool b_inside = k0 + b_k < K && col0 + b_c < N;",
                "const bool b_inside = k0 + b_k < K && col0 + b_c < N - 1;")
    failure = kernel_checks.check_gemm(CudaCpuBackend(check=True), "tiled", True, sizes=((40, 70, 45),))[-1]
    assert not failure.passed and "only the last, partial tiles of C are wrong" in failure.hint
    assert "the first is C[0, 69]" in failure.detail


@pytest.mark.parametrize("op, old, new", [
    ("bias_softmax", "exp_of(z[j] + b[j] - row_max)", "exp_of(z[j] + b[j])"),  # no maximum subtracted
    ("bias_sigmoid", "out[ij] = stable_sigmoid(", "out[ij] = sigmoid_of_exp("),  # exp(z) / (1 + exp(z))
])
def test_an_element_wise_kernel_that_overflows_on_large_scores_fails(tmp_path, monkeypatch, op, old, new):
    sigmoid_of_exp = ("template <typename T>\n__device__ T sigmoid_of_exp(T z) { const T e = exp_of(z); "
                      "return e / (T(1) + e); }\n")
    folder = edited_copy(tmp_path, monkeypatch, "nn_ops.cu", old, new)
    source = (folder / "nn_ops.cu").read_text()
    (folder / "nn_ops.cu").write_text(source.replace("// The logistic function", sigmoid_of_exp + "// The logistic function"))
    results = kernel_checks.check_op(CudaCpuBackend(check=False), op, stop_at_first_failure=True)
    assert not results[-1].passed and results[-1].case.dtype == "float32", [r.line() for r in results]


def test_a_wrong_value_of_an_element_wise_kernel_is_named_by_its_index_with_a_hint(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "nn_ops.cu", "        out[j] = total;", "        out[j] = 2 * total;")
    failure = kernel_checks.check_op(CudaCpuBackend(check=False), "col_sum", stop_at_first_failure=True)[-1]
    assert not failure.passed and "1 of 1 elements wrong; the first is out[0] = " in failure.detail  # a vector
    assert "every element was written, 1 with a wrong value" in failure.hint


def test_an_unwritten_element_of_an_element_wise_kernel_is_named(tmp_path, monkeypatch):
    edited_copy(tmp_path, monkeypatch, "nn_ops.cu", "    const int j = blockIdx.x * COL_SUM_COLS + x;",
                "    const int j = blockIdx.x * COL_SUM_COLS + x + 1;")
    failure = kernel_checks.check_op(CudaCpuBackend(check=True), "col_sum", stop_at_first_failure=True)[-1]
    assert not failure.passed and "of out hold NaN after the launch (first at index (0,))" in failure.detail
    assert "never written" in failure.hint


@pytest.mark.parametrize("error, hint", [
    ("cudaErrorIllegalAddress: an illegal memory access was encountered", "an access past the end of an array"),
    ("cudaErrorAssert: device-side assert triggered", "a device assert() failed"),
    ("cudaErrorLaunchFailure: unspecified launch failure", "__trap() ran"),
])
def test_a_cuda_error_gets_a_hint_that_names_the_cpu_runner(error, hint):
    class FaultingGpu:  # a launch that ended in a CUDA error, in CuPy's words (as an H100 gave them)
        def to_device(self, array):
            return array

        def col_sum(self, *args):
            raise RuntimeError(error)

    [result] = kernel_checks.check_op(FaultingGpu(), "col_sum")  # one: every later case would repeat it
    assert not result.passed and result.repeats and error in result.detail
    assert hint in result.hint and "run the same check with --backend cuda-cpu" in result.hint


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


def test_grade_kernels_stops_a_kernel_at_a_failure_every_case_would_repeat(tmp_path, monkeypatch, capfd):
    # a kernel that spins is stopped by the watchdog once, not once a case; one that does not compile
    # is compiled once, and its cell is one line; the tables are there after each folder
    from nn_cuda import grade

    monkeypatch.setattr(kernel_checks, "GEMM_SIZES", SMALL_SIZES[:2])
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "1")
    spins, broken = tmp_path / "dave", tmp_path / "carol"
    for folder in (spins, broken):
        shutil.copytree(KERNELS, folder)
    naive = (spins / "gemm1_naive.cu").read_text()
    (spins / "gemm1_naive.cu").write_text(naive.replace("for (int k = 0; k < K; ++k) {", "for (int k = 0; k < K;) {"))
    tiled = (broken / "gemm2_tiled.cu").read_text()
    (broken / "gemm2_tiled.cu").write_text(tiled.replace("T acc = T(0);", "T acc = T(0)"))
    written = []
    monkeypatch.setattr(grade, "write_tables", lambda grades, out: written.append(len(grades)) or (out, out))
    started = time.monotonic()
    assert grade.main(["--kernels", str(spins), str(broken), "--outputs", str(tmp_path / "out")]) == 1
    assert time.monotonic() - started < 120 and written == [1, 2]
    out, err = capfd.readouterr()
    assert "dave: gemm naive: FAIL 0/32: gemm naive: 1 x 1 x 1 NN" in out and "still running after 1 s" in out
    assert "(the 31 later cases were not run: each would end the same way)" in out
    cell = next(line for line in out.splitlines() if line.startswith("carol: gemm tiled: "))
    assert cell.startswith("carol: gemm tiled: FAIL 0/32: ") and " ... " in cell and "error" in cell.split(" ... ")[1]
    assert err.count("gemm2_tiled.cu for the CPU") <= 2  # compiled once (the checking build), not once a case


def test_grade_kernels_names_a_workspace_without_its_mpi_step_missing(tmp_path, capsys, monkeypatch):
    from nn_cuda import grade

    monkeypatch.setattr(kernel_checks, "GEMM_SIZES", SMALL_SIZES[:1])
    shutil.copytree(KERNELS, tmp_path / "alice" / "kernels")  # a class collected as NAME/kernels
    assert grade.main(["--kernels", str(tmp_path / "alice"), "--outputs", str(tmp_path / "out")]) == 1
    rows = (tmp_path / "out" / "kernels.csv").read_text().splitlines()
    assert rows[1].startswith("alice,PASS 16/16,") and ",MISSING,MISSING," in rows[1]
    assert "mpi_rows: " + str(tmp_path / "alice" / "data_parallel.py") + " is missing" in rows[1]
    assert "Traceback" not in capsys.readouterr().err
    # one folder named kernels is labelled with its parent's name
    assert kernel_grading.labels([tmp_path / "alice" / "kernels"]) == ["alice/kernels"]


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
        [sys.executable, "-c", "from nn_cuda import kernel_checks as k; from nn_cuda.kernel_check_runs import "
         "make_backend; r = k.check_gemm(make_backend('cuda-cpu'), 'tiled16', sizes=((17, 31, 33),)); "
         "print(sum(x.passed for x in r), len(r))"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert checked.stdout.split() == ["16", "16"], checked.stderr
