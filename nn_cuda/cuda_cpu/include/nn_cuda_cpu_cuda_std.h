// libcu++'s namespace cuda::std on the CPU: the host's standard library under that name, for the
// <cuda/std/...> headers beside this one (each includes its host header, then this).
#pragma once

namespace cuda {
namespace std {
using namespace ::std;
}  // namespace std
}  // namespace cuda
