"""The GPU mirror (gpu_mirror.py) on a CPU: a second CPU runner stands for the GPU, built with
MIRROR_SIDE=1 so that a kernel can be made to differ between the two sides."""

import numpy as np
import pytest

from gpu_mirror import Device, Mirror
from nn_cuda.cuda_cpu import KernelError, RawModule

CODE = r"""
#ifndef MIRROR_SIDE
#define MIRROR_SIDE 0
#endif
__constant__ float offset;
__device__ int launched;
extern "C" __global__ void count() { atomicAdd(&launched, 1); }
extern "C" __global__ void add(float *x, float scale, int n, int differ) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * scale + offset + (differ ? MIRROR_SIDE * (i == 3) : 0);
}
extern "C" __global__ void out_of_bounds(float *x) { x[threadIdx.x + 40] = 1.0f; }
"""


def cpu_device(launched):
    def raw_module(**arguments):
        arguments["options"] = (*arguments.get("options", ()), "-DMIRROR_SIDE=1")
        module = RawModule(**arguments)
        launched.append(module)
        return module

    def write_global(module, name, data):
        module.get_global(name)[:] = data

    def read_global(module, name, nbytes):
        return np.array(module.get_global(name)[:nbytes])

    return Device(raw_module, lambda a: np.array(a, copy=True), lambda a: a, lambda: None,
                  write_global, read_global)


@pytest.fixture
def mirror(monkeypatch):
    launched = []
    mirror = Mirror(cpu_device(launched))
    mirror.install(monkeypatch)
    mirror.device_modules = launched
    return mirror


def test_a_launch_runs_on_both_sides_and_same_results_are_same_bits(mirror):
    module = RawModule(code=CODE, check=False)
    module.get_global("offset").view(np.float32)[0] = 0.5
    x = np.arange(64, dtype=np.float32)
    module.get_function("add")((2,), (32,), (x, np.float32(2), np.int32(64), np.int32(0)))
    np.testing.assert_array_equal(x, np.arange(64) * 2 + 0.5)  # the CPU side's result is the test's
    (record,) = mirror.records
    assert record["outcome"] == "same bits", record
    assert set(record["compared"]) == {"args[0]", "offset"}
    assert record["kernel"] == "add" and record["grid"] == [2] and record["block"] == [32]
    assert len(mirror.device_modules) == 1  # the device's module, built with the same code


def test_a_difference_is_found_and_measured(mirror):
    module = RawModule(code=CODE, check=False)
    x = np.ones(64, dtype=np.float32)
    module.get_function("add")((2,), (32,), (x, np.float32(1), np.int32(64), np.int32(1)))
    (record,) = mirror.records
    assert record["outcome"] == "differs"
    difference = record["compared"]["args[0]"]
    assert difference["elements_differing"] == 1 and difference["first_differing"] == 3
    assert difference["max_abs_difference"] == 1.0


def test_an_array_passed_twice_is_one_buffer_on_the_device_too(mirror):
    # as in the runner, and on a GPU given one CuPy array twice: with a copy per argument, an update
    # in place read as a difference (32 of 32 elements, on an H100)
    module = RawModule(code='extern "C" __global__ void add_one(const float* in, float* out) '
                            '{ out[threadIdx.x] = in[threadIdx.x] + 1.0f; }', check=False)
    x = np.arange(32, dtype=np.float32)
    module.get_function("add_one")((1,), (32,), (x, x))
    (record,) = mirror.records
    assert record["outcome"] == "same bits", record
    assert x.tolist() == list(range(1, 33))


def test_a_launch_the_cpu_runner_refuses_is_not_sent_to_the_device(mirror):
    module = RawModule(code=CODE, check=True)
    with pytest.raises(KernelError):
        module.get_function("out_of_bounds")((1,), (32,), (np.zeros(32, np.float32),))
    (record,) = mirror.records
    assert record["outcome"] == "CPU runner raised" and "KernelError" in record["error"]
    assert mirror.device_modules == []


def test_a_build_the_device_refuses_is_recorded(mirror):
    module = RawModule(code=CODE + "\n#if MIRROR_SIDE\n#error only on the device\n#endif\n", check=False)
    x = np.ones(8, dtype=np.float32)
    module.get_function("add")((1,), (8,), (x, np.float32(1), np.int32(8), np.int32(0)))
    (record,) = mirror.records
    assert record["outcome"] == "GPU build failed" and "only on the device" in record["error"]


def test_a_struct_holding_a_host_pointer_is_not_sent_to_the_device(mirror):
    code = r"""
    struct Column { int rows; float* data; };
    extern "C" __global__ void fill(Column c) { if (threadIdx.x < c.rows) c.data[threadIdx.x] = 1.0f; }
    """
    data = np.zeros(4, np.float32)
    column = np.array((4, data.ctypes.data), dtype=np.dtype([("rows", np.int32), ("data", np.uint64)], align=True))
    RawModule(code=code, check=False).get_function("fill")((1,), (4,), (column,))
    (record,) = mirror.records
    assert record["outcome"] == "not run: a struct argument holds a host pointer"
    assert mirror.device_modules == []


def test_the_device_starts_from_the_globals_the_cpu_started_from(mirror):
    module = RawModule(code=CODE, check=False)
    launched = module.get_global("launched").view(np.int32)
    launched[0] = 5
    module.get_function("count")((1,), (8,), ())
    assert launched[0] == 13
    (record,) = mirror.records
    assert record["outcome"] == "same bits", record  # the device too counted from 5, not from 13


def test_the_summary_counts_outcomes_and_merges_the_launches_of_a_kernel(mirror):
    import runner_vs_gpu

    module = RawModule(code=CODE + "\n#if MIRROR_SIDE\n#error only on the device\n#endif\n", check=False)
    x = np.ones(8, np.float32)
    module.get_function("add")((1,), (8,), (x, np.float32(1), np.int32(8), np.int32(0)))  # fails on the device
    other = RawModule(code=CODE, check=False)
    other.get_global("offset").view(np.float32)[0] = 0  # the library, and so its globals, is the process's
    for n in (4, 8):
        y = np.ones(n, np.float32)
        other.get_function("add")((1,), (n,), (y, np.float32(1), np.int32(n), np.int32(1)))
    result = runner_vs_gpu.summary(mirror.records)
    assert result["launches"] == 3 and result["outcomes"] == {"differs": 2, "GPU build failed": 1}
    (entry,) = result["differing"]
    assert entry["kernel"] == "add" and entry["launches"] == 2
    output = entry["outputs"]["args[0]"]
    assert output["elements_differing"] == 1 and output["first"][0] == 3
    assert output["max_relative_difference"] == 1.0  # 2 on the device against 1
    assert "only on the device" in next(iter(result["failed_gpu_builds"].values()))


def test_the_script_says_in_one_line_that_it_needs_a_gpu(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "runner_vs_gpu.py"
    environment = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""}  # no GPU reachable, CuPy or not
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out.json")], capture_output=True,
                          text=True, timeout=120, env=environment)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("python scripts/runner_vs_gpu.py: error: the mirror needs CuPy and a GPU")
    assert not (tmp_path / "out.json").exists()
