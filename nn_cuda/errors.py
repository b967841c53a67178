"""The errors a backend reports to the commands, which print them in one line (no traceback).

A leaf module: the CPU runner (nn_cuda.cuda_cpu) raises them without importing the backends.
"""

import sys


class BackendUnavailable(RuntimeError):
    """The backend cannot run on this machine (no GPU or driver, CuPy or a CUDA library missing):
    the user's to fix, so the command-line tools report it in one line instead of a traceback."""


class KernelFailure(RuntimeError):
    """A kernel file did not compile, or a kernel launch failed or broke a rule (the cuda-cpu
    backend's checks): a bug in the kernels or their launch, reported in one message."""


#: Every command's exit status: 0 when its work is done (and what it checks passes); FAILED when a
#: check fails or the work could not finish (a kernel's fault, a missing GPU or dataset), after one
#: line "PROG: error: ..."; USAGE when the command line is wrong, before any work (argparse's own);
#: 128 + N when signal N ended it (130 Ctrl-C, 143 SIGTERM: nn_cuda.interrupts).
FAILED = 1
USAGE = 2


def failed(prog: str, error) -> int:
    """Print `error` as the command's one line on stderr; return FAILED, its exit status."""
    print(f"{prog}: error: {error}", file=sys.stderr)
    return FAILED
