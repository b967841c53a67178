"""Serial adversarial training (Madry et al.): every mini-batch is replaced by its adversaries,
generated against the current weights, before the SGD step.

The SGD loop is nn_cuda.train's own `train_loop`; only the batches differ: `AdversarialBatches`
wraps the usual `SerialBatches` and attacks each batch just before the loop consumes it, so the
attack always sees the weights of the latest update.
"""

from __future__ import annotations

from .attacks import Attacker


class AdversarialBatches:
    """The batches of `batches` (a SerialBatches), each replaced by its FGSM or PGD adversaries."""

    def __init__(self, batches, attacker: Attacker, attack: str, eps: float, alpha: float, steps: int,
                 random_start: bool = False):
        self.inner, self.attacker = batches, attacker
        self.attack, self.eps, self.alpha, self.steps = attack, eps, alpha, steps
        self.random_start = random_start

    @property
    def steps_per_epoch(self) -> int:
        return self.inner.steps_per_epoch

    def adversaries(self, X, labels):
        if self.attack == "fgsm":
            return self.attacker.fgsm(X, labels, self.eps)
        return self.attacker.pgd(X, labels, self.eps, self.alpha, self.steps, self.random_start)

    def batches(self, epoch: int):
        for X, labels, n_global in self.inner.batches(epoch):
            yield self.adversaries(X, labels), labels, n_global
