"""Every NVIDIA wheel installed belongs to one CUDA major version (nn_cuda.cuda_wheels).

Runs in both CI environments: the README's install (.[mpi,dev]) and the GPU install (.[mpi,dev,gpu]).
Before the extras were aligned, dev brought CUDA 13 compilers and gpu the CUDA 12 stack: CuPy then
loaded NVRTC 13 and Numba's kernels failed to link with nvJitLink 12 on every GPU.
"""

import os
import subprocess
import sys

import pytest

from nn_cuda import cuda_wheels


def test_the_installed_nvidia_wheels_are_of_one_cuda_major_version():
    # The project installs CUDA 12 (setup.cfg); a machine's own stack of one other major version
    # works as well (an H200 with CuPy 14.2 for CUDA 13 passed the GPU tests), a mix never does.
    majors = cuda_wheels.installed_majors()
    assert len(majors) <= 1, majors


def test_the_dev_install_brings_the_compilers_of_that_cuda_version():
    # NVRTC of the compile tests comes from the same CUDA wheels as the GPU libraries' (the README's
    # install: nvidia-cuda-nvrtc-cu12).
    (names,) = cuda_wheels.installed_majors().values()
    assert any(name.startswith(("nvidia-cuda-nvrtc-cu", "nvidia-cuda-nvrtc ")) for name in names), names


# The mix the issue found: dev's CUDA 13 compilers beside gpu's CUDA 12 stack.
MIXED = [("nvidia-cuda-nvrtc", "13.5.37"), ("nvidia-cuda-nvcc", "13.5.37"), ("cupy-cuda12x", "14.2.0"),
         ("nvidia-cuda-nvrtc-cu12", "12.9.86"), ("cuda-bindings", "12.9.10"), ("nvidia-cufft", "12.0.0"),
         ("numpy", "2.4.6")]


def test_a_mix_of_cuda_12_and_13_is_refused_naming_the_wheels():
    with pytest.raises(cuda_wheels.MixedCudaVersions) as raised:
        cuda_wheels.check_one_major(MIXED)
    message = str(raised.value)
    assert "CUDA 12: cuda-bindings 12.9.10, cupy-cuda12x 14.2.0, nvidia-cuda-nvrtc-cu12 12.9.86" in message
    assert "CUDA 13: nvidia-cuda-nvcc 13.5.37, nvidia-cuda-nvrtc 13.5.37" in message
    assert "pip install -e '.[mpi,dev,gpu]'" in message and "\n" not in message


@pytest.mark.parametrize("name, version, major", [
    ("cupy-cuda12x", "14.2.0", 12), ("cupy_cuda13x", "14.2.0", 13), ("nvidia-nccl-cu12", "2.32.3", 12),
    ("nvidia-cuda-nvrtc", "13.5.37", 13), ("cuda-toolkit", "12.9.2.0", 12), ("cuda-bindings", "13.5.0", 13),
    ("nvidia-nvjitlink", "13.0.88", 13), ("nvidia-cufft", "12.0.0", None), ("numba-cuda", "0.30.4", None),
    ("cuda-pathfinder", "1.9.0", None), ("numpy", "2.4.6", None),
])
def test_the_major_version_of_a_wheel(name, version, major):
    assert cuda_wheels.cuda_major(name, version) == major


def test_one_major_version_passes():
    assert cuda_wheels.check_one_major([("cupy-cuda12x", "14.2.0"), ("nvidia-cuda-nvrtc-cu12", "12.9.86")]) == 12
    assert cuda_wheels.check_one_major([("numpy", "2.4.6")]) is None


def test_numba_cudas_gpu_target_imports_with_the_installed_numpy():
    # numba-cuda 0.30.4 overloads np.row_stack, which NumPy 2.5 removed: with NumPy 2.5 the GPU
    # target's array module fails to import and every Numba kernel fails on a GPU (seen on an H200).
    # setup.cfg keeps NumPy below 2.5; the module imports without a GPU, outside the simulator.
    environment = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    code = "import importlib; importlib.import_module('numba.cuda.np.arrayobj')"
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
