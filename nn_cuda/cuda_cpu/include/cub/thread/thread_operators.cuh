// CUB's binary operators on the CPU runner (written for it; see cub/cub.cuh): cub::Sum, Max, Min,
// Equality, Inequality, ArgMax and ArgMin. libcu++'s cuda::std::plus, minus, ... (the host's
// std::plus under that name) serve as operators too.
#pragma once
#include "../util_type.cuh"

namespace cub {

struct Sum {
    template <typename Lhs, typename Rhs>
    auto operator()(const Lhs& a, const Rhs& b) const -> decltype(a + b) { return a + b; }
};

// the larger of the two, the first when neither is larger
struct Max {
    template <typename Lhs, typename Rhs>
    typename std::common_type<Lhs, Rhs>::type operator()(const Lhs& a, const Rhs& b) const
    {
        return b > a ? b : a;
    }
};

// the smaller of the two, the first when neither is smaller
struct Min {
    template <typename Lhs, typename Rhs>
    typename std::common_type<Lhs, Rhs>::type operator()(const Lhs& a, const Rhs& b) const
    {
        return b < a ? b : a;
    }
};

struct Equality {
    template <typename Lhs, typename Rhs>
    bool operator()(const Lhs& a, const Rhs& b) const { return a == b; }
};

struct Inequality {
    template <typename Lhs, typename Rhs>
    bool operator()(const Lhs& a, const Rhs& b) const { return a != b; }
};

// The pair of the larger value; of equal values, the one of the smaller key (the first position).
struct ArgMax {
    template <typename _Key, typename _Value>
    KeyValuePair<_Key, _Value> operator()(const KeyValuePair<_Key, _Value>& a, const KeyValuePair<_Key, _Value>& b) const
    {
        return b.value > a.value || (b.value == a.value && b.key < a.key) ? b : a;
    }
};

// The pair of the smaller value; of equal values, the one of the smaller key (the first position).
struct ArgMin {
    template <typename _Key, typename _Value>
    KeyValuePair<_Key, _Value> operator()(const KeyValuePair<_Key, _Value>& a, const KeyValuePair<_Key, _Value>& b) const
    {
        return b.value < a.value || (b.value == a.value && b.key < a.key) ? b : a;
    }
};

}  // namespace cub
