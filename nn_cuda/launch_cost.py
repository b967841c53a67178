"""What one kernel launch costs the host: the Python calls from a network operation down to the
compiled kernel, and the time of each operation's smallest launch (one element, one block).

The backends of the CUDA C kernels keep this path short on purpose (nn_cuda/backends/cuda_kernels.py:
the usual arguments validated in one expression, each kernel's launch line read once, its arguments
checked against the C signature at its first launch only), so that the CPU runner spends its time in
the kernels. `python scripts/bench_launch.py` measures it; tests/test_launch_cost.py holds it to at
most MAX_PYTHON_CALLS.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

#: the most Python function calls one launch may make (measured: 12 to 14 on the CPU runner)
MAX_PYTHON_CALLS = 15


def operations(backend, dtype="float32") -> dict[str, Callable[[], None]]:
    """Each operation of the network on `backend` at its smallest size, as a call without arguments."""
    dtype = np.dtype(dtype)

    def array(*shape, value=0.5):
        return backend.to_device(np.full(shape, value, dtype))

    one, row, out = array(1, 1), array(1), array(1, 1)
    labels = backend.to_device(np.zeros(1, np.int32))
    C = array(1, 1)
    return {
        "gemm": lambda: backend.gemm(one, one, C, 1.0, 0.0),
        "bias_sigmoid": lambda: backend.bias_sigmoid(one, row, out),
        "bias_softmax": lambda: backend.bias_softmax(one, row, out),
        "softmax_grad": lambda: backend.softmax_grad(one, labels, 1.0, out),
        "sigmoid_backward": lambda: backend.sigmoid_backward(one, one, out),
        "col_sum": lambda: backend.col_sum(one, row),
        "sgd_update": lambda: backend.sgd_update(out, one, 0.1, 0.0),
    }


def python_calls(call: Callable[[], None]) -> int:
    """How many Python functions `call` calls (its own frame not counted), after one warm-up call
    (the first launch of a kernel compiles and checks it)."""
    call()
    calls = 0

    def count(frame, event, argument):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls - 1

