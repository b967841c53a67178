// The runtime API's basic types, which a kernel file's host prototypes and helpers name (cudaError_t
// initConstFilter(const float*, int); a launcher taking a cudaStream_t): the error codes, streams,
// events and copy directions, with CUDA's own values and tags (cudaStream_t is CUDA's
// `struct CUstream_st*`, the driver API's CUstream too). Types only: a RawModule holds device code,
// and no function of the host API is here. NVRTC declares these itself, and nvcc through the
// cuda_runtime.h it includes in every file.
#pragma once

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDeviceFunction = 98,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorMisalignedAddress = 716,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorNotPermitted = 800,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

// Handles: pointers to structs no one defines, as in CUDA.
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

// The descriptions of a 3-D copy (cudaMemcpy3D's), which driver_functions.h's make_* build.
struct cudaPitchedPtr {
    void* ptr;
    size_t pitch;
    size_t xsize;
    size_t ysize;
};
struct cudaExtent {
    size_t width;
    size_t height;
    size_t depth;
};
struct cudaPos {
    size_t x;
    size_t y;
    size_t z;
};
