"""A launch's path through Python stays short (nn_cuda.launch_cost): every operation of the network
reaches the CPU runner's compiled kernel in at most MAX_PYTHON_CALLS Python calls, and the benchmark
that publishes the count and the time writes its record."""

import json

import pytest

from nn_cuda import launch_cost
from nn_cuda.backends.cuda_cpu_backend import CudaCpuBackend


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_launch_takes_at_most_fifteen_python_calls(dtype):
    counts = {name: launch_cost.python_calls(call)
              for name, call in launch_cost.operations(CudaCpuBackend(check=False), dtype).items()}
    assert set(counts) == {"gemm", "bias_sigmoid", "bias_softmax", "softmax_grad", "sigmoid_backward", "col_sum",
                           "sgd_update"}
    assert all(3 <= count <= launch_cost.MAX_PYTHON_CALLS for count in counts.values()), counts


def test_the_counter_counts_calls():
    def inner():
        return 1

    def outer():
        return inner() + inner()

    assert launch_cost.python_calls(outer) == 2


def test_the_benchmark_writes_its_record(tmp_path, capsys):
    from bench_launch import main

    assert main(["--repeat", "3", "--json", str(tmp_path / "launch.json")]) == 0
    record = json.loads((tmp_path / "launch.json").read_text())
    assert record["benchmark"] == "launch" and record["backend"] == "cuda-cpu"
    rows = {row["operation"]: row for row in record["results"]}
    assert rows["gemm"]["python_calls"] <= launch_cost.MAX_PYTHON_CALLS and rows["gemm"]["launch_us"] > 0
    assert "gemm" in capsys.readouterr().out
