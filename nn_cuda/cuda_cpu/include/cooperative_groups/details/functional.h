// The operators of cooperative groups' collectives (cg::plus, cg::less, ...), which CUDA declares
// with cg::reduce and the scans: included by reduce.h and scan.h, not by ../../cooperative_groups.h.
#pragma once

namespace cooperative_groups {

// ---- the operators of the collectives ---------------------------------------------------------------

template <typename T>
struct plus {
    T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct less {
    T operator()(T a, T b) const { return b < a ? b : a; }  // the smaller, as CUDA's cg::less
};
template <typename T>
struct greater {
    T operator()(T a, T b) const { return a < b ? b : a; }  // the larger
};
template <typename T>
struct bit_and {
    T operator()(T a, T b) const { return a & b; }
};
template <typename T>
struct bit_or {
    T operator()(T a, T b) const { return a | b; }
};
template <typename T>
struct bit_xor {
    T operator()(T a, T b) const { return a ^ b; }
};

}  // namespace cooperative_groups
