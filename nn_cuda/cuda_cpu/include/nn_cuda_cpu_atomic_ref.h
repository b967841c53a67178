// libcu++'s atomic_ref (cuda::std::atomic_ref, cuda::atomic_ref) and cuda::atomic on the CPU runner:
// each operation is one of the runner's atomics (device_functions.h), so that a thread spinning on
// one lets the others run and the checking mode compares the sums they make up to their order's
// rounding, as it does atomicAdd's. Every memory order is served by sequential consistency, and
// every scope is one here (the blocks share one memory). Values of 4 or 8 bytes, as the runner's
// atomics take; fetch_min and fetch_max are libcu++'s own.
#pragma once

#include <atomic>
#include <type_traits>

namespace nn_cuda_cpu {

// The operations of an atomic object at Derived::address().
template <typename Derived, typename T>
class atomic_operations {
public:
    using value_type = T;
    static constexpr bool is_always_lock_free = true;

    T load(std::memory_order = std::memory_order_seq_cst) const { return __nv_atomic_load_n(at(), __NV_ATOMIC_SEQ_CST); }
    void store(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        __nv_atomic_store_n(at(), value, __NV_ATOMIC_SEQ_CST);
    }
    operator T() const { return load(); }
    T exchange(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T) { return value; });
    }
    bool compare_exchange_strong(T& expected, T desired, std::memory_order = std::memory_order_seq_cst,
                                 std::memory_order = std::memory_order_seq_cst) const
    {
        return __nv_atomic_compare_exchange_n(at(), &expected, desired, false, __NV_ATOMIC_SEQ_CST, __NV_ATOMIC_SEQ_CST);
    }
    bool compare_exchange_weak(T& expected, T desired, std::memory_order success = std::memory_order_seq_cst,
                               std::memory_order failure = std::memory_order_seq_cst) const
    {
        return compare_exchange_strong(expected, desired, success, failure);
    }
    T fetch_add(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        const T old = update([value](T before) { return static_cast<T>(before + value); });
        if constexpr (std::is_floating_point<T>::value) {
            noted_sum(old, value);  // as a floating-point atomicAdd
        }
        return old;
    }
    T fetch_sub(T value, std::memory_order order = std::memory_order_seq_cst) const
    {
        return fetch_add(static_cast<T>(-value), order);
    }
    T fetch_and(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T before) { return static_cast<T>(before & value); });
    }
    T fetch_or(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T before) { return static_cast<T>(before | value); });
    }
    T fetch_xor(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T before) { return static_cast<T>(before ^ value); });
    }
    T fetch_min(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T before) { return value < before ? value : before; });
    }
    T fetch_max(T value, std::memory_order = std::memory_order_seq_cst) const
    {
        return update([value](T before) { return value > before ? value : before; });
    }
    T operator++() const { return fetch_add(T(1)) + T(1); }
    T operator++(int) const { return fetch_add(T(1)); }
    T operator--() const { return fetch_sub(T(1)) - T(1); }
    T operator--(int) const { return fetch_sub(T(1)); }
    T operator+=(T value) const { return fetch_add(value) + value; }
    T operator-=(T value) const { return fetch_sub(value) - value; }
    T operator&=(T value) const { return fetch_and(value) & value; }
    T operator|=(T value) const { return fetch_or(value) | value; }
    T operator^=(T value) const { return fetch_xor(value) ^ value; }
    // C++20's waiting: the thread lets the others run until the value is no longer `old`
    void wait(T old, std::memory_order = std::memory_order_seq_cst) const
    {
        while (load() == old) {
            yield_thread();
        }
    }
    void notify_one() const {}
    void notify_all() const {}

private:
    T* at() const { return static_cast<const Derived*>(this)->address(); }
    template <typename Update>
    T update(Update how) const
    {
        return found_by_atomic(at(), atomic_update(at(), how));
    }
};

// atomic_ref: the operations on an object that lives elsewhere (a __shared__ or global value).
template <typename T>
class atomic_ref : public atomic_operations<atomic_ref<T>, T> {
    static_assert(std::is_trivially_copyable<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),
                  "the CPU runner's atomic_ref takes values of 4 or 8 bytes, as its atomics do");

public:
    explicit atomic_ref(T& object) : object_(&object) {}
    atomic_ref(const atomic_ref&) = default;
    T operator=(T value) const
    {
        this->store(value);
        return value;
    }
    T* address() const { return object_; }

private:
    T* object_;
};

// An atomic object of its own, of the size of its value (an array of them is an array of values).
template <typename T>
class atomic_value : public atomic_operations<atomic_value<T>, T> {
    static_assert(std::is_trivially_copyable<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),
                  "the CPU runner's cuda::atomic takes values of 4 or 8 bytes, as its atomics do");

public:
    atomic_value() = default;
    constexpr atomic_value(T value) : value_(value) {}
    atomic_value(const atomic_value&) = delete;
    T operator=(T value)
    {
        this->store(value);
        return value;
    }
    T* address() const { return const_cast<T*>(&value_); }

private:
    T value_;
};

}  // namespace nn_cuda_cpu
