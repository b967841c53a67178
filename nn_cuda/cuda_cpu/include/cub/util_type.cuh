// cub::KeyValuePair and cub::NullType on the CPU runner (written for it; see cub/cub.cuh).
#pragma once
#include "detail/nn_cuda_cpu_cub.h"

namespace cub {

// A key with a value, as cub::ArgMax and cub::ArgMin reduce them (the key is the item's position).
template <typename K, typename V>
struct KeyValuePair {
    typedef K Key;
    typedef V Value;
    Key key;
    Value value;
    KeyValuePair() = default;
    KeyValuePair(const Key& k, const Value& v) : key(k), value(v) {}
    bool operator!=(const KeyValuePair& other) const { return value != other.value || key != other.key; }
};

}  // namespace cub
