"""FGSM and PGD on any backend, through the model's own maths (`model.forward`, `model.input_gradient`)
and one element-wise backend operation (`pgd_step`).

    FGSM:  x' = clip(x + eps * sign(dL/dx), 0, 1)
    PGD:   x_0 = x (or x + U(-eps, eps), clipped to [0, 1], with random_start)
           x_{t+1} = clip(clip(x_t + alpha * sign(dL/dx_t), x - eps, x + eps), 0, 1),  k steps

L is each sample's own cross-entropy (scale 1, see `model.input_gradient`); the sign makes both attacks
independent of that scale. eps and alpha are in [0, 1] pixel units whatever the network's input: on
raw 0-255 pixels (`pixel_max` 255) the attack runs in those units, with eps, alpha and the clip scaled
by 255, which is the same attack, since sign(dL/dx) does not change when x is scaled. FGSM is PGD with
k = 1, alpha = eps and no random start, and is computed that way.
"""

from __future__ import annotations

import numpy as np

from .. import model


class Attacker:
    """Adversaries for batches of up to `batch` rows against `params`, with buffers allocated once.

    `params` is read at every step, so the attack always uses the weights it holds at that moment
    (the asynchronous pipeline swaps them between steps, `on_step`). `pixel_max` is the largest
    pixel value of the images the network takes (model.pixel_max: 1, or 255 for raw pixels).
    """

    def __init__(self, backend, params: model.Parameters, batch: int, seed: int = 0, pixel_max: float = 1.0):
        self.backend, self.params, self.batch, self.pixel_max = backend, params, batch, pixel_max
        dtype = params.dtype
        self.workspace = model.Workspace(backend, batch, params.hidden, dtype, params.n_out)
        self.grad = backend.empty((batch, params.n_in), dtype)
        self.adversaries = backend.empty((batch, params.n_in), dtype)
        self.rng = np.random.default_rng(seed)

    def fgsm(self, X, labels, eps: float, out=None):
        """The FGSM adversaries of X (a view of out, or of the attacker's own buffer)."""
        return self.pgd(X, labels, eps, alpha=eps, steps=1, random_start=False, out=out)

    def pgd(self, X, labels, eps: float, alpha: float, steps: int, random_start: bool = False,
            out=None, on_step=None):
        """k = `steps` PGD steps from X (eps and alpha in [0, 1] pixel units); returns the adversaries
        (a view of `out` or of a buffer of the attacker). `on_step(t)`, when given, is called before
        step t (t = 0 .. steps - 1)."""
        n = X.shape[0]
        if n > self.batch:
            raise ValueError(f"the attacker holds batches of up to {self.batch} rows, got {n}")
        backend, top = self.backend, self.pixel_max
        eps, alpha = eps * top, alpha * top  # in the units of the network's pixels
        adversaries = (self.adversaries if out is None else out)[:n]
        if random_start and eps > 0:
            noise = self.rng.uniform(-eps, eps, size=(n, self.params.n_in))
            start = np.clip(backend.to_host(X) + noise, 0.0, top).astype(self.params.dtype)
            backend.copy(backend.to_device(start), adversaries)
        else:
            backend.copy(X, adversaries)
        grad = self.grad[:n]
        for t in range(steps):
            if on_step is not None:
                on_step(t)
            model.forward(backend, self.params, self.workspace, adversaries)
            model.input_gradient(backend, self.params, self.workspace, adversaries, labels, grad)
            backend.pgd_step(adversaries, grad, X, alpha, eps, top, adversaries)
        return adversaries


def check_pixels(host, pixel_max: float, what: str = "the images") -> None:
    """Attacks clip to [0, pixel_max]: refuse (host) images with pixels outside, naming the range."""
    if host.size and (host.min() < 0 or host.max() > pixel_max):
        raise ValueError(
            f"{what} have pixels outside [0, {pixel_max:g}] (min {host.min():g}, max {host.max():g}), "
            "the range the attacks clip to"
        )
