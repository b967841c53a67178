"""`python -m nn_cuda.adversarial eval | train` (see cli.py)."""

import sys

from ..interrupts import ends_in_one_line_while_starting

with ends_in_one_line_while_starting("nn_cuda.adversarial"):
    from .cli import main

sys.exit(main())
