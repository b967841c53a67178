// libcu++'s namespace cuda::std on the CPU: the host's standard library under that name, for the
// <cuda/std/...> headers beside this one (each includes its host header, then this).
#pragma once

namespace cuda {
namespace std {
using namespace ::std;
}  // namespace std
}  // namespace cuda

namespace cuda {
// the threads an atomic or a barrier of libcu++ is shared by (<cuda/barrier>, <cuda/atomic>)
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };
}  // namespace cuda
