"""`python -m nn_cuda.adversarial eval | train` (see cli.py)."""

import sys

from .cli import main

sys.exit(main())
