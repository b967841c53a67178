"""The network and its training step, written once for every backend.

    X (n x 784) -> Z1 = X W1^T + b1 -> A1 = sigmoid(Z1) (n x H) -> Z2 = A1 W2^T + b2 -> Yhat = softmax(Z2)

Row-major, one sample per row; W1 is (H x 784) and W2 is (10 x H), (out, in) as in the project
statement. The loss of a batch of N samples is

    J = (1/N) sum_i CE(y_i, Yhat_i) + 0.5 * reg * (|W1|^2 + |W2|^2)

and the gradients (the statement's equations 3-7, for a batch of rows) are

    dZ2 = (Yhat - Y) / N           dW2 = dZ2^T A1 + reg W2       db2 = column sums of dZ2
    dZ1 = (dZ2 W2) * A1 * (1 - A1) dW1 = dZ1^T X  + reg W1       db1 = column sums of dZ1

`backward` writes only the data terms (dZ2^T A1, ...) into the gradient buffer: the reg terms are added
by the update, W <- W - lr * (dW + reg * W), which is plain SGD on J. Keeping them out of the buffer lets
data-parallel training sum the buffer over ranks and get exactly the serial gradient.

Every function here calls the backend interface (nn_cuda/backends/base.py) and nothing else, so the
same lines run on NumPy, CuPy and Numba. Buffers are allocated once (Parameters, Workspace); a step
allocates nothing.
"""

from __future__ import annotations

import time

import numpy as np

N_INPUTS = 784
N_CLASSES = 10
#: the course feeds raw pixels, 0-255; "unit" pixels (--pixels unit) are those divided by this
RAW_PIXEL_MAX = 255
PARAMETER_NAMES = ("W1", "b1", "W2", "b2")


def pixel_max(pixels: str) -> float:
    """The largest value of a pixel on the network's input: 255 for "raw" pixels, 1 for "unit" ones."""
    return float(RAW_PIXEL_MAX) if pixels == "raw" else 1.0


def parameter_shapes(hidden: int, n_in: int = N_INPUTS, n_out: int = N_CLASSES) -> dict:
    return {"W1": (hidden, n_in), "b1": (hidden,), "W2": (n_out, hidden), "b2": (n_out,)}


def parameter_count(hidden: int, n_in: int = N_INPUTS, n_out: int = N_CLASSES) -> int:
    """The number of parameters (weights and biases) of the network with H = `hidden`."""
    return sum(int(np.prod(shape)) for shape in parameter_shapes(hidden, n_in, n_out).values())


#: (s1, s2) with W1 ~ s1 N(0, 1), W2 ~ s2 N(0, 1): the course's initialisation (its grading runs)
COURSE_INIT_SCALE = (0.01, 0.01)
#: the default run's: a smaller W1 for the course's raw 0-255 pixels, so that the hidden units start
#: as distinct features without all saturating (chosen by measurement, docs/training.md)
DEFAULT_INIT_SCALE = (0.003, 0.01)


def init_parameters(hidden: int, seed: int = 0, n_in: int = N_INPUTS, n_out: int = N_CLASSES,
                    scale: tuple = DEFAULT_INIT_SCALE) -> dict:
    """Host float64 parameters: W1 ~ scale[0] N(0, 1), W2 ~ scale[1] N(0, 1) from `seed`, biases zero.

    The draw is in float64 and the same for every dtype, so float32 and float64 runs (and every
    backend) start from the same weights, rounded.
    """
    rng = np.random.default_rng(seed)
    shapes = parameter_shapes(hidden, n_in, n_out)
    W1, W2 = rng.standard_normal(shapes["W1"]), rng.standard_normal(shapes["W2"])
    W1 *= scale[0]  # in place: no second float64 copy of W1 at its peak
    W2 *= scale[1]
    return {"W1": W1, "b1": np.zeros(shapes["b1"]), "W2": W2, "b2": np.zeros(shapes["b2"])}


class Parameters:
    """W1, b1, W2, b2 as views into one flat backend buffer, laid out [W1 | W2 | b1 | b2].

    One buffer means one message to allreduce gradients; weights first and biases last means one
    fused update for all weights (with weight decay) and one for all biases (without).
    The same class holds the gradients.
    """

    def __init__(self, backend, hidden: int, dtype, n_in: int = N_INPUTS, n_out: int = N_CLASSES):
        self.backend = backend
        self.hidden, self.n_in, self.n_out = hidden, n_in, n_out
        self.dtype = np.dtype(dtype)
        self.shapes = parameter_shapes(hidden, n_in, n_out)
        sizes = {name: int(np.prod(shape)) for name, shape in self.shapes.items()}
        self.n_weights = sizes["W1"] + sizes["W2"]
        self.size = self.n_weights + sizes["b1"] + sizes["b2"]
        self.flat = backend.empty((self.size,), self.dtype)
        self.offsets = {}
        offset = 0
        for name in ("W1", "W2", "b1", "b2"):
            self.offsets[name] = (offset, offset + sizes[name])
            view = self.flat[offset : offset + sizes[name]].reshape(self.shapes[name])
            setattr(self, name, view)
            offset += sizes[name]
        self.weights = self.flat[: self.n_weights]
        self.biases = self.flat[self.n_weights :]

    def load(self, host: dict) -> None:
        """Copy host arrays {W1, b1, W2, b2} in (cast to this dtype), checking their shapes."""
        flat = np.empty(self.size, dtype=self.dtype)
        for name in PARAMETER_NAMES:
            value = np.asarray(host[name])
            if value.shape != self.shapes[name]:
                raise ValueError(f"{name} has shape {value.shape}, expected {self.shapes[name]}")
            start, stop = self.offsets[name]
            flat[start:stop] = value.ravel()
        self.backend.copy(self.backend.to_device(flat), self.flat)

    def to_host(self) -> dict:
        """NumPy copies {W1, b1, W2, b2}."""
        flat = self.backend.to_host(self.flat)
        return {
            name: flat[start:stop].reshape(self.shapes[name]).copy()
            for name, (start, stop) in self.offsets.items()
        }


class Workspace:
    """Activations and their gradients for batches of up to `batch` rows, allocated once.

    Z1 and A1 share a buffer (the sigmoid runs in place), Z2 and Yhat too, dA1 and dZ1 too.
    """

    def __init__(self, backend, batch: int, hidden: int, dtype, n_out: int = N_CLASSES):
        self.batch = batch
        self.A1 = backend.empty((batch, hidden), dtype)
        self.Yhat = backend.empty((batch, n_out), dtype)
        self.dZ1 = backend.empty((batch, hidden), dtype)
        self.dZ2 = backend.empty((batch, n_out), dtype)


def forward(backend, params: Parameters, workspace: Workspace, X, reduce_logits=None):
    """Yhat = softmax(sigmoid(X W1^T + b1) W2^T + b2) for the rows of X; returns the view of Yhat.

    `reduce_logits(Z2)`, when given, is called on A1 W2^T before b2 and the softmax: model-parallel
    training sums the partial logits of the ranks there.
    """
    n = X.shape[0]
    A1, Yhat = workspace.A1[:n], workspace.Yhat[:n]
    if n == 0:  # a data-parallel rank with no rows of a short batch (kernels need sizes >= 1)
        return Yhat
    backend.gemm(X, params.W1, A1, 1.0, 0.0, trans_b=True)
    backend.bias_sigmoid(A1, params.b1, A1)
    backend.gemm(A1, params.W2, Yhat, 1.0, 0.0, trans_b=True)
    if reduce_logits is not None:
        reduce_logits(Yhat)
    backend.bias_softmax(Yhat, params.b2, Yhat)
    return Yhat


def backward(backend, params: Parameters, grads: Parameters, workspace: Workspace, X, labels, scale: float,
             after_layer2=None):
    """The data terms of the gradients of the last `forward` into `grads`.

    `scale` is 1 / (the number of samples the loss averages over): 1 / len(X) in serial training,
    1 / (the full batch) when the batch is split over ranks. A rank with no rows writes zeros.
    `after_layer2(grads)`, when given, is called as soon as dW2 and db2 are written, before the
    layer-1 gradients: data-parallel training starts their allreduce there (--overlap).
    """
    n = X.shape[0]
    if n == 0:
        backend.fill(grads.flat, 0)
        if after_layer2 is not None:
            after_layer2(grads)
        return
    A1, Yhat, dZ1, dZ2 = workspace.A1[:n], workspace.Yhat[:n], workspace.dZ1[:n], workspace.dZ2[:n]
    backend.softmax_grad(Yhat, labels, scale, dZ2)
    backend.gemm(dZ2, A1, grads.W2, 1.0, 0.0, trans_a=True)
    backend.col_sum(dZ2, grads.b2)
    if after_layer2 is not None:
        after_layer2(grads)
    backend.gemm(dZ2, params.W2, dZ1, 1.0, 0.0)
    backend.sigmoid_backward(dZ1, A1, dZ1)
    backend.gemm(dZ1, X, grads.W1, 1.0, 0.0, trans_a=True)
    backend.col_sum(dZ1, grads.b1)


def sgd_update(backend, params: Parameters, grads: Parameters, lr: float, reg: float) -> None:
    """W <- W - lr (dW + reg W) for the weights; b <- b - lr db for the biases."""
    backend.sgd_update(params.weights, grads.weights, lr, reg)
    backend.sgd_update(params.biases, grads.biases, lr, 0.0)


def training_step(backend, params: Parameters, grads: Parameters, workspace: Workspace, X, labels, scale: float,
                  lr: float, reg: float, strategy=None, stage=None):
    """One step of mini-batch SGD, the one that training, the benchmarks, the profiler and the
    asynchronous adversarial pipeline all run: forward, backward, the strategy's gradient allreduce,
    update. Returns Yhat (the workspace's softmax output of X).

    `scale` is 1 / (the batch size over every rank). `strategy`, under MPI, brings the parallel
    hooks (nn_cuda.parallel: `reduce_logits`, `after_layer2`, `allreduce_gradients`); None is serial.
    `stage(name)`, when given, is told as the "forward" and the "backward" pass begin (the profiler
    files each GEMM under its pass).
    """
    with backend.launch_scope():
        if stage is not None:
            stage("forward")
        Yhat = forward(backend, params, workspace, X, reduce_logits=getattr(strategy, "reduce_logits", None))
        if stage is not None:
            stage("backward")
        backward(backend, params, grads, workspace, X, labels, scale,
                 after_layer2=getattr(strategy, "after_layer2", None))
        if strategy is not None:
            strategy.allreduce_gradients(grads)
        sgd_update(backend, params, grads, lr, reg)
    return Yhat


def load_step_kernels(backend, params) -> float:
    """Seconds taken to compile and load every kernel of a training step, 0.0 where the backend does
    not compile at a kernel's first launch (backend.compiles_at_first_launch).

    It runs one step on a batch of one zero row with parameters of zeros, its own buffers and no
    communication, then the loop's loss read-backs: the same kernels, template instances and argument
    types as the real steps, so that NVRTC, Numba's JIT or the host compiler (and CuPy for the
    read-backs' own kernels) do their once-per-process (or once-per-machine) work here and not in the
    first epoch's training time. The training's parameters are not touched.
    """
    if not backend.compiles_at_first_launch:
        return 0.0
    started = time.perf_counter()
    scratch, grads = (Parameters(backend, params.hidden, params.dtype, params.n_in, params.n_out)
                      for _ in range(2))
    backend.fill(scratch.flat, 0)
    X = backend.empty((1, params.n_in), params.dtype)
    backend.fill(X, 0)
    labels = backend.to_device(np.zeros(1, dtype=np.int32))
    workspace = Workspace(backend, 1, params.hidden, params.dtype, params.n_out)
    Yhat = training_step(backend, scratch, grads, workspace, X, labels, 1.0, 0.0, 0.0)
    backend.cross_entropy_sum(Yhat, labels)  # the loop's read-backs (CuPy compiles its own kernels for them)
    backend.sum_squares(scratch.flat)
    backend.synchronize()
    return time.perf_counter() - started


def regularization(backend, params: Parameters, reg: float) -> float:
    """0.5 * reg * (|W1|^2 + |W2|^2), read back to the host."""
    return 0.5 * reg * backend.sum_squares(params.weights)


def loss(backend, params: Parameters, Yhat, labels, reg: float) -> float:
    """J for the rows of the last forward (host float; for reports, not on the hot path)."""
    n = Yhat.shape[0]
    return backend.cross_entropy_sum(Yhat, labels) / n + regularization(backend, params, reg)


def predict(backend, params: Parameters, workspace: Workspace, X, reduce_logits=None) -> np.ndarray:
    """Predicted labels (host int array) for all rows of X, in chunks of the workspace's batch.

    `reduce_logits` as in `forward`: under model parallelism every rank of the model group must call
    predict on the same rows, since each chunk's logits are summed over them.
    """
    labels = []
    for start in range(0, X.shape[0], workspace.batch):
        Yhat = forward(backend, params, workspace, X[start : start + workspace.batch],
                       reduce_logits=reduce_logits)
        labels.append(backend.argmax_rows(Yhat))
    return np.concatenate(labels) if labels else np.empty(0, dtype=np.int64)


def input_gradient(backend, params: Parameters, workspace: Workspace, X, labels, out, scale: float = 1.0):
    """dL/dX of the last `forward` on X into out[:len(X)] (the gradient that FGSM and PGD ascend).

    L = scale * sum_i CE(y_i, Yhat_i): with scale = 1 (the attacks' convention) row i of the result is
    the gradient of sample i's own cross-entropy with respect to its pixels, whatever the batch size;
    the L2 term does not depend on X. For rows:

        dZ2 = scale (Yhat - Y),   dZ1 = (dZ2 W2) * A1 * (1 - A1),   dL/dX = dZ1 W1

    the first three lines of `backward` (no weight gradients) and one more GEMM.
    """
    n = X.shape[0]
    if n == 0:
        return out[:0]
    A1, Yhat, dZ1, dZ2 = workspace.A1[:n], workspace.Yhat[:n], workspace.dZ1[:n], workspace.dZ2[:n]
    backend.softmax_grad(Yhat, labels, scale, dZ2)
    backend.gemm(dZ2, params.W2, dZ1, 1.0, 0.0)
    backend.sigmoid_backward(dZ1, A1, dZ1)
    backend.gemm(dZ1, params.W1, out[:n], 1.0, 0.0)
    return out[:n]
