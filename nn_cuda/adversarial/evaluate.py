"""Clean, FGSM and PGD accuracy of a model on a set of images, for several radii eps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import model
from .attacks import Attacker


def default_alpha(eps: float, steps: int) -> float:
    """The PGD step of Madry et al.: 2.5 eps / k, so k steps can cross the ball and come back."""
    return 2.5 * eps / steps


@dataclass
class Robustness:
    eps: float
    clean: float
    fgsm: float
    pgd: float
    steps: int
    alpha: float

    @property
    def pgd_at_least_as_strong(self) -> bool:
        return self.pgd <= self.fgsm


def _accuracy_on(backend, params, workspace, X, labels_host) -> int:
    """Number of rows of X classified as their label."""
    Yhat = model.forward(backend, params, workspace, X)
    return int(np.sum(backend.argmax_rows(Yhat) == labels_host))


def robustness(backend, params: model.Parameters, x, y, eps_values, steps: int, alpha: float | None = None,
               batch: int = 500, random_start: bool = False, seed: int = 0,
               pixel_max: float = 1.0) -> list[Robustness]:
    """Accuracy on (x, y) clean and under FGSM and k-step PGD, per eps.

    x, y are backend arrays (images in [0, pixel_max], int32 labels); eps and alpha are in [0, 1]
    pixel units (nn_cuda.adversarial.attacks). alpha defaults to 2.5 eps / k.
    """
    n = x.shape[0]
    batch = max(1, min(batch, n))
    attacker = Attacker(backend, params, batch, seed=seed, pixel_max=pixel_max)
    workspace = model.Workspace(backend, batch, params.hidden, params.dtype, params.n_out)
    y_host = backend.to_host(y)
    clean = sum(_accuracy_on(backend, params, workspace, x[s:s + batch], y_host[s:s + batch])
                for s in range(0, n, batch))
    results = []
    for eps in eps_values:
        a = default_alpha(eps, steps) if alpha is None else alpha
        right_fgsm = right_pgd = 0
        for s in range(0, n, batch):
            X, labels, truth = x[s:s + batch], y[s:s + batch], y_host[s:s + batch]
            right_fgsm += _accuracy_on(backend, params, workspace, attacker.fgsm(X, labels, eps), truth)
            right_pgd += _accuracy_on(backend, params, workspace,
                                      attacker.pgd(X, labels, eps, a, steps, random_start), truth)
        results.append(Robustness(eps, clean / n, right_fgsm / n, right_pgd / n, steps, a))
    return results


def format_table(rows: list[Robustness]) -> str:
    lines = ["   eps   clean    FGSM     PGD   (PGD: k steps of alpha)"]
    for r in rows:
        lines.append(f"{r.eps:6.3f}  {r.clean:6.4f}  {r.fgsm:6.4f}  {r.pgd:6.4f}   k={r.steps} alpha={r.alpha:.4g}")
    return "\n".join(lines)
