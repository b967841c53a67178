"""The CUDA C kernels of kernels/*.cu compiled by the host C++ compiler and run on the CPU.

- runtime.h   the CUDA built-ins (threadIdx, __shared__, __syncthreads) with fibers for threads
- build.py    the compiler, the translation unit of one kernel file, building and loading a library
- build_cache.py  the private cache of built libraries: what it loads is what was built
- runner.py   a launch with its arguments, and the checking mode (NN_CUDA_CPU_CHECK=1)
"""
