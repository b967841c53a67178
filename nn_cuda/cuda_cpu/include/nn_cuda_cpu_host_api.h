// The CUDA runtime API's common host functions, for code built with backend="nvcc": nvcc declares them in
// every file (through the cuda_runtime.h it includes first), so a host helper beside the kernels that
// calls one builds there (a CUDA_CHECK macro's gpuAssert calling cudaGetErrorString, a timer class's
// events), where NVRTC refuses it; and so does one that calls a function of another file of the project
// (a tutorial's launcher), which the build gives a stand-in (defined_nowhere, below). A RawModule runs no
// host code: Python launches its kernels. So a call of one here comes from a kernel, which nvcc refuses
// (a __host__ function called from device code), and it ends the launch with a KernelError naming the
// function. Each function is inline: one no kernel calls leaves nothing in the library. The runtime
// API's types and codes are in driver_types.h. The driver API's common functions are in cuda.h, which code
// includes to call them, as with CUDA.
#pragma once
#define NN_CUDA_CPU_HOST_API

#include "driver_types.h"

namespace nn_cuda_cpu {
[[noreturn]] inline void host_api_called(const char* name, const char* api = "runtime")
{
    const uint3 thread = current != nullptr ? current->thread_idx : uint3{0, 0, 0};
    report("%s: thread (%u, %u, %u) of block (%u, %u, %u) calls %s, a host function of the CUDA %s API: nvcc "
           "refuses a call of it in device code (a __host__ function called from a __global__ one), and a RawModule "
           "runs no host code (Python launches its kernels): do in Python what it does, or leave it out of the kernel",
           launch.kernel, thread.x, thread.y, thread.z, block_idx.x, block_idx.y, block_idx.z, name, api);
    end_launch_reported();
}

// The stand-in of a function the code declares and never defines (build.host_function_stubs), where a
// kernel calls it.
[[noreturn]] inline void defined_nowhere(const char* name)
{
    const uint3 thread = current != nullptr ? current->thread_idx : uint3{0, 0, 0};
    report("%s: thread (%u, %u, %u) of block (%u, %u, %u) calls %s, which the code declares and never defines (an "
           "nvcc build takes it where host code alone calls it; ptxas refuses a kernel that calls it, \"Unresolved "
           "extern function\"): define it", launch.kernel, thread.x, thread.y, thread.z, block_idx.x, block_idx.y,
           block_idx.z, name);
    end_launch_reported();
}
}  // namespace nn_cuda_cpu

// One host function: its return type, name and parameters (unnamed; CUDA's defaults kept).
#define NN_CUDA_CPU_HOST_FUNCTION(type, name, parameters) \
    inline type name parameters { nn_cuda_cpu::host_api_called(#name); }
// A template of CUDA's C++ API (cudaMalloc(T**, size_t), ...), beside the C function of the same name.
#define NN_CUDA_CPU_HOST_TEMPLATE(type, name, parameters) \
    template <class T> NN_CUDA_CPU_HOST_FUNCTION(type, name, parameters)

#ifndef cudaMemAttachGlobal
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#endif
#ifndef cudaHostAllocDefault
#define cudaHostAllocDefault 0x00
#define cudaHostAllocMapped 0x02
#endif
#ifndef cudaEventDefault
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#endif
#ifndef cudaStreamDefault
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#endif

// the attributes a launcher sets most (CUDA's values): the opt-in to more than 48 KiB of dynamic shared memory
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

// nvcc reads CUDA's cuda_runtime.h, and driver_types.h through it, first in every file: their include
// guards tell code so (cuda-samples' helper_cuda.h defines checkCudaErrors and getLastCudaError only
// where they are defined)
#ifndef __DRIVER_TYPES_H__
#define __DRIVER_TYPES_H__
#endif
#ifndef __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_H__
#endif

// the attributes cudaDeviceGetAttribute gives that host code asks for most, at CUDA's values
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrIntegrated = 18,
    cudaDevAttrComputeMode = 20,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaComputeMode {
    cudaComputeModeDefault = 0,
    cudaComputeModeExclusive = 1,
    cudaComputeModeProhibited = 2,
    cudaComputeModeExclusiveProcess = 3,
};

// a device's properties, the fields host code reads most (HOOMD-blue's launchers take a cudaDeviceProp)
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor, totalConstMem;
    int regsPerBlock, regsPerMultiprocessor, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int clockRate, memoryClockRate, memoryBusWidth, l2CacheSize, major, minor, multiProcessorCount;
    int maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor, concurrentKernels, asyncEngineCount;
    int unifiedAddressing, managedMemory, cooperativeLaunch, computeMode, integrated, canMapHostMemory, ECCEnabled;
    int pciBusID, pciDeviceID, pciDomainID;
};

// errors
NN_CUDA_CPU_HOST_FUNCTION(const char*, cudaGetErrorString, (cudaError_t))
NN_CUDA_CPU_HOST_FUNCTION(const char*, cudaGetErrorName, (cudaError_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaGetLastError, ())
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaPeekAtLastError, ())
// devices
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaDeviceSynchronize, ())
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaThreadSynchronize, ())
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaDeviceReset, ())
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaSetDevice, (int))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaGetDevice, (int*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaGetDeviceCount, (int*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemGetInfo, (size_t*, size_t*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaGetDeviceProperties, (cudaDeviceProp*, int))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaDeviceGetAttribute, (int*, cudaDeviceAttr, int))
// memory
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMalloc, (void**, size_t))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaMalloc, (T**, size_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMallocManaged, (void**, size_t, unsigned int = cudaMemAttachGlobal))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaMallocManaged, (T**, size_t, unsigned int = cudaMemAttachGlobal))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMallocHost, (void**, size_t))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaMallocHost, (T**, size_t, unsigned int = 0))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaHostAlloc, (void**, size_t, unsigned int))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaHostAlloc, (T**, size_t, unsigned int))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaFree, (void*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaFreeHost, (void*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemcpy, (void*, const void*, size_t, cudaMemcpyKind))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemcpyAsync, (void*, const void*, size_t, cudaMemcpyKind, cudaStream_t = 0))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemcpy2D,
                          (void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemset, (void*, int, size_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemsetAsync, (void*, int, size_t, cudaStream_t = 0))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaMemPrefetchAsync, (const void*, size_t, int, cudaStream_t = 0))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaMemcpyToSymbol,
                          (const T&, const void*, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaMemcpyFromSymbol,
                          (void*, const T&, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost))
// events and streams
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventCreate, (cudaEvent_t*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventCreateWithFlags, (cudaEvent_t*, unsigned int))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventRecord, (cudaEvent_t, cudaStream_t = 0))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventSynchronize, (cudaEvent_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventQuery, (cudaEvent_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventElapsedTime, (float*, cudaEvent_t, cudaEvent_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaEventDestroy, (cudaEvent_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaStreamCreate, (cudaStream_t*))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaStreamCreateWithFlags, (cudaStream_t*, unsigned int))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaStreamSynchronize, (cudaStream_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaStreamQuery, (cudaStream_t))
NN_CUDA_CPU_HOST_FUNCTION(cudaError_t, cudaStreamDestroy, (cudaStream_t))
// kernels
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaFuncSetAttribute, (T*, cudaFuncAttribute, int))
NN_CUDA_CPU_HOST_TEMPLATE(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessor, (int*, T, int, size_t))

#undef NN_CUDA_CPU_HOST_TEMPLATE
#undef NN_CUDA_CPU_HOST_FUNCTION
