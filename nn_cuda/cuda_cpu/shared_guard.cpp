// shared_guard (runtime.h): linked after the kernel, so that it follows the kernel's __shared__
// arrays in each host thread's memory.
#include "runtime.h"

namespace nn_cuda_cpu {
thread_local SharedGuard shared_guard __attribute__((used));
}
