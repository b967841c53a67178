"""When has a training run diverged? Decided at each loss read-back (every --print-every steps).

A network that guesses uniformly over the 10 classes has the loss ln 10 = 2.30; an untrained one
starts there. A run has diverged when, at a read-back,

1. the loss or a parameter is NaN or infinite;
2. the weights' root mean square is above 10 (WEIGHTS_RMS_LIMIT): the init draws them at
   0.01 N(0, 1) or less, so that is a thousandfold growth, with every sigmoid of the hidden layer saturated;
   or
3. the loss has been above 10 ln 10 = 23 (FAR_ABOVE_UNIFORM) at every read-back for 50 steps or more
   (STUCK_STEPS), at least 3 read-backs.

A large finite loss alone is not enough. A run on [0, 1] pixels at lr = 0.5 and H = 1000 climbs from
2.3 to 23.5 (step 6) and comes back below 3 by step 16: the first updates move every logit by a step
that grows with H, and softmax punishes the overshoot until W2 settles. A float32 cross-entropy is
also capped near 87 (-ln of the smallest float), so a run stuck in saturation shows a loss of 80,
not of 1e6. Measured on mnist-sample (batches 100 and 800, float32 and float64, lr 0.05 to 11,
H = 100 to 8000, 4 to 20 epochs): every run that learns stays above 23 for at most 15 consecutive
steps (H = 8000 at lr 0.5) and keeps the weights' RMS below 0.2 (lr 11); runs that end at
accuracy 0.1 (-l 100, -l 1000, --pixels raw -l 1 or 5, -r 3) stay above 23 for 86 to 100 steps, and
-l 1000 reaches an RMS of 170 at step 2, -l 1e6 and -r 1e10 far more at step 1.
"""

from __future__ import annotations

import math

from .config import TrainConfig

UNIFORM_LOSS = math.log(10)
FAR_ABOVE_UNIFORM = 10 * UNIFORM_LOSS
STUCK_STEPS = 50
STUCK_READ_BACKS = 3
WEIGHTS_RMS_LIMIT = 10.0


def likely_cause(lr: float, reg: float, initial_rms: float = 0.01, backend: str = "numpy",
                 default_lr: float = TrainConfig.lr) -> str:
    """The flag to change, with an example.

    Weights that start beyond WEIGHTS_RMS_LIMIT (an --init checkpoint of absurd weights) are blamed
    first. With lr * reg >= 1 the weight decay of the update W <- (1 - lr reg) W - lr dW overshoots
    zero at every step; then the one of lr and reg that is further above its default is blamed
    (-r 1e10: reg; -l 1e6 at the default reg: lr). The learning rate suggested is the default where
    lr is above it (a tenth of 1000 diverges as well), else a tenth of lr; `default_lr` is the run's
    (config.default_lr: another with --pixels unit). On a backend other than NumPy the kernels may be
    at fault instead, and the line says how to tell.
    """
    if initial_rms > WEIGHTS_RMS_LIMIT:
        return (f"likely cause: the initial weights, whose root mean square is {initial_rms:.3g} before the first "
                f"step (the init draws at most 0.01 N(0, 1)): start from another --init checkpoint, or none")
    if lr * reg >= 1 and reg / TrainConfig.reg > lr / default_lr:
        cause = (f"likely cause: the regularisation {reg:g} (-r/--reg): lr x reg = {lr * reg:g} is 1 or more, "
                 f"so every update overshoots the weight decay; use -r well below 1/lr = {1 / lr:g} "
                 f"(the default is {TrainConfig.reg:g})")
    else:
        suggested = (f"{default_lr:g} (the default)" if lr > default_lr else f"{lr / 10:g}")
        cause = f"likely cause: the learning rate {lr:g} (-l/--lr); lower it, e.g. --lr {suggested}"
    if backend != "numpy":
        cause += (f"; if the same flags train with --backend numpy, the kernels compute wrongly: "
                  f"{kernel_check(backend)}")
    return cause


def kernel_check(backend: str) -> str:
    """The command that checks every kernel a run on `backend` launches: the CUDA C files in use
    (kernels/ or NN_CUDA_KERNEL_DIR) with grade --kernels, the GEMM of the Numba backends with mode 4."""
    if backend in ("cuda-cpu", "cupy"):
        from .kernel_info import kernel_dir

        return f"check them with python -m nn_cuda.grade --kernels {kernel_dir()} --backend {backend}"
    return f"check their GEMM with python -m nn_cuda.grade --mode 4 --backend {backend}"


class DivergenceWatch:
    """Fed every loss read-back of a run; `check` says when the run has diverged (see the module)."""

    def __init__(self, lr: float, reg: float, initial_rms: float = 0.01, backend: str = "numpy",
                 default_lr: float = TrainConfig.lr):
        self.lr, self.reg, self.initial_rms, self.backend = lr, reg, initial_rms, backend
        self.default_lr = default_lr
        self.far_since: int | None = None  # the step of the first of the latest read-backs above 23
        self.far_read_backs = 0
        #: whether the last read-back looked like a run that learns (loss not far above a guess)
        self.healthy = True

    def check(self, step: int, loss: float, weights_rms: float, finite: bool = True) -> str | None:
        """None while the run looks sound, else the one-line reason it diverged. `finite`: False when
        a parameter is NaN or infinite (the loss may still be finite)."""
        if not math.isfinite(loss):
            return self._diverged(f"the loss is {loss:g} at step {step}")
        if not (finite and math.isfinite(weights_rms)):
            return self._diverged(f"a parameter is NaN or infinite at step {step}")
        if weights_rms > WEIGHTS_RMS_LIMIT:
            return self._diverged(
                f"the weights' root mean square is {weights_rms:.3g} at step {step} (they start at {self.initial_rms:.2g}; "
                f"above {WEIGHTS_RMS_LIMIT:g} every sigmoid saturates)")
        self.healthy = loss <= FAR_ABOVE_UNIFORM
        if self.healthy:
            self.far_since, self.far_read_backs = None, 0
            return None
        if self.far_since is None:
            self.far_since = step
        self.far_read_backs += 1
        if step - self.far_since >= STUCK_STEPS and self.far_read_backs >= STUCK_READ_BACKS:
            return self._diverged(
                f"the loss has stayed above {FAR_ABOVE_UNIFORM:.0f} (ten times a uniform guess's ln 10) "
                f"since step {self.far_since} and is {loss:.4g} at step {step}")
        return None

    def _diverged(self, what: str) -> str:
        self.healthy = False
        cause = likely_cause(self.lr, self.reg, self.initial_rms, self.backend, self.default_lr)
        return f"training diverged: {what}; {cause}"
