"""Shared test set-up.

Numba reads NUMBA_ENABLE_CUDASIM when it is first imported, so the choice between a real GPU and
Numba's CPU simulator is made here, before any test imports numba: without a CUDA driver and device,
the Numba tests run in the simulator.
"""

import atexit
import ctypes
import os
import shutil
import tempfile
from pathlib import Path


def _cuda_gpu_present() -> bool:
    if not any(Path("/dev").glob("nvidia[0-9]*")):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


GPU_PRESENT = _cuda_gpu_present()
if not GPU_PRESENT:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# Tests must never reach the network or the user's cache: downloads and the CPU builds of the
# kernels go to a cache of this test session, shared with the subprocesses it starts and with its
# pytest-xdist workers (which inherit the variable below from the process that starts them), so that
# a library or a part of the runner is built once per session, not once per worker: the build cache
# is safe for processes that build at once, as MPI ranks do. The process that made it removes it.
os.environ["NN_CUDA_OFFLINE"] = "1"
_SESSION_CACHE_VARIABLE = "NN_CUDA_TEST_SESSION_CACHE"
if os.environ.get("PYTEST_XDIST_WORKER") and os.path.isdir(os.environ.get(_SESSION_CACHE_VARIABLE, "")):
    _SESSION_CACHE = os.environ[_SESSION_CACHE_VARIABLE]
else:
    _SESSION_CACHE = os.environ[_SESSION_CACHE_VARIABLE] = tempfile.mkdtemp(prefix="nn_cuda_test_cache_")
    atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)
os.environ["NN_CUDA_CACHE_DIR"] = _SESSION_CACHE


# ---- the fast loop: pytest -m "not slow" ---------------------------------------------------------

#: the test modules left out of the fast loop, each of which takes several seconds or more (builds of
#: the CPU runner per test, Numba's simulator, mpiexec jobs, NVIDIA's compilers, whole commands); the
#: full suite runs them all. Single slow tests elsewhere carry @pytest.mark.slow themselves.
SLOW_MODULES = {
    "test_numba_sim.py", "test_mpi_data_parallel.py", "test_mpi_model_parallel.py", "test_mpi_timeout.py",
    "test_adversarial_async.py", "test_kernels_compile.py", "test_cuda_cpu.py", "test_cuda_cpu_training.py",
    "test_report.py", "test_doc_tables.py", "test_readme_examples.py", "test_gpu_machine_simulation.py",
    "test_grade.py", "test_bench_gemm.py", "test_bench_cli.py", "test_gpu_install.py", "test_kernel_checks.py",
    "test_course.py", "test_exit_status.py", "test_gpu_mirror.py", "test_kernel_check_runs.py",
}


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


# ---- NN_CUDA_GPU_MIRROR=DIR: every CPU-runner launch again on the GPU (gpu_mirror.py) ---------------

def _gpu_mirror_fixture():
    import pytest

    @pytest.fixture(autouse=True, scope="session")
    def gpu_mirror():
        from gpu_mirror import Mirror, cupy_device

        out = Path(os.environ["NN_CUDA_GPU_MIRROR"])
        out.mkdir(parents=True, exist_ok=True)
        patcher = pytest.MonkeyPatch()
        mirror = Mirror(cupy_device(), out / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl")
        mirror.install(patcher)
        yield mirror
        patcher.undo()

    return gpu_mirror


if os.environ.get("NN_CUDA_GPU_MIRROR"):
    gpu_mirror = _gpu_mirror_fixture()
