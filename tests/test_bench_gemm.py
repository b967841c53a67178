"""`python -m nn_cuda.bench gemm` on the CPU: the correctness half of the GEMM benchmark.

- the Numba kernels on Numba's simulator (tiny sizes) and NumPy in float64 pass, with one record per
  algorithm, size and transpose case, the tolerance (K + 3) (u + u_64), and no timings without a GPU;
- the benchmark catches wrong GEMMs (the point of it): a backend that leaves an element of C
  unwritten (caught through the NaN that C holds before the beta = 0 call), one whose result is off
  by 10 tolerances, one that adds a stray term; a correct backend, and one off by a quarter of the
  tolerance, pass;
- the relative inf-norm error on a case computed by hand, and NaN in, NaN out;
- command-line errors (argparse's exit status 2) and the parsing of --sizes.

Timing (CUDA events, % of cuBLAS) needs a GPU and is not tested here.
"""

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from nn_cuda.backends.numpy_backend import NumpyBackend
from nn_cuda.bench import gemm
from nn_cuda.relative_errors import relative_error


def records_of(path):
    data = json.loads(path.read_text())
    return data, data["results"]


def test_a_record_of_other_kernels_says_so_in_its_command_and_output(tmp_path, monkeypatch, capsys):
    # a copy of kernels/ with a wrong naive GEMM, timed through NN_CUDA_KERNEL_DIR: the record read
    # `python -m nn_cuda.bench gemm --backend cuda-cpu ...`, the project's kernels failing
    import shutil

    copy = tmp_path / "mykernels"
    shutil.copytree(Path(__file__).resolve().parent.parent / "kernels", copy)
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(copy))
    monkeypatch.setattr(sys, "argv", ["nn_cuda.bench", "gemm", "--backend", "cuda-cpu"])
    out = tmp_path / "gemm.json"
    assert gemm.main(["--backend", "cuda-cpu", "--algo", "naive", "--sizes", "9x5x3", "--trans", "NN",
                      "--json", str(out)]) == 0
    data, (record,) = records_of(out)
    assert data["machine"]["command"].startswith(f"NN_CUDA_KERNEL_DIR={copy} python")
    # the emulated call against NumPy's median of --repeat calls (one NumPy call swung 100-fold)
    assert record["emulated_calls"] == 1 and record["numpy_calls"] == data["config"]["repeat"] == 20
    assert f"kernels: {copy} (NN_CUDA_KERNEL_DIR)" in capsys.readouterr().out


def test_simulated_numba_kernels_pass_without_timing(tmp_path, capsys):
    numba_config = pytest.importorskip("numba").config
    if not numba_config.ENABLE_CUDASIM:
        pytest.skip("backend numba-sim needs NUMBA_ENABLE_CUDASIM=1 before Numba is imported")
    from nn_cuda.backends.numba_backend import NumbaBackend

    out = tmp_path / "gemm.json"
    sizes, trans = [(5, 3, 7), (1, 1, 1)], ["NN", "TT"]
    # Each simulated thread is a Python thread (1,024 per block of the tiled kernel): tiny sizes.
    assert gemm.main(["--backend", "numba-sim", "--sizes", "5x3x7,1x1x1", "--trans", "NN,TT",
                      "--json", str(out)]) == 0
    data, records = records_of(out)
    assert data["benchmark"] == "gemm" and data["backend"] == "numba-sim"
    assert data["timed"] is False
    assert NumbaBackend.gemm_algos == ("naive", "tiled", "regblock")
    cases = [(r["algo"], (r["M"], r["N"], r["K"]), r["trans"]) for r in records]
    expected = {(a, s, t) for a in NumbaBackend.gemm_algos for s in sizes for t in trans}
    assert len(cases) == len(expected) == 12 and set(cases) == expected
    for r in records:
        assert r["dtype"] == "float32"
        assert r["tolerance"] == (r["K"] + 3) * (2.0**-24 + 2.0**-53)  # (K + 3) (u + u_64)
        assert r["passed"] is True and 0 <= r["rel_err"] <= r["tolerance"], r
        assert not {"time_ms", "time_ms_min", "gflops", "percent_of_cublas"} & set(r), r
    printed = capsys.readouterr()
    assert "timing needs a GPU" in printed.out
    assert "FAIL" not in printed.out + printed.err


def test_numpy_float64_passes_every_transpose_case(tmp_path):
    out = tmp_path / "gemm.json"
    assert gemm.main(["--backend", "numpy", "--dtype", "float64", "--sizes", "17x33x65",
                      "--trans", "NN,NT,TN,TT", "--json", str(out)]) == 0
    data, records = records_of(out)
    assert data["timed"] is False
    assert [r["trans"] for r in records] == ["NN", "NT", "TN", "TT"]
    for r in records:
        assert (r["algo"], r["dtype"], r["M"], r["N"], r["K"]) == ("numpy", "float64", 17, 33, 65)
        assert r["tolerance"] == 68 * 2.0**-52  # u = u_64 = 2^-53, counted twice
        assert r["passed"] is True and 0 <= r["rel_err"] <= r["tolerance"], r


# ---- fault detection: NumPy backends with a wrong GEMM --------------------------------------------


def inner_dimension(A, trans_a):
    return A.shape[0] if trans_a else A.shape[1]


class CountingBackend(NumpyBackend):
    """The correct NumPy GEMM, counting its calls (so a test knows the benchmark used it)."""

    def __init__(self, gemm=None):
        super().__init__(gemm)
        self.calls = 0

    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        self.calls += 1
        super().gemm(A, B, C, alpha, beta, trans_a, trans_b, algo)


class UnwrittenElement(CountingBackend):
    """With beta = 0 it leaves the last element of C as it found it (the mode-4 call is right)."""

    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        kept = C[-1, -1].copy()
        super().gemm(A, B, C, alpha, beta, trans_a, trans_b, algo)
        if beta == 0:
            C[-1, -1] = kept


class ScaledResult(CountingBackend):
    """Multiplies C by (1 + factor * tolerance) after a correct GEMM."""

    factor = 0.0

    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        super().gemm(A, B, C, alpha, beta, trans_a, trans_b, algo)
        K = inner_dimension(A, trans_a)
        C *= 1 + self.factor * (K + 3) * float(np.finfo(C.dtype).eps) / 2


class ExtraTerm(CountingBackend):
    """Adds the k = 0 term twice in the first row of C, as an off-by-one loop over K might."""

    def gemm(self, A, B, C, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, algo=None):
        super().gemm(A, B, C, alpha, beta, trans_a, trans_b, algo)
        a0 = A[0, 0]  # op(A)[0, 0] either way
        b0 = B[:, 0] if trans_b else B[0, :]  # op(B)[0, :]
        C[0, :] += alpha * a0 * b0


def run_with(monkeypatch, tmp_path, backend, dtype="float32"):
    monkeypatch.setattr(gemm, "get_backend", lambda name, gemm=None: backend)
    out = tmp_path / "gemm.json"
    status = gemm.main(["--backend", "numpy", "--dtype", dtype, "--sizes", "4x5x6,7x3x65",
                        "--trans", "NN,TT", "--json", str(out)])
    assert backend.calls == 2 * 2 * 2  # beta = 0 and mode 4, for 2 sizes x 2 transpose cases
    return status, records_of(out)[1]


def test_correct_backend_passes(monkeypatch, tmp_path, capsys):
    status, records = run_with(monkeypatch, tmp_path, CountingBackend())
    assert status == 0
    assert len(records) == 4 and all(r["passed"] and r["rel_err"] <= r["tolerance"] for r in records)
    assert "FAILED" not in capsys.readouterr().err


def test_unwritten_element_is_caught_through_the_nan_poison(monkeypatch, tmp_path, capsys):
    status, records = run_with(monkeypatch, tmp_path, UnwrittenElement())
    assert status == 1
    assert len(records) == 4
    for r in records:
        # The element kept the NaN that C was filled with, so the error is NaN, not merely large.
        assert r["passed"] is False and math.isnan(r["rel_err"]), r
    printed = capsys.readouterr()
    assert "FAILED" in printed.err and "numpy TT 7x3x65" in printed.err
    assert printed.out.count("| **no** |") == 4  # one marked row of the report's table per case


@pytest.mark.parametrize("factor, passes", [(10.0, False), (0.25, True)])
def test_error_is_compared_with_the_tolerance(factor, passes, monkeypatch, tmp_path, capsys):
    """Off by 10 tolerances fails; off by a quarter of one (plus float32 rounding) passes."""
    backend = type("Scaled", (ScaledResult,), {"factor": factor})()
    status, records = run_with(monkeypatch, tmp_path, backend)
    assert status == (0 if passes else 1)
    for r in records:
        assert r["passed"] is passes, r
        # The scaling is the error: rel_err is factor * tolerance, up to float32 rounding.
        assert r["rel_err"] == pytest.approx(factor * r["tolerance"], abs=0.2 * r["tolerance"])
    assert ("FAILED" in capsys.readouterr().err) is not passes


def test_stray_term_is_caught(monkeypatch, tmp_path, capsys):
    status, records = run_with(monkeypatch, tmp_path, ExtraTerm(), dtype="float64")
    assert status == 1
    assert not any(r["passed"] for r in records)
    assert "FAILED" in capsys.readouterr().err


# ---- the error measure and the tolerance --------------------------------------------------------


def test_the_gemm_error_is_the_relative_inf_norm_error():
    reference = np.array([[1.0, -2.0], [3.0, 4.0]])  # largest absolute row sum: |3| + |4| = 7
    result = np.array([[2.0, -1.0], [3.0, 4.0]])  # difference [[1, 1], [0, 0]]: largest row sum 2
    # 2 / 7; not the largest row-wise ratio (2 / 3), nor the 1-norm ratio (1 / 6), nor Frobenius.
    assert relative_error(reference, result, np.inf) == pytest.approx(2 / 7)
    assert relative_error(reference, reference, np.inf) == 0.0
    assert relative_error(reference, result.astype(np.float32), np.inf) == pytest.approx(2 / 7)
    result[1, 0] = np.nan
    assert math.isnan(relative_error(reference, result, np.inf))
    # garbage a kernel left (float64 near its largest) is an infinite error, and no NumPy warning in
    # a grade's output (one was printed on a GPU: "overflow encountered in dot")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert relative_error(reference, np.full((2, 2), 1e300), None) == math.inf


def test_tolerance_is_k_plus_3_unit_roundoffs_of_the_kernel_and_of_the_reference():
    assert gemm.tolerance(65, np.float32) == 68 * (2.0**-24 + 2.0**-53)
    assert gemm.tolerance(1, np.float64) == 4 * 2.0**-52


# ---- command line -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, named", [
    (["--repeat", "5"], ["--repeat"]),
    (["--trans", "XY"], ["--trans", "XY"]),
    (["--backend", "numpy", "--algo", "bogus"], ["--algo", "bogus", "numpy"]),
    (["--sizes", "0x1x1"], ["--sizes", "0x1x1"]),
    (["--sizes", "12x3"], ["--sizes", "12x3"]),
])
def test_bad_arguments_exit_with_status_2(argv, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        gemm.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    message = err.split("error:", 1)[1]  # the usage line above it names every flag
    for word in named:
        assert word in message, (word, err)


def test_parse_sizes_accepts_spaces_and_upper_case():
    assert gemm.parse_sizes("800x1000x784, 1X2X3") == [(800, 1000, 784), (1, 2, 3)]
