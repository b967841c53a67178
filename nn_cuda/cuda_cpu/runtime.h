// CUDA C on the CPU, the part a kernel sees: the CUDA keywords, threadIdx and the other built-ins,
// __syncthreads, warps, and (device_functions.h, included at the end) CUDA's device functions.
//
// The host C++ compiler builds one shared library per kernel file: this header, then the .cu file,
// then a table of the template instances the Python side asked for (see nn_cuda/cuda_cpu/build.py),
// linked with runtime.cpp, which runs launches: it is compiled once per set of compiler flags and
// cached, so that a kernel's build compiles the kernel, not the runner (build.py, "the runtime").
// The two share the launch's state declared here: C++17 inline variables, one per library.
//
// A launch runs the blocks of the grid on the calling thread and, in the plain mode, on worker
// threads beside it (NN_CUDA_CPU_THREADS host threads in all; runtime.cpp, "workers"), each taking the
// next block as it finishes one, as a GPU's SMs do. The threads of a block are fibers: each has its
// own small stack and runs until it reaches __syncthreads() or a warp sync, yields (__nanosleep, a
// cuda::barrier wait) or returns; when every live thread waits at the barrier the next phase starts.
// So a kernel sees threadIdx, blockIdx, blockDim, gridDim, per-block __shared__ memory and a real
// barrier, exactly as on a GPU, but the threads of a block between two barriers run one after
// another, never at the same time. The checking mode and cooperative launches: runtime.cpp.
#pragma once

#include <assert.h>  // NVRTC has assert built in, and nvcc's cuda_runtime.h includes it
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// The runtime API's types (cudaError_t, cudaStream_t, ...), which NVRTC declares without an include
// and nvcc through the cuda_runtime.h it includes in every file.
#include "include/driver_types.h"

// What a running block owns (its threads, its __shared__ memory, where a fault returns to) is a
// copy per host thread in the plain build, whose blocks run on several host threads at once
// (NN_CUDA_CPU_WORKERS, build.py); the checking build runs its blocks on one host thread.
#if defined(NN_CUDA_CPU_WORKERS)
#define NN_CUDA_CPU_PER_WORKER thread_local
#else
#define NN_CUDA_CPU_PER_WORKER
#endif

// ---- the CUDA C keywords ------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
// A hint, as nvcc takes it where it cannot inline: GCC's always_inline fails the build of a recursive
// function (sputnik's `__forceinline__ Log2`, "recursive inlining") since calls in tail position stay
// calls (build.py, -fno-optimize-sibling-calls). The project's GEMMs trained as fast without it.
#define __forceinline__ inline
// Hints to inline or not, which change no result: empty, where CUDA's headers make __noinline__ GCC's
// attribute, since a host header included after this one may write __attribute__((__noinline__)).
#define __noinline__
#define __inline_hint__
#define __launch_bounds__(...)
#define __maxnreg__(...)  // a kernel's register limit (CUDA 12.4)
// CUDA's hint that a condition holds, which it does not evaluate (GCC has no such built-in)
#if !defined(__clang__)
#define __builtin_assume(...) ((void)0)
#endif
// Thread block clusters (sm_90) refused at the kernel's first use, in one line (build.py)
#define __cluster_dims__(...) \
    __attribute__((unavailable("the CPU runner does not support thread block clusters (__cluster_dims__, sm_90)")))
#define __grid_constant__  // a const kernel parameter the kernel may take the address of
// A global variable of the library: the Python side reads and writes it (RawModule.get_global).
#define __constant__ __attribute__((used))
// A variable of unified memory (`__managed__ int n;`, alone or after __device__), which a GPU's host
// reads and writes in place: here one of the library's, read and written through get_global.
#define __managed__ __attribute__((used))
// GCC's attribute, as CUDA's headers define it for a GCC host: it may stand among the specifiers
// (`__shared__ __align__(16) float tile[...]`), where C++'s alignas may not.
#define __align__(n) __attribute__((aligned(n)))
// crt/host_defines.h's other qualifiers, which NVRTC's and nvcc's builds both see (ccminer redeclares
// __syncthreads() with __device_builtin__ and aligns its vectors with __builtin_align__; a build
// error until 2026-11-27). NVRTC has no __CUDA_ALIGN__, nor does the runner.
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define __no_return__ __attribute__((noreturn))
// One static array per kernel instance: each host thread runs one block at a time (and in the checking
// mode blocks take turns and copy their own in), so it is the block's memory; a thread_local one in
// the build whose blocks run on several host threads. "used" keeps it (and its address) visible, so
// the compiler never assumes a barrier leaves it alone. The Python side finds a function's by their
// names (_ZZ...), and those at file scope in a section of their own: RawModule marks them
// NN_CUDA_CPU_FILE_SCOPE_SHARED (raw_module.file_scope_shared). Only those: the static of an inline
// function (NVIDIA's blockReduceSum) lives in a COMDAT group, which GCC refuses to put in a section
// that also holds plain variables ("section type conflict"). Each is aligned to 16 bytes at least,
// as code that reads a `__shared__ float` array as float4 needs (a GPU's shared arrays allow it):
// GCC aligns a thread_local array to its element only, and a float4 access of one faulted.
#if defined(NN_CUDA_CPU_LIVE_SHARED_ONLY)
// build.live_shared_statics's object, never run: without "used", the compiler drops the arrays of
// branches it removes, as a GPU's does (the 48 KiB limit counts those it keeps)
#define __shared__ static __attribute__((aligned(16)))
#define NN_CUDA_CPU_FILE_SCOPE_SHARED
#elif defined(NN_CUDA_CPU_WORKERS)
#define __shared__ static thread_local __attribute__((used, aligned(16)))
#define NN_CUDA_CPU_FILE_SCOPE_SHARED
#elif defined(__APPLE__)
#define __shared__ static __attribute__((used, aligned(16)))
#define NN_CUDA_CPU_FILE_SCOPE_SHARED  // Mach-O: no section of its own (file scope not found)
#else
#define __shared__ static __attribute__((used, aligned(16)))
#define NN_CUDA_CPU_FILE_SCOPE_SHARED __attribute__((section("nn_cuda_shared")))
#endif
#if !defined(__APPLE__)
// The linker's bounds of that section, which the anchor makes sure exists.
extern "C" char __start_nn_cuda_shared[] __attribute__((visibility("hidden")));
extern "C" char __stop_nn_cuda_shared[] __attribute__((visibility("hidden")));
static char nn_cuda_cpu_shared_anchor __attribute__((used, section("nn_cuda_shared")));
#endif

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x = 1, unsigned int y = 1, unsigned int z = 1) : x(x), y(y), z(z) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// Everything of the runner is the library's own: two libraries loaded at once never share it.
#pragma GCC visibility push(hidden)

namespace nn_cuda_cpu {

// ---- fibers: a stack and a saved stack pointer per CUDA thread ---------------------------------

enum class State { ready, at_barrier, at_warp_sync, yielded, done };

struct Fiber {
    void* saved_sp = nullptr;  // where its registers were pushed when it last switched out
    uint3 thread_idx{};
    State state = State::ready;
    unsigned votes = 0;  // how many __syncthreads_count/and/or it has passed in this block
    size_t tid = 0;  // threadIdx as one number: x + y blockDim.x + z blockDim.x blockDim.y
    unsigned warp_mask = 0;  // at a warp sync: the lanes it waits for
    unsigned warp_participants = 0;  // after one: the lanes of its mask that took part (not returned)
    const void* active_site = nullptr;  // where it called __activemask() (its lanes are those there too)
    unsigned active_lanes_given = 0;  // what its last __activemask() gave (a shuffle's mask may be it)
    unsigned warp_syncs = 0;  // how many warp syncs it has passed in this block
    // after one: the slot (0 or 1) each lane of its warp wrote its value to, one bit per lane
    unsigned source_slots = 0;
    // its last atomic's address and the value it found there, and how many atomics in a row found
    // that same value there (device_functions.h: a thread spinning on a flag lets the others run)
    const void* atomic_address = nullptr;
    unsigned long long atomic_found = 0;
    unsigned atomic_repeats = 0;
    unsigned long long clock_reads = 0;  // its reads of the clock in this block (the checking mode's clock)
    // on a warp's first lane: how many of the warp's lanes wait at a warp sync, and how many returned
    unsigned warp_waiting = 0;
    unsigned warp_returned = 0;
    // the barriers and warp syncs it has passed, and after how many of them it last let the other
    // threads run at an atomic on __shared__ memory (the checking mode: lanes_take_turns_at_shared_atomics)
    unsigned syncs_passed = 0;
    unsigned shared_atomic_turn_at = ~0u;
    // on a warp's first lane: how many times lanes of the warp went on from a warp sync (the race
    // check's order within a warp, runtime.cpp "races")
    unsigned warp_epoch = 0;
    unsigned race_synced = 0;  // the race check's clock at its last atomic, fence, yield or arrival
    unsigned stops = 0;  // how many times it stopped (runtime.cpp, "preemption")
    unsigned preempted_stops = ~0u;  // its stops right after its last preemption (a spin: preempted again)
    unsigned preemptions_in_a_row = 0;  // with no stop between them: 1 in the midst of work, more in a spin
    volatile bool preempt_pending = false;  // a tick found it in the runner's code: it yields at a safe place
    uintptr_t preempted_at = 0;  // the code's address where it was last preempted (the watchdog's place)
};

// ---- the state of the running launch (one launch at a time per process) -------------------------

// Inline variables, one object in the library. The compiler must assume that the opaque switch in a
// barrier may change them, so threadIdx is read anew after every __syncthreads().
inline NN_CUDA_CPU_PER_WORKER Fiber* current = nullptr;
inline NN_CUDA_CPU_PER_WORKER uint3 block_idx{};
inline dim3 block_dim{};
inline dim3 grid_dim{};

struct Launch {
    void (*thread_body)(void**) = nullptr;
    void** args = nullptr;
    char* message = nullptr;
    int message_size = 0;
    std::atomic<bool> message_written{false};  // the first report of the launch is the one kept
    const char* kernel = "";
};
inline Launch launch;

// A cooperative launch (cudaLaunchCooperativeKernel; CuPy's RawModule(enable_cooperative_groups=True))
// keeps every block of its grid resident, taking turns as the checking mode's blocks do, on one host
// thread, so that grid_group::sync() can wait for all of them (grid_sync, runtime.cpp).
inline bool cooperative = false;

// The checking mode's clock: clock() and clock64() count the thread's own reads, so that a kernel that
// records timestamps (cuda-samples' clock, cuda-python's clock_nvrtc) gives the same results in both
// runs, which the checking mode compares; the plain mode's clock is the host's (device_functions.h).
inline bool counted_clock = false;

// Dynamic shared memory (extern __shared__, sized by the launch's shared_mem): one fixed region per
// host thread, since each runs one block at a time. RawModule rewrites `extern __shared__ T name[];`
// into a pointer to it (raw_module.py), so its address is a constant, as a GPU's shared window is.
constexpr size_t kDynamicSharedBytes = 227 * 1024;  // the most an sm_90 GPU gives one block
alignas(16) inline NN_CUDA_CPU_PER_WORKER unsigned char dynamic_shared[kDynamicSharedBytes];
// In a checked launch, where its extern __shared__ memory ends (kDynamicSharedBytes otherwise): an
// atomic past it is noted at once (device_functions.h), since one that keeps the fill's bits (an
// atomicOr into all-ones bytes) changes nothing the end of the launch could find. The first one's
// byte (kDynamicSharedBytes: none) and its thread and block, as text.
inline size_t atomic_watch_from = kDynamicSharedBytes;
inline size_t atomic_past_dynamic_shared = kDynamicSharedBytes;
inline char atomic_past_thread[96];

#if defined(NN_CUDA_CPU_WORKERS)
// The bytes after a kernel's last __shared__ array where those arrays are per host thread. build.py
// links the runtime before the kernel and this array's definition (shared_guard.cpp) after it, so a
// write past that array (s[threadIdx.x + 1]) lands here, not in the runner's own per-thread state,
// which it corrupted into a launch that never ended; each host thread checks it after every block.
// Packed: aligned to 1 byte, so it starts where that array ends, with no gap to write in unseen.
constexpr size_t kSharedGuardBytes = 4096;
struct __attribute__((packed)) SharedGuard {
    unsigned char bytes[kSharedGuardBytes];
};
extern thread_local SharedGuard shared_guard;
#endif

// Whether the launch used an atomic (device_functions.h): a sum made with atomics (an atomicAdd of
// floats, additions under a lock taken by atomicCAS) then depends on the order of the threads within
// rounding, and results placed at slots taken from an atomic counter come in their order.
inline std::atomic<bool> atomics_used{false};
// The largest magnitude a floating-point atomicAdd of the launch found, added or made (device_functions.h),
// in the builds whose blocks run on one host thread (the checking mode's): a sum that cancels to
// about zero (a total momentum) rounds by what its partial sums are, which the checking mode then
// allows between its two orders, where the result's own magnitude would allow next to nothing.
inline double atomic_sum_magnitude = 0.0;
// The checking mode's spans [first, end) right before each array (the runner fills them and finds a
// write there after the launch from the bytes it changed): an atomic there is noted here at once,
// since an atomicAdd of 0 (of a weight that is 0) leaves the bytes as they were. The first such
// atomic's address (0: none) and its thread and block, as text.
constexpr size_t kMaxWatchedSpans = 256;
inline uintptr_t watched_spans[2 * kMaxWatchedSpans];
inline size_t watched_span_count = 0;
inline uintptr_t atomic_before_address = 0;
inline char atomic_before_thread[96];
// The checking mode's floating-point arrays, each as [first, end) and its item's bytes (4: float, 8:
// double): an atomicCAS of that many bytes there swaps such a value (the CUDA guide's atomicAdd of
// doubles by a CAS loop, caffe's), whose magnitude atomic_sum_magnitude takes as an atomicAdd's.
inline uintptr_t float_spans[3 * kMaxWatchedSpans];
inline size_t float_span_count = 0;

inline size_t threads_in_block() { return static_cast<size_t>(block_dim.x) * block_dim.y * block_dim.z; }

// ---- warps: 32 consecutive threads that meet at __syncwarp and the *_sync shuffles and votes ----------

constexpr unsigned kWarpSize = 32;

// What the lanes of a warp sync hand each other: two generations (a lane may already write the
// next one's value while others still read this one's), a 64-bit word per thread. A lane writes to
// the parity of the warp syncs it has passed, and a reader reads each lane's from the slot that lane
// wrote at this sync (Fiber::source_slots): lanes that passed a sync of part of the warp have another
// parity than the rest (a ballot of 8 lanes before one of 32 read other lanes' words until 2026-11-27).
inline NN_CUDA_CPU_PER_WORKER unsigned long long warp_slots[2][1024];

inline unsigned lane_id() { return static_cast<unsigned>(current->tid % kWarpSize); }

// The lanes of warp `warp` that exist in a block of `threads` threads (the last warp may be partial).
inline unsigned lanes_of(size_t warp, size_t threads)
{
    const size_t count = std::min<size_t>(kWarpSize, threads - warp * kWarpSize);
    return count == kWarpSize ? 0xFFFFFFFFu : (1u << count) - 1u;
}

// The runner's own synchronisation in __shared__ memory (cuda::barrier's counters): left out of the race
// check's instrumentation, each arrival counting as the thread's synchronisation (race_order), as an
// atomic does (runtime.cpp, "races").
#if defined(NN_CUDA_CPU_RACE_CHECK)
#define NN_CUDA_CPU_SYNCHRONIZATION __attribute__((no_sanitize_thread))
#else
#define NN_CUDA_CPU_SYNCHRONIZATION
#endif

// The runner's side of the built-ins (runtime.cpp).
void race_order();  // the running thread synchronises (an arrival at a cuda::barrier), for the race check
void barrier();  // __syncthreads()
void yield_thread();  // lets the other threads run first (__nanosleep, a cuda::barrier wait)
bool lanes_take_turns_at_shared_atomics(const void* address);  // the checking mode, at a __shared__ address
int barrier_count(bool predicate);  // __syncthreads_count: a barrier that sums a predicate
[[noreturn]] void end_launch_reported();  // ends the launch with launch.message written
void grid_sync();  // grid_group::sync() of a cooperative launch
void warp_sync(unsigned mask);  // __syncwarp: waits for the lanes of `mask` in this thread's warp
unsigned warp_ballot(unsigned mask, bool flag);  // the lanes of `mask` whose flag is set
unsigned active_lanes();  // __activemask(): the lanes of this thread's warp that call it at the same place

// Writes the launch's message, which the Python side raises as a KernelError.
template <typename... Args>
void report(const char* format, Args... args)
{
    if (launch.message_written.exchange(true)) {
        return;  // another host thread's block failed first: its message stays
    }
    snprintf(launch.message, static_cast<size_t>(launch.message_size), format, args...);
}

// Ends the launch naming the warp sync a thread called wrongly (a GPU leaves the result undefined).
template <typename... Args>
[[noreturn]] void warp_misuse(unsigned mask, const char* format, Args... args)
{
    if (launch.message_written.exchange(true)) {
        end_launch_reported();  // another host thread's block failed first: its message stays
    }
    const int written = snprintf(launch.message, static_cast<size_t>(launch.message_size),
                                 "%s: thread (%u, %u, %u) of block (%u, %u, %u), lane %u of its warp, calls a warp sync "
                                 "(__syncwarp or a *_sync shuffle or vote) with mask 0x%08x ",
                                 launch.kernel, current->thread_idx.x, current->thread_idx.y, current->thread_idx.z,
                                 block_idx.x, block_idx.y, block_idx.z, lane_id(), mask);
    if (written >= 0 && written < launch.message_size) {
        snprintf(launch.message + written, static_cast<size_t>(launch.message_size - written), format, args...);
    }
    end_launch_reported();
}

// A shuffle that reads a lane with no value to give (one outside its mask, one that returned, one a
// partial last warp does not have) reads an undefined value on a GPU ("If the target thread is
// inactive, the retrieved value is undefined", the CUDA C++ guide), which correct code leaves unused:
// the lanes past the end of a row, whose sums are never stored. Here it reads bytes of
// undefined_lane_fill, all ones (NaN as a float, -1 as an int), and zeros in the checking mode's
// mirrored run, so that a result that uses it differs between the two runs and is reported; the
// first such read of a launch is described in undefined_lane_read (runtime.cpp resets both).
inline unsigned char undefined_lane_fill = 0xFF;
inline std::atomic<bool> undefined_lane_seen{false};
inline char undefined_lane_read[768];

inline void note_undefined_lane(unsigned mask, unsigned source, const char* why)
{
    if (undefined_lane_seen.exchange(true)) {
        return;
    }
    // a mask of __activemask() (the usual port of CUDA 8's mask-less shuffles): the lanes that happen to run
    // the call together, here those at one call of the compiled code, where GCC may have copied the call into
    // two paths the source joins
    const bool active = mask == current->active_lanes_given && !((mask >> source) & 1u);
    snprintf(undefined_lane_read, sizeof undefined_lane_read,
             "thread (%u, %u, %u) of block (%u, %u, %u), lane %u of its warp, shuffles with mask 0x%08x from lane "
             "%u, which %s%s",
             current->thread_idx.x, current->thread_idx.y, current->thread_idx.z, block_idx.x, block_idx.y,
             block_idx.z, lane_id(), mask, source, why,
             active ? " (the mask __activemask() gave it: the lanes that run the call together, which CUDA does not "
                      "promise are those the source shows together; NVIDIA's guide warns against __activemask() as a "
                      "shuffle's mask: name the lanes that take part, 0xffffffff where every lane gets there, or "
                      "__ballot_sync(0xffffffff, condition) before a branch)" : "");
}

// A warp sync that also hands `value` over: returns the value of lane `source` of this warp.
template <typename T>
T warp_exchange(unsigned mask, T value, unsigned source)
{
    static_assert(sizeof(T) <= sizeof(unsigned long long), "values of up to 8 bytes");
    const unsigned generation = current->warp_syncs & 1u;
    unsigned long long word = 0;
    memcpy(&word, &value, sizeof(T));
    warp_slots[generation][current->tid] = word;
    warp_sync(mask);
    const size_t from = (current->tid & ~static_cast<size_t>(kWarpSize - 1)) + source;
    const char* undefined = from >= threads_in_block() ? "the block does not have (its last warp is partial)"
                            : !((mask >> source) & 1u)  ? "is not in the mask"
                            : !((current->warp_participants >> source) & 1u) ? "returned before it"
                                                                              : nullptr;
    T result;
    if (undefined != nullptr) {
        note_undefined_lane(mask, source, undefined);
        memset(&result, undefined_lane_fill, sizeof(T));
        return result;
    }
    memcpy(&result, &warp_slots[(current->source_slots >> source) & 1u][from], sizeof(T));
    return result;
}

// A warp sync that hands every lane's `value` to every lane: calls visit(lane, value of that lane)
// for each lane of `mask` in this warp that took part, not returned before it (the match, reduce and
// vote functions are built on it: a ballot's bit of a returned lane is 0, as on a GPU).
template <typename T, typename Visit>
void warp_gather(unsigned mask, T value, Visit visit)
{
    static_assert(sizeof(T) <= sizeof(unsigned long long), "values of up to 8 bytes");
    const unsigned generation = current->warp_syncs & 1u;
    unsigned long long word = 0;
    memcpy(&word, &value, sizeof(T));
    warp_slots[generation][current->tid] = word;
    warp_sync(mask);
    const size_t base = current->tid & ~static_cast<size_t>(kWarpSize - 1);
    const size_t threads = threads_in_block();
    for (unsigned lane = 0; lane < kWarpSize && base + lane < threads; ++lane) {
        if ((current->warp_participants >> lane) & 1u) {
            T other;
            memcpy(&other, &warp_slots[(current->source_slots >> lane) & 1u][base + lane], sizeof(T));
            visit(lane, other);
        }
    }
}

// ---- the instances of one kernel file -------------------------------------------------------------

// The C name of a parameter's type, as the Python side reads it (nn_cuda/cuda_cpu/arguments.py).
// A typedef has its type's name (size_t is "unsigned long" on Linux); "?" is a type no launcher
// passes (a reference, a pointer to a pointer).
template <typename T>
const char* c_type_name()
{
    if (std::is_same<T, float>::value) return "float";
    if (std::is_same<T, double>::value) return "double";
    if (std::is_same<T, int>::value) return "int";
    if (std::is_same<T, long long>::value) return "long long";
    if (std::is_same<T, unsigned int>::value) return "unsigned int";
    if (std::is_same<T, bool>::value) return "bool";
    if (std::is_same<T, char>::value) return std::is_signed<char>::value ? "char" : "char (unsigned)";
    if (std::is_same<T, signed char>::value) return "signed char";
    if (std::is_same<T, unsigned char>::value) return "unsigned char";
    if (std::is_same<T, short>::value) return "short";
    if (std::is_same<T, unsigned short>::value) return "unsigned short";
    if (std::is_same<T, long>::value) return "long";
    if (std::is_same<T, unsigned long>::value) return "unsigned long";
    if (std::is_same<T, unsigned long long>::value) return "unsigned long long";
    if (std::is_same<T, void>::value) return "void";  // as the element of void*
    return "?";
}

// The name a 16-bit float type gives itself in a signature ("__half", "__nv_bfloat16": cuda_fp16.h
// and cuda_bf16.h specialise it), so that the launcher knows what an array of them holds; nullptr
// for every other type.
template <typename T>
struct narrow_float_name {
    static constexpr const char* value = nullptr;
};

// A type's name in a signature: a 16-bit float's own; a struct (a vector type, a struct of
// parameters, an empty tag type such as std::true_type) is "struct of N bytes": passed by value, the
// launcher passes N bytes, as CuPy passes the bytes of a NumPy scalar or one-element array; pointed
// to (float4*), any array, also where the struct is not trivially copyable (a pointer is an address
// whatever it points to: PyCUDA's struct reductions pass arrays of a struct with a copy constructor).
// By value, a struct with a copy constructor of its own is passed too: a GPU's kernel gets the
// argument's bytes, and the copy constructor that makes the thread's parameter from them here copies
// the members (CS344's Point2D); so is one whose destructor is not trivial (call_kernel). An enum is
// its underlying integer type; pointed to, "enum of N bytes", which takes an array of either
// signedness: GCC makes the underlying type unsigned int where no enumerator is negative, which
// code does not choose and NumPy's int32 (the enumerators' values) does not match.
template <typename T, bool Pointee = false>
std::string value_type_name()
{
    if constexpr (narrow_float_name<T>::value != nullptr) {
        return narrow_float_name<T>::value;
    } else if constexpr (std::is_enum<T>::value && Pointee) {
        return "enum of " + std::to_string(sizeof(T)) + (sizeof(T) == 1 ? " byte" : " bytes");
    } else if constexpr (std::is_enum<T>::value) {
        return c_type_name<typename std::underlying_type<T>::type>();
    } else if constexpr (std::is_class<T>::value || std::is_union<T>::value) {
        return "struct of " + std::to_string(sizeof(T)) + (sizeof(T) == 1 ? " byte" : " bytes");
    } else {
        return c_type_name<T>();
    }
}

template <typename P, bool Pointee = false>
std::string parameter_type()
{
    if constexpr (std::is_reference<P>::value) {  // named, and refused on the Python side
        return parameter_type<typename std::remove_reference<P>::type>() + "&";
    } else if constexpr (std::is_pointer<P>::value) {
        // a pointer to an array (`double a[][4]`, that is double (*)[4]) is the address of its first
        // element, which CuPy passes for an array of any shape: named double*
        using Element = typename std::remove_all_extents<typename std::remove_pointer<P>::type>::type;
        if constexpr (std::is_function<Element>::value) {  // an address, which CuPy passes as 8 bytes
            return "function pointer";
        } else if constexpr (std::is_pointer<Element>::value) {  // float**, const float**, float* const*
            return parameter_type<typename std::remove_cv<Element>::type, true>() +
                   (std::is_const<Element>::value ? " const*" : "*");
        } else {
            return std::string(std::is_const<Element>::value ? "const " : "") +  // volatile: passed alike
                   parameter_type<typename std::remove_cv<Element>::type, true>() + "*";
        }
    } else {
        return value_type_name<P, Pointee>();
    }
}

template <typename... P>
std::string signature_of(void (*)(P...))
{
    std::string text;
    ((text += parameter_type<P>() + ","), ...);
    if (!text.empty()) {
        text.pop_back();
    }
    return text;
}

// A struct parameter whose destructor is not trivial (CUDA by Example's Lock, whose host destructor
// frees its mutex): a GPU's kernel gets a bitwise copy of the argument and runs no destructor on the
// device (the Programming Guide's "__global__ function argument processing"); a C++ call would run
// it in every thread when the thread's parameter ends. The C++ ABI of every host the runner supports
// (the Itanium one: x86-64 and AArch64, Linux and macOS) passes such a parameter by the address of
// the caller's copy, which the caller destroys, so the thread calls the kernel as one taking that
// address and gives it a bitwise copy of its own that nothing destroys.
template <typename P>
constexpr bool destroyed_after_call = (std::is_class<P>::value || std::is_union<P>::value) &&
                                      !std::is_trivially_destructible<P>::value;

template <typename P>
using passed_as = typename std::conditional<destroyed_after_call<P>, void*, P>::type;

template <typename P>
struct ThreadCopy {  // the thread's bitwise copy of an argument that call_kernel passes by address
    alignas(P) unsigned char bytes[destroyed_after_call<P> ? sizeof(P) : 1];
};

template <typename P>
passed_as<P> thread_argument(void* argument, ThreadCopy<P>& copy)
{
    if constexpr (destroyed_after_call<P>) {
        memcpy(copy.bytes, argument, sizeof(P));
        return copy.bytes;
    } else {
        return *static_cast<typename std::remove_reference<P>::type*>(argument);
    }
}

// Calls the kernel with its arguments read from args[i] (pointers to each value, as in CUDA's
// cudaLaunchKernel and cuLaunchKernel).
template <typename... P, size_t... I>
void call_kernel(void (*kernel)(P...), void** args, std::index_sequence<I...>)
{
    if constexpr ((destroyed_after_call<P> || ...)) {
        std::tuple<ThreadCopy<P>...> copies;
        reinterpret_cast<void (*)(passed_as<P>...)>(kernel)(thread_argument<P>(args[I], std::get<I>(copies))...);
    } else {
        kernel(*static_cast<typename std::remove_reference<P>::type*>(args[I])...);
    }
}

template <typename... P>
constexpr std::index_sequence_for<P...> parameters_of(void (*)(P...))
{
    return {};
}

template <auto Kernel>
void run_thread(void** args)
{
    call_kernel(Kernel, args, parameters_of(Kernel));
}

// One kernel of the library: its thread's body, and its C signature for the Python side.
struct Instance {
    void (*thread_body)(void**);
    std::string signature;
};

// Runs one launch of `instance` (runtime.cpp): 0 when it ran, 1 with `message` written, 2 on a fault
// (fault[0..8]: signal, address, the thread's x, y, z, the block's x, y, z, the program counter).
int launch_kernel(const Instance& instance, const unsigned* grid, const unsigned* block, void** args,
                  const char* kernel, int check, unsigned long long seed, long long* fault,
                  char* message, int message_size);

}  // namespace nn_cuda_cpu
#pragma GCC visibility pop

// ---- the CUDA built-in variables and functions ----------------------------------------------------

#define threadIdx (::nn_cuda_cpu::current->thread_idx)
#define blockIdx (::nn_cuda_cpu::block_idx)
#define blockDim (::nn_cuda_cpu::block_dim)
#define gridDim (::nn_cuda_cpu::grid_dim)

inline void __syncthreads() { nn_cuda_cpu::barrier(); }

// __trap() ends the launch with a KernelError naming its thread and line, as a GPU's trap ends the
// kernel with an error (cudaErrorLaunchFailure), instead of taking the process down.
[[noreturn]] inline void nn_cuda_cpu_trap(const char* file, unsigned line)
{
    const uint3 thread = nn_cuda_cpu::current != nullptr ? nn_cuda_cpu::current->thread_idx : uint3{0, 0, 0};
    nn_cuda_cpu::report("%s: __trap() (%s:%u) in thread (%u, %u, %u) of block (%u, %u, %u)",
                        nn_cuda_cpu::launch.kernel, file, line, thread.x, thread.y, thread.z,
                        nn_cuda_cpu::block_idx.x, nn_cuda_cpu::block_idx.y, nn_cuda_cpu::block_idx.z);
    nn_cuda_cpu::end_launch_reported();
}
#define __trap() nn_cuda_cpu_trap(__FILE__, __LINE__)

#include "device_functions.h"

// One row of the instance table that follows the kernel code: the address of a kernel, of a template
// instance (a CuPy name expression, "&gemm_naive<float, false, true>"), of an extern "C" kernel
// ("&saxpy"), or one overload of a kernel picked by a cast (build.instance_address).
#define NN_CUDA_CPU_INSTANCE(...) \
    nn_cuda_cpu::Instance{&nn_cuda_cpu::run_thread<(__VA_ARGS__)>, nn_cuda_cpu::signature_of(__VA_ARGS__)}

// The C interface of the library that depends on its table `instances` of NN_CUDA_CPU_INSTANCE
// entries; the rest is runtime.cpp's.
#define NN_CUDA_CPU_EXPORT(instances)                                                                   \
    extern "C" int nn_cuda_cpu_instance_count() { return sizeof(instances) / sizeof(instances[0]); }     \
    extern "C" const char* nn_cuda_cpu_signature(int i) { return instances[i].signature.c_str(); }       \
    extern "C" int nn_cuda_cpu_launch(int i, const unsigned* grid, const unsigned* block, void** args, \
                                      const char* kernel, int check, unsigned long long seed,          \
                                      long long* fault, char* message, int message_size)               \
    {                                                                                                  \
        return nn_cuda_cpu::launch_kernel(instances[i], grid, block, args, kernel, check, seed, fault,  \
                                          message, message_size);                                      \
    }
