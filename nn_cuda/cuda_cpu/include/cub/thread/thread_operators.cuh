// CUB's binary operators on the CPU runner (written for it; see cub/cub.cuh): cub::Sum, Max, Min,
// Equality, Inequality, ArgMax and ArgMin. libcu++'s cuda::std::plus, minus, ... (the host's
// std::plus under that name) serve as operators too.
#pragma once
#include "../util_type.cuh"

namespace cub {

struct Sum {
    template <typename A, typename B>
    auto operator()(const A& a, const B& b) const -> decltype(a + b) { return a + b; }
};

// the larger of the two, the first when neither is larger
struct Max {
    template <typename A, typename B>
    typename std::common_type<A, B>::type operator()(const A& a, const B& b) const
    {
        return b > a ? b : a;
    }
};

// the smaller of the two, the first when neither is smaller
struct Min {
    template <typename A, typename B>
    typename std::common_type<A, B>::type operator()(const A& a, const B& b) const
    {
        return b < a ? b : a;
    }
};

struct Equality {
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return a == b; }
};

struct Inequality {
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return a != b; }
};

// The pair of the larger value; of equal values, the one of the smaller key (the first position).
struct ArgMax {
    template <typename K, typename V>
    KeyValuePair<K, V> operator()(const KeyValuePair<K, V>& a, const KeyValuePair<K, V>& b) const
    {
        return b.value > a.value || (b.value == a.value && b.key < a.key) ? b : a;
    }
};

// The pair of the smaller value; of equal values, the one of the smaller key (the first position).
struct ArgMin {
    template <typename K, typename V>
    KeyValuePair<K, V> operator()(const KeyValuePair<K, V>& a, const KeyValuePair<K, V>& b) const
    {
        return b.value < a.value || (b.value == a.value && b.key < a.key) ? b : a;
    }
};

}  // namespace cub
