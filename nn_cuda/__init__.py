"""nn_cuda: the CME 213 two-layer MNIST network, trained with hand-written GPU kernels and MPI."""

__version__ = "0.1.0"
