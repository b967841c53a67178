// CUDA's driver API header, which kernel files include for its types (CUdeviceptr, CUresult) or out
// of habit: its types, with CUDA 12.9's values, and what it includes itself (<stdlib.h>,
// <stdint.h>). No function of the driver API is here: a RawModule holds device code only. NVRTC
// cannot compile CUDA's cuda.h (no <stdlib.h>), so a RawModule with backend="nvrtc" refuses the
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

// <stdint.h>'s limits (INT32_MAX, SIZE_MAX, ...), which an nvcc build hides from code that includes
// CUDA's headers only (nvrtc_headers.nvcc_prelude): CUDA's cuda.h includes <stdint.h>, so they are
// back after it; the float limits, which it does not bring, stay hidden.
#ifdef NN_CUDA_CPU_RESTORE_STDINT
NN_CUDA_CPU_RESTORE_STDINT
#endif
