// CUDA's driver API header, which kernel files include for its types (CUdeviceptr, CUresult) or out
// of habit: its types, with CUDA 12.9's values, and what it includes itself (<stdlib.h>,
// <stdint.h>); and the driver API's common host functions, which a host helper beside the kernels calls
// (MIT 6.S894's tma-interface.cuh checks a CUresult with cuGetErrorString). A RawModule runs no host
// code: a kernel that calls one ends its launch with a KernelError naming it (nn_cuda_cpu_host_api.h).
// NVRTC cannot compile CUDA's cuda.h (no <stdlib.h>), so a RawModule with backend="nvrtc" refuses the
// #include before building (nvrtc_headers.py); this one serves backend="nvcc".
#pragma once

#include <stdint.h>
#include <stdlib.h>

#define CUDA_VERSION 12090

typedef unsigned long long CUdeviceptr;  // 64-bit hosts
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;  // the runtime's cudaStream_t, as in CUDA
typedef struct CUevent_st* CUevent;
// the tensor memory accelerator's map (cuda/barrier declares it too): its size and alignment
#ifndef NN_CUDA_CPU_CU_TENSOR_MAP
#define NN_CUDA_CPU_CU_TENSOR_MAP
typedef struct alignas(64) CUtensorMap_st {
    unsigned long long opaque[16];
} CUtensorMap;
#endif

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999,
} CUresult;

#ifdef NN_CUDA_CPU_HOST_API  // read first in every build with backend="nvcc"
#define NN_CUDA_CPU_DRIVER_FUNCTION(name, parameters) \
    inline CUresult name parameters { nn_cuda_cpu::host_api_called(#name, "driver"); }
// errors, the driver, devices and contexts
NN_CUDA_CPU_DRIVER_FUNCTION(cuGetErrorString, (CUresult, const char**))
NN_CUDA_CPU_DRIVER_FUNCTION(cuGetErrorName, (CUresult, const char**))
NN_CUDA_CPU_DRIVER_FUNCTION(cuInit, (unsigned int))
NN_CUDA_CPU_DRIVER_FUNCTION(cuDriverGetVersion, (int*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuDeviceGet, (CUdevice*, int))
NN_CUDA_CPU_DRIVER_FUNCTION(cuDeviceGetCount, (int*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuDeviceGetName, (char*, int, CUdevice))
NN_CUDA_CPU_DRIVER_FUNCTION(cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice))
NN_CUDA_CPU_DRIVER_FUNCTION(cuCtxCreate, (CUcontext*, unsigned int, CUdevice))
NN_CUDA_CPU_DRIVER_FUNCTION(cuCtxDestroy, (CUcontext))
NN_CUDA_CPU_DRIVER_FUNCTION(cuCtxGetCurrent, (CUcontext*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuCtxSetCurrent, (CUcontext))
NN_CUDA_CPU_DRIVER_FUNCTION(cuCtxSynchronize, ())
// memory
NN_CUDA_CPU_DRIVER_FUNCTION(cuMemAlloc, (CUdeviceptr*, size_t))
NN_CUDA_CPU_DRIVER_FUNCTION(cuMemFree, (CUdeviceptr))
NN_CUDA_CPU_DRIVER_FUNCTION(cuMemcpyHtoD, (CUdeviceptr, const void*, size_t))
NN_CUDA_CPU_DRIVER_FUNCTION(cuMemcpyDtoH, (void*, CUdeviceptr, size_t))
NN_CUDA_CPU_DRIVER_FUNCTION(cuMemsetD32, (CUdeviceptr, unsigned int, size_t))
// modules, launches and streams
NN_CUDA_CPU_DRIVER_FUNCTION(cuModuleLoad, (CUmodule*, const char*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuModuleLoadData, (CUmodule*, const void*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuModuleGetFunction, (CUfunction*, CUmodule, const char*))
NN_CUDA_CPU_DRIVER_FUNCTION(cuModuleUnload, (CUmodule))
NN_CUDA_CPU_DRIVER_FUNCTION(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                                             unsigned int, unsigned int, unsigned int, CUstream, void**, void**))
NN_CUDA_CPU_DRIVER_FUNCTION(cuStreamCreate, (CUstream*, unsigned int))
NN_CUDA_CPU_DRIVER_FUNCTION(cuStreamSynchronize, (CUstream))
NN_CUDA_CPU_DRIVER_FUNCTION(cuStreamDestroy, (CUstream))
#undef NN_CUDA_CPU_DRIVER_FUNCTION
#endif

// <stdint.h>'s limits (INT32_MAX, SIZE_MAX, ...), which an nvcc build hides from code that includes
// CUDA's headers only (nvrtc_headers.nvcc_prelude): CUDA's cuda.h includes <stdint.h>, so they are
// back after it; the float limits, which it does not bring, stay hidden.
#ifdef NN_CUDA_CPU_RESTORE_STDINT
NN_CUDA_CPU_RESTORE_STDINT
#endif
