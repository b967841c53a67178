"""The cuda-cpu backend's runner: the bugs its checking mode finds, and its clear errors.

Each bug test runs a test-only copy of kernels/ (NN_CUDA_KERNEL_DIR) with one mistake a student
makes, and says whether the bug shows without the checking mode (NN_CUDA_CPU_CHECK=1); with it, each
must be reported. The correct kernels pass the same checks (tests/test_cuda_kernels.py runs every
instance in the checking mode).
"""

import ctypes
import hashlib
import mmap
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn_cuda import host_compiler, kernel_info
from nn_cuda.backends.base import BackendUnavailable
from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend, kernel_module
from nn_cuda.cuda_cpu import build, build_cache
from nn_cuda.cuda_cpu.runner import KernelError

KERNELS = kernel_info.kernel_dir()


def edited_kernels(tmp_path, monkeypatch, filename, old, new):
    """Point NN_CUDA_KERNEL_DIR at a copy of kernels/ where `old` is replaced by `new` in `filename`."""
    copy = tmp_path / "kernels"
    shutil.copytree(KERNELS, copy)
    source = (copy / filename).read_text()
    assert source.count(old) == 1, f"{filename} no longer holds the line this test edits"
    (copy / filename).write_text(source.replace(old, new))
    monkeypatch.setenv("NN_CUDA_KERNEL_DIR", str(copy))
    return copy


def naive_library(check: bool):
    """The library the cuda-cpu backend loads for kernels/gemm1_naive.cu (built first if needed)."""
    return kernel_module("gemm1_naive.cu", check).library_path()


#: the runner's parts in a build cache: runtime.h precompiled, runtime.cpp's and shared_guard.cpp's objects
RUNNER_PARTS = ("runtime-*", "runtime_header-*", "shared_guard-*")


def cache_holding_the_runner(folder: Path) -> Path:
    """Make `folder` a build cache that holds the session cache's parts of the runner (both modes),
    copied, so that a test of how the kernels' libraries are cached does not compile the runner again:
    a build finds them by their keys as it finds its own. Returns `folder`."""
    for check in (False, True):  # built in the session cache unless already there
        naive_library(check)
    session = build_cache.folder()
    target = folder / build_cache.FOLDER
    target.mkdir(parents=True, mode=0o700)
    for pattern in RUNNER_PARTS:
        for part in session.glob(pattern):
            shutil.copy2(part, target / part.name)
    return folder


def random_gemm(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((M, K)), rng.random((K, N))


def rel_error(result, reference):
    return float(np.abs(result - reference).max() / np.abs(reference).max())


def unchecked_error(algo, A, B, C, **options) -> float:
    """The (edited) kernel run without the checking mode: its relative error against A @ B."""
    CudaCpuBackend(algo, check=False).gemm(A, B, C, **options)
    return rel_error(C, A @ B)


def reported_when_checked(algo, A, B, C, match, **options) -> None:
    """The (edited) kernel run in the checking mode must fail with a KernelError matching `match`."""
    with pytest.raises(KernelError, match=match):
        CudaCpuBackend(algo, check=True).gemm(A, B, C, **options)


# ---- the bugs the checking mode finds ------------------------------------------------------------


def test_missing_second_syncthreads_in_the_tiled_gemm_is_reported(tmp_path, monkeypatch):
    # Without the barrier after the multiply-adds, a thread that moves on overwrites the tiles
    # while the others still read them. K = 70 spans three 32-wide tiles.
    edited_kernels(tmp_path, monkeypatch, "gemm2_tiled.cu",
                   "            acc += a_tile[ty][kk] * b_tile[kk][tx];\n        }\n        __syncthreads();\n",
                   "            acc += a_tile[ty][kk] * b_tile[kk][tx];\n        }\n")
    A, B = random_gemm(40, 36, 70)

    # Without the checking mode the bug shows too: threads run one after another, in order, so
    # thread 0 already loads the next tiles before thread 1 reads the current ones.
    assert unchecked_error("tiled", A, B, np.zeros((40, 36))) > 1e-3

    # With it, it is reported as a race: two thread orders give two different results.
    reported_when_checked("tiled", A, B, np.zeros((40, 36)), "depends on the order in which the threads")


def test_missing_first_syncthreads_in_the_tiled_gemm_is_reported(tmp_path, monkeypatch):
    edited_kernels(tmp_path, monkeypatch, "gemm2_tiled.cu",
                   "b_tile[b_k][b_c] = b_inside ? op_element<T, TRANS_B>(B, k0 + b_k, col0 + b_c, K, N) : T(0);\n"
                   "        __syncthreads();\n",
                   "b_tile[b_k][b_c] = b_inside ? op_element<T, TRANS_B>(B, k0 + b_k, col0 + b_c, K, N) : T(0);\n")
    # the block's thread 0 runs first in the first of the two runs, so it reads both tiles before the
    # others store them: the report names them (it named the element whose two runs differed)
    A, B = random_gemm(33, 33, 33)
    reported_when_checked("tiled", A, B, np.zeros((33, 33)),
                          r"\d+ element\(s\) of C hold NaN after the first of its two runs \(first at index \(0, 0\)\) "
                          r"though no input did: the kernel read __shared__ "
                          r"`a_tile` .* and __shared__ `b_tile` .* where no thread of the block had written it yet")


def test_a_tile_element_never_written_is_named_by_its_array(tmp_path, monkeypatch):
    # Zeros past the edge of A are no longer stored: with K = 20, columns 20-31 of a_tile are never
    # written, and each is multiplied by a zero of b_tile (on a GPU: whatever the memory held, which
    # NaN or infinity turns into NaN; here NaN, as the checking mode fills the tiles with it).
    # The project's own tiled GEMM is loaded first: the copy must fill its own tiles, not those
    # (GCC's STB_GNU_UNIQUE symbols made the two libraries share one a_tile, left unfilled).
    A, B = random_gemm(33, 33, 20)
    CudaCpuBackend("tiled", check=True).gemm(A, B, np.zeros((33, 33)))
    edited_kernels(tmp_path, monkeypatch, "gemm2_tiled.cu",
                   "a_tile[a_r][a_k] = a_inside ? op_element<T, TRANS_A>(A, row0 + a_r, k0 + a_k, M, K) : T(0);",
                   "if (a_inside) a_tile[a_r][a_k] = op_element<T, TRANS_A>(A, row0 + a_r, k0 + a_k, M, K);")
    reported_when_checked("tiled", A, B, np.zeros((33, 33)),
                          r"of C hold NaN after the first of its two runs .* the kernel read __shared__ `a_tile` "
                          r"\(in gemm_tiled<double, false, false>\) where no thread of the block had written it")


def test_off_by_one_bound_in_the_regblock_gemm_is_reported(tmp_path, monkeypatch):
    # `<= M` instead of `< M` when staging the slice of A: the last block of rows reads row M of A,
    # one row past its end.
    copy = edited_kernels(tmp_path, monkeypatch, "gemm3_regblock.cu",
                          "const bool s_inside = i0 + s_i < M && k0 + s_k < K;",
                          "const bool s_inside = i0 + s_i <= M && k0 + s_k < K;")
    M, N, K = 20, 70, 9  # M is not a multiple of 16: the last block of rows reaches row M
    A, B = random_gemm(M, N, K)

    # Without the checking mode the bug does not show: the stray row only feeds rows of C that are
    # never written, so C is right. (A is a view into a larger buffer so the read stays harmless.)
    padded = np.zeros((M + 1, K))
    padded[:M] = A
    assert unchecked_error("regblock", padded[:M], B, np.zeros((M, N))) < 1e-12

    # With it, the read past the end of A faults and is named, at the line of the kernel file that
    # loads from A (the library's line tables, read by addr2line).
    with pytest.raises(KernelError, match=r"past the end of A in thread \(\d+, \d+, 0\) of block "
                                          r"\(\d+, 1, 0\) at (.+):(\d+)$") as fault:
        CudaCpuBackend("regblock", check=True).gemm(A, B, np.zeros((M, N)))
    # "at common.cuh:13, called from gemm3_regblock.cu:LINE": the load inlined from op_element
    frames = [frame.rsplit(":", 1) for frame in str(fault.value).rsplit(" at ", 1)[1].split(", called from ")]
    (inner, inner_line), (outer, outer_line) = frames[0], frames[-1]
    assert Path(inner) == copy / "common.cuh" and Path(outer) == copy / "gemm3_regblock.cu"
    assert "(A, " in Path(outer).read_text().splitlines()[int(outer_line) - 1]
    assert "X[" in Path(inner).read_text().splitlines()[int(inner_line) - 1]


def test_a_store_past_c_stops_the_launch_outside_the_checking_mode_too(tmp_path, monkeypatch):
    # `i > M`: the threads of row M store into the row after C. The backend's arrays are in the
    # runner's device memory, each followed by an inaccessible page, so the store faults and the
    # launch ends naming the thread and the line of the store; after a NumPy array the same store
    # overwrote the heap, and Python died later, in free().
    copy = edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu", "if (i >= M || j >= N) {", "if (i > M || j >= N) {")
    store = next(number for number, text in enumerate((copy / "gemm1_naive.cu").read_text().splitlines(), 1)
                 if text.strip().startswith("*c = "))
    backend = CudaCpuBackend("naive", check=False)
    M, N, K = 20, 70, 9  # a row of C (560 bytes) is longer than the 255 bytes of alignment before the guard
    A, B = random_gemm(M, N, K)
    C = backend.to_device(np.zeros((M, N)))
    with pytest.raises(KernelError, match=rf"gemm_naive<double, false, false>: an invalid memory access in thread "
                                          rf"\(\d+, \d+, 0\) of block \(\d+, \d+, 0\) at "
                                          rf"{re.escape(str(copy / 'gemm1_naive.cu'))}:{store}; run in the "
                                          r"checking mode to name the buffer \(NN_CUDA_CPU_CHECK=1; a RawModule "
                                          r"made with check=False takes check=True\)"):
        backend.gemm(backend.to_device(A), backend.to_device(B), C)


def page_permissions(address: int) -> str:
    """This process's permissions on the page holding `address` ("rw-p", "---p"), from /proc/self/maps."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, permissions = line.split()[:2]
        low, high = (int(bound, 16) for bound in span.split("-"))
        if low <= address < high:
            return permissions
    return "unmapped"


def test_device_memory_is_aligned_and_guarded_on_both_sides():
    from nn_cuda.cuda_cpu import device_memory

    for shape, dtype in (((3, 5), np.float32), ((0,), np.float64), (7, np.int32), ((1000, 800), np.float32)):
        array = device_memory.empty(shape, dtype)
        start = array.__array_interface__["data"][0]
        assert array.shape == (shape if isinstance(shape, tuple) else (shape,)) and array.dtype == dtype
        assert start % device_memory.ALIGNMENT == 0 and array.flags.c_contiguous and array.flags.writeable
        # the page below the array's first page and the one after its end rounded up to 256 bytes:
        # no access
        end = start + -(-max(array.nbytes, 1) // device_memory.ALIGNMENT) * device_memory.ALIGNMENT
        below = start // mmap.PAGESIZE * mmap.PAGESIZE - 1
        assert page_permissions(start).startswith("rw") and page_permissions(end - 1).startswith("rw")
        assert page_permissions(below).startswith("---") and page_permissions(end).startswith("---")
    assert np.array_equal(device_memory.to_device(np.arange(6.0).reshape(2, 3)), np.arange(6.0).reshape(2, 3))


def test_reading_c_when_beta_is_zero_is_reported(tmp_path, monkeypatch):
    # beta = 0 promises that C is not read (it may hold NaN); this kernel reads it anyway.
    edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu",
                   "*c = (beta == T(0)) ? alpha * acc : alpha * acc + beta * (*c);",
                   "*c = alpha * acc + beta * (*c);")
    A, B = random_gemm(9, 11, 5)

    # Without the checking mode it does not show when C happens to hold finite numbers: 0 * C = 0.
    assert unchecked_error("naive", A, B, np.ones((9, 11)), beta=0.0) < 1e-12

    # With it, C is filled with NaN before the launch, and the NaN that reached C is reported.
    reported_when_checked("naive", A, B, np.ones((9, 11)), "hold NaN after the launch", beta=0.0)


@pytest.mark.parametrize("check", [False, True])
def test_threads_that_return_before_a_barrier_release_it_as_on_a_gpu(tmp_path, monkeypatch, check):
    # PTX's `exit` releases a barrier that only exited threads hold up: the others go on (llm.c's
    # matmul_backward_bias kernel 7 returns whole warps before its barriers). Here thread (5, 2) has
    # written its partial sum before it returns, so the sums are right, checking or not.
    edited_kernels(tmp_path, monkeypatch, "nn_ops.cu",
                   "    partial[y][x] = sum;\n    __syncthreads();\n",
                   "    partial[y][x] = sum;\n    if (x == 5 && y == 2) {\n        return;\n    }\n    __syncthreads();\n")
    M = np.random.default_rng(0).random((40, 7))
    out = np.full(7, np.nan)
    CudaCpuBackend(check=check).col_sum(M, out)
    np.testing.assert_allclose(out, M.sum(axis=0), rtol=1e-14)


def test_what_a_thread_that_returned_early_left_unwritten_is_reported(tmp_path, monkeypatch):
    # returning before its partial sum is written: the block reads shared memory no thread wrote
    edited_kernels(tmp_path, monkeypatch, "nn_ops.cu",
                   "    partial[y][x] = sum;\n    __syncthreads();\n",
                   "    if (x == 5 && y == 2) {\n        return;\n    }\n    partial[y][x] = sum;\n    __syncthreads();\n")
    with pytest.raises(KernelError, match=r"col_sum<double>: 1 element\(s\) of out hold NaN after the first of its two runs "
                                          r"\(first at index \(5,\)\) though no input did: the kernel read __shared__ "
                                          r"`partial` \(in col_sum<double>\) where no thread of the block had written it"):
        CudaCpuBackend(check=True).col_sum(np.ones((40, 7)), np.zeros(7))


def test_a_write_to_an_input_is_reported(tmp_path, monkeypatch):
    edited_kernels(tmp_path, monkeypatch, "nn_ops.cu",
                   "        out[idx] = dA[idx] * a * (T(1) - a);",
                   "        out[idx] = dA[idx] * a * (T(1) - a);\n        const_cast<T*>(A)[idx] = T(0);")
    dA, A = np.ones((3, 5)), np.full((3, 5), 0.5)
    with pytest.raises(KernelError, match="a write to the input A"):
        CudaCpuBackend(check=True).sigmoid_backward(dA, A, np.zeros((3, 5)))


# ---- clear errors -----------------------------------------------------------------------------------


def test_a_compile_error_names_the_file_and_line(tmp_path, monkeypatch):
    edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu", "    T acc = T(0);", "    T acc = T(0)  // missing ;")
    with pytest.raises(build.KernelBuildError, match=r"gemm1_naive\.cu:\d+") as raised:
        CudaCpuBackend("naive").gemm(np.ones((2, 2)), np.ones((2, 2)), np.zeros((2, 2)))
    # the translation unit is a temporary file, deleted by now: the message names the kernel file only
    assert "_cpu.cpp" not in str(raised.value) and "nn_cuda_cpu_" not in str(raised.value)


def test_a_missing_compiler_says_what_to_install(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-c++-compiler")
    with pytest.raises(BackendUnavailable, match="apt install g\\+\\+"):
        build.find_compiler()


def test_a_launch_table_that_disagrees_with_the_kernel_signature_is_refused(tmp_path, monkeypatch):
    # The kernel's N becomes a 64-bit integer: the launch would pass a 32-bit one (garbage on a GPU).
    edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu",
                   "                           int M, int N, int K, T alpha, T beta)",
                   "                           int M, long long N, int K, T alpha, T beta)")
    with pytest.raises(KernelError, match=r"takes \(.*long long.*\) but the launch table declares"):
        CudaCpuBackend("naive").gemm(np.ones((2, 2)), np.ones((2, 2)), np.zeros((2, 2)))


def test_arguments_are_checked_against_the_c_signature():
    from nn_cuda import kernel_launch

    A = np.ones((2, 2), np.float32)
    launch = kernel_launch.gemm(kernel_launch.GeometryTable(), "naive", A, A, np.zeros((2, 2), np.float32), 1.0, 0.0, False, False, 2, 2, 2)
    is_array = lambda x: isinstance(x, np.ndarray)  # noqa: E731
    kernel_launch.check_arguments(launch, is_array)  # the table's own launch passes
    wrong_width = launch.args[:3] + (np.int64(2),) + launch.args[4:]
    with pytest.raises(TypeError, match=r"argument 3 \(int\) must be a numpy.int32"):
        kernel_launch.check_arguments(type(launch)(**{**launch.__dict__, "args": wrong_width}), is_array)
    wrong_precision = launch.args[:6] + (np.float64(1.0),) + launch.args[7:]
    with pytest.raises(TypeError, match=r"argument 6 \(float\) must be a numpy.float32"):
        kernel_launch.check_arguments(type(launch)(**{**launch.__dict__, "args": wrong_precision}), is_array)
    double_array = (np.ones((2, 2)),) + launch.args[1:]
    with pytest.raises(TypeError, match="points to float, got an array of float64"):
        kernel_launch.check_arguments(type(launch)(**{**launch.__dict__, "args": double_array}), is_array)
    with pytest.raises(TypeError, match="takes 8 arguments"):
        kernel_launch.check_arguments(type(launch)(**{**launch.__dict__, "args": launch.args[:7]}), is_array)


def test_a_library_is_built_once_then_loaded_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(cache_holding_the_runner(tmp_path / "cache")))
    first = naive_library(check=False)
    built_at = first.stat().st_mtime_ns
    assert naive_library(check=False) == first
    assert first.stat().st_mtime_ns == built_at  # not rebuilt
    assert naive_library(check=True) != first  # the checking build is its own


BUILD_ONE = """
import sys
from nn_cuda.cuda_cpu import RawModule
RawModule(code='extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }', check=False).get_function("k")
print("loaded", flush=True)
"""


def test_processes_that_need_the_same_library_build_it_once(tmp_path):
    # Four MPI ranks on a cold cache each compiled the library, and one rank's record next to another
    # rank's library read as a damaged build ("building it again", and again)
    env = {**os.environ, "NN_CUDA_CACHE_DIR": str(tmp_path / "cache")}
    jobs = [subprocess.Popen([sys.executable, "-c", BUILD_ONE], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(4)]
    finished = [job.communicate(timeout=300) for job in jobs]
    assert [out for out, _ in finished] == ["loaded\n"] * 4, finished
    errors = "".join(err for _, err in finished)
    compiled = [line for line in errors.splitlines() if line.startswith("nn_cuda: compiling")]
    assert compiled and len(compiled) == len(set(compiled)), errors  # each object once: the code, the runtime
    assert "building it again" not in errors, errors


def test_editing_a_header_that_a_header_includes_rebuilds(tmp_path, monkeypatch):
    # A header two levels down, named .h (not .cuh): its edit must change the library that is loaded,
    # for the CPU build and in the code the CuPy backend hands to CuPy's compile cache.
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(cache_holding_the_runner(tmp_path / "cache")))
    copy = edited_kernels(tmp_path, monkeypatch, "common.cuh", "#pragma once", '#pragma once\n#include "scale.h"')
    (copy / "scale.h").write_text("#define NN_CUDA_TEST_SCALE 1\n")
    before = naive_library(check=False)
    code_before = kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"]
    assert copy / "scale.h" in kernel_info.files_read("gemm1_naive.cu")

    (copy / "scale.h").write_text("#define NN_CUDA_TEST_SCALE 2\n")
    after = naive_library(check=False)
    code_after = kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"]
    assert after != before and code_after != code_before
    # a file of the folder that nothing includes changes neither
    (copy / "notes.h").write_text("// not included\n")
    assert naive_library(check=False) == after
    assert kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"] == code_after


def test_a_header_included_through_a_macro_is_part_of_the_key(tmp_path, monkeypatch):
    # `#include SCALE_HEADER`: no scan of #include lines finds it; the preprocessor's own list (-MD
    # for the CPU build, -M for the code given to CuPy) does, so editing it rebuilds both.
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(cache_holding_the_runner(tmp_path / "cache")))
    copy = edited_kernels(tmp_path, monkeypatch, "common.cuh", "#pragma once",
                          '#pragma once\n#define SCALE_HEADER "macro_scale.h"\n#include SCALE_HEADER')
    (copy / "macro_scale.h").write_text("#define NN_CUDA_TEST_SCALE 1\n")
    assert copy / "macro_scale.h" not in kernel_info.included_files(copy / "gemm1_naive.cu", [copy])
    before = naive_library(check=False)
    code_before = kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"]
    assert naive_library(check=False) == before  # a lookup alone builds nothing

    (copy / "macro_scale.h").write_text("#define NN_CUDA_TEST_SCALE 2\n")
    after = naive_library(check=False)
    assert after != before and after.is_file()
    assert kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"] != code_before
    # going back to the first contents finds the first library again, without building
    (copy / "macro_scale.h").write_text("#define NN_CUDA_TEST_SCALE 1\n")
    built_at = before.stat().st_mtime_ns
    assert naive_library(check=False) == before
    assert before.stat().st_mtime_ns == built_at


def test_a_header_that_is_gone_or_a_damaged_manifest_builds_again(tmp_path, monkeypatch):
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(cache_holding_the_runner(tmp_path / "cache")))
    copy = edited_kernels(tmp_path, monkeypatch, "common.cuh", "#pragma once", '#pragma once\n#include "scale.h"')
    (copy / "scale.h").write_text("#define NN_CUDA_TEST_SCALE 1\n")
    first = naive_library(check=False)
    (manifest,) = first.parent.glob("gemm1_naive-*.deps")
    assert str(copy / "scale.h") in manifest.read_text().splitlines()
    manifest.write_bytes(b"\xff\xfe garbage")
    rebuilt = naive_library(check=False)
    assert rebuilt == first and str(copy / "scale.h") in manifest.read_text().splitlines()
    # the header is removed and common.cuh no longer includes it: built again, and it works
    (copy / "common.cuh").write_text((copy / "common.cuh").read_text().replace('#include "scale.h"', ""))
    (copy / "scale.h").unlink()
    assert naive_library(check=False) != first
    assert gemm_works()


def test_the_preprocessors_make_rule_is_read_with_continuations_and_spaces():
    rule = "x.o: /a/k.cu /usr/include/stdc-predef.h \\\n /my\\ dir/h.h cuda_fp16.h\n/a/k.cu:\n"
    assert host_compiler.dependency_list(rule) == [
        Path("/a/k.cu"), Path("/usr/include/stdc-predef.h"), Path("/my dir/h.h"), Path("cuda_fp16.h")]


# ---- the build cache: private, and what it loads is what was built ---------------------------------


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A build cache of this test's own (empty), under NN_CUDA_CACHE_DIR."""
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / build_cache.FOLDER


@pytest.fixture(scope="module")
def built_naive(tmp_path_factory):
    """A cache folder holding the CPU build of gemm1_naive.cu, built once for the tests that tamper
    with a copy of it."""
    folder = tmp_path_factory.mktemp("built") / "cache"
    previous = os.environ.get("NN_CUDA_CACHE_DIR")
    os.environ["NN_CUDA_CACHE_DIR"] = str(folder)
    try:
        naive_library(check=False)
    finally:
        if previous is None:
            del os.environ["NN_CUDA_CACHE_DIR"]
        else:
            os.environ["NN_CUDA_CACHE_DIR"] = previous
    return folder


def dynamic_shared_capacity(library: Path) -> int:
    """What a built library's runtime answers to nn_cuda_cpu_dynamic_shared_capacity (runtime.cpp)."""
    answer = ctypes.CDLL(str(library)).nn_cuda_cpu_dynamic_shared_capacity
    answer.restype = ctypes.c_size_t
    return answer()


def test_the_runtime_is_compiled_once_per_set_of_flags_and_an_edit_of_it_rebuilds(tmp_path, monkeypatch, capfd):
    # runtime.cpp is compiled into an object once per set of flags and linked into each library built
    # with them; an edit of it must reach every library built after it, though no file the kernel's
    # own compilation reads has changed.
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for name in ("runtime.cpp", "runtime.h", "device_functions.h", "include/driver_types.h"):
        (runtime / name).parent.mkdir(exist_ok=True)
        shutil.copy(build.RUNTIME_SOURCE.parent / name, runtime / name)
    monkeypatch.setattr(build, "RUNTIME_SOURCE", runtime / "runtime.cpp")
    code = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }'
    capfd.readouterr()
    first = build.code_library(code, [], ["k"], check=False)
    other = build.code_library(code.replace("1.0f", "2.0f"), [], ["k"], check=False)
    objects = lambda: sorted(first.parent.glob("runtime-*.o"))  # noqa: E731
    assert other != first and len(objects()) == 1
    assert capfd.readouterr().err.count("compiling the runner's runtime") == 1
    precompiled = build.is_gcc(build.find_compiler())
    build.code_library(code, build.host_flags(("-DNN_CUDA_TEST_FLAG=1",)), ["k"], check=False)
    # a macro of the code's that runtime.h does not use: the same object, where GCC reads runtime.h
    # precompiled and so checks that (build.py); with clang, another
    assert len(objects()) == (1 if precompiled else 2)
    build.code_library(code, build.host_flags(("-DNDEBUG",)), ["k"], check=False)
    assert len(objects()) == 2  # a macro that <assert.h> uses: another
    build.code_library(code, build.host_flags((f"-I{tmp_path}",)), ["k"], check=False)
    assert len(objects()) == 2  # an include folder of the kernel's: the same object
    assert dynamic_shared_capacity(first) == 227 * 1024

    source = runtime / "runtime.cpp"
    text = source.read_text()
    answer = "{ return nn_cuda_cpu::kDynamicSharedBytes; }"
    assert text.count(answer) == 1
    source.write_text(text.replace(answer, "{ return nn_cuda_cpu::kDynamicSharedBytes - 16; }"))
    edited = build.code_library(code, [], ["k"], check=False)
    assert edited != first and len(objects()) == 3
    assert dynamic_shared_capacity(edited) == 227 * 1024 - 16
    source.write_text(text)  # the first contents find the first library again, built as it was
    assert build.code_library(code, [], ["k"], check=False) == first


@pytest.fixture
def built_cache(private_cache, built_naive):
    """private_cache, holding a copy of the built gemm_naive library."""
    shutil.copytree(built_naive, private_cache.parent)
    return private_cache


def planted_library(tmp_path, marker):
    """A shared object whose constructor writes `marker`: what another user would plant."""
    source = tmp_path / "planted.c"
    source.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                      f'{{ FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    library = tmp_path / "planted.so"
    subprocess.run([build.find_compiler(), "-x", "c", "-shared", "-fPIC", "-o", str(library), str(source)],
                   check=True, capture_output=True)
    return library.read_bytes()


def gemm_works():
    A, B = random_gemm(5, 7, 3)
    C = np.full((5, 7), np.nan)
    CudaCpuBackend("naive").gemm(A, B, C)
    return rel_error(C, A @ B) < 1e-12


HEADER_KERNEL = """
extern "C" __global__ void k(float* x) {
    assert(x[0] == 0.0f);
    x[1 + threadIdx.x] = nn_cuda_test_value() + OFFSET;
}
"""


def test_runtime_h_is_precompiled_once_for_code_of_any_macro_and_an_edit_of_it_rebuilds(tmp_path, monkeypatch):
    # GCC reads runtime.h from one precompiled header per set of the runner's flags (build.py): code
    # built with other -D shares it, a -D that the header uses (NDEBUG) makes GCC read runtime.h itself,
    # to the same result, and an edit of runtime.h must still reach every library built after it.
    from nn_cuda.cuda_cpu import RawModule
    if not build.is_gcc(build.find_compiler()):
        pytest.skip("the precompiled header is GCC's")
    monkeypatch.setenv("NN_CUDA_CACHE_DIR", str(tmp_path / "cache"))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for name in ("runtime.h", "device_functions.h", "include/driver_types.h"):
        (runtime / name).parent.mkdir(exist_ok=True)
        shutil.copy(build.RUNTIME_HEADER.parent / name, runtime / name)
    header = runtime / "runtime.h"
    text = header.read_text()
    header.write_text(text + "inline float nn_cuda_test_value() { return 1.0f; }\n")
    monkeypatch.setattr(build, "RUNTIME_HEADER", header)

    def run(*options, first=0.0):
        x = np.full(3, np.nan, np.float32)
        x[0] = first
        RawModule(code=HEADER_KERNEL, options=options, check=False).get_function("k")((1,), (2,), (x,))
        return list(x[1:])

    headers = lambda: sorted((tmp_path / "cache").rglob("runtime_header-*.h.gch"))  # noqa: E731
    assert run("-DOFFSET=0") == [1.0, 1.0]
    assert run("-DOFFSET=10") == [11.0, 11.0]
    assert len(headers()) == 1  # one precompiled header for both
    with pytest.raises(KernelError, match="assertion `x\\[0\\] == 0.0f` failed"):
        run("-DOFFSET=0", first=5.0)
    assert run("-DOFFSET=0", "-DNDEBUG", first=5.0) == [1.0, 1.0]  # NDEBUG: runtime.h read again, assert off
    assert len(headers()) == 1

    (before,) = headers()
    header.write_text(text + "inline float nn_cuda_test_value() { return 2.0f; }\n")
    assert run("-DOFFSET=0") == [2.0, 2.0]
    (after,) = headers()  # the header of the files as they were is removed: 40-50 MB that nothing reads
    assert after != before


def test_a_build_error_in_the_runners_headers_names_no_generated_file():
    # GCC names the file runtime.h's precompiled form was compiled from (a deleted temporary) as the
    # one that included it; the message names the code's instance table, as it did before
    from nn_cuda.cuda_cpu import RawModule
    with pytest.raises(build.KernelBuildError) as raised:
        RawModule(code='extern "C" __global__ void k(short* p) { atomicAdd(p, (short)1); }').get_function("k")
    message = str(raised.value)
    assert "no matching function for call to" in message and "_cpu.cpp" not in message, message
    if "In file included from" in message:
        assert "from (the instance table of the RawModule code):1" in message, message


def test_the_build_cache_is_private_whatever_the_umask(private_cache):
    previous = os.umask(0)
    try:
        library = naive_library(check=False)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(library).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(build_cache.digest_path(library)).st_mode) == 0o600


def test_a_cache_folder_of_another_user_or_a_link_is_refused(private_cache, tmp_path):
    private_cache.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    private_cache.symlink_to(elsewhere)
    with pytest.raises(build_cache.UnsafeBuildCache, match="not a folder"):
        naive_library(check=False)
    private_cache.unlink()
    if os.geteuid() != 0:
        pytest.skip("only root can give the folder to another user")
    private_cache.mkdir(mode=0o700)
    os.chown(private_cache, 54321, 54321)
    with pytest.raises(build_cache.UnsafeBuildCache, match=r"belongs to another user \(uid 54321\)"):
        naive_library(check=False)


def test_a_cache_folder_left_open_by_a_loose_umask_is_closed(private_cache):
    private_cache.mkdir(parents=True, mode=0o700)
    os.chmod(private_cache, 0o777)
    naive_library(check=False)
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700


@pytest.mark.parametrize("planting", ["bytes only", "bytes and record, world-writable", "bytes and record, other uid"])
def test_a_planted_library_is_never_loaded(built_cache, tmp_path, capfd, planting):
    # Another user replaces the cached library with one whose constructor runs code: with or without
    # forging its record, the project rebuilds instead of loading it.
    if planting.endswith("other uid") and os.geteuid() != 0:
        pytest.skip("only root can play another user here")
    target = naive_library(check=False)
    marker = tmp_path / "planted-code-ran"
    data = planted_library(tmp_path, marker)
    target.write_bytes(data)
    if planting != "bytes only":
        build_cache.digest_path(target).write_text(hashlib.sha256(data).hexdigest())
    if planting.endswith("world-writable"):
        os.chmod(target, 0o777)
    if planting.endswith("other uid"):
        os.chown(target, 54321, 54321)
    capfd.readouterr()
    assert gemm_works()
    assert not marker.exists(), "the planted library was loaded"
    line, compiling = [line for line in capfd.readouterr().err.splitlines() if line]
    assert "gemm1_naive.cu" in line and "building it again" in line
    assert compiling.startswith("nn_cuda: compiling ") and "gemm1_naive.cu for the CPU" in compiling
    expected = {"bytes only": "is not what was built", "bytes and record, world-writable": "written by other users",
                "bytes and record, other uid": "belongs to another user (uid 54321)"}[planting]
    assert expected in line


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "record missing"])
def test_a_damaged_cached_library_is_rebuilt_saying_so_in_one_line(built_cache, capfd, damage):
    target = naive_library(check=False)
    data = target.read_bytes()
    if damage == "record missing":
        build_cache.digest_path(target).unlink()
    else:
        target.write_bytes({"empty": b"", "truncated": data[: len(data) // 2], "garbage": b"\x7fELF" + bytes(999)}[damage])
    capfd.readouterr()
    assert gemm_works()
    lines = [line for line in capfd.readouterr().err.splitlines() if line]
    assert len(lines) == 2 and "building it again" in lines[0] and "for the CPU (once" in lines[1], lines
    descriptor, problem = build_cache.open_verified(target)
    assert descriptor is not None, problem
    os.close(descriptor)


@pytest.mark.parametrize("part", ["runtime-*.o", "runtime_header-*.h.gch"])
def test_a_damaged_part_of_the_runner_is_rebuilt_saying_so_in_one_line(built_cache, capfd, part, tmp_path,
                                                                       monkeypatch):
    # The runtime's object is linked into every library built after it, and GCC reads runtime.h
    # precompiled for each: each is verified as a library is, when a library is built, and never used
    # unless it is what was built.
    found = list(built_cache.glob(part))
    if not found:
        assert part.endswith(".gch") and not build.is_gcc(build.find_compiler())
        pytest.skip("runtime.h is precompiled with GCC only")
    (damaged,) = found
    damaged.write_bytes(damaged.read_bytes()[:1000])
    edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu", "    T acc = T(0);", "    T acc = T(0);  // edited")
    capfd.readouterr()
    assert gemm_works()  # another library, of the same flags
    lines = [line for line in capfd.readouterr().err.splitlines() if line]
    what, rebuilt = (("the runner's runtime (runtime.cpp)", "runtime (runtime.cpp)") if part.endswith(".o") else
                     (damaged.name, "header (runtime.h, precompiled)"))
    (said,) = [index for index, line in enumerate(lines) if "building it again" in line]
    assert what in lines[said] and lines[said + 1].startswith(f"nn_cuda: compiling the runner's {rebuilt}"), lines
    descriptor, problem = build_cache.open_verified(damaged)
    assert descriptor is not None, problem
    os.close(descriptor)


def test_a_full_disk_is_not_blamed_on_a_correct_kernel(private_cache, tmp_path, monkeypatch):
    # The compiler cannot write its output (a full disk): not "does not compile".
    compiler = tmp_path / "full-disk-g++"
    compiler.write_text("#!/bin/sh\necho 'fatal error: cannot open output file x.so: No space left on device' >&2\n"
                        "exit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CXX", str(compiler))
    with pytest.raises(BackendUnavailable, match="could not be written to .*No space left on device"):
        naive_library(check=False)
    # Storing the built library fails the same way (the record is written after the compiler ran).
    monkeypatch.delenv("CXX")

    def full(temporary, library):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_cache, "store", full)
    with pytest.raises(BackendUnavailable, match="could not be written to .*No space left on device"):
        naive_library(check=False)


def test_the_check_mode_is_on_for_every_command_through_the_environment(monkeypatch):
    monkeypatch.setenv("NN_CUDA_CPU_CHECK", "1")
    assert CudaCpuBackend().check
    monkeypatch.setenv("NN_CUDA_CPU_CHECK", "0")
    assert not CudaCpuBackend().check


def test_a_kernel_fault_without_the_checking_mode_ends_in_an_error_not_a_crash(tmp_path, monkeypatch):
    # A write far outside C (a wrong row stride): the process survives and names the thread.
    edited_kernels(tmp_path, monkeypatch, "gemm1_naive.cu",
                   "    T* c = C + static_cast<long long>(i) * N + j;",
                   "    T* c = C + static_cast<long long>(i) * N * 1000000000LL + j;")
    script = (
        "import numpy as np\n"
        "from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend\n"
        "from nn_cuda.cuda_cpu.runner import KernelError\n"
        "try:\n"
        "    CudaCpuBackend('naive', check=False).gemm(np.ones((64, 4)), np.ones((4, 4)), np.zeros((64, 4)))\n"
        "except KernelError as error:\n"
        "    print('reported:', error)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "reported: gemm_naive<double, false, false>: an invalid memory access in thread" in result.stdout


# ---- the C interface from C, and the fiber switch on arm64 (many students' laptops) ---------------------

C_DRIVER = r"""
#include <sys/mman.h>
#include <unistd.h>
#include <cstdlib>
#include <vector>
extern "C" void nn_cuda_cpu_stack_layout(size_t* layout);
extern "C" void nn_cuda_cpu_use_stacks(void* base, size_t count);
int main()
{
    size_t layout[2];  // the threads' stacks, each above a guard page, as fiber_stacks.py maps them
    nn_cuda_cpu_stack_layout(layout);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), span = layout[0] + page;
    char* pool = static_cast<char*>(mmap(nullptr, layout[1] * span, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    for (size_t s = 0; s < layout[1]; ++s) mprotect(pool + s * span, page, PROT_NONE);
    nn_cuda_cpu_use_stacks(pool, layout[1]);
    const int M = 45, N = 70, K = 67;
    std::vector<double> A(M * K), B(K * N), C(M * N, NAN);
    for (int i = 0; i < M * K; ++i) A[i] = (i % 7) * 0.25;
    for (int i = 0; i < K * N; ++i) B[i] = (i % 3) - 1.0;
    int m = M, n = N, k = K;
    double alpha = 1.0, beta = 0.0;
    const double *pa = A.data(), *pb = B.data();
    double* pc = C.data();
    void* args[] = {&pa, &pb, &pc, &m, &n, &k, &alpha, &beta};
    unsigned block[3] = {32, 32, 1};
    long long fault[9];
    char message[512];
    for (int check = 0; check < 2; ++check) {
        // The checking mode's blocks take turns, each copying out the __shared__ arrays that the
        // Python side finds with nm and names to the library; this driver names none, so it checks
        // one block (the top-left 32 x 32 of C) there, and the whole grid in the plain mode.
        const int rows = check ? 32 : M, cols = check ? 32 : N;
        unsigned grid[3] = {static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((rows + 31) / 32), 1};
        std::fill(C.begin(), C.end(), NAN);
        const int status = nn_cuda_cpu_launch(0, grid, block, args, "tiled", check, 7, fault, message, 512);
        double error = 0;
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) {
                double sum = 0;
                for (int kk = 0; kk < K; ++kk) sum += A[i * K + kk] * B[kk * N + j];
                error = std::max(error, std::fabs(sum - C[i * N + j]));
            }
        printf("status %d error %g\n", status, error);
    }
    double* nowhere = nullptr;
    void* bad[] = {&pa, &pb, &nowhere, &m, &n, &k, &alpha, &beta};
    unsigned grid[3] = {(N + 31) / 32, (M + 31) / 32, 1};
    const int status = nn_cuda_cpu_launch(0, grid, block, bad, "tiled", 0, 1, fault, message, 512);
    printf("fault status %d signal %lld\n", status, fault[0]);  // fault[0] read after the launch
}
"""


#: how each target builds and runs the driver: (compiler, command prefix that runs the program)
DRIVER_TARGETS = {"host": (None, ()),
                  "arm64 under qemu": ("aarch64-linux-gnu-g++", ("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"))}


@pytest.mark.parametrize("target", DRIVER_TARGETS)
def test_a_c_driver_runs_a_tiled_gemm_through_the_librarys_c_interface(tmp_path, target):
    # The library's C interface without Python: stacks, both modes and a fault, on the host, and on
    # arm64 (the other fiber switch, many students' laptops) where a cross compiler and qemu exist.
    compiler, runner = DRIVER_TARGETS[target]
    compiler = compiler or build.find_compiler()
    if not shutil.which(compiler) or (runner and not shutil.which(runner[0])):
        pytest.skip("needs aarch64-linux-gnu-g++ and qemu-aarch64 (apt install g++-aarch64-linux-gnu qemu-user)")
    source = KERNELS / "gemm2_tiled.cu"
    unit = build.code_unit(source.read_text(), ["gemm_tiled<double, false, false>"], str(source))
    (tmp_path / "driver.cpp").write_text(unit + C_DRIVER)
    compiled = subprocess.run([compiler, "-O2", "-std=c++17", "-U_FORTIFY_SOURCE", "-Wno-unknown-pragmas",
                               f"-I{KERNELS}", *build.CHECK_FLAGS, "-o", str(tmp_path / "driver"),
                               str(tmp_path / "driver.cpp"), str(build.RUNTIME_SOURCE)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([*runner, str(tmp_path / "driver")], capture_output=True, text=True, timeout=300)
    assert ran.stdout.splitlines() == ["status 0 error 0", "status 0 error 0", "fault status 2 signal 11"], ran


def test_without_a_host_compiler_cupys_key_scans_the_includes_and_says_so(monkeypatch, capfd):
    monkeypatch.setenv("CXX", "no-such-c++-compiler")
    kernel_info._say_once.cache_clear()
    code = kernel_info.cupy_module_arguments("gemm1_naive.cu")["code"]
    scanned = host_compiler.files_digest(kernel_info.included_files(KERNELS / "gemm1_naive.cu", [KERNELS]))
    assert code.rstrip().endswith(scanned)
    kernel_info.cupy_module_arguments("nn_ops.cu")
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line]
    assert "apt install g++" in line and "through a macro is not part of CuPy's cache key" in line
