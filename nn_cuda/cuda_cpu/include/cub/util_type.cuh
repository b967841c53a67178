// cub::KeyValuePair and cub::NullType on the CPU runner (written for it; see cub/cub.cuh).
#pragma once
#include "detail/nn_cuda_cpu_cub.h"
// as CUB's util_type.cuh, which brings the 16-bit floats to every CUB header (code relies on it)
#include <cuda_fp16.h>
#if !defined(CUB_DISABLE_BF16_SUPPORT)
#include <cuda_bf16.h>
#endif

namespace cub {

// A key with a value, as cub::ArgMax and cub::ArgMin reduce them (the key is the item's position).
template <typename _Key, typename _Value>  // CUB's names: a -DK=... of the code's leaves them alone
struct KeyValuePair {
    typedef _Key Key;
    typedef _Value Value;
    Key key;
    Value value;
    KeyValuePair() = default;
    KeyValuePair(const Key& k, const Value& v) : key(k), value(v) {}
    bool operator!=(const KeyValuePair& other) const { return value != other.value || key != other.key; }
};

}  // namespace cub
