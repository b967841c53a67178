"""A plain `pytest` on a machine with a GPU: Numba is imported without its simulator there.

tests/conftest.py turns Numba's simulator on only where it finds no GPU, so on a GPU machine the tests
run with NUMBA_ENABLE_CUDASIM unset, and a test that asks for `--backend numba-sim` inside the pytest
process was refused (exit 2). Running the tests with NUMBA_ENABLE_CUDASIM=0 reproduces that
environment on any machine: the tests that choose the simulator must still pass.

It runs in the GPU install (pip install -e '.[mpi,dev,gpu]'), as on a GPU machine and in .ci/run's
second stage; in the README's CPU install these tests already run in the simulator, and running them
again here would repeat them.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cupy", reason="Numba starting as on a GPU machine is checked in the GPU install "
                                   "(pip install -e '.[gpu]'), as .ci/run's second stage does")

REPOSITORY = Path(__file__).resolve().parents[1]


def test_the_simulator_tests_pass_when_numba_starts_without_the_simulator():
    environment = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "tests/test_numba_sim.py",
               "tests/test_grade.py", "-k", "numba_simulator_matches or wrong_backend"]
    result = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPOSITORY,
                            timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    assert passed and int(passed[1]) >= 2, output
