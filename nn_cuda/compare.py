"""How two sets of parameters are compared: the course's relative errors.

For each of W1, W2, b1, b2 the course reported

    max-norm error  |A - B|_inf / |A|_inf     (matrix inf-norm: the largest absolute row sum)
    l2 error        |A - B|_2   / |A|_2       (matrix 2-norm: the largest singular value)

with A the CPU reference; for the bias vectors both norms are the vector ones (max |x|, Euclidean).
A run passes when every error is at most the threshold of its precision.
"""

from __future__ import annotations

import numpy as np

from .model import PARAMETER_NAMES

#: the course's pass thresholds on every relative error
THRESHOLDS = {"float32": 1e-4, "float64": 1e-7}
#: the order of the course's columns
COLUMN_ORDER = ("W1", "W2", "b1", "b2")


def relative_error(reference: np.ndarray, other: np.ndarray, ord) -> float:
    """|reference - other| / |reference| in the norm `ord` (np.inf or 2), computed in float64."""
    ref = np.asarray(reference, dtype=np.float64)
    diff = ref - np.asarray(other, dtype=np.float64)
    denominator = np.linalg.norm(ref, ord)
    numerator = np.linalg.norm(diff, ord)
    if denominator == 0:
        return 0.0 if numerator == 0 else float("inf")
    return float(numerator / denominator)


def parameter_errors(reference: dict, other: dict) -> dict:
    """{name: (max-norm error, l2 error)} for W1, W2, b1, b2."""
    return {
        name: (relative_error(reference[name], other[name], np.inf),
               relative_error(reference[name], other[name], 2))
        for name in PARAMETER_NAMES
    }


def passes(errors: dict, dtype: str) -> dict:
    """{name: True when both errors are within the course's threshold for `dtype`}."""
    limit = THRESHOLDS[dtype]
    return {name: bool(max(pair) <= limit) for name, pair in errors.items()}  # NaN fails


def diff_header() -> str:
    cols = ["iteration"]
    for name in COLUMN_ORDER:
        cols += [f"{name}_maxnorm", f"{name}_l2"]
    return "\t".join(cols)


def diff_row(iteration: int, errors: dict) -> str:
    values = [str(iteration)]
    for name in COLUMN_ORDER:
        values += [f"{errors[name][0]:.6e}", f"{errors[name][1]:.6e}"]
    return "\t".join(values)
