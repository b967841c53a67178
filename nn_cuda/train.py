"""`python -m nn_cuda.train`: train the network on one backend (and, under mpirun, on several ranks).

The flags are the course's (nn_cuda.config); the work is nn_cuda.training's `run`, or, with -g MODE,
the grading harness (nn_cuda.grading).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import failed
from .interrupts import ends_in_one_line_when_interrupted, ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.train"):
    from . import parallel
    from .config import parse_args
    from .grading import course_config, run_grade
    from .relative_errors import THRESHOLDS
    from .training import USER_ERRORS, TrainingError, run


@ends_in_one_line_when_interrupted("nn_cuda.train")
def main(argv=None) -> int:
    with parallel.output_on_root_only():  # under mpirun: usage errors and --help once
        cfg = parse_args(argv)
    parallel.share_cores_between_ranks()  # under mpirun: each rank's BLAS gets its share of the cores
    try:
        # Under mpirun an error on any rank ends the whole job (message once, exit status 1).
        with parallel.abort_on_error("nn_cuda.train", USER_ERRORS):
            if cfg.grade:
                graded = cfg if cfg.grade == 4 else course_config(cfg.grade, cfg.replace(quiet=True))
                return 0 if run_grade(cfg.grade, graded, Path("Outputs")) else 1
            result = run(cfg)
            if not result.get("matches_reference", True):  # -s (on the root rank): its FAIL is the run's
                raise TrainingError(f"-s: the parameters differ from the NumPy reference's by more than "
                                    f"{THRESHOLDS[cfg.dtype]:g} (the course's {cfg.dtype} threshold): the FAIL "
                                    "rows above")
    except USER_ERRORS as exc:
        return failed("nn_cuda.train", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
