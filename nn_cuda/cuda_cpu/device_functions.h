// CUDA's device functions and types on the CPU, after runtime.h: what kernels call besides the
// built-in variables and __syncthreads. Each one computes what the GPU computes, in the CPU's own
// arithmetic (a fast-math intrinsic here is the exact libm function: a GPU's __expf is less exact).
//
// A function the runner lacks stops the build at the call with "the CPU runner does not support"
// (NN_CUDA_CPU_UNSUPPORTED, at the end).
#pragma once

#include <atomic>
#include <cfenv>
#include <chrono>

// ---- vector types: the layout and alignment of CUDA's -------------------------------------------

#define NN_CUDA_CPU_VECTOR2(name, T, align)                                                     \
    struct alignas(align) name {                                                                 \
        T x, y;                                                                                  \
    };                                                                                           \
    inline name make_##name(T x, T y) { return name{x, y}; }
#define NN_CUDA_CPU_VECTOR3(name, T)                                                            \
    struct name {                                                                                \
        T x, y, z;                                                                               \
    };                                                                                           \
    inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define NN_CUDA_CPU_VECTOR4(name, T, align)                                                     \
    struct alignas(align) name {                                                                 \
        T x, y, z, w;                                                                            \
    };                                                                                           \
    inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

NN_CUDA_CPU_VECTOR2(char2, signed char, 2)
NN_CUDA_CPU_VECTOR4(char4, signed char, 4)
NN_CUDA_CPU_VECTOR2(uchar2, unsigned char, 2)
NN_CUDA_CPU_VECTOR4(uchar4, unsigned char, 4)
NN_CUDA_CPU_VECTOR2(short2, short, 4)
NN_CUDA_CPU_VECTOR4(short4, short, 8)
NN_CUDA_CPU_VECTOR2(ushort2, unsigned short, 4)
NN_CUDA_CPU_VECTOR4(ushort4, unsigned short, 8)
NN_CUDA_CPU_VECTOR2(int2, int, 8)
NN_CUDA_CPU_VECTOR3(int3, int)
NN_CUDA_CPU_VECTOR4(int4, int, 16)
NN_CUDA_CPU_VECTOR2(uint2, unsigned int, 8)
NN_CUDA_CPU_VECTOR4(uint4, unsigned int, 16)
NN_CUDA_CPU_VECTOR2(longlong2, long long, 16)
NN_CUDA_CPU_VECTOR2(ulonglong2, unsigned long long, 16)
NN_CUDA_CPU_VECTOR2(float2, float, 8)
NN_CUDA_CPU_VECTOR3(float3, float)
NN_CUDA_CPU_VECTOR4(float4, float, 16)
NN_CUDA_CPU_VECTOR2(double2, double, 16)
NN_CUDA_CPU_VECTOR3(double3, double)
NN_CUDA_CPU_VECTOR4(double4, double, 16)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// ---- min and max: CUDA's global overloads, exactly that set ------------------------------------------
// Each integer width (int, long, long long) with itself, its unsigned twin with itself, and the
// mixed signed and unsigned pairs (in the unsigned type); float, double and the mixed pair (in
// double). A call that fits none or more than one best is an error here as under NVRTC: min(-5LL, 3)
// ("more than one instance of overloaded function min", seen on an H100's NVRTC) does not build.

#define NN_CUDA_CPU_INTEGER_MIN_MAX(S, U)                                  \
    inline S min(S a, S b) { return a < b ? a : b; }                       \
    inline S max(S a, S b) { return a < b ? b : a; }                       \
    inline U min(U a, U b) { return a < b ? a : b; }                       \
    inline U max(U a, U b) { return a < b ? b : a; }                       \
    inline U min(S a, U b) { return min(static_cast<U>(a), b); }           \
    inline U max(S a, U b) { return max(static_cast<U>(a), b); }           \
    inline U min(U a, S b) { return min(a, static_cast<U>(b)); }           \
    inline U max(U a, S b) { return max(a, static_cast<U>(b)); }
NN_CUDA_CPU_INTEGER_MIN_MAX(int, unsigned int)
NN_CUDA_CPU_INTEGER_MIN_MAX(long, unsigned long)
NN_CUDA_CPU_INTEGER_MIN_MAX(long long, unsigned long long)
#undef NN_CUDA_CPU_INTEGER_MIN_MAX

// as fminf and fmin: a NaN loses to a number
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }

// The integer ones of CUDA's math API, each in its own type.
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

// ---- the fast-math intrinsics: here the exact functions ------------------------------------------

inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x), *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }  // NaN -> 0

// ---- IEEE operations rounded as their name says: _rn to nearest, _rz toward zero, _rd down, _ru up ----

inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }

namespace nn_cuda_cpu {

template <typename T>
inline T read_once(T value)  // through a volatile copy: read where the program says, not earlier
{
    volatile T copy = value;
    return copy;
}

// One operation in the host's rounding mode `mode` (FE_DOWNWARD, ...), restored after it: the
// operands are read and the result stored through volatile copies, so that the compiler computes
// the operation between the two changes of the mode, not before or after them.
template <typename T, typename Operation, typename... Operands>
inline T rounded(int mode, Operation operation, Operands... operands)
{
    const int previous = fegetround();
    fesetround(mode);
    volatile T result = operation(read_once(operands)...);
    fesetround(previous);
    return result;
}

}  // namespace nn_cuda_cpu

// __fadd_rz, __dadd_rz, ...: the operations of CUDA's float (prefix f) or double (d) names, rounded
// in `mode`; std::sqrt and std::fma round in the type they are given.
#define NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(T, prefix, suffix, mode)                                         \
    inline T __##prefix##add_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x + y; }, a, b); } \
    inline T __##prefix##sub_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x - y; }, a, b); } \
    inline T __##prefix##mul_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x * y; }, a, b); } \
    inline T __##prefix##div_##suffix(T a, T b) { return nn_cuda_cpu::rounded<T>(mode, [](T x, T y) { return x / y; }, a, b); } \
    inline T __##prefix##rcp_##suffix(T a) { return nn_cuda_cpu::rounded<T>(mode, [](T x) { return T(1) / x; }, a); } \
    inline T __##prefix##sqrt_##suffix(T a) { return nn_cuda_cpu::rounded<T>(mode, [](T x) { return std::sqrt(x); }, a); }
// ... and the fused multiply-adds, whose names do not follow the pattern (__fmaf_rz, __fma_rz)
#define NN_CUDA_CPU_ROUNDED_OPERATIONS(suffix, mode)                                                       \
    NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(float, f, suffix, mode)                                              \
    NN_CUDA_CPU_ROUNDED_OPERATIONS_OF(double, d, suffix, mode)                                             \
    inline float __fmaf_##suffix(float a, float b, float c)                                                \
    {                                                                                                      \
        return nn_cuda_cpu::rounded<float>(mode, [](float x, float y, float z) { return std::fma(x, y, z); }, a, b, c); \
    }                                                                                                      \
    inline double __fma_##suffix(double a, double b, double c)                                             \
    {                                                                                                      \
        return nn_cuda_cpu::rounded<double>(mode, [](double x, double y, double z) { return std::fma(x, y, z); }, a, b, c); \
    }
NN_CUDA_CPU_ROUNDED_OPERATIONS(rz, FE_TOWARDZERO)
NN_CUDA_CPU_ROUNDED_OPERATIONS(rd, FE_DOWNWARD)
NN_CUDA_CPU_ROUNDED_OPERATIONS(ru, FE_UPWARD)

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// ---- bits --------------------------------------------------------------------------------------------

template <typename To, typename From>
inline To nn_cuda_cpu_bit_cast(From value)
{
    static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
    To result;
    memcpy(&result, &value, sizeof(To));
    return result;
}
inline int __float_as_int(float x) { return nn_cuda_cpu_bit_cast<int>(x); }
inline unsigned int __float_as_uint(float x) { return nn_cuda_cpu_bit_cast<unsigned int>(x); }
inline float __int_as_float(int x) { return nn_cuda_cpu_bit_cast<float>(x); }
inline float __uint_as_float(unsigned int x) { return nn_cuda_cpu_bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return nn_cuda_cpu_bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return nn_cuda_cpu_bit_cast<double>(x); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x)
{
    unsigned int reversed = 0;
    for (int bit = 0; bit < 32; ++bit, x >>= 1) {
        reversed = (reversed << 1) | (x & 1u);
    }
    return reversed;
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b)
{
    return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int nn_cuda_cpu_low24(int x) { return static_cast<int>(static_cast<unsigned int>(x) << 8) >> 8; }
inline int __mul24(int a, int b) { return nn_cuda_cpu_low24(a) * nn_cuda_cpu_low24(b); }  // signed
inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }

// ---- memory: loads, fences, a clock --------------------------------------------------------------------

template <typename T>
inline T __ldg(const T* address) { return *address; }
// The loads and stores with a cache hint (streaming, L2 only, last use, volatile, write-back,
// write-through): one cache here, so each is a plain load or store.
template <typename T>
inline T __ldcs(const T* address) { return *address; }
template <typename T>
inline T __ldcg(const T* address) { return *address; }
template <typename T>
inline T __ldca(const T* address) { return *address; }
template <typename T>
inline T __ldlu(const T* address) { return *address; }
template <typename T>
inline T __ldcv(const T* address) { return *address; }
template <typename T>
inline void __stcs(T* address, T value) { *address = value; }
template <typename T>
inline void __stcg(T* address, T value) { *address = value; }
template <typename T>
inline void __stwb(T* address, T value) { *address = value; }
template <typename T>
inline void __stwt(T* address, T value) { *address = value; }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline long long clock64()  // nanoseconds: it only has to grow, as a GPU's cycle counter does
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A thread that sleeps, typically in a loop waiting for another thread: here it lets the other
// threads of its block (and, in the checking mode, the other resident blocks) run first.
inline void __nanosleep(unsigned) { nn_cuda_cpu::yield_thread(); }

// ---- barriers that count ---------------------------------------------------------------------------

inline int __syncthreads_count(int predicate) { return nn_cuda_cpu::barrier_count(predicate != 0); }
inline int __syncthreads_and(int predicate)
{
    return nn_cuda_cpu::barrier_count(predicate != 0) == static_cast<int>(nn_cuda_cpu::threads_in_block());
}
inline int __syncthreads_or(int predicate) { return nn_cuda_cpu::barrier_count(predicate != 0) != 0; }

// ---- atomics ----------------------------------------------------------------------------------------
// Real atomic operations (GCC's __atomic builtins), though the threads of a block take turns. Each
// says that the launch used one (nn_cuda_cpu::atomics_used): a floating-point sum made with atomics
// rounds in the order the threads come, so the checking mode then compares its two thread orders up
// to that rounding instead of bit for bit.

namespace nn_cuda_cpu {

template <typename T, typename Update>
T atomic_update(T* address, Update update)  // compare-and-swap on the value's bits until it holds
{
    using Bits = typename std::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type;
    static_assert(sizeof(T) == sizeof(Bits), "atomics on 4- and 8-byte values");
    Bits* bits = reinterpret_cast<Bits*>(address);
    Bits expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        const T old = nn_cuda_cpu_bit_cast<T>(expected);
        const Bits desired = nn_cuda_cpu_bit_cast<Bits>(static_cast<T>(update(old)));
        if (__atomic_compare_exchange_n(bits, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return old;
        }
    }
}

// A thread that waits for another one by spinning on an atomic (`while (atomicCAS(&lock, 0, 1) != 0);`,
// `while (atomicAdd(&flag, 0) == 0);`, as a single-pass scan waits for the block before it) finds the
// same value at the same address again and again. The threads of a block take turns here (and in the
// checking mode its blocks too), so the one it waits for runs only if it lets it: after
// kSpinningAtomics such atomics in a row it yields, as __nanosleep does. An atomic that finds another
// value (a histogram's, a ticket's) costs one comparison more.
constexpr unsigned kSpinningAtomics = 16;

template <typename T>
inline T found_by_atomic(const T* address, T old)
{
    if (!atomics_used.load(std::memory_order_relaxed)) {  // read first: host threads share the line
        atomics_used.store(true, std::memory_order_relaxed);
    }
    unsigned long long bits = 0;
    memcpy(&bits, &old, sizeof(T));
    Fiber* const thread = current;
    if (thread->atomic_address != address || thread->atomic_found != bits) {
        thread->atomic_address = address;
        thread->atomic_found = bits;
        thread->atomic_repeats = 0;
    } else if (++thread->atomic_repeats == kSpinningAtomics) {
        thread->atomic_repeats = 0;
        yield_thread();
    }
    return old;
}

}  // namespace nn_cuda_cpu

#define NN_CUDA_CPU_FOUND(a, old) nn_cuda_cpu::found_by_atomic(a, old)
#define NN_CUDA_CPU_ATOMIC_INTEGER(T)                                                                 \
    inline T atomicAdd(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_add(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicAnd(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_and(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicOr(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_or(a, v, __ATOMIC_RELAXED)); }   \
    inline T atomicXor(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_xor(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicExch(T* a, T v) { return NN_CUDA_CPU_FOUND(a, __atomic_exchange_n(a, v, __ATOMIC_RELAXED)); } \
    inline T atomicMin(T* a, T v)                                                                     \
    {                                                                                                 \
        return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](T old) { return v < old ? v : old; })); \
    }                                                                                                 \
    inline T atomicMax(T* a, T v)                                                                     \
    {                                                                                                 \
        return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](T old) { return v > old ? v : old; })); \
    }                                                                                                 \
    inline T atomicCAS(T* a, T compare, T v)                                                          \
    {                                                                                                 \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);       \
        return NN_CUDA_CPU_FOUND(a, compare); /* the old value, whether or not it was swapped */      \
    }
NN_CUDA_CPU_ATOMIC_INTEGER(int)
NN_CUDA_CPU_ATOMIC_INTEGER(unsigned int)
NN_CUDA_CPU_ATOMIC_INTEGER(unsigned long long)
inline long long atomicMin(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](long long old) { return v < old ? v : old; }));
}
inline long long atomicMax(long long* a, long long v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](long long old) { return v > old ? v : old; }));
}
inline int atomicSub(int* a, int v) { return NN_CUDA_CPU_FOUND(a, __atomic_fetch_sub(a, v, __ATOMIC_RELAXED)); }
inline unsigned int atomicSub(unsigned int* a, unsigned int v)
{
    return NN_CUDA_CPU_FOUND(a, __atomic_fetch_sub(a, v, __ATOMIC_RELAXED));
}
inline unsigned int atomicInc(unsigned int* a, unsigned int limit)  // wraps to 0 past limit
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [limit](unsigned int old) { return old >= limit ? 0u : old + 1; }));
}
inline unsigned int atomicDec(unsigned int* a, unsigned int limit)  // wraps to limit below 0
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [limit](unsigned int old) {
        return old == 0 || old > limit ? limit : old - 1;
    }));
}
inline float atomicAdd(float* a, float v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](float old) { return old + v; }));
}
inline double atomicAdd(double* a, double v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](double old) { return old + v; }));
}
inline float atomicExch(float* a, float v)
{
    return NN_CUDA_CPU_FOUND(a, nn_cuda_cpu::atomic_update(a, [v](float) { return v; }));
}
// The scoped variants (_block, _system) of every atomic: on one core every scope is the same.
#define NN_CUDA_CPU_SCOPED_ATOMIC(name)                                \
    template <typename... A>                                           \
    inline auto name##_block(A... a) { return name(a...); }            \
    template <typename... A>                                           \
    inline auto name##_system(A... a) { return name(a...); }
NN_CUDA_CPU_SCOPED_ATOMIC(atomicAdd)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicSub)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicExch)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicMin)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicMax)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicInc)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicDec)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicCAS)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicAnd)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicOr)
NN_CUDA_CPU_SCOPED_ATOMIC(atomicXor)

// ---- warps: shuffles, votes, __syncwarp ----------------------------------------------------------------
// The lanes of a mask meet at the call (runtime.h warp_sync) and hand their values over, as a
// GPU's warp does in one instruction. Code that relies on a warp running in lockstep without these
// (a legacy "warp-synchronous" reduction on volatile __shared__ memory) does not work here: its
// lanes take turns between syncs; the checking mode reports such a race.

#define warpSize 32

inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { nn_cuda_cpu::warp_sync(mask); }

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int source, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id(), group = lane & ~static_cast<unsigned>(width - 1);
    return nn_cuda_cpu::warp_exchange(mask, var, group + (static_cast<unsigned>(source) & (width - 1)));
}

template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id();
    return nn_cuda_cpu::warp_exchange(mask, var, lane % width >= delta ? lane - delta : lane);
}

template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id();
    return nn_cuda_cpu::warp_exchange(mask, var, lane % width + delta < static_cast<unsigned>(width) ? lane + delta : lane);
}

template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize)
{
    const unsigned lane = nn_cuda_cpu::lane_id(), source = lane ^ static_cast<unsigned>(lane_mask);
    // a lane of a later group of `width` lanes is out of reach: the caller's own value
    return nn_cuda_cpu::warp_exchange(mask, var, source / width > lane / width ? lane : source);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) { return nn_cuda_cpu::warp_ballot(mask, predicate != 0); }
inline int __any_sync(unsigned mask, int predicate) { return nn_cuda_cpu::warp_ballot(mask, predicate != 0) != 0; }
inline int __all_sync(unsigned mask, int predicate)  // over the lanes of the mask that took part
{
    const unsigned votes = nn_cuda_cpu::warp_ballot(mask, predicate != 0);
    return votes == nn_cuda_cpu::current->warp_participants;
}
// The lanes of the warp that run this call together: on a GPU those that took the same branch to
// it; here those that reach the same call (runtime.cpp, active_lanes).
inline unsigned __activemask() { return nn_cuda_cpu::active_lanes(); }

// Match (sm_70 and later): the lanes of `mask` whose value has the same bits as this lane's; or all
// of `mask` when every lane's value is the same (and *pred says which).
template <typename T>
inline unsigned __match_any_sync(unsigned mask, T value)
{
    static_assert(std::is_arithmetic<T>::value && sizeof(T) >= 4, "a 32- or 64-bit value, as on a GPU");
    unsigned same = 0;
    nn_cuda_cpu::warp_gather(mask, value, [&](unsigned lane, T other) {
        same |= memcmp(&other, &value, sizeof(T)) == 0 ? 1u << lane : 0u;
    });
    return same;
}

template <typename T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred)
{
    const unsigned same = __match_any_sync(mask, value);
    *pred = same == nn_cuda_cpu::current->warp_participants;  // the lanes of the mask that took part
    return *pred ? same : 0u;
}

// Reduce (sm_80 and later): every lane of `mask` gets the sum, minimum, maximum, and, or or xor of
// the lanes' values; add, min and max take int or unsigned, and, or and xor unsigned, as on a GPU.
template <typename T, typename Combine>
inline T nn_cuda_cpu_warp_reduce(unsigned mask, T value, Combine combine)
{
    bool first = true;
    T total = value;
    nn_cuda_cpu::warp_gather(mask, value, [&](unsigned, T other) {
        total = first ? other : combine(total, other);
        first = false;
    });
    return total;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a + b; }); }
inline int __reduce_add_sync(unsigned mask, int v) { return static_cast<int>(__reduce_add_sync(mask, static_cast<unsigned>(v))); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a < b ? a : b; }); }
inline int __reduce_min_sync(unsigned mask, int v) { return nn_cuda_cpu_warp_reduce(mask, v, [](int a, int b) { return a < b ? a : b; }); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a > b ? a : b; }); }
inline int __reduce_max_sync(unsigned mask, int v) { return nn_cuda_cpu_warp_reduce(mask, v, [](int a, int b) { return a > b ? a : b; }); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a & b; }); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a | b; }); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return nn_cuda_cpu_warp_reduce(mask, v, [](unsigned a, unsigned b) { return a ^ b; }); }

// ---- what the CPU runner cannot run yet: the build stops at the call, saying so --------------------------

template <typename... A>
constexpr bool nn_cuda_cpu_unsupported = false;
#define NN_CUDA_CPU_UNSUPPORTED(function, what)                                                      \
    template <typename... A>                                                                         \
    inline int function(A...)                                                                        \
    {                                                                                                \
        static_assert(nn_cuda_cpu_unsupported<A...>, "the CPU runner does not support " #function   \
                                                     " (" what ")");                                 \
        return 0;                                                                                    \
    }
NN_CUDA_CPU_UNSUPPORTED(__isGlobal, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__isShared, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__isLocal, "address space queries")
NN_CUDA_CPU_UNSUPPORTED(__isConstant, "address space queries")

// Textures and surfaces: a texture object's handle is a number, as CUDA's, so a kernel that takes
// one compiles, and a fetch or a surface access stops the build at its line. Both forms: the value
// returned (tex2D<float>(tex, x, y)) and written through a pointer (tex2D(&v, tex, x, y)).
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
#define NN_CUDA_CPU_UNSUPPORTED_TEXTURE(function)                                                    \
    template <typename T, typename... A>                                                             \
    inline T function(A...)                                                                          \
    {                                                                                                \
        static_assert(nn_cuda_cpu_unsupported<T, A...>, "the CPU runner does not support " #function \
                                                        " (textures and surfaces)");                 \
        return T();                                                                                  \
    }                                                                                                \
    template <typename... A>                                                                         \
    inline void function(A...)                                                                       \
    {                                                                                                \
        static_assert(nn_cuda_cpu_unsupported<A...>, "the CPU runner does not support " #function    \
                                                     " (textures and surfaces)");                    \
    }
// Texture references (`texture<float> tex;` with tex1Dfetch(tex, i)), which CUDA 12 removed: refused
// where one is declared.
template <typename T, int dimensions = 1, int read_mode = 0>
struct texture {
    static_assert(nn_cuda_cpu_unsupported<T>, "the CPU runner does not support texture references (texture<T>, "
                                              "which CUDA 12 removed; texture objects neither: read the array "
                                              "through a pointer)");
};
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1Dfetch)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex3D)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex1DLayered)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DLayered)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DLod)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(tex2DGather)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(texCubemap)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf1Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf2Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf3Dread)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf1Dwrite)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf2Dwrite)
NN_CUDA_CPU_UNSUPPORTED_TEXTURE(surf3Dwrite)
