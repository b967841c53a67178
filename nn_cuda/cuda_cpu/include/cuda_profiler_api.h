// CUDA's profiler API, which host code beside the kernels calls (cuda-samples' matrixMul brackets its
// timing with it): for code built with backend="nvcc", as nvcc has it; a kernel that calls one ends
// its launch with a KernelError naming it (nn_cuda_cpu_host_api.h). NVRTC cannot compile the header (it
// declares host functions), so a RawModule with backend="nvrtc" refuses the #include before building
// (nvrtc_headers.py).
#pragma once

#ifdef NN_CUDA_CPU_HOST_API  // read first in every build with backend="nvcc"
inline cudaError_t cudaProfilerStart() { nn_cuda_cpu::host_api_called("cudaProfilerStart"); }
inline cudaError_t cudaProfilerStop() { nn_cuda_cpu::host_api_called("cudaProfilerStop"); }
#endif
