"""The errors a backend reports to the commands, which print them in one line (no traceback).

A leaf module: the CPU runner (nn_cuda.cuda_cpu) raises them without importing the backends.
"""


class BackendUnavailable(RuntimeError):
    """The backend cannot run on this machine (no GPU or driver, CuPy or a CUDA library missing):
    the user's to fix, so the command-line tools report it in one line instead of a traceback."""


class KernelFailure(RuntimeError):
    """A kernel file did not compile, or a kernel launch failed or broke a rule (the cuda-cpu
    backend's checks): a bug in the kernels or their launch, reported in one message."""
