"""How two sets of parameters are compared: the course's relative errors, and the comparison report
(NNErrors.txt, CpuGpuDiff.txt).

For each of W1, W2, b1, b2 the course reported

    max-norm error  |A - B|_inf / |A|_inf     (matrix inf-norm: the largest absolute row sum)
    l2 error        |A - B|_2   / |A|_2       (matrix 2-norm: the largest singular value)

with A the CPU reference; for the bias vectors both norms are the vector ones (max |x|, Euclidean).
A run passes when every error is at most the threshold of its precision.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .model import PARAMETER_NAMES
from .outputs import check_writable, write_text

#: the course's pass thresholds on every relative error
THRESHOLDS = {"float32": 1e-4, "float64": 1e-7}
#: the order of the course's columns
COLUMN_ORDER = ("W1", "W2", "b1", "b2")


def relative_error(reference: np.ndarray, other: np.ndarray, ord) -> float:
    """|reference - other| / |reference| in the norm `ord` (np.inf, 2, or None: Frobenius), computed in
    float64; inf where a square overflows float64 (garbage a kernel left), NaN where `other` holds one."""
    ref = np.asarray(reference, dtype=np.float64)
    diff = ref - np.asarray(other, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
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


def report_comparison(cfg, tested, reference, outputs: Path | None, log=print) -> bool:
    """Print the course's comparison of `tested` with `reference`; write the Outputs/ files.

    Returns True when every error is within the course's threshold for cfg.dtype.
    """
    errors = parameter_errors(reference.params, tested.params)
    verdict = passes(errors, cfg.dtype)
    limit = THRESHOLDS[cfg.dtype]
    lines = [f"{'':4s}{'max-norm rel. error':>22s}{'l2 rel. error':>16s}   (fail above {limit:g})"]
    for name in COLUMN_ORDER:
        inf_err, l2_err = errors[name]
        lines.append(f"{name:4s}{inf_err:22.3e}{l2_err:16.3e}   {'PASS' if verdict[name] else 'FAIL'}")
    lines.append(f"validation accuracy: reference {reference.val_acc:.4f}, "
                 f"{cfg.backend} {tested.val_acc:.4f}")
    for line in lines:
        log(line)
    if outputs is not None:
        rows = [diff_header()]
        for (step, ref_p), (step_t, test_p) in zip(reference.snapshots, tested.snapshots):
            assert step == step_t, "the two runs saved different iterations"
            rows.append(diff_row(step, parameter_errors(ref_p, test_p)))
        write_text(outputs / "NNErrors.txt", "\n".join(lines) + "\n")
        write_text(outputs / "CpuGpuDiff.txt", "\n".join(rows) + "\n")
        log(f"wrote {outputs / 'NNErrors.txt'} and {outputs / 'CpuGpuDiff.txt'}")
    return all(verdict.values())


OUTPUT_FILES = ("NNErrors.txt", "CpuGpuDiff.txt")


def check_outputs(outputs: Path) -> None:
    """OutputError, before any training, when a file of `outputs` cannot be written."""
    for name in OUTPUT_FILES:
        check_writable(outputs / name)
