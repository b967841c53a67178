// CUDA C on the CPU, the part that runs launches: fibers and their stacks, the block scheduler, the
// plain mode's worker threads, the checking mode, cooperative launches, faults and the watchdog, and
// the library's C interface to the Python side (nn_cuda/cuda_cpu/runner.py). It is compiled once per
// set of compiler flags and linked into every kernel library built with them (build.py); runtime.h
// is the part the kernels see.
//
// Checking mode (check != 0 in nn_cuda_cpu_launch): the threads of each phase run in a random order
// (seeded; check == 2 runs every order of check == 1 with the same seed backwards, and the blocks
// one after the other in the order backwards in which they finished, so that of two threads or
// blocks that write one place the other one writes last), up to four blocks are resident
// at once and take turns phase by phase in a random order
// (each keeps its own __shared__ memory, copied in and out as they take turns), so blocks that share
// global memory one of them writes see each other's work half done, as on a GPU; __shared__ memory
// is filled with NaN bytes before every block (with zeros, array by
// array, when the Python side looks for the array read before it was written), and faults (a read or
// write outside a buffer, which the Python side surrounds with inaccessible pages; an index out of
// the bounds of an array of fixed size, __shared__, __constant__, __device__ or local, trapped by
// -fsanitize=bounds) end the launch with a message naming the kernel, the block and the thread
// instead of killing the process.
//
// A cooperative launch (nn_cuda_cpu_set_cooperative) keeps its whole grid resident, as many blocks
// as the stack pool holds (4 of 1024 threads, 372 of 10), taking turns on one host thread as in the
// checking mode, so that grid_group::sync() can wait for every thread of the grid.

#include "runtime.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#pragma GCC visibility push(hidden)

namespace nn_cuda_cpu {

// ---- fibers: a stack and a saved stack pointer per CUDA thread ---------------------------------

extern "C" const void* nn_cuda_cpu_switch(void** save_sp, void* next_sp, const void* handed = nullptr);

// The switch saves the callee-saved registers on the current stack, stores the stack pointer in
// *save_sp, loads next_sp and restores the registers pushed there: a function call that returns
// on another stack. Everything else is saved by the caller, as for any call. The call that resumes
// on the other stack returns `handed`, what the switching side passed along (the stops' call site).
// The start of the switch function (Mach-O names carry a leading underscore, ELF ones a type).
#if defined(__APPLE__)
#define NN_CUDA_CPU_SWITCH_LABEL(elf_type) ".text\n.p2align 4\n_nn_cuda_cpu_switch:\n"
#else
#define NN_CUDA_CPU_SWITCH_LABEL(elf_type) \
    ".text\n.p2align 4\n.hidden nn_cuda_cpu_switch\n.type nn_cuda_cpu_switch, " elf_type "\nnn_cuda_cpu_switch:\n"
#endif

#if defined(__x86_64__)
#define NN_CUDA_CPU_SAVED_WORDS 6
__asm__(
    NN_CUDA_CPU_SWITCH_LABEL("@function")
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    movq %rdx, %rax\n"
    "    ret\n");
#elif defined(__aarch64__)
#define NN_CUDA_CPU_SAVED_WORDS 22  // x19-x30 and d8-d15, 176 bytes
__asm__(
    NN_CUDA_CPU_SWITCH_LABEL("%function")
    "    sub sp, sp, #176\n"
    "    stp x19, x20, [sp, #0]\n"
    "    stp x21, x22, [sp, #16]\n"
    "    stp x23, x24, [sp, #32]\n"
    "    stp x25, x26, [sp, #48]\n"
    "    stp x27, x28, [sp, #64]\n"
    "    stp x29, x30, [sp, #80]\n"
    "    stp d8, d9, [sp, #96]\n"
    "    stp d10, d11, [sp, #112]\n"
    "    stp d12, d13, [sp, #128]\n"
    "    stp d14, d15, [sp, #144]\n"
    "    mov x9, sp\n"
    "    str x9, [x0]\n"
    "    mov sp, x1\n"
    "    ldp x19, x20, [sp, #0]\n"
    "    ldp x21, x22, [sp, #16]\n"
    "    ldp x23, x24, [sp, #32]\n"
    "    ldp x25, x26, [sp, #48]\n"
    "    ldp x27, x28, [sp, #64]\n"
    "    ldp x29, x30, [sp, #80]\n"
    "    ldp d8, d9, [sp, #96]\n"
    "    ldp d10, d11, [sp, #112]\n"
    "    ldp d12, d13, [sp, #128]\n"
    "    ldp d14, d15, [sp, #144]\n"
    "    add sp, sp, #176\n"
    "    mov x0, x2\n"
    "    ret\n");
#else
#error "the cuda-cpu backend switches threads with x86-64 or arm64 instructions; this CPU is neither"
#endif

// ---- the state of the running launch ------------------------------------------------------------

// A host thread running blocks of the launch: the calling thread, or a worker beside it.
struct Worker {
    void* scheduler_sp = nullptr;  // the block scheduler's stack while a fiber runs
    sigjmp_buf fault_exit;
    volatile sig_atomic_t active = 0;  // inside its blocks: a stop signal jumps to fault_exit
    // the thread that ran at the last tick of the preemption timer, and its stops then ("preemption")
    Fiber* ticked = nullptr;
    unsigned ticked_stops = 0;
};
static NN_CUDA_CPU_PER_WORKER Worker worker;

// How many threads of the running block reached a __syncthreads, a warp sync, or their end during
// the current phase: when every thread waits at __syncthreads (the usual case) the scheduler starts
// the next phase at once, without looking at each thread.
struct PhaseCounts {
    size_t at_barrier = 0;
    size_t at_warp_sync = 0;
    size_t yielded = 0;
    size_t shared_atomic_turns = 0;  // of the yielded: lanes letting the others of the block at an atomic first
    size_t done = 0;
};
static NN_CUDA_CPU_PER_WORKER PhaseCounts phase;

// The race check's counts (below, "races"): the epoch moves on at the end of every phase of any block, at
// every turn of a block and at every yield, so that two accesses made at one value of it are of one
// phase of one block with no thread waiting between; the clock at every atomic operation, fence, yield
// and cuda::barrier arrival, each of which the thread that makes it notes (Fiber::race_synced).
static unsigned long long race_epoch = 1;
static unsigned long long race_clock = 1;

// The running thread's atomic, fence, yield or arrival (the race check's).
inline void race_synchronized()
{
    if (current != nullptr) {
        current->race_synced = static_cast<unsigned>(++race_clock);
    }
}

// The threads still to run in the current phase, in their order: a thread that stops (at a
// barrier, a warp sync, a yield or its end) switches straight to the next one, and the last one
// back to the block's scheduler, one switch per thread instead of two. External linkage, as for
// `current`: the switch must not be assumed to leave it unchanged.
struct PhaseQueue {
    const size_t* next = nullptr;
    const size_t* end = nullptr;
};
NN_CUDA_CPU_PER_WORKER PhaseQueue queue;

// The running block's threads (fiber_pool + its slot's first). External linkage on purpose, as for
// `current`: the launcher changes it while a block's scheduler waits in a switch.
NN_CUDA_CPU_PER_WORKER Fiber* fibers = nullptr;

// The first lane of `fiber`'s warp, which counts the warp's lanes at warp syncs and returned.
inline Fiber& warp_head(const Fiber& fiber) { return fibers[fiber.tid - fiber.tid % kWarpSize]; }

#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
void watch_past_dynamic_shared(const Fiber& stopping);  // the checking mode's (below)
#endif

// Where the running thread goes when it stops: the next thread of the phase, or the scheduler.
// Returns, once this thread runs again, the call site the thread that resumed it stopped at.
inline const void* hand_over(const void* site)
{
    // `current`'s address, found once: GCC would find it again (a call of __tls_get_addr in the
    // plain build) after the prefetches below.
    Fiber** running = &current;
    __asm__("" : "+r"(running));
    Fiber* const stopping = *running;
    ++stopping->stops;
#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
    watch_past_dynamic_shared(*stopping);
#endif
    if (queue.next != queue.end) {
        Fiber* const next = &fibers[*queue.next++];
        if (queue.next != queue.end) {
            // The thread after it: the top of its stack (saved registers, then its kernel's frame),
            // fetched a turn ahead. A block's 1024 stacks outgrow the L1 cache, and each switch
            // otherwise waits for those lines (measured: the tiled GEMM 0.48 -> 0.44 s).
            const char* const sp = static_cast<const char*>(fibers[*queue.next].saved_sp);
            __builtin_prefetch(sp);
            __builtin_prefetch(sp + 64);
            __builtin_prefetch(sp + 128);
        }
        next->state = State::ready;  // released from the barrier it waited at, if any
        *running = next;
        return nn_cuda_cpu_switch(&stopping->saved_sp, next->saved_sp, site);
    }
    return nn_cuda_cpu_switch(&stopping->saved_sp, worker.scheduler_sp, site);
}

// The grid of a cooperative launch (runtime.h, `cooperative`), which grid_sync counts.
static size_t grid_threads = 0;  // the threads of the grid
static size_t grid_threads_done = 0;  // those that returned
static size_t grid_sync_arrivals = 0;  // those that wait at the grid.sync() of this round
static unsigned long long grid_sync_round = 0;  // grid.sync()s completed

[[noreturn]] void fiber_main()
{
    launch.thread_body(launch.args);
    current->state = State::done;
    ++warp_head(*current).warp_returned;
    ++phase.done;
    grid_threads_done += cooperative;
    hand_over(nullptr);
    __builtin_trap();  // a finished fiber is never resumed
}

// ---- stacks ---------------------------------------------------------------------------------------

constexpr size_t kStackBytes = 64 * 1024;  // the kernels keep a few hundred bytes per thread
constexpr size_t kCacheLine = 64;
constexpr size_t kStackColors = 64;  // 64 offsets of a cache line: 4 KiB, one page, at most

// In the checking mode up to kResidentBlocks blocks are resident at once (see run_interleaved).
constexpr size_t kResidentBlocks = 4;
constexpr size_t kMaxThreads = 1024;  // a block's, on every GPU since sm_30
// The stacks of the process's pool: the threads and a scheduler of each resident block.
constexpr size_t kPoolStacks = kResidentBlocks * (kMaxThreads + 1);
// The most blocks of a cooperative launch resident at once, however few threads each has (the slots
// its blocks take turns in).
constexpr size_t kMaxCooperativeBlocks = 512;

// How many blocks of `threads` threads a launch keeps resident when its blocks take turns: a
// cooperative launch as many as the pool holds (CuPy reduces a larger grid to what a GPU's SMs hold,
// thousands of small blocks on an H100: a grid of 10 blocks of 10 threads was cut to 4 here, and a
// kernel that covers its data once, without a grid-stride loop, left 60 of its 100 outputs
// unwritten), the checking mode kResidentBlocks.
size_t resident_capacity(size_t threads, bool cooperative_launch)
{
    return cooperative_launch ? std::min(kMaxCooperativeBlocks, kPoolStacks / (threads + 1)) : kResidentBlocks;
}

// The stacks the fibers run on: one pool for the whole process, mapped once by the Python side
// (nn_cuda/cuda_cpu/fiber_stacks.py) for every library it loads, kPoolStacks stacks of kStackBytes,
// each above an inaccessible page (a stack overflow faults). A pool per library would cost each
// library two memory mappings per stack, and a process that loads many libraries would run out of
// mappings (vm.max_map_count).
struct StackPool {
    char* base = nullptr;
    size_t count = 0;
    size_t page = 0;

    void adopt(void* memory, size_t n)
    {
        page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        base = static_cast<char*>(memory);
        count = n;
    }

    // The initial stack pointer of stack i: registers to restore (zero) under `entry`'s address
    // (fiber_main for a CUDA thread, block_main for a resident block's scheduler).
    void* initial_sp(size_t i, void (*entry)() = &fiber_main) const
    {
        // Each stack starts at another offset within its page (cache coloring): stacks a page-size
        // multiple apart would put every thread's hot top-of-stack lines in the same few cache sets.
        char* top = base + (i + 1) * (kStackBytes + page) - (i % kStackColors) * kCacheLine;
        void** sp = reinterpret_cast<void**>(top);
#if defined(__x86_64__)
        *--sp = nullptr;                                    // fiber_main's return address: never used
        *--sp = reinterpret_cast<void*>(entry);              // where the switch's ret goes
        for (int r = 0; r < NN_CUDA_CPU_SAVED_WORDS; ++r) {  // rbp, rbx, r12-r15
            *--sp = nullptr;
        }
#else
        sp -= NN_CUDA_CPU_SAVED_WORDS;  // x19..x30, d8..d15; x30 (the link register) is word 11
        for (int r = 0; r < NN_CUDA_CPU_SAVED_WORDS; ++r) {
            sp[r] = nullptr;
        }
        sp[11] = reinterpret_cast<void*>(entry);
#endif
        return sp;
    }
};
static StackPool stacks;
static NN_CUDA_CPU_PER_WORKER std::vector<Fiber> fiber_pool;  // the threads of every resident block, block after block (`fibers`)

// ---- faults ---------------------------------------------------------------------------------------

static NN_CUDA_CPU_PER_WORKER char signal_stack[64 * 1024];
static NN_CUDA_CPU_PER_WORKER volatile sig_atomic_t fault_signal = 0;
static NN_CUDA_CPU_PER_WORKER void* volatile fault_address = nullptr;
// The instruction the thread was at when the signal came: the launcher turns it into the kernel's
// file:line (the build keeps line tables, -g1). 0 where the platform is not known here.
static NN_CUDA_CPU_PER_WORKER volatile uintptr_t fault_pc = 0;
// The words on the faulting thread's stack from its stack pointer up (within its fiber stack): where
// the fault is in a function of the runner's that the compiler did not inline (an atomicAdd through
// an index past the end), or the watchdog stopped the thread in one (the race check's handler of a
// load, in a spin), the launcher finds the kernel's line that called it among them.
constexpr size_t kFaultStackWords = 32;  // the race check's handler of a load takes up to about 20
static NN_CUDA_CPU_PER_WORKER uintptr_t fault_stack[kFaultStackWords];
static NN_CUDA_CPU_PER_WORKER size_t fault_stack_count = 0;
static uintptr_t reported_fault_stack[kFaultStackWords];  // the launch's reported fault's (launch_kernel)
static size_t reported_fault_stack_count = 0;

// The program counter and the stack pointer the signal interrupted (0 where the platform is not known).
struct Interrupted {
    uintptr_t pc = 0, sp = 0;
};

Interrupted interrupted_at(void* context)
{
    const ucontext_t* registers = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
    return {static_cast<uintptr_t>(registers->uc_mcontext.gregs[REG_RIP]),
            static_cast<uintptr_t>(registers->uc_mcontext.gregs[REG_RSP])};
#elif defined(__aarch64__)
    return {static_cast<uintptr_t>(registers->uc_mcontext.pc), static_cast<uintptr_t>(registers->uc_mcontext.sp)};
#else
    (void)registers;
    return {};
#endif
}

// What fault[0] reports for an access to the guard page under a thread's stack: the thread's local
// variables outgrew kStackBytes (a large local array).
constexpr int kStackOverflow = 1000;
// What fault[0] reports for a general-protection fault, whose address the CPU does not give (0): on
// x86-64 a vector load or store (float4, double2) at an address that is no multiple of its size.
constexpr int kGeneralProtection = 1001;

// The interrupted program counter, and the words at the top of the interrupted fiber's stack (the
// kernel's line that called a function of the runner's, where the signal came in that function).
void keep_fault_place(const Interrupted& at)
{
    fault_pc = at.pc;
    const size_t span = kStackBytes + stacks.page;
    fault_stack_count = 0;
    const char* sp = reinterpret_cast<const char*>(at.sp);
    if (stacks.base != nullptr && sp >= stacks.base && sp < stacks.base + stacks.count * span &&
        static_cast<size_t>(sp - stacks.base) % span >= stacks.page) {  // on a fiber's stack, below its top
        const char* top = stacks.base + (static_cast<size_t>(sp - stacks.base) / span + 1) * span;
        fault_stack_count = std::min(kFaultStackWords, static_cast<size_t>(top - sp) / sizeof(uintptr_t));
        memcpy(fault_stack, sp, fault_stack_count * sizeof(uintptr_t));
    }
}

bool in_launch();  // under "the host threads of the running launch"
// The signals a launch handles (FaultHandlers): the faults first, then the stops, then the ticks.
constexpr int kHandledSignals[8] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGINT, SIGTERM, SIGALRM, SIGVTALRM};
// The faults' actions before the launch's handlers (FaultHandlers::install), for a thread outside it.
static struct sigaction fault_actions_before[4];

void on_fault(int signal_number, siginfo_t* info, void* context)
{
    if (!in_launch()) {
        // A thread the launch does not run on faulted: its own fault, which jumped into the launch's
        // frames (where the blocks run on the caller's thread alone, the launch's state is the
        // process's). Its action goes back to what it was, and the instruction faults again under it.
        for (int i = 0; i < 4; ++i) {
            if (kHandledSignals[i] == signal_number) {
                sigaction(signal_number, &fault_actions_before[i], nullptr);
            }
        }
        return;
    }
    fault_signal = signal_number;
    fault_address = info->si_addr;
    keep_fault_place(interrupted_at(context));
    const char* address = static_cast<const char*>(info->si_addr);
    const size_t span = kStackBytes + stacks.page;
    if ((signal_number == SIGSEGV || signal_number == SIGBUS) && stacks.base != nullptr && address >= stacks.base &&
        address < stacks.base + stacks.count * span && static_cast<size_t>(address - stacks.base) % span < stacks.page) {
        fault_signal = kStackOverflow;
    } else if (signal_number == SIGSEGV && info->si_code == SI_KERNEL && info->si_addr == nullptr) {
        fault_signal = kGeneralProtection;
    }
    siglongjmp(worker.fault_exit, 1);
}

// The host threads of the running launch (the caller first), and the first stop signal one of them
// received: it passes the signal on to the others, so that each leaves its block.
static pthread_t launch_thread_ids[kResidentBlocks];
static std::atomic<int> launch_thread_count{0};
static std::atomic<int> stop_signal{0};

bool preemptible_at(uintptr_t pc);  // under "preemption"

// Whether the calling host thread runs the launch's blocks: where they run on several host threads,
// `worker` is each one's own (a helper may fault before the launcher has written down its id); else the
// caller runs them all.
bool in_launch()
{
#if defined(NN_CUDA_CPU_WORKERS)
    return worker.active != 0;
#else
    return launch_thread_count.load() > 0 && pthread_equal(launch_thread_ids[0], pthread_self());
#endif
}

// Ctrl-C (SIGINT), SIGTERM and the watchdog (SIGALRM) end a launch that would not end by itself: the
// Python side then raises KeyboardInterrupt, lets SIGTERM take its course, or reports the timeout.
void on_stop(int signal_number, siginfo_t*, void* context)
{
    int none = 0;
    if (stop_signal.compare_exchange_strong(none, signal_number)) {
        const int count = launch_thread_count.load();
        for (int i = 0; i < count; ++i) {
            if (!pthread_equal(launch_thread_ids[i], pthread_self())) {
                pthread_kill(launch_thread_ids[i], signal_number);
            }
        }
    }
    // Not in a block: it sees stop_signal before its next block, or the launcher after it. Nor a thread
    // of the launch: a signal sent to the process may come to any of its threads (a BLAS worker's, one
    // of Python's), and where the blocks run on the caller's thread alone `worker` is the process's, so
    // that such a thread took the launch's state for its own and jumped into the caller's frames (seen
    // as a crash, or the process ended by SIGALRM, once the caller's preemption ticks kept the kernel
    // from picking the caller for the watchdog's signal). It was passed on to the launch's threads above.
    if (!worker.active || !in_launch()) {
        return;
    }
    fault_signal = signal_number;
    fault_address = nullptr;
    keep_fault_place(interrupted_at(context));  // where a kernel that never ends was spinning
    if (current != nullptr && current->stops == current->preempted_stops && !preemptible_at(fault_pc)) {
        // in the runner, on a thread that spins and is preempted at each tick (in the preemption's
        // yield, the launcher's turn between two phases): where the spin was when last preempted
        fault_pc = current->preempted_at;
        fault_stack_count = 0;
    }
    siglongjmp(worker.fault_exit, 1);
}

// ---- preemption: a thread that runs on without stopping lets the others run --------------------------
//
// The threads of a block take turns, each running until it stops (a barrier, a warp sync, a yield, its
// end). A thread that waits for another without stopping (`while (flag == 0) {}` on a volatile flag
// that another thread, or another resident block, sets) would spin alone for ever, where a GPU runs
// both. So each host thread of a launch has a timer of its own (SIGVTALRM sent to that thread, on
// CLOCK_MONOTONIC, a high-resolution clock: a timer of CPU time, such as ITIMER_VIRTUAL, is counted in
// the scheduler's ticks, 4 ms on many kernels; every kPreemptionTickMicroseconds, and every
// kSpinTickMicroseconds once it has preempted a thread) that looks at the thread's running GPU thread:
// where it is the one of the tick before, with no stop between, it yields right where it is, as
// __nanosleep() would. The handler makes the interrupted thread call nn_cuda_cpu_preempted, which
// saves every register the code may hold, yields, puts them back and returns where the thread was.
// Only in the code's own functions, whose address ranges the Python side gives (runner.py,
// LoadedKernels._code_functions): never in the runner's (the bookkeeping of a phase), nor in the C
// library's (a lock held in printf). On x86-64 Linux only; elsewhere a spin still meets the watchdog.
constexpr long kPreemptionTickMicroseconds = 4000;
// The tick of a host thread once one of its launch's threads has been preempted: a chain of threads that
// each wait for the next costs a tick a wait (64 threads: 8.3 s with 4-ms ticks, 0.5 s with these). A
// tick costs the thread about 3 us whatever it does, so a launch whose threads never wait keeps the slow
// one (one epoch of training on the tiled GEMM: 0.83 s with 4-ms ticks, 0.93 s at 250 us throughout).
constexpr long kSpinTickMicroseconds = 250;
// The fiber stack a preemption needs below the interrupted frame: its registers, the yield's frames.
constexpr size_t kPreemptionStackBytes = 8192;
static std::vector<uintptr_t> preemptible;  // [first, end) pairs, in order: the code's functions
static std::atomic<unsigned long long> preemptions{0};  // in this process (nn_cuda_cpu_preemptions)

#if defined(__x86_64__) && defined(__linux__)
constexpr bool kPreemption = true;
extern "C" void nn_cuda_cpu_preempted();

// The calling host thread's timer (its ticks go to it alone), by the system calls themselves, so that
// no library (librt, before glibc 2.34) is needed; and whether it ticks at the spin's rate.
static NN_CUDA_CPU_PER_WORKER int tick_timer = -1;
static NN_CUDA_CPU_PER_WORKER bool ticking_fast = false;

void set_tick(long microseconds)
{
    struct itimerspec tick{};
    tick.it_interval.tv_sec = tick.it_value.tv_sec = microseconds / 1000000;
    tick.it_interval.tv_nsec = tick.it_value.tv_nsec = microseconds % 1000000 * 1000;
    syscall(SYS_timer_settime, tick_timer, 0, &tick, nullptr);
}

void start_ticks()
{
    struct sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGVTALRM;
#if defined(sigev_notify_thread_id)
    event.sigev_notify_thread_id = static_cast<pid_t>(syscall(SYS_gettid));
#else
    event._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
#endif
    int created = -1;
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &created) != 0) {
        return;  // no timer: a spin of this thread meets the watchdog, as without preemption
    }
    tick_timer = created;
    ticking_fast = false;
    set_tick(kPreemptionTickMicroseconds);
}

// A thread of this host thread's launch was preempted: its threads wait for each other, and each wait
// costs up to a tick, so the ticks come at the spin's rate until the launch ends.
void tick_faster()
{
    if (!ticking_fast && tick_timer >= 0) {
        ticking_fast = true;
        set_tick(kSpinTickMicroseconds);
    }
}

void stop_ticks()
{
    if (tick_timer >= 0) {
        syscall(SYS_timer_delete, tick_timer);
        tick_timer = -1;
    }
}

// Entered as if the interrupted instruction had called it (its address pushed 128 bytes below the
// stack pointer, past the red zone, which the code may use): saves the flags, the registers a call may
// change and the x87/SSE state, yields, restores them, and returns, taking the 128 bytes back.
__asm__(".text\n.p2align 4\n.hidden nn_cuda_cpu_preempted\n.type nn_cuda_cpu_preempted, @function\n"
        "nn_cuda_cpu_preempted:\n"
        "    pushfq\n"
        "    pushq %rax\n    pushq %rcx\n    pushq %rdx\n    pushq %rsi\n    pushq %rdi\n"
        "    pushq %r8\n    pushq %r9\n    pushq %r10\n    pushq %r11\n    pushq %rbp\n"
        "    movq %rsp, %rbp\n"
        "    andq $-16, %rsp\n"
        "    subq $512, %rsp\n"
        "    fxsave64 (%rsp)\n"
        "    cld\n"
        "    call nn_cuda_cpu_preempted_stop\n"
        "    fxrstor64 (%rsp)\n"
        "    movq %rbp, %rsp\n"
        "    popq %rbp\n    popq %r11\n    popq %r10\n    popq %r9\n    popq %r8\n"
        "    popq %rdi\n    popq %rsi\n    popq %rdx\n    popq %rcx\n    popq %rax\n"
        "    popfq\n"
        "    ret $128\n"
        ".size nn_cuda_cpu_preempted, .-nn_cuda_cpu_preempted\n");
#else
constexpr bool kPreemption = false;
void start_ticks() {}
void tick_faster() {}
void stop_ticks() {}
#endif

// Whether `pc` is in one of the code's functions.
bool preemptible_at(uintptr_t pc)
{
    const auto after = std::upper_bound(preemptible.begin(), preemptible.end(), pc);
    return (after - preemptible.begin()) % 2 == 1;  // past a range's first address, before its end
}

bool long_turn_at_tick();  // under "blocks that take turns"

// What a preemption of the running thread at `at` notes: the yield it is made to make is a stop, and
// whether it stopped since the one before (a spin has not).
void note_preemption(uintptr_t at)
{
    current->preemptions_in_a_row = current->stops == current->preempted_stops ? current->preemptions_in_a_row + 1 : 1;
    current->preempt_pending = false;
    current->preempted_stops = current->stops + 1;
    current->preempted_at = at;
    tick_faster();
    preemptions.fetch_add(1, std::memory_order_relaxed);
}

void on_tick(int, siginfo_t*, void* context)
{
#if defined(__x86_64__) && defined(__linux__)
    const bool long_turn = long_turn_at_tick();
    if (!worker.active || current == nullptr || !in_launch()) {  // not a tick of its timer (on_stop)
        return;
    }
    // a thread preempted before, which has not stopped since, spins: preempted at this tick, not at
    // the one after (each spinning thread of a round took one to two ticks, now at most one); and
    // so is one of a block whose turn a whole tick has passed in
    const bool spinning = current->stops == current->preempted_stops;
    if (!spinning && !long_turn && (worker.ticked != current || worker.ticked_stops != current->stops)) {
        worker.ticked = current;  // it stopped since the tick before, or another one runs: looked at next tick
        worker.ticked_stops = current->stops;
        return;
    }
    greg_t* registers = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
    const uintptr_t pc = static_cast<uintptr_t>(registers[REG_RIP]);
    const char* sp = reinterpret_cast<const char*>(registers[REG_RSP]);
    const size_t span = kStackBytes + stacks.page;
    if (!preemptible_at(pc) || stacks.base == nullptr || sp < stacks.base ||
        sp >= stacks.base + stacks.count * span ||
        static_cast<size_t>(sp - stacks.base) % span < stacks.page + kPreemptionStackBytes) {
        // not in the code's own functions (tried again next tick), or too near its stack's end; the race
        // check's handler of a load, where a spin spends most of its time, yields at its next call
        current->preempt_pending = true;
        return;
    }
    worker.ticked = nullptr;
    note_preemption(pc);
    uintptr_t* const pushed = reinterpret_cast<uintptr_t*>(registers[REG_RSP] - 128 - 8);
    *pushed = pc;
    registers[REG_RSP] = reinterpret_cast<greg_t>(pushed);
    registers[REG_RIP] = reinterpret_cast<greg_t>(&nn_cuda_cpu_preempted);
#else
    (void)context;
#endif
}

// The signal handlers run on a stack of the host thread's own (a fault may be a stack overflow).
void use_signal_stack(stack_t* previous)
{
    stack_t alternate{};
    alternate.ss_sp = signal_stack;
    alternate.ss_size = sizeof(signal_stack);
    sigaltstack(&alternate, previous);
}

struct FaultHandlers {
    struct sigaction previous[8];
    stack_t previous_stack;
    struct itimerval previous_timer{};
    bool ticking = false;

    void install()
    {
        use_signal_stack(&previous_stack);
        handle(0, 4, on_fault);  // the faults
        memcpy(fault_actions_before, previous, sizeof(fault_actions_before));
        handle(4, 7, on_stop);  // Ctrl-C, SIGTERM and the watchdog
        if (kPreemption && !preemptible.empty()) {  // the preemption timers' ticks ("preemption")
            handle(7, 8, on_tick);
            ticking = true;
        }
    }

    // kHandledSignals[first..last) go to `handler`, on the signal stack; their previous actions are kept.
    void handle(int first, int last, void (*handler)(int, siginfo_t*, void*))
    {
        struct sigaction action{};
        action.sa_sigaction = handler;
        // the preemption timer's: a call it interrupts (a worker's join, a printf's write) goes on
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | (kHandledSignals[first] == SIGVTALRM ? SA_RESTART : SA_NODEFER);
        sigemptyset(&action.sa_mask);
        for (int i = first; i < last; ++i) {
            sigaction(kHandledSignals[i], &action, &previous[i]);
        }
    }

    // The watchdog: SIGALRM after `seconds` (none when 0); whatever timer was set is put back after.
    void arm(double seconds)
    {
        struct itimerval timer{};
        timer.it_value.tv_sec = static_cast<time_t>(seconds);
        timer.it_value.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(timer.it_value.tv_sec)) * 1e6);
        setitimer(ITIMER_REAL, &timer, &previous_timer);
    }

    void restore()
    {
        struct itimerval off{};
        setitimer(ITIMER_REAL, &off, nullptr);
        if (ticking) {
            // a tick a timer raised before it was deleted, and not taken yet, is dropped (ignoring a
            // signal drops it): put back to its default action, it would end the process
            struct sigaction ignore{};
            ignore.sa_handler = SIG_IGN;
            sigaction(SIGVTALRM, &ignore, nullptr);
        }
        for (int i = 0; i < (ticking ? 8 : 7); ++i) {
            sigaction(kHandledSignals[i], &previous[i], nullptr);
        }
        setitimer(ITIMER_REAL, &previous_timer, nullptr);
        sigaltstack(&previous_stack, nullptr);
    }
};

// ---- __shared__ memory filled with NaN bytes (checking mode) --------------------------------------

struct SharedRegion {
    void* address;
    size_t bytes;
    unsigned char fill;  // 0xFF, all-ones bytes: a NaN as float and as double; 0 when a rerun asks
};
static std::vector<SharedRegion> shared_regions;  // told by the Python side (the library's symbols)

static size_t dynamic_shared_bytes = 0;  // the launch's shared_mem
static unsigned char dynamic_shared_fill = 0xFF;
static double watchdog_seconds = 0.0;  // a launch running longer is stopped (0: never)

// [first, end) of the section of the __shared__ variables that are not a template's (file scope
// ones included); an empty range where the platform has none.
void shared_section(uintptr_t* bounds)
{
#if defined(__APPLE__)
    bounds[0] = bounds[1] = 0;
#else
    bounds[0] = reinterpret_cast<uintptr_t>(__start_nn_cuda_shared);
    bounds[1] = reinterpret_cast<uintptr_t>(__stop_nn_cuda_shared);
#endif
}

// The checking mode's guard past the launch's extern __shared__ memory: the rest of the region is
// filled as the memory itself is (NaN bytes, or zeros in a rerun) when the launch starts, so a read
// past the end takes the fill; a byte that differs when it ends was written past the end. The first
// such byte, or none (kDynamicSharedBytes).
void fill_past_dynamic_shared()
{
    memset(dynamic_shared + dynamic_shared_bytes, dynamic_shared_fill, kDynamicSharedBytes - dynamic_shared_bytes);
}

#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
// In a checked launch of code that declares extern __shared__ memory (RawModule defines the macro),
// the first kWatchedBytes of the guard are compared with the fill whenever a thread stops (at a
// barrier, a warp sync, its end). The threads of a checked launch run one at a time, so the first
// change there is the stopping thread's write, and the report names it, as compute-sanitizer names
// the thread of an invalid __shared__ write. A write further past the end is still found when the
// launch ends (written_past_dynamic_shared), without its thread.
constexpr size_t kWatchedBytes = 64;
static bool watching_past_dynamic_shared = false;  // this launch is checked
struct PastEndWrite {
    bool seen = false;
    uint3 thread{}, block{};
    size_t first = 0, last = 0;  // the bytes it changed within the watched ones
};
static PastEndWrite past_end_write;

void watch_past_dynamic_shared(const Fiber& stopping)
{
    if (!watching_past_dynamic_shared || past_end_write.seen) {
        return;
    }
    const size_t end = std::min(dynamic_shared_bytes + kWatchedBytes, kDynamicSharedBytes);
    for (size_t i = dynamic_shared_bytes; i < end; ++i) {
        if (dynamic_shared[i] != dynamic_shared_fill) {
            if (!past_end_write.seen) {
                past_end_write = PastEndWrite{true, stopping.thread_idx, block_idx, i, i};
            }
            past_end_write.last = i;
        }
    }
}
#endif

size_t written_past_dynamic_shared(size_t* last)
{
    size_t first = kDynamicSharedBytes;
    for (size_t i = dynamic_shared_bytes; i < kDynamicSharedBytes; ++i) {
        if (dynamic_shared[i] != dynamic_shared_fill) {
            first = std::min(first, i);
            *last = i;
        }
    }
    return first;
}

void poison_shared()
{
    for (const SharedRegion& region : shared_regions) {
        memset(region.address, region.fill, region.bytes);
    }
    memset(dynamic_shared, dynamic_shared_fill, dynamic_shared_bytes);
}

// ---- the barrier ------------------------------------------------------------------------------------

// The running thread stops at `site` in `state`, counted in `count` (phase's), and hands over; the
// compiler may keep no memory in registers across it, since other threads run meanwhile. Returns
// the site of the thread that stopped before this one resumed (hand_over).
inline const void* stop_in(State state, size_t& count, const void* site)
{
    __asm__ __volatile__("" ::: "memory");
    current->state = state;
    ++count;
    const void* const previous = hand_over(site);
    __asm__ __volatile__("" ::: "memory");
    return previous;
}

// The stops a kernel calls: __syncthreads(), a yield (below) and a warp sync (under "warps"), each an
// extern "C" function entered through barrier(), yield_thread() or warp_sync(). Each takes the call
// site it was called from (its return address) and returns the site the thread before it stopped at.
//
// Why: the thread that resumes after a switch may have stopped at another call site than the thread
// that switched (two __syncthreads() in a loop: each thread of a phase stops at the second and
// resumes from the first). A `ret` into the kernel is predicted by the CPU's return stack, which holds
// the call site of the thread that stopped, so there every switch was mispredicted, and the work of
// the threads before it, which otherwise overlaps, was thrown away. On x86-64 ELF the entry points
// therefore return by `ret` when both sites are the same, and otherwise by an indirect jump, which the
// return stack does not predict; a loop of one call site pays for the extra call (measured in
// docs/kernels.md, "Speed").
extern "C" __attribute__((noinline, used)) const void* nn_cuda_cpu_barrier_stop(const void* site)
{
    ++current->syncs_passed;
    return stop_in(State::at_barrier, phase.at_barrier, site);
}

// Lets the other threads of the block run (and, in the checking mode, the other resident blocks)
// before this one goes on: a thread that waits for another one (cuda::barrier's wait, __nanosleep
// in a spin loop) would otherwise spin alone, since the threads take turns.
extern "C" __attribute__((noinline, used)) const void* nn_cuda_cpu_yield_stop(const void* site)
{
    ++race_epoch;  // a thread that waits for another (a spin on a volatile flag): what came before is ordered
    const void* const previous = stop_in(State::yielded, phase.yielded, site);
    race_synchronized();  // what it waited for has happened
    return previous;
}

// A thread that the preemption timer stopped ("preemption"), in nn_cuda_cpu_preempted: it yields, as
// nn_cuda_cpu_yield_stop does, and like it orders what came before for the race check: a thread that
// ran a whole tick without stopping spins, waiting for another one, as one that calls __nanosleep() in
// its loop does (a flag handed over with __threadfence() on both sides was reported as a race).
extern "C" __attribute__((noinline, used)) void nn_cuda_cpu_preempted_stop()
{
    nn_cuda_cpu_yield_stop(nullptr);
}

extern "C" const void* nn_cuda_cpu_warp_sync_stop(unsigned mask, const void* site);  // under "warps"

#if defined(__x86_64__) && defined(__ELF__)
// `entry` (a mangled C++ name) passes its return address in `site_register` to `stop`, then returns
// there by `ret` or by a jump (above). The CFI lets a debugger walk from inside the stop to the kernel.
#define NN_CUDA_CPU_STOP_ENTRY(entry, stop, site_register)                                          \
    __asm__(".text\n.p2align 4\n.globl " entry "\n.hidden " entry "\n.type " entry ", @function\n" \
            entry ":\n"                                                                             \
            "    .cfi_startproc\n"                                                                 \
            "    movq (%rsp), " site_register "\n"                                                 \
            "    subq $8, %rsp\n"                                                                  \
            "    .cfi_adjust_cfa_offset 8\n"                                                       \
            "    call " stop "\n"                                                                  \
            "    addq $8, %rsp\n"                                                                  \
            "    .cfi_adjust_cfa_offset -8\n"                                                      \
            "    cmpq %rax, (%rsp)\n"                                                              \
            "    jne 1f\n"                                                                         \
            "    ret\n"                                                                            \
            "1:  movq (%rsp), %rcx\n"                                                              \
            "    addq $8, %rsp\n"                                                                  \
            "    .cfi_adjust_cfa_offset -8\n"                                                      \
            "    .cfi_register %rip, %rcx\n"                                                       \
            "    jmpq *%rcx\n"                                                                     \
            "    .cfi_endproc\n"                                                                   \
            ".size " entry ", .-" entry "\n")
NN_CUDA_CPU_STOP_ENTRY("_ZN11nn_cuda_cpu7barrierEv", "nn_cuda_cpu_barrier_stop", "%rdi");
NN_CUDA_CPU_STOP_ENTRY("_ZN11nn_cuda_cpu12yield_threadEv", "nn_cuda_cpu_yield_stop", "%rdi");
NN_CUDA_CPU_STOP_ENTRY("_ZN11nn_cuda_cpu9warp_syncEj", "nn_cuda_cpu_warp_sync_stop", "%rsi");
#else
void barrier() { nn_cuda_cpu_barrier_stop(nullptr); }
void yield_thread() { nn_cuda_cpu_yield_stop(nullptr); }
void warp_sync(unsigned mask) { nn_cuda_cpu_warp_sync_stop(mask, nullptr); }
#endif

// __syncthreads_count: a barrier that also sums a predicate over the block. Three totals in turn:
// a thread adds to total n % 3 and clears total (n + 1) % 3 before barrier n, and reads total n % 3
// after it. Between two barriers, threads may still read total n - 1 (which nobody clears now) or
// already add to total n + 1 (which was cleared before barrier n), so one barrier per vote is enough.
static NN_CUDA_CPU_PER_WORKER int vote_totals[3];

int barrier_count(bool predicate)
{
    const unsigned n = current->votes++;
    vote_totals[n % 3] += predicate ? 1 : 0;
    vote_totals[(n + 1) % 3] = 0;
    barrier();
    return vote_totals[n % 3];
}

// Ends the launch with launch.message already written (a failed device assert): status 1.
constexpr int kReported = 2;  // what fault_exit's sigsetjmp returns then (a fault returns 1)

[[noreturn]] void end_launch_reported() { siglongjmp(worker.fault_exit, kReported); }

// "index 32 of an array of type 'float [32]'": what the checking build's bounds check last found
// (empty where it traps with no handler: clang's builds)
static char bounds_detail[160];

#if defined(NN_CUDA_CPU_CAST_CHECK)
// The checking build's sanitizer handlers (build.py, CAST_CHECK_FLAGS), in place of libubsan's: GCC
// passes a check's source place and types, and the value as its bits (a float or double).
struct SanitizerPlace {
    const char* file;
    uint32_t line;
    uint32_t column;
};
struct SanitizerType {
    uint16_t kind;  // 1: a floating-point type
    uint16_t bits;  // its width
    char name[1];  // "'float'"
};
struct CastCheck {
    SanitizerPlace place;
    const SanitizerType* from;
    const SanitizerType* to;
};

// An integer operand as GCC passes it to a handler (its bits in a pointer's place), sign-extended
// where its type (bits = log2(width) << 1 | signed) is signed.
long long sanitizer_integer(const SanitizerType* type, void* bits)
{
    const unsigned width = 1u << (type->bits >> 1);
    const uint64_t raw = reinterpret_cast<uintptr_t>(bits);
    return (type->bits & 1) && width < 64 ? static_cast<long long>(raw << (64 - width)) >> (64 - width)
                                          : static_cast<long long>(raw);
}

struct BoundsCheck {
    SanitizerPlace place;
    const SanitizerType* array;  // "'float [32]'": the dimension indexed (of `float s[4][8]`, 'float [8]')
    const SanitizerType* index;  // an integer type: bits = log2(width) << 1 | signed
};

// An index outside a fixed-size array: reported as the trapped check was, a SIGILL at its call,
// with the index and the array's type in bounds_detail (nn_cuda_cpu_bounds_detail).
extern "C" void __ubsan_handle_out_of_bounds_abort(void* data, void* index_bits)
{
    const BoundsCheck* check = static_cast<const BoundsCheck*>(data);
    snprintf(bounds_detail, sizeof bounds_detail, "index %lld of an array of type %s",
             sanitizer_integer(check->index, index_bits), check->array->name);
    fault_signal = SIGILL;
    fault_address = nullptr;
    fault_pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0)) - 1;
    siglongjmp(worker.fault_exit, 1);
}

// A float converted to an integer type that cannot hold it (NaN, infinite, out of range): undefined
// in C++; a GPU's cvt clamps it to the type's range and gives 0 for NaN, where x86 gives the minimum
// of a 32- or 64-bit signed type (cvttss2si's "integer indefinite"). Below that range the two agree,
// and the conversion goes on (the handler returns: the build recovers from this check); anywhere
// else the launch ends, reported.
extern "C" void __ubsan_handle_float_cast_overflow(void* data, void* bits)
{
    const CastCheck* check = static_cast<const CastCheck*>(data);
    const uintptr_t raw = reinterpret_cast<uintptr_t>(bits);
    double value = 0.0;
    if (check->from->bits == 32) {
        float single;
        memcpy(&single, &raw, sizeof single);
        value = single;
    } else if (check->from->bits == 64) {
        memcpy(&value, &raw, sizeof value);
    }
    // an integer type's bits are log2(width) << 1 | signed: int 11, long long 13
    const bool wide_signed = check->to->kind == 0 && (check->to->bits == 11 || check->to->bits == 13);
    if ((check->from->bits == 32 || check->from->bits == 64) && wide_signed && value < 0.0) {
        return;  // the type's minimum here and on a GPU
    }
    char what[96];
    if (check->from->bits == 32 || check->from->bits == 64) {
        snprintf(what, sizeof what, "%.9g (%s)", value, check->from->name);
    } else {
        snprintf(what, sizeof what, "a value of %s", check->from->name);
    }
    const uint3 thread = current != nullptr ? current->thread_idx : uint3{0, 0, 0};
    report("%s: thread (%u, %u, %u) of block (%u, %u, %u) converts %s to %s, which cannot hold it, at %s:%u: C++ "
           "leaves that undefined; a GPU's conversion clamps to the type's range (NaN gives 0), this CPU's gives "
           "another value, so the results part from a GPU's there (__float2int_rz and the other conversion "
           "intrinsics clamp as a GPU does)",
           launch.kernel, thread.x, thread.y, thread.z, block_idx.x, block_idx.y, block_idx.z, what, check->to->name,
           check->place.file, check->place.line);
    end_launch_reported();
}

struct ShiftCheck {
    SanitizerPlace place;
    const SanitizerType* value;  // an integer type: bits = log2(width) << 1 | signed
    const SanitizerType* count;
};

// A shift by the width of the value's type or more, or by a negative count: undefined in C++; a
// GPU's shl and shr clamp the count to the width (0, or -1 for a negative value shifted right),
// x86's take it modulo the width.
extern "C" void __ubsan_handle_shift_out_of_bounds_abort(void* data, void*, void* count_bits)
{
    const ShiftCheck* check = static_cast<const ShiftCheck*>(data);
    const long long count = sanitizer_integer(check->count, count_bits);
    const uint3 thread = current != nullptr ? current->thread_idx : uint3{0, 0, 0};
    report("%s: thread (%u, %u, %u) of block (%u, %u, %u) shifts a value of %s (%u bits) by %lld at %s:%u: C++ "
           "leaves a count outside 0 to %u undefined; a GPU's shift clamps it to the width (1u << 32 is 0), this "
           "CPU's takes it modulo the width (1u << 32 is 1), so the results part from a GPU's there",
           launch.kernel, thread.x, thread.y, thread.z, block_idx.x, block_idx.y, block_idx.z, check->value->name,
           1u << (check->value->bits >> 1), count, check->place.file, check->place.line,
           (1u << (check->value->bits >> 1)) - 1);
    end_launch_reported();
}
#endif

// grid_group::sync(): the last thread of the grid to arrive ends the round; the others yield until
// it has (their blocks take turns meanwhile). Threads that returned never arrive: when only they are
// missing, the grid would wait for ever (a GPU hangs), which is reported.
__attribute__((noinline)) void grid_sync()
{
    if (!cooperative) {
        report("%s: grid_group::sync() in thread (%u, %u, %u) of block (%u, %u, %u) of a launch that is not "
               "cooperative: a grid-wide barrier needs every block of the grid resident at once, which only a "
               "cooperative launch promises (CuPy: RawModule(..., enable_cooperative_groups=True), here too)",
               launch.kernel, current->thread_idx.x, current->thread_idx.y, current->thread_idx.z, block_idx.x,
               block_idx.y, block_idx.z);
        end_launch_reported();
    }
    const unsigned long long round = grid_sync_round;
    if (++grid_sync_arrivals == grid_threads) {
        grid_sync_arrivals = 0;
        ++grid_sync_round;
        return;
    }
    while (grid_sync_round == round) {
        if (grid_sync_arrivals + grid_threads_done == grid_threads) {
            report("%s: thread (%u, %u, %u) of block (%u, %u, %u) waits at grid_group::sync() for %zu threads of "
                   "the grid that returned before reaching it: every thread of a cooperative grid must reach each "
                   "grid.sync() (on a GPU the grid hangs)",
                   launch.kernel, current->thread_idx.x, current->thread_idx.y, current->thread_idx.z, block_idx.x,
                   block_idx.y, block_idx.z, grid_threads_done);
            end_launch_reported();
        }
        yield_thread();
    }
}

// ---- warps ----------------------------------------------------------------------------------------

// The checking mode's phase queue may grow at its front into [queue_room, queue.next): a warp whose
// lanes have all reached a warp sync goes on at once, its lanes first in the queue (below), and not
// after every other thread of the phase has stopped. Null in the plain mode.
static NN_CUDA_CPU_PER_WORKER size_t* queue_room = nullptr;
enum class Release { none, others, running_thread_first };
Release release_completed_warp_sync();  // below, with the random orders

// Waits until every lane of `mask` in this thread's warp has reached a warp sync too (warp_sync()).
extern "C" __attribute__((noinline, used)) const void* nn_cuda_cpu_warp_sync_stop(unsigned mask, const void* site)
{
    if (!((mask >> lane_id()) & 1u)) {
        warp_misuse(mask, "that leaves out its own lane; every lane that calls it must be in the mask "
                          "(on a GPU the result is undefined)");
    }
    current->warp_mask = mask;
    ++current->syncs_passed;
    ++warp_head(*current).warp_waiting;
    if (queue_room != nullptr) {  // the checking mode: a warp whose sync this completes goes on at once
        __asm__ __volatile__("" ::: "memory");
        current->state = State::at_warp_sync;
        ++phase.at_warp_sync;
        const Release released = release_completed_warp_sync();
        if (released == Release::running_thread_first) {
            current->state = State::ready;
            __asm__ __volatile__("" ::: "memory");
            return site;
        }
        const void* const previous = hand_over(site);
        __asm__ __volatile__("" ::: "memory");
        return previous;
    }
    return stop_in(State::at_warp_sync, phase.at_warp_sync, site);
}

// The checking mode, at an atomic on __shared__ memory: the first one a thread makes between two syncs
// lets the other threads of the phase run before it goes on (a yield), and true. A warp's lanes
// otherwise run one after another up to their next warp sync, so code that relies on them running
// together between syncs (nvdiffrast's "coalesced atomics": a leader zeroes a __shared__ slot, every
// lane adds to it atomically, the leader flushes it, with no __syncwarp() between) got the same
// wrong result in every order; now the orders part, and the checking mode reports the race.
bool lanes_take_turns_at_shared_atomics(const void* address)
{
    if (queue_room == nullptr || current == nullptr || current->shared_atomic_turn_at == current->syncs_passed) {
        return false;
    }
    const unsigned char* at = static_cast<const unsigned char*>(address);
    bool shared = at >= dynamic_shared && at < dynamic_shared + kDynamicSharedBytes;
    for (size_t i = 0; i < shared_regions.size() && !shared; ++i) {
        const unsigned char* region = static_cast<const unsigned char*>(shared_regions[i].address);
        shared = at >= region && at < region + shared_regions[i].bytes;
    }
    if (!shared) {
        return false;
    }
    current->shared_atomic_turn_at = current->syncs_passed;
    ++phase.shared_atomic_turns;
    yield_thread();
    return true;
}

// A warp sync that also hands over a flag: the lanes of `mask` (in this warp) whose flag is set.
unsigned warp_ballot(unsigned mask, bool flag)
{
    unsigned bits = 0;
    warp_gather(mask, flag, [&](unsigned lane, bool set) { bits |= set ? 1u << lane : 0u; });
    return bits;
}

// __activemask(): on a GPU, the lanes of the warp that run the call together, those that took the
// same branch to it (`if (threadIdx.x < 8) m = __activemask();` gives 0xff). Lanes do not run in
// lockstep here, so the thread stops as at a warp sync that awaits no lane (a mask of 0, which no
// __syncwarp may give): it goes on once every thread of the phase has stopped somewhere, and its
// active lanes are then those of its warp stopped at the same call (release_warp_syncs), whatever
// the order the threads ran in. Lanes that returned, or wait at a barrier or another sync, are not.
__attribute__((noinline)) unsigned active_lanes()
{
    current->active_site = __builtin_return_address(0);
    current->warp_mask = 0;
    ++warp_head(*current).warp_waiting;
    stop_in(State::at_warp_sync, phase.at_warp_sync, nullptr);
    current->active_lanes_given = current->warp_participants;
    return current->warp_participants;
}

// The slot each lane of the warp [base, end) wrote its value to at the sync it waits at (the parity
// of the syncs it has passed), one bit per lane.
unsigned written_slots(size_t base, size_t end)
{
    unsigned slots = 0;
    for (size_t t = base; t < end; ++t) {
        slots |= (fibers[t].warp_syncs & 1u) << (t - base);
    }
    return slots;
}

// The lanes of warp `warp` that have returned.
unsigned returned_lanes(size_t warp, size_t threads)
{
    unsigned bits = 0;
    for (size_t t = warp * kWarpSize; t < std::min<size_t>(threads, (warp + 1) * kWarpSize); ++t) {
        bits |= fibers[t].state == State::done ? 1u << (t % kWarpSize) : 0u;
    }
    return bits;
}

// The lanes a thread at a warp sync waits for: those of its mask that the block has and that have
// not returned (`returned`: its warp's; the CUDA C++ guide asks every non-exited lane of the mask to
// reach the sync).
unsigned awaited_lanes(const Fiber& fiber, size_t threads, unsigned returned)
{
    return fiber.warp_mask & lanes_of(fiber.tid / kWarpSize, threads) & ~returned;
}

// Whether a thread of [base, end) was preempted in the midst of its work, once since it last stopped: the
// lanes of __activemask() are those at the call once every lane of the warp has stopped somewhere, and a
// tick that lands between a __syncthreads() and the call (often under the race check) split a warp that a
// GPU runs together (CS149's exclusive scan took a mask without a lane, and its lanes raced). A lane that
// spins (preempted again without a stop, or yielding by __nanosleep()) is not waited for.
bool lane_preempted_in_work(size_t base, size_t end)
{
    for (size_t u = base; u < end; ++u) {
        const Fiber& lane = fibers[u];
        if (lane.state == State::yielded && lane.stops == lane.preempted_stops && lane.preemptions_in_a_row == 1) {
            return true;
        }
    }
    return false;
}

// Releases the threads at a warp sync whose awaited lanes have all arrived; how many.
size_t release_warp_syncs(size_t threads, std::vector<size_t>& released)
{
    const size_t warps = (threads + kWarpSize - 1) / kWarpSize;
    // per warp: the lanes at a sync, those returned, the slot each lane wrote (written_slots), and
    // whether the lanes at a sync name more than one mask (else none need comparing below)
    std::vector<unsigned> arrived(warps, 0u), returned(warps, 0u), slots(warps, 0u), mask(warps, 0u);
    std::vector<bool> masks_differ(warps, false);
    for (size_t t = 0; t < threads; ++t) {
        const size_t w = t / kWarpSize;
        slots[w] |= (fibers[t].warp_syncs & 1u) << (t % kWarpSize);
        if (fibers[t].state == State::at_warp_sync) {
            masks_differ[w] = masks_differ[w] || (arrived[w] != 0 && fibers[t].warp_mask != mask[w]);
            mask[w] = fibers[t].warp_mask;
            arrived[w] |= 1u << (t % kWarpSize);
        } else if (fibers[t].state == State::done) {
            returned[w] |= 1u << (t % kWarpSize);
        }
    }
    for (size_t t = 0; t < threads; ++t) {
        Fiber& fiber = fibers[t];
        if (fiber.state != State::at_warp_sync) {
            continue;
        }
        if (fiber.warp_mask == 0) {  // at __activemask(): its lanes are those of its warp at the same call
            const size_t base = t - t % kWarpSize;
            if (lane_preempted_in_work(base, std::min(threads, base + kWarpSize))) {
                continue;  // it may be on its way to the same call: the warp goes on when it has stopped
            }
            unsigned together = 0;
            for (size_t u = base; u < std::min(threads, base + kWarpSize); ++u) {
                const Fiber& other = fibers[u];
                if (other.state == State::at_warp_sync && other.warp_mask == 0 && other.active_site == fiber.active_site) {
                    together |= 1u << (u - base);
                }
            }
            fiber.warp_participants = together;
            released.push_back(t);
            continue;
        }
        // the lanes at a sync of the same mask: CUDA asks every lane of a sync to name the same mask,
        // and a lane at a sync of another (a ballot of 8 lanes) is not at this one
        const unsigned needed = awaited_lanes(fiber, threads, returned[t / kWarpSize]);
        const size_t base = t - t % kWarpSize;
        unsigned same_mask = arrived[t / kWarpSize];
        if (masks_differ[t / kWarpSize]) {
            same_mask = 0;
            for (size_t u = base; u < std::min(threads, base + kWarpSize); ++u) {
                same_mask |= fibers[u].state == State::at_warp_sync && fibers[u].warp_mask == fiber.warp_mask
                                 ? 1u << (u - base) : 0u;
            }
        }
        if ((same_mask & needed) == needed) {
            fiber.warp_participants = needed;
            released.push_back(t);
        }
    }
    for (size_t t : released) {
        --warp_head(fibers[t]).warp_waiting;
        ++warp_head(fibers[t]).warp_epoch;
        fibers[t].state = State::ready;
        fibers[t].source_slots = slots[t / kWarpSize];
        // a sync's values go to the other of two slots next time; __activemask() hands nothing over
        fibers[t].warp_syncs += fibers[t].warp_mask != 0;
    }
    return released.size();
}

// ---- races: the accesses of a block's threads, one by one (the race check) --------------------------
//
// The checking mode compares two orders of the threads, which cannot show a race whose every order
// gives the same result here: `s[0] += x` by every thread of a phase runs one thread's read and write
// after another's, so the sum comes out right, where a GPU's threads read together and lose updates.
// The race check's build (build.py, RACE_CHECK_FLAGS; NN_CUDA_CPU_RACECHECK=1) has GCC's
// ThreadSanitizer instrumentation call a function before every load and store of the kernel code
// (__tsan_read4, __tsan_write8, ...): this file defines them, in place of libtsan's. For the memory the
// Python side names (the launch's arrays; the code's __shared__ arrays and extern __shared__ memory are
// added here) a shadow keeps, per 4-byte word, the last write and the first read of the current phase:
// the thread, the code's address, the race epoch and clock and the epoch of the thread's warp. A read of
// a word that another thread of the block wrote at the same race epoch, with no warp sync between them
// where both are of one warp, and not both threads synchronised since (an atomic, fence, yield or
// arrival each: a lock in __shared__ memory, a flag set after a __threadfence()), is a read-after-write
// hazard; a write of a word another thread read so, a write-after-read hazard (compute-sanitizer's
// racecheck reports both on a GPU, for __shared__ memory). The first one ends the launch, and the
// Python side names the memory and both lines. An atomic is compared with the plain accesses of its
// word too (the shadow keeps the last one), as the memory model takes an atomic and a plain access of one
// word: a plain write beside it, or a plain read beside one that is no compare-and-swap, is a race. Writes
// after writes are not reported (threads storing one flag is common and harmless), nor accesses of two
// blocks (their order is no phase's); an atomic of the thread that made the earlier access and one of the
// later access's thread, both after it, are taken as ordering the two, though they may have been of other
// addresses.
#if defined(NN_CUDA_CPU_RACE_CHECK)
// What an access was: plain, an atomic that writes whatever the word holds (a read-modify-write, an
// exchange, a store), or a compare-and-swap, which writes only where the word holds what the thread
// expects (so a plain read before it is a guess that it checks: CUDA's atomicAdd of double by atomicCAS).
enum RaceOp : unsigned char { kPlain, kAtomic, kSwap };

// An access as the shadow keeps it, in 24 bytes. race_epoch never goes back, so that one value of it is
// one phase of one block, and a word's record from an earlier phase, block or launch never matches: the
// shadow is cleared only where the counts' 32 bits kept here would wrap (race_spans_for_launch),
// otherwise reused.
struct RaceAccess {
    unsigned epoch = 0;  // race_epoch at the access (0: none)
    unsigned clock = 0;  // race_clock at the access
    int site = 0;  // the instrumentation call's return address, in the kernel's code, from race_access's
    unsigned short tid = 0;  // threadIdx as one number
    unsigned char bytes = 0;  // the bytes of the word it touched, a bit each
    bool is_volatile = false;  // a volatile load or store (an atomic counts as one: PTX takes volatile as relaxed)
    unsigned warp_epoch = 0;  // its warp's (Fiber::warp_epoch)
    unsigned char op = kPlain;  // RaceOp: a plain access, or an atomic
};
struct WordAccesses {
    RaceAccess write, read;  // the last plain write, the phase's first plain read
    RaceAccess atomic;  // the last atomic
};
struct RaceSpan {
    uintptr_t first, end;
    WordAccesses* words;  // from first rounded down to a word
};
static std::vector<RaceSpan> race_spans;  // the arguments' (nn_cuda_cpu_set_race_spans), then the shared memory's
static std::vector<std::vector<WordAccesses>> race_shadows;  // the spans' words, kept from launch to launch
static size_t race_argument_spans = 0;  // of race_spans, the Python side's
static uintptr_t race_low = 0, race_high = 0;  // the span of all of them
static bool race_tracking = false;  // this run of a checked launch looks at every access
static bool race_asked = false;  // the first run of each checked launch does (nn_cuda_cpu_set_race_tracking)
struct RaceFound {
    // 0: none, 1: a read after another thread's write, 2: a write after another's read, 3: an atomic after
    // another's plain write, 4: an atomic after another's plain read, 5: a plain write after another's
    // atomic, 6: a plain read after another's atomic
    int kind = 0;
    uintptr_t address = 0;  // the word's first byte
    RaceAccess earlier, later;
    uint3 earlier_thread{}, later_thread{}, block{};
    uintptr_t first = 0, end = 0;  // the bytes of the span that the later access touched (a double's 8)
};
static RaceFound race_found;

// Span number `n` of race_spans, its shadow reused (and grown where too small).
RaceSpan race_span(size_t n, uintptr_t first, uintptr_t end)
{
    if (race_shadows.size() <= n) {
        race_shadows.resize(n + 1);
    }
    std::vector<WordAccesses>& shadow = race_shadows[n];
    shadow.resize(std::max(shadow.size(), static_cast<size_t>((end - (first & ~uintptr_t{3}) + 3) / 4)));
    return RaceSpan{first, end, shadow.data()};
}

// The spans of this launch's run: the arguments' kept, the shared memory's made again (the extern
// __shared__ memory's size is the launch's).
void race_spans_for_launch()
{
    if (race_epoch >= (1ull << 31) || race_clock >= (1ull << 31)) {  // half way to a wrap: a fresh shadow
        for (std::vector<WordAccesses>& shadow : race_shadows) {
            std::fill(shadow.begin(), shadow.end(), WordAccesses{});
        }
        race_epoch = race_clock = 1;
    }
    race_spans.resize(race_argument_spans);
    race_low = UINTPTR_MAX;
    race_high = 0;
    if (!race_tracking) {
        return;  // no access calls race_access
    }
    for (const SharedRegion& region : shared_regions) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(region.address);
        race_spans.push_back(race_span(race_spans.size(), at, at + region.bytes));
    }
    if (dynamic_shared_bytes > 0) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(dynamic_shared);
        race_spans.push_back(race_span(race_spans.size(), at, at + dynamic_shared_bytes));
    }
    for (const RaceSpan& span : race_spans) {
        race_low = std::min(race_low, span.first);
        race_high = std::max(race_high, span.end);
    }
}

void race_access(uintptr_t address, size_t size, bool write, bool is_volatile, const void* site, RaceOp op = kPlain);

uintptr_t race_site(int site) { return reinterpret_cast<uintptr_t>(&race_access) + site; }

[[noreturn]] void report_race(int kind, uintptr_t word, const RaceAccess& earlier, const RaceAccess& later,
                              uintptr_t first, uintptr_t end)
{
    race_found = RaceFound{kind, word, earlier, later, fibers[earlier.tid].thread_idx, current->thread_idx, block_idx,
                           first, end};
    report("%s: a race between threads (%u, %u, %u) and (%u, %u, %u) of block (%u, %u, %u)", launch.kernel,
           race_found.earlier_thread.x, race_found.earlier_thread.y, race_found.earlier_thread.z,
           race_found.later_thread.x, race_found.later_thread.y, race_found.later_thread.z, block_idx.x, block_idx.y,
           block_idx.z);
    end_launch_reported();
}

// Whether `earlier` and `now` (the running thread's), by two threads, have nothing between them that
// orders them. Two volatile accesses of global memory are no race: PTX's memory model takes volatile
// accesses as relaxed atomics (a flag handed over with fences, HeCBench's sptrsv, cuGraph's sort); of
// __shared__ memory they are, as compute-sanitizer's racecheck reports warp-synchronous code.
inline bool unordered(const RaceAccess& earlier, const RaceAccess& now, bool global)
{
    return earlier.epoch == now.epoch && earlier.tid != now.tid && (earlier.bytes & now.bytes) != 0 &&
           !(global && earlier.is_volatile && now.is_volatile) &&
           (earlier.tid / kWarpSize != now.tid / kWarpSize || earlier.warp_epoch == now.warp_epoch) &&
           !(fibers[earlier.tid].race_synced > earlier.clock && current->race_synced > earlier.clock);
}

__attribute__((noinline)) void race_access(uintptr_t address, size_t size, bool write, bool is_volatile,
                                           const void* site, RaceOp op)
{
    if (!race_tracking || current == nullptr) {
        return;
    }
    const uintptr_t end = address + size;
    for (size_t s = 0; s < race_spans.size(); ++s) {
        const RaceSpan& span = race_spans[s];
        const bool global = s < race_argument_spans;  // the arguments' and the __device__ variables'
        if (end <= span.first || address >= span.end) {
            continue;
        }
        const uintptr_t from = std::max(address, span.first), to = std::min(end, span.end);
        const uintptr_t base = span.first & ~uintptr_t{3};
        for (uintptr_t word = from & ~uintptr_t{3}; word < to; word += 4) {
            const unsigned low = static_cast<unsigned>(std::max(from, word) - word);
            const unsigned high = static_cast<unsigned>(std::min(to, word + 4) - word);
            const RaceAccess now{static_cast<unsigned>(race_epoch), static_cast<unsigned>(race_clock),
                                 static_cast<int>(reinterpret_cast<uintptr_t>(site) -
                                                  reinterpret_cast<uintptr_t>(&race_access)),
                                 static_cast<unsigned short>(current->tid),
                                 static_cast<unsigned char>(((1u << high) - 1u) & ~((1u << low) - 1u)),
                                 is_volatile || op != kPlain, warp_head(*current).warp_epoch, op};
            WordAccesses& accesses = span.words[(word - base) / 4];
            if (op != kPlain) {  // an atomic against the plain accesses of the word: two atomics never race
                if (unordered(accesses.write, now, global)) {
                    report_race(3, word, accesses.write, now, from, to);
                }
                if (op == kAtomic && unordered(accesses.read, now, global)) {  // a swap checks what was read
                    report_race(4, word, accesses.read, now, from, to);
                }
                accesses.atomic = now;
            } else if (write) {
                if (unordered(accesses.read, now, global)) {
                    report_race(2, word, accesses.read, now, from, to);
                }
                if (unordered(accesses.atomic, now, global)) {
                    report_race(5, word, accesses.atomic, now, from, to);
                }
                accesses.write = now;
            } else {
                if (unordered(accesses.write, now, global)) {
                    report_race(1, word, accesses.write, now, from, to);
                }
                if (accesses.atomic.op == kAtomic && unordered(accesses.atomic, now, global)) {
                    report_race(6, word, accesses.atomic, now, from, to);
                }
                if (accesses.read.epoch != now.epoch) {
                    accesses.read = now;  // the phase's first reader
                }
            }
        }
    }
}

inline void race_check(const void* address, size_t size, bool write, const void* site, bool is_volatile = false,
                       RaceOp op = kPlain)
{
    if (current != nullptr && current->preempt_pending) {  // a tick found the thread in the runner ("preemption")
        note_preemption(reinterpret_cast<uintptr_t>(site));
        nn_cuda_cpu_preempted_stop();
    }
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    if (at < race_high && at + size > race_low) {  // the usual case, a local or the runner's own: no call
        race_access(at, size, write, is_volatile, site, op);
    }
}

// An atomic operation at `address` (the race check's handlers of GCC's atomics): compared with the plain
// accesses of the word, then counted as the thread's synchronisation.
inline void race_atomic(volatile const void* address, size_t size, const void* site, RaceOp op)
{
    race_check(const_cast<const void*>(address), size, true, site, false, op);
    race_synchronized();
}
#endif

// ---- blocks that take turns (checking mode) ------------------------------------------------------

// In the checking mode up to kResidentBlocks blocks are resident at once, as on a GPU's SMs: each
// has its own threads and a scheduler of its own (run_block, on a stack of its own), which hands
// back to the launcher after every phase; the launcher then picks a resident block at random and
// copies its __shared__ memory in. A block that finishes makes room for the next in the grid's
// (shuffled) order.

struct Resident {
    size_t linear = 0;  // the block: x + gridDim.x (y + gridDim.y z)
    void* sp = nullptr;  // its scheduler's stack while another block runs
    bool live = false;  // admitted and not finished
    bool started = false;  // it has run a phase (its __shared__ memory is its own)
    bool ok = true;  // run_block's verdict, once finished
    bool yielded = false;  // its last turn ended with threads that wait for other blocks (a spin, a grid sync)
    size_t admitted = 0;  // when it was admitted (the mirrored run's priority: earlier first)
    size_t last_turn = 0;  // when it last had a turn
    int votes[3] = {0, 0, 0};  // its __syncthreads_count totals
    std::vector<unsigned char> shared;  // its __shared__ memory while another block runs
};
static Resident residents[kMaxCooperativeBlocks];
static bool interleaving = false;  // this launch's blocks take turns
static void* launcher_sp = nullptr;  // the launcher's stack while a resident block runs
// The resident block that runs. External linkage on purpose, as for `current`.
size_t running = 0;

// The running thread synchronises (runtime.h): a cuda::barrier's arrival, as the race check takes it.
void race_order() { race_synchronized(); }

// A block keeps its turn while its threads go on through warp syncs (a completed one puts its lanes
// back in the phase at once), so a persistent kernel's warp that spins through __syncwarp() until
// another block has done its part (Gunrock's asynchronous queue) kept it for ever, each lane stopping
// at every pass. The preemption timer ("preemption") asks whether the running block's turn has
// lasted a whole tick: its running thread is then preempted, and once the phase's threads have all
// stopped, the other resident blocks run, as for a block that waits for another.
static size_t ticked_turn = 0;  // the turn (Resident::last_turn) of the running block at the last tick

bool long_turn_at_tick()
{
    if (!interleaving || !worker.active) {
        return false;
    }
    const size_t turn = residents[running].last_turn;
    const bool same = turn == ticked_turn;
    ticked_turn = turn;
    return same;
}

// Where a block's scheduler stands between two phases: in the checking mode, hand back to the
// launcher, which may run other blocks' phases before this one's next; `yielded` when threads of the
// block wait for other blocks.
void end_of_phase(bool yielded = false)
{
    ++race_epoch;
    if (interleaving) {
        residents[running].yielded = yielded;
        nn_cuda_cpu_switch(&residents[running].sp, launcher_sp);
    }
}

// The checking mode's random orders. It shuffles the threads at every barrier, so the generator is a
// 64-bit linear congruential one (Knuth's MMIX constants, modulo 2^64: one multiply-add a draw):
// std::mt19937_64's state refills took 7 % of a checked GEMM's time, std::minstd_rand's modulo
// 2^31 - 1 most of that again.
using Random = std::linear_congruential_engine<uint64_t, 6364136223846793005ULL, 1442695040888963407ULL, 0>;

// The launch's seed, and whether this run takes every random order backwards (check == 2: the
// checking mode's second run of a launch, with the first one's seed).
static uint64_t launch_seed = 0;
static bool mirrored = false;
// The bytes a rerun asks a shuffle to read from a lane with no value (nn_cuda_cpu_set_undefined_lane_fill:
// the first run's order with the mirrored run's zeros tells whether that read alone reaches a result);
// -1: the run's own, all ones or, mirrored, zeros.
static int undefined_lane_fill_asked = -1;

// A random order of `items`, backwards in the mirrored run.
template <class Items>
void shuffle_items(Items& items, Random& random)
{
    std::shuffle(items.begin(), items.end(), random);
    if (mirrored) {
        std::reverse(items.begin(), items.end());
    }
}

// A random order of the threads of `order` (in increasing order) by warps: the warps in a random
// order, each one's threads together in a random order, all backwards in the mirrored run. A warp
// runs to its next stop before the next warp starts, as warps run on their own on a GPU; which
// warp goes first changes from phase to phase, and every two threads run in the opposite order in
// the mirrored run. The block's thread 0, which code singles out most (`if (threadIdx.x == 0)`),
// runs first in the first run and so last in the mirrored one: where it writes one value to a place
// that every other thread writes another to (PMPP's scans: `else s = 0;`), the two runs end with
// different values, where a random place of its would make them differ only when it came first or
// last (2 launches in blockDim).
// `warps` and `threads` are the caller's, kept from phase to phase.
void shuffle_by_warps(std::vector<size_t>& order, Random& random, std::vector<std::pair<size_t, size_t>>& warps,
                      std::vector<size_t>& threads)
{
    warps.clear();  // each warp's [first, end) in `order`
    for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || order[i] / kWarpSize != order[i - 1] / kWarpSize) {
            warps.emplace_back(i, i);
        }
        ++warps.back().second;
    }
    std::shuffle(warps.begin(), warps.end(), random);
    const bool thread_0_runs = !order.empty() && order[0] == 0;  // the first warp's range starts at 0
    if (thread_0_runs) {
        const auto its_warp = std::find_if(warps.begin(), warps.end(), [](const auto& w) { return w.first == 0; });
        std::rotate(warps.begin(), its_warp, its_warp + 1);
    }
    threads.clear();
    for (const auto& [first, end] : warps) {
        const size_t from = threads.size();
        threads.insert(threads.end(), order.begin() + first, order.begin() + end);
        std::shuffle(threads.begin() + from, threads.end(), random);
    }
    if (thread_0_runs) {
        const auto it = std::find(threads.begin(), threads.begin() + (warps.front().second - warps.front().first), 0);
        std::rotate(threads.begin(), it, it + 1);
    }
    if (mirrored) {
        std::reverse(threads.begin(), threads.end());
    }
    std::copy(threads.begin(), threads.end(), order.begin());
}

// The generator of the running block's thread orders: its own, seeded by the launch's seed and the
// block's index (SplitMix64's mixing), so that a block's orders in the mirrored run are its own
// orders of the first run backwards, whichever blocks ran before it.
Random block_random()
{
    const uint64_t linear =
        block_idx.x + uint64_t{grid_dim.x} * (block_idx.y + uint64_t{grid_dim.y} * block_idx.z);
    uint64_t z = launch_seed + (linear + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return Random(z ^ (z >> 31));
}

// The generator of the running phase's orders (run_block's), for the warp syncs it completes early.
static NN_CUDA_CPU_PER_WORKER Random* phase_random = nullptr;

// The checking mode, when the running thread has just stopped at a warp sync: if that completes
// the sync for its warp (every awaited lane is at one), the lanes it completes go on at once, in a
// random order at the front of the phase's queue, and not after every other thread of the phase
// has stopped somewhere. The warps of a block then drift apart as on a GPU, where each runs on its
// own: one warp's code after its shuffles may run before another's before them, and a race between
// the two (lane 0 storing a warp's sum where the first warp still reads the last one's) shows.
// Returns which went on: none, other lanes only, or the running thread first among them (it then
// runs on without a switch).
Release release_completed_warp_sync()
{
    const Fiber& running = *current;
    const size_t threads = threads_in_block(), base = running.tid - running.tid % kWarpSize;
    const size_t end = std::min(threads, base + kWarpSize);
    const Fiber& head = fibers[base];
    if (head.warp_waiting + head.warp_returned < end - base) {
        return Release::none;  // a lane of the warp is still on its way (the usual case: no scan)
    }
    unsigned returned = 0;
    for (size_t t = base; t < end; ++t) {
        returned |= fibers[t].state == State::done ? 1u << (t - base) : 0u;
    }
    // Only a sync of the whole warp (every lane that has not returned) goes on early: a lane released
    // here reads the values of this sync after the others have gone on, and the others' next sync,
    // which then awaits it too, cannot overwrite them (they go to two slots in turn). A lane of a sync
    // of part of the warp waits, as before, until every thread of the phase has stopped; a lane at
    // such a sync is not at this one (until 2026-11-27 it counted as arrived, and the others went on
    // without it).
    const unsigned whole_warp = lanes_of(base / kWarpSize, threads) & ~returned;
    unsigned arrived = 0;
    for (size_t t = base; t < end; ++t) {
        const Fiber& fiber = fibers[t];
        const bool here = fiber.state == State::at_warp_sync && fiber.warp_mask != 0 &&
                          awaited_lanes(fiber, threads, returned) == whole_warp;
        arrived |= here ? 1u << (t - base) : 0u;
    }
    if (awaited_lanes(running, threads, returned) != whole_warp || (arrived & whole_warp) != whole_warp) {
        return Release::none;
    }
    size_t released[kWarpSize];
    size_t count = 0;
    for (size_t t = base; t < end; ++t) {
        const Fiber& fiber = fibers[t];
        if (fiber.state == State::at_warp_sync && fiber.warp_mask != 0 &&
            awaited_lanes(fiber, threads, returned) == whole_warp) {
            released[count++] = t;
        }
    }
    if (static_cast<size_t>(queue.next - queue_room) < count) {
        return Release::none;  // no room (never so: the queue holds each thread once at most)
    }
    std::shuffle(released, released + count, *phase_random);
    if (mirrored) {
        std::reverse(released, released + count);
    }
    const unsigned slots = written_slots(base, end);
    for (size_t i = 0; i < count; ++i) {
        Fiber& fiber = fibers[released[i]];
        fiber.warp_participants = awaited_lanes(fiber, threads, returned);
        fiber.state = State::ready;
        fiber.source_slots = slots;
        ++fiber.warp_syncs;
        --fibers[base].warp_waiting;
    }
    ++fibers[base].warp_epoch;
    const bool running_first = released[0] == running.tid;
    const size_t queued = count - (running_first ? 1 : 0);
    size_t* const front = const_cast<size_t*>(queue.next) - queued;
    std::copy(released + (running_first ? 1 : 0), released + count, front);
    queue.next = front;
    return running_first ? Release::running_thread_first : Release::others;
}

// Runs one block to its end; false (with launch.message set) when its threads disagree on warp syncs.
// Its threads are `fibers`, on the stacks from `first_stack` on.
bool run_block(size_t threads, bool shuffle, size_t first_stack)
{
    const dim3 block = block_dim;
    Random random = shuffle ? block_random() : Random();
    std::vector<size_t> order(threads);
    // the checking mode's phase queue: `threads` slots of room in front of the phase's threads
    std::vector<size_t> slots(shuffle ? 2 * threads : 0);
    std::vector<std::pair<size_t, size_t>> warp_ranges;  // shuffle_by_warps's
    std::vector<size_t> shuffled;
    for (size_t t = 0; t < threads; ++t) {
        Fiber& fiber = fibers[t];
        fiber.thread_idx = uint3{static_cast<unsigned>(t % block.x), static_cast<unsigned>((t / block.x) % block.y),
                                 static_cast<unsigned>(t / (block.x * block.y))};
        fiber.state = State::ready;
        fiber.votes = 0;
        fiber.tid = t;
        fiber.warp_syncs = 0;
        fiber.warp_participants = 0;
        fiber.active_lanes_given = 0;
        fiber.source_slots = 0;
        fiber.atomic_address = nullptr;
        fiber.atomic_repeats = 0;
        fiber.clock_reads = 0;
        fiber.warp_waiting = 0;
        fiber.warp_returned = 0;
        fiber.syncs_passed = 0;
        fiber.shared_atomic_turn_at = ~0u;
        fiber.warp_epoch = 0;
        fiber.race_synced = 0;
        fiber.preempted_stops = ~0u;
        fiber.preemptions_in_a_row = 0;
        fiber.preempt_pending = false;
        fiber.preempted_at = 0;
        fiber.saved_sp = stacks.initial_sp(first_stack + t);
        order[t] = t;
    }
    vote_totals[0] = vote_totals[1] = vote_totals[2] = 0;
    ++race_epoch;  // a block's first phase (the race check's)
    for (;;) {
        size_t* first = order.data();
        queue_room = nullptr;
        if (shuffle) {
            shuffle_by_warps(order, random, warp_ranges, shuffled);
            first = slots.data() + threads;
            std::copy(order.begin(), order.end(), first);
            queue_room = slots.data();
            phase_random = &random;
        }
        phase = PhaseCounts{};
        if (!order.empty()) {  // the threads run in `order`, each handing over to the next (hand_over)
            queue = PhaseQueue{first + 1, first + order.size()};
            current = &fibers[first[0]];
            current->state = State::ready;  // released from the barrier it waited at, if any
            nn_cuda_cpu_switch(&worker.scheduler_sp, current->saved_sp);
        }
        current = nullptr;
        if (phase.at_barrier == threads) {
            end_of_phase();
            // every thread waits at __syncthreads: all of them run the next phase, in order (shuffled
            // from it, as every phase's). This phase may have run only some of them: those that had
            // yielded at a grid sync, a lane at a warp sync they completed joining them (that lane was
            // left out of the next phase, and the barrier went on without it, until 2026-11-27)
            order.resize(threads);
            std::iota(order.begin(), order.end(), size_t{0});
            continue;
        }
        // Warps whose lanes all reached their sync go on first, with the threads that yielded (after
        // the other resident blocks had a turn); __syncthreads waits for the rest.
        order.clear();
        const size_t released = release_warp_syncs(threads, order);
        if (phase.yielded > 0) {
            for (size_t t = 0; t < threads; ++t) {
                if (fibers[t].state == State::yielded) {
                    order.push_back(t);
                }
            }
            // a block whose threads yielded only to let the others of the block reach an atomic on
            // __shared__ memory first waits for no other block: in the mirrored run it keeps its
            // turn (it lost it to a later block, and sgl-kernel's race between blocks on a total
            // went unreported, until 2026-11-27)
            end_of_phase(phase.yielded > phase.shared_atomic_turns);
            continue;
        }
        if (released > 0) {
            continue;
        }
        size_t waiting = 0;
        size_t stuck = threads;  // a thread left at a warp sync that cannot complete
        for (size_t t = 0; t < threads; ++t) {
            if (fibers[t].state == State::at_barrier) {
                ++waiting;
                order.push_back(t);
            } else if (fibers[t].state == State::at_warp_sync) {
                stuck = std::min(stuck, t);
            }
        }
        if (stuck != threads) {
            const Fiber& fiber = fibers[stuck];
            const size_t warp = stuck / kWarpSize;
            const unsigned missing = awaited_lanes(fiber, threads, returned_lanes(warp, threads));
            unsigned lane = 0;
            while (lane < kWarpSize &&
                   !((missing >> lane) & 1u && fibers[warp * kWarpSize + lane].state != State::at_warp_sync)) {
                ++lane;
            }
            report("%s: in block (%u, %u, %u), thread (%u, %u, %u) waits at a warp sync (__syncwarp or a *_sync "
                   "shuffle or vote, mask 0x%08x) for lane %u of its warp, which waits at __syncthreads() "
                   "instead; every lane of the mask that has not returned must reach the same warp sync (on a "
                   "GPU this hangs or is undefined)",
                   launch.kernel, block_idx.x, block_idx.y, block_idx.z, fiber.thread_idx.x, fiber.thread_idx.y,
                   fiber.thread_idx.z, fiber.warp_mask, lane);
            return false;
        }
        if (waiting == 0) {
            return true;
        }
        // The threads that returned do not hold up the barrier the others wait at, as on a GPU (PTX's
        // `exit` releases a barrier that only exited threads hold up): those others go on alone.
        for (size_t t : order) {
            fibers[t].state = State::ready;
        }
        end_of_phase();
    }
}

static bool shuffling = false;  // the threads of each phase run in a random order (the checking mode)

// A resident block's scheduler: runs its block to the end, then hands back for good.
[[noreturn]] void block_main()
{
    const bool ok = run_block(threads_in_block(), shuffling, running * threads_in_block());
    Resident& self = residents[running];
    self.ok = ok;
    self.live = false;
    nn_cuda_cpu_switch(&self.sp, launcher_sp);
    __builtin_trap();  // a finished block is never resumed
}

// The bytes of every __shared__ array, of the launch's dynamic shared memory and of the values its
// lanes hand over at warp syncs (a lane that waits at one, or was released but has not read yet,
// when the block yields), which a block copies out when another takes its turn and back in when
// its turn comes again.
void save_shared(Resident& block)
{
    const size_t lanes = threads_in_block() * sizeof(warp_slots[0][0]);
    size_t bytes = dynamic_shared_bytes + 2 * lanes;
    for (const SharedRegion& region : shared_regions) {
        bytes += region.bytes;
    }
    block.shared.resize(bytes);
    unsigned char* to = block.shared.data();
    for (const SharedRegion& region : shared_regions) {
        memcpy(to, region.address, region.bytes);
        to += region.bytes;
    }
    memcpy(to, dynamic_shared, dynamic_shared_bytes);
    memcpy(to + dynamic_shared_bytes, warp_slots[0], lanes);
    memcpy(to + dynamic_shared_bytes + lanes, warp_slots[1], lanes);
    memcpy(block.votes, vote_totals, sizeof(vote_totals));
}

void load_shared(const Resident& block)
{
    const size_t lanes = threads_in_block() * sizeof(warp_slots[0][0]);
    const unsigned char* from = block.shared.data();
    for (const SharedRegion& region : shared_regions) {
        memcpy(region.address, from, region.bytes);
        from += region.bytes;
    }
    memcpy(dynamic_shared, from, dynamic_shared_bytes);
    memcpy(warp_slots[0], from + dynamic_shared_bytes, lanes);
    memcpy(warp_slots[1], from + dynamic_shared_bytes + lanes, lanes);
    memcpy(vote_totals, block.votes, sizeof(vote_totals));
}

uint3 block_index(size_t linear)
{
    return uint3{static_cast<unsigned>(linear % grid_dim.x), static_cast<unsigned>(linear / grid_dim.x % grid_dim.y),
                 static_cast<unsigned>(linear / grid_dim.x / grid_dim.y)};
}

// The blocks of the checking mode's first run in the order they finished, which its mirrored run
// takes backwards.
static std::vector<size_t> first_run_finished;

// The resident block that takes the mirrored run's next turn: the one admitted first (of the blocks
// that finished last in the first run) among those whose last turn did not end waiting for other
// blocks, else the one of those that waited longest.
size_t mirrored_turn(size_t slots)
{
    size_t best = slots;
    for (size_t slot = 0; slot < slots; ++slot) {
        const Resident& block = residents[slot];
        if (!block.live) {
            continue;
        }
        if (best == slots) {
            best = slot;
            continue;
        }
        const Resident& other = residents[best];
        if (block.yielded != other.yielded ? !block.yielded
                                           : block.yielded ? block.last_turn < other.last_turn
                                                           : block.admitted < other.admitted) {
            best = slot;
        }
    }
    return best;
}

// Runs the blocks of `order` (the grid's, shuffled) with up to kResidentBlocks of them resident,
// a phase of a randomly chosen one at a time; false when one of them broke a barrier.
// The mirrored run admits the blocks in the order backwards in which the first run's finished, and
// gives each the turns until it finishes but while it waits for another: of two blocks that write
// one place last, the one that finished last the first time finishes first. (It took the first run's
// draws over the blocks backwards until 2026-11-27, which put two blocks in the opposite order only
// where they sat in mirrored slots: `out[0] = blockIdx.x` from 3 blocks went unreported in 3 launches
// in 10.)
bool run_interleaved(const std::vector<size_t>& grid_order, size_t threads, Random& random)
{
    std::vector<size_t> order = grid_order;
    if (mirrored && first_run_finished.size() == order.size()) {
        order.assign(first_run_finished.rbegin(), first_run_finished.rend());
    } else if (!mirrored) {
        first_run_finished.clear();
    }
    const size_t slots = std::min(order.size(), resident_capacity(threads, cooperative));
    const size_t none = slots;
    size_t next = 0, live = 0, loaded = none, turns = 0;
    auto admit = [&](size_t slot) {
        Resident& block = residents[slot];
        block.admitted = next;
        block.linear = order[next++];
        block.live = true;
        block.started = false;
        block.ok = true;
        block.yielded = false;
        block.last_turn = 0;
        block.sp = stacks.initial_sp(slots * threads + slot, &block_main);
        ++live;
    };
    for (size_t slot = 0; slot < slots; ++slot) {
        admit(slot);
    }
    std::vector<size_t> candidates;
    while (live > 0) {
        size_t slot = none;
        if (mirrored) {
            slot = mirrored_turn(slots);
        } else {
            candidates.clear();
            for (size_t s = 0; s < slots; ++s) {
                if (residents[s].live) {
                    candidates.push_back(s);
                }
            }
            slot = candidates[std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(random)];
        }
        Resident& block = residents[slot];
        block.last_turn = ++turns;
        if (slot != loaded) {
            if (loaded != none) {
                save_shared(residents[loaded]);
            }
            if (block.started) {
                load_shared(block);
            } else {
                poison_shared();
                block.started = true;
            }
            loaded = slot;
        }
        running = slot;
        block_idx = block_index(block.linear);
        fibers = fiber_pool.data() + slot * threads;
        ++race_epoch;  // a block's turn: none of its accesses is of another's phase (the race check's)
        nn_cuda_cpu_switch(&launcher_sp, block.sp);
        if (!block.live) {
            --live;
            loaded = none;  // its memory is nobody's now
            if (!mirrored) {
                first_run_finished.push_back(block.linear);
            }
            if (!block.ok) {
                return false;
            }
            if (next < order.size()) {
                admit(slot);
            }
        }
    }
    return true;
}

// ---- one launch ------------------------------------------------------------------------------------

// What one host thread's part of a launch came to.
struct Outcome {
    int status = 0;  // 0: its blocks ran; 1: a report (launch.message); 2: a fault or a stop (info)
    long long info[9] = {};  // as fault[] below
    uintptr_t stack[kFaultStackWords] = {};  // a fault's fault_stack
    size_t stack_count = 0;
    unsigned long long ticket = ~0ull;  // the order of the failures: the first one is the launch's
};

#if defined(NN_CUDA_CPU_WORKERS)
// Whether the block that just ran wrote past its last __shared__ array (shared_guard, runtime.h):
// then the launch's message names it, and the guard is cleared for the next block.
bool shared_guard_written()
{
    size_t first = kSharedGuardBytes, last = 0;  // the offsets past the end of the bytes that are no longer 0
    for (size_t i = 0; i < kSharedGuardBytes; ++i) {
        if (shared_guard.bytes[i] != 0) {
            first = std::min(first, i);
            last = i;
        }
    }
    if (first == kSharedGuardBytes) {
        return false;
    }
    char where[64];
    snprintf(where, sizeof(where), first == last ? "byte %zu" : "bytes %zu to %zu", first, last);
    report("%s: block (%u, %u, %u) wrote past the end of a __shared__ array: %s past the end of the kernel's last "
           "one changed, counting from 0 (a write of zeros there is not seen; an index one too far, or a tile "
           "larger than its declaration?); run in the checking mode (NN_CUDA_CPU_CHECK=1; a RawModule made with "
           "check=False takes check=True) to name the array, the thread and the line of an index past its end (a "
           "write through a pointer past it, `p = s + N; p[i]`, it does not see)",
           launch.kernel, block_idx.x, block_idx.y, block_idx.z, where);
    std::fill(shared_guard.bytes, shared_guard.bytes + kSharedGuardBytes, 0);
    return true;
}
#endif

// The plain mode's workers: host threads beside the caller, each taking the next block of the grid
// that no one has taken yet (NN_CUDA_CPU_THREADS host threads in all, at most kResidentBlocks).
static size_t worker_count = 1;

void set_workers(size_t n)
{
#if defined(NN_CUDA_CPU_WORKERS)
    worker_count = n < 1 ? 1 : n;
#else
    (void)n;  // a build whose blocks share one copy of their state: one host thread
#endif
}
static std::atomic<size_t> next_block{0};
static std::atomic<bool> stop_blocks{false};  // a block failed: the others take no new block
static std::atomic<unsigned long long> failures{0};

// Runs this host thread's blocks of the launch: in the checking mode all of them (taking turns, or
// in the order of `block_order`); in the plain mode the next block nobody has taken, until none is
// left, on stacks [slot * threads, (slot + 1) * threads) of the pool.
void run_blocks(Outcome& out, size_t slot, size_t threads, size_t blocks, int check, Random& random,
                const std::vector<size_t>& block_order)
{
    const size_t resident = interleaving ? std::min(blocks, resident_capacity(threads, cooperative)) : 1;
    if (fiber_pool.size() < resident * threads) {
        fiber_pool.resize(resident * threads);
    }
    fibers = fiber_pool.data();
    volatile int status = 0;
    if (kPreemption && !preemptible.empty()) {
        start_ticks();
    }
    switch (sigsetjmp(worker.fault_exit, 1)) {
    case 0:
        worker.active = 1;
        if (interleaving) {
            status = run_interleaved(block_order, threads, random) ? 0 : 1;
            break;
        }
        for (;;) {
            if (const int signal_number = stop_signal.load()) {  // it came while this thread was not in a block
                fault_signal = signal_number;
                fault_address = nullptr;
                fault_pc = 0;
                siglongjmp(worker.fault_exit, 1);
            }
            const size_t b = next_block.fetch_add(1, std::memory_order_relaxed);
            if (b >= blocks || stop_blocks.load(std::memory_order_relaxed)) {
                break;
            }
            block_idx = block_index(b);
            if (check) {
                poison_shared();
            }
            if (!run_block(threads, check != 0, slot * threads)) {
                status = 1;
                break;
            }
#if defined(NN_CUDA_CPU_WORKERS)
            if (shared_guard_written()) {
                status = 1;
                break;
            }
#endif
        }
        break;
    case kReported:
        status = 1;
        break;
    default: {
        const uint3 thread = current != nullptr ? current->thread_idx : uint3{0, 0, 0};
        const long long info[9] = {fault_signal, reinterpret_cast<long long>(fault_address),
                                   thread.x, thread.y, thread.z, block_idx.x, block_idx.y, block_idx.z,
                                   static_cast<long long>(fault_pc)};
        memcpy(out.info, info, sizeof(info));
        out.stack_count =
            fault_signal == SIGSEGV || fault_signal == SIGBUS || fault_signal == SIGALRM ? fault_stack_count : 0;
        memcpy(out.stack, fault_stack, out.stack_count * sizeof(uintptr_t));
        status = 2;
    }
    }
    stop_ticks();
    worker.active = 0;
    current = nullptr;
    out.status = status;
    if (status != 0) {
        out.ticket = failures.fetch_add(1);
        stop_blocks.store(true);
    }
}

void worker_main(Outcome* out, size_t slot, size_t threads, size_t blocks)
{
    stack_t previous{};
    use_signal_stack(&previous);
    Random unused(0);  // the plain mode runs threads in order
    const std::vector<size_t> no_order;
    run_blocks(*out, slot, threads, blocks, 0, unused, no_order);
    sigaltstack(&previous, nullptr);
}

// ---- the device heap: what kernel code allocates with malloc and new, recorded -------------------
//
// Kernel code's malloc, free, new and delete are the C library's and libstdc++'s (a GPU's device heap
// too hands out addresses no launch can foresee), reached through the linker's --wrap
// (build.LINK_FLAGS), so that each allocation a CUDA thread makes is recorded with who made it: the
// block, the thread, and how many of that size the thread made before in the same run. The checking
// mode runs a launch twice and compares what each run left: a kernel that stores what it allocates
// (`*list = new sphere(...)`, the ray tracer of "Ray Tracing in One Weekend in CUDA") leaves other
// addresses in each run, which the Python side compares as allocations (device_heap.py), and it
// puts the heap back between the runs where a held pointer reaches it. After every launch the live
// allocations are searched for an argument's address that the launch's copy gives and takes back
// (LoadedKernels.assert_no_address_kept). While a checked launch runs again, memory it frees that an
// earlier run or launch allocated is freed once, after its last run (a second `delete` of one object
// would end the process).

struct HeapAllocation {
    uint64_t size, run, block, thread, nth;
};

static uint64_t heap_run = 0;  // the launches' runs so far (launch_kernel counts them)
static std::mutex heap_mutex;
static std::map<uintptr_t, HeapAllocation> heap;  // the live allocations of CUDA threads, by address
// of this run: (block, thread, size) -> how many the thread made
static std::map<std::tuple<uint64_t, uint64_t, uint64_t>, uint64_t> heap_counts;
static std::atomic<size_t> heap_live{0};
static std::vector<uintptr_t> heap_frees_deferred;
static bool heap_deferring = false;  // a checked launch runs: frees of what it did not allocate wait
static uint64_t heap_counted_run = 0;
static NN_CUDA_CPU_PER_WORKER bool heap_busy = false;  // inside the recording itself (its map allocates)

void heap_record(void* pointer, size_t size)
{
    if (pointer == nullptr || current == nullptr || heap_busy) {
        return;
    }
    heap_busy = true;
    {
        std::lock_guard<std::mutex> lock(heap_mutex);
        if (heap_counted_run != heap_run) {
            heap_counts.clear();
            heap_counted_run = heap_run;
        }
        const uint64_t block =
            block_idx.x + grid_dim.x * (block_idx.y + static_cast<uint64_t>(grid_dim.y) * block_idx.z);
        const uint64_t nth = heap_counts[{block, current->tid, size}]++;
        heap[reinterpret_cast<uintptr_t>(pointer)] = HeapAllocation{size, heap_run, block, current->tid, nth};
        heap_live.store(heap.size(), std::memory_order_relaxed);
    }
    heap_busy = false;
}

// Whether the memory at `pointer` is to be freed now (else after the checked launch's last run).
bool heap_forget(void* pointer)
{
    if (pointer == nullptr || heap_busy || heap_live.load(std::memory_order_relaxed) == 0) {
        return true;
    }
    heap_busy = true;
    bool now = true;
    {
        std::lock_guard<std::mutex> lock(heap_mutex);
        const auto found = heap.find(reinterpret_cast<uintptr_t>(pointer));
        if (found != heap.end()) {
            if (heap_deferring && current != nullptr && found->second.run != heap_run) {
                if (std::find(heap_frees_deferred.begin(), heap_frees_deferred.end(), found->first) ==
                    heap_frees_deferred.end()) {
                    heap_frees_deferred.push_back(found->first);
                }
                now = false;
            } else {
                heap.erase(found);
                heap_live.store(heap.size(), std::memory_order_relaxed);
            }
        }
    }
    heap_busy = false;
    return now;
}

}  // namespace nn_cuda_cpu

#if defined(NN_CUDA_CPU_DEVICE_HEAP)  // with the linker's --wrap of these names (build.LINK_FLAGS)
extern "C" {
// the C library's and libstdc++'s, which the linker names so (declared outside the hidden ones)
#pragma GCC visibility push(default)
void* __real_malloc(size_t);
void __real_free(void*);
void* __real__Znwm(size_t);
void* __real__Znam(size_t);
void __real__ZdlPv(void*);
void __real__ZdaPv(void*);
void __real__ZdlPvm(void*, size_t);
void __real__ZdaPvm(void*, size_t);
#pragma GCC visibility pop

void* __wrap_malloc(size_t size)
{
    void* pointer = __real_malloc(size);
    nn_cuda_cpu::heap_record(pointer, size);
    return pointer;
}
void __wrap_free(void* pointer)
{
    if (nn_cuda_cpu::heap_forget(pointer)) {
        __real_free(pointer);
    }
}
void* __wrap__Znwm(size_t size)  // operator new
{
    void* pointer = __real__Znwm(size);
    nn_cuda_cpu::heap_record(pointer, size);
    return pointer;
}
void* __wrap__Znam(size_t size)  // operator new[]
{
    void* pointer = __real__Znam(size);
    nn_cuda_cpu::heap_record(pointer, size);
    return pointer;
}
void __wrap__ZdlPv(void* pointer)  // operator delete
{
    if (nn_cuda_cpu::heap_forget(pointer)) {
        __real__ZdlPv(pointer);
    }
}
void __wrap__ZdaPv(void* pointer)  // operator delete[]
{
    if (nn_cuda_cpu::heap_forget(pointer)) {
        __real__ZdaPv(pointer);
    }
}
void __wrap__ZdlPvm(void* pointer, size_t size)  // sized operator delete
{
    if (nn_cuda_cpu::heap_forget(pointer)) {
        __real__ZdlPvm(pointer, size);
    }
}
void __wrap__ZdaPvm(void* pointer, size_t size)  // sized operator delete[]
{
    if (nn_cuda_cpu::heap_forget(pointer)) {
        __real__ZdaPvm(pointer, size);
    }
}
}
#endif

namespace nn_cuda_cpu {

// The live allocations of the CUDA threads, `of_run` only unless it is 0: (address, size, run, block,
// thread, nth) each into `out`, at most `capacity`; returns how many there are.
size_t heap_allocations(uint64_t of_run, uint64_t* out, size_t capacity)
{
    std::lock_guard<std::mutex> lock(heap_mutex);
    size_t count = 0;
    for (const auto& [address, a] : heap) {
        if (of_run == 0 || a.run == of_run) {
            if (count < capacity) {
                const uint64_t row[6] = {address, a.size, a.run, a.block, a.thread, a.nth};
                memcpy(out + 6 * count, row, sizeof(row));
            }
            ++count;
        }
    }
    return count;
}

// A checked launch begins (on != 0) or has made its last run: the frees deferred are made then.
void heap_defer_frees(int on)
{
    std::vector<uintptr_t> due;
    heap_busy = true;  // the map's nodes freed below are no CUDA thread's
    {
        std::lock_guard<std::mutex> lock(heap_mutex);
        heap_deferring = on != 0;
        if (!heap_deferring) {
            due.swap(heap_frees_deferred);
            for (const uintptr_t address : due) {
                heap.erase(address);
            }
            heap_live.store(heap.size(), std::memory_order_relaxed);
        }
    }
    heap_busy = false;
    for (const uintptr_t address : due) {
        free(reinterpret_cast<void*>(address));  // malloc and new are the C library's alike
    }
}


// Returns 0 when the launch ran to its end, 3 when it did so and a shuffle read a lane with no value
// (undefined_lane_read says which), 1 with a message, 2 on a fault: fault[0..8] then holds the
// signal, address, the thread's x, y, z, the block's x, y, z, and the program counter.
int launch_kernel(const Instance& instance, const unsigned* grid, const unsigned* block, void** args,
                  const char* kernel, int check, unsigned long long seed, long long* fault,
                  char* message, int message_size)
{
    launch.thread_body = instance.thread_body;
    launch.args = args;
    launch.kernel = kernel;
    launch.message = message;
    launch.message_size = message_size;
    launch.message_written.store(false);
    counted_clock = check != 0;
    ++heap_run;
#if defined(NN_CUDA_CPU_RACE_CHECK)
    race_found = RaceFound{};
    race_tracking = race_asked && check == 1;
    race_spans_for_launch();
#endif
    const size_t threads = static_cast<size_t>(block[0]) * block[1] * block[2];
    // a GPU's limits (every architecture since sm_30): a launch beyond them fails there
    if (threads == 0 || threads > 1024 || block[0] > 1024 || block[1] > 1024 || block[2] > 64 || grid[0] == 0 ||
        grid[1] == 0 || grid[2] == 0 || grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535) {
        report("%s: invalid launch shape: grid (%u, %u, %u), block (%u, %u, %u); a GPU takes 1 to 1024 threads "
               "a block, at most (1024, 1024, 64) of them, and a grid of at most (2^31 - 1, 65535, 65535)",
               kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
        return 1;
    }
    const size_t blocks = static_cast<size_t>(grid[0]) * grid[1] * grid[2];
    const size_t capacity = resident_capacity(threads, cooperative);
    if (cooperative && blocks > capacity) {
        report("%s: a cooperative launch of %zu blocks: the CPU runner keeps at most %zu blocks of %zu threads "
               "resident at once (a GPU refuses a cooperative grid larger than its SMs hold, "
               "cudaErrorCooperativeLaunchTooLarge); launch at most %zu blocks (a grid-stride loop covers the data "
               "with any number)",
               kernel, blocks, capacity, threads, capacity);
        return 1;
    }
    // In the checking mode and in a cooperative launch the blocks take turns (up to `capacity`
    // resident, each with a scheduler's stack); in the checking mode, grids too large to shuffle run
    // in order, one block at a time. In the plain mode the blocks are shared among the workers.
    interleaving = cooperative || (check && blocks > 1 && blocks <= (size_t{1} << 22));
    shuffling = check != 0;
    const size_t resident = interleaving ? std::min(blocks, capacity) : 1;
    const size_t workers = check || cooperative ? 1 : std::min({worker_count, blocks, kResidentBlocks});
    grid_threads = blocks * threads;
    grid_threads_done = 0;
    grid_sync_arrivals = 0;
    grid_sync_round = 0;
    if (stacks.count < std::max(resident * (threads + 1), workers * threads)) {
        report("%s: the CPU runner has no stacks for its threads (nn_cuda_cpu_use_stacks was not called)", kernel);
        return 1;
    }
    atomics_used = false;
    atomic_sum_magnitude = 0.0;
    block_dim = dim3{block[0], block[1], block[2]};
    grid_dim = dim3{grid[0], grid[1], grid[2]};
    std::seed_seq mixed{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    Random random(mixed);  // seeds 1 and 2 as they are would start two sequences nearly alike
    launch_seed = random();
    mirrored = check == 2;
    // what a shuffle reads from a lane with no value
    undefined_lane_fill = undefined_lane_fill_asked >= 0 ? undefined_lane_fill_asked : mirrored ? 0x00 : 0xFF;
    undefined_lane_seen = false;
    bounds_detail[0] = '\0';
    next_block = 0;
    stop_blocks = false;
    failures = 0;
    stop_signal = 0;
    launch_thread_ids[0] = pthread_self();
    launch_thread_count = 1;

    if (check) {
        fill_past_dynamic_shared();
    }
    atomic_watch_from = check ? dynamic_shared_bytes : kDynamicSharedBytes;
    atomic_past_dynamic_shared = kDynamicSharedBytes;
#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
    watching_past_dynamic_shared = check != 0;
    past_end_write = PastEndWrite{};
#endif
    FaultHandlers handlers;
    handlers.install();
    handlers.arm(watchdog_seconds);
    // The blocks in order; in the checking mode in a random order, taking turns, which its two runs
    // compare: blocks that race on global memory (one reads what another writes) then give
    // different results.
    std::vector<size_t> block_order;
    if (interleaving) {
        block_order.resize(blocks);
        for (size_t b = 0; b < blocks; ++b) {
            block_order[b] = b;
        }
        if (check) {
            shuffle_items(block_order, random);
        }
    }
    std::vector<Outcome> outcomes(workers);
    std::vector<std::thread> helpers;
    for (size_t w = 1; w < workers; ++w) {
        try {
            helpers.emplace_back(worker_main, &outcomes[w], w, threads, blocks);
        } catch (const std::system_error&) {
            break;  // no more host threads: the blocks are shared among those there are
        }
        launch_thread_ids[w] = helpers.back().native_handle();
        launch_thread_count = static_cast<int>(w + 1);
        // A stop passed on before this thread was written down missed it, and the thread may already spin in
        // its first block; on_stop sets stop_signal before it reads the count, so one of the two sees the other.
        if (const int signal_number = stop_signal.load()) {
            pthread_kill(launch_thread_ids[w], signal_number);
        }
    }
    run_blocks(outcomes[0], 0, threads, blocks, check, random, block_order);
    for (std::thread& helper : helpers) {
        helper.join();
    }
    launch_thread_count = 1;  // the workers are gone: a signal from now on is the caller's alone
    handlers.restore();
    launch_thread_count = 0;
    const Outcome* first = nullptr;
    for (const Outcome& outcome : outcomes) {
        if (outcome.status != 0 && (first == nullptr || outcome.ticket < first->ticket)) {
            first = &outcome;
        }
    }
    fflush(stdout);  // the kernels' printf, written by the end of the launch as a GPU's by a sync
    if (first == nullptr && stop_signal.load() != 0) {  // it came after the last block: a stop all the same
        outcomes[0] = Outcome{2, {stop_signal.load()}};
        first = &outcomes[0];
    }
    if (first == nullptr && atomic_past_dynamic_shared != kDynamicSharedBytes) {
        report("%s: an atomic operation past the end of its extern __shared__ memory: the launch gave shared_mem = "
               "%zu bytes, and %s made one at byte %zu of the block's shared memory (compute-sanitizer reports an "
               "invalid __shared__ atomic on a GPU; one that keeps the bytes, an atomicOr, shows nowhere else): "
               "pass as shared_mem the bytes the kernel uses",
               kernel, dynamic_shared_bytes, atomic_past_thread, atomic_past_dynamic_shared);
        return 1;
    }
    size_t last = 0;
    const size_t past = first == nullptr && check ? written_past_dynamic_shared(&last) : kDynamicSharedBytes;
    if (past < kDynamicSharedBytes) {
        char writer[160] = "";
#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
        const PastEndWrite& w = past_end_write;
        if (w.seen) {
            snprintf(writer, sizeof(writer), "; thread (%u, %u, %u) of block (%u, %u, %u) wrote bytes %zu to %zu",
                     w.thread.x, w.thread.y, w.thread.z, w.block.x, w.block.y, w.block.z, w.first, w.last);
        }
#endif
        report("%s: a write past the end of its extern __shared__ memory: the launch gave shared_mem = %zu bytes, "
               "and bytes %zu to %zu of the block's shared memory were written%s (compute-sanitizer reports an "
               "invalid __shared__ write on a GPU): pass as shared_mem the bytes the kernel uses",
               kernel, dynamic_shared_bytes, past, last, writer);
        return 1;
    }
    if (first == nullptr) {
        return undefined_lane_seen ? 3 : 0;
    }
    if (first->status == 2) {
        memcpy(fault, first->info, sizeof(first->info));
        reported_fault_stack_count = first->stack_count;
        memcpy(reported_fault_stack, first->stack, sizeof(first->stack));
    }
    return first->status;
}

}  // namespace nn_cuda_cpu
#pragma GCC visibility pop

// A failed assert() of <assert.h> or <cassert> in a kernel ends the launch with a KernelError, as a
// GPU's device-side assert ends the kernel, instead of aborting the process. glibc's assert calls
// __assert_fail; this library's own definition, hidden, is the one its code calls.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __assert_fail(
    const char* expression, const char* file, unsigned int line, const char* function) noexcept
{
    const uint3 thread = nn_cuda_cpu::current != nullptr ? nn_cuda_cpu::current->thread_idx : uint3{0, 0, 0};
    nn_cuda_cpu::report("%s: assertion `%s` failed (%s:%u, in %s) in thread (%u, %u, %u) of block (%u, %u, %u)",
                        nn_cuda_cpu::launch.kernel, expression, file, line, function, thread.x, thread.y,
                        thread.z, nn_cuda_cpu::block_idx.x, nn_cuda_cpu::block_idx.y, nn_cuda_cpu::block_idx.z);
    nn_cuda_cpu::end_launch_reported();
}

// ---- the library's C interface (the part that does not depend on its kernels: runtime.h) -------------

extern "C" int nn_cuda_cpu_atomics_used() { return nn_cuda_cpu::atomics_used; }
extern "C" double nn_cuda_cpu_atomic_sum_magnitude() { return nn_cuda_cpu::atomic_sum_magnitude; }
// The checking mode's spans before the arrays (`count` pairs of first and end; 0 to stop watching),
// which also forgets the atomic noted there last.
extern "C" void nn_cuda_cpu_watch_before(const uintptr_t* spans, size_t count)
{
    const size_t kept = std::min(count, nn_cuda_cpu::kMaxWatchedSpans);
    std::copy(spans, spans + 2 * kept, nn_cuda_cpu::watched_spans);
    nn_cuda_cpu::watched_span_count = kept;
    nn_cuda_cpu::atomic_before_address = 0;
}
// The checking mode's floating-point arrays (`count` triples of first, end and item bytes; 0: none).
extern "C" void nn_cuda_cpu_watch_floats(const uintptr_t* spans, size_t count)
{
    const size_t kept = std::min(count, nn_cuda_cpu::kMaxWatchedSpans);
    std::copy(spans, spans + 3 * kept, nn_cuda_cpu::float_spans);
    nn_cuda_cpu::float_span_count = kept;
}
extern "C" uintptr_t nn_cuda_cpu_atomic_before_address() { return nn_cuda_cpu::atomic_before_address; }
extern "C" const char* nn_cuda_cpu_atomic_before_thread() { return nn_cuda_cpu::atomic_before_thread; }
extern "C" void nn_cuda_cpu_set_dynamic_shared(size_t bytes) { nn_cuda_cpu::dynamic_shared_bytes = bytes; }
extern "C" size_t nn_cuda_cpu_dynamic_shared_capacity() { return nn_cuda_cpu::kDynamicSharedBytes; }
extern "C" size_t nn_cuda_cpu_resident_blocks(size_t threads)
{
    return nn_cuda_cpu::resident_capacity(threads, true);
}
extern "C" const char* nn_cuda_cpu_undefined_lane_read()
{
    return nn_cuda_cpu::undefined_lane_seen ? nn_cuda_cpu::undefined_lane_read : nullptr;
}
extern "C" const char* nn_cuda_cpu_bounds_detail() { return nn_cuda_cpu::bounds_detail; }
// Whether the code declares extern __shared__ memory (raw_module.DYNAMIC_SHARED_FLAG): a launch of
// shared_mem = 0 may read it then, past its end.
extern "C" int nn_cuda_cpu_declares_dynamic_shared()
{
#if defined(NN_CUDA_CPU_DYNAMIC_SHARED)
    return 1;
#else
    return 0;
#endif
}
extern "C" void nn_cuda_cpu_set_undefined_lane_fill(int fill) { nn_cuda_cpu::undefined_lane_fill_asked = fill; }
extern "C" void nn_cuda_cpu_set_watchdog(double seconds) { nn_cuda_cpu::watchdog_seconds = seconds; }

// The code's own functions, as [first, end) address pairs in order, where a thread may be preempted
// ("preemption"); none: no preemption. Whether its threads will be.
extern "C" int nn_cuda_cpu_set_preemptible(const uintptr_t* ranges, size_t pairs)
{
    nn_cuda_cpu::preemptible.assign(ranges, ranges + 2 * pairs);
    return nn_cuda_cpu::kPreemption && pairs > 0;
}

// How many times a thread of this library's launches was preempted, in this process.
extern "C" unsigned long long nn_cuda_cpu_preemptions() { return nn_cuda_cpu::preemptions.load(); }

extern "C" void nn_cuda_cpu_set_workers(size_t n) { nn_cuda_cpu::set_workers(n); }
extern "C" void nn_cuda_cpu_set_cooperative(int on) { nn_cuda_cpu::cooperative = on != 0; }
extern "C" unsigned long long nn_cuda_cpu_heap_run() { return nn_cuda_cpu::heap_run; }
// The words on the stack of the last launch's faulting thread (fault_stack), at most `capacity`.
extern "C" size_t nn_cuda_cpu_fault_stack(uintptr_t* out, size_t capacity)
{
    const size_t count = std::min(capacity, nn_cuda_cpu::reported_fault_stack_count);
    memcpy(out, nn_cuda_cpu::reported_fault_stack, count * sizeof(uintptr_t));
    return count;
}
extern "C" size_t nn_cuda_cpu_heap_allocations(unsigned long long of_run, uint64_t* out, size_t capacity)
{
    return nn_cuda_cpu::heap_allocations(of_run, out, capacity);
}
extern "C" void nn_cuda_cpu_heap_defer_frees(int on) { nn_cuda_cpu::heap_defer_frees(on); }
extern "C" void nn_cuda_cpu_shared_section(uintptr_t* bounds) { nn_cuda_cpu::shared_section(bounds); }

extern "C" void nn_cuda_cpu_stack_layout(size_t* layout)
{
    layout[0] = nn_cuda_cpu::kStackBytes;
    layout[1] = nn_cuda_cpu::kPoolStacks;
}

extern "C" void nn_cuda_cpu_use_stacks(void* base, size_t count) { nn_cuda_cpu::stacks.adopt(base, count); }

extern "C" void nn_cuda_cpu_set_shared_regions(void** addresses, const size_t* bytes, const unsigned char* fills,
                                               int n, int dynamic_fill)
{
    nn_cuda_cpu::shared_regions.clear();
    for (int i = 0; i < n; ++i) {
        nn_cuda_cpu::shared_regions.push_back(nn_cuda_cpu::SharedRegion{addresses[i], bytes[i], fills[i]});
    }
    nn_cuda_cpu::dynamic_shared_fill = static_cast<unsigned char>(dynamic_fill);
}

#if defined(NN_CUDA_CPU_RACE_CHECK)
// ---- the race check's side of GCC's ThreadSanitizer instrumentation (above, "races") ----------------
// Every load and store of the kernel code, of 1 to 16 bytes, aligned or not, volatile (noted) or not,
// and of ranges (a struct's copy); atomics and fences, which are done and count as the thread's
// synchronisation; function entries and exits and the module's start, which need nothing.
#define NN_CUDA_CPU_TSAN_ACCESS(bytes)                                                                        \
    void __tsan_read##bytes(void* a) { nn_cuda_cpu::race_check(a, bytes, false, __builtin_return_address(0)); } \
    void __tsan_write##bytes(void* a) { nn_cuda_cpu::race_check(a, bytes, true, __builtin_return_address(0)); } \
    void __tsan_unaligned_read##bytes(void* a) {                                                              \
        nn_cuda_cpu::race_check(a, bytes, false, __builtin_return_address(0)); }                              \
    void __tsan_unaligned_write##bytes(void* a) {                                                             \
        nn_cuda_cpu::race_check(a, bytes, true, __builtin_return_address(0)); }                               \
    void __tsan_volatile_read##bytes(void* a) {                                                               \
        nn_cuda_cpu::race_check(a, bytes, false, __builtin_return_address(0), true); }                        \
    void __tsan_volatile_write##bytes(void* a) {                                                              \
        nn_cuda_cpu::race_check(a, bytes, true, __builtin_return_address(0), true); }                         \
    void __tsan_unaligned_volatile_read##bytes(void* a) {                                                     \
        nn_cuda_cpu::race_check(a, bytes, false, __builtin_return_address(0), true); }                        \
    void __tsan_unaligned_volatile_write##bytes(void* a) {                                                    \
        nn_cuda_cpu::race_check(a, bytes, true, __builtin_return_address(0), true); }
// One read-modify-write (fetch_add, fetch_or, ...): done, and counted as synchronisation.
#define NN_CUDA_CPU_TSAN_FETCH(bits, T, op)                                                            \
    T __tsan_atomic##bits##_fetch_##op(volatile T* a, T v, int)                                        \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kAtomic);     \
        return __atomic_fetch_##op(a, v, __ATOMIC_SEQ_CST);                                            \
    }
#define NN_CUDA_CPU_TSAN_ATOMICS(bits, T)                                                              \
    T __tsan_atomic##bits##_load(const volatile T* a, int)                                             \
    {                                                                                                  \
        nn_cuda_cpu::race_synchronized();                                                              \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                   \
    }                                                                                                  \
    void __tsan_atomic##bits##_store(volatile T* a, T v, int)                                          \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kAtomic);     \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                  \
    T __tsan_atomic##bits##_exchange(volatile T* a, T v, int)                                          \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kAtomic);     \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                                  \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, add)                                                               \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, sub)                                                               \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, and)                                                               \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, or)                                                                \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, xor)                                                               \
    NN_CUDA_CPU_TSAN_FETCH(bits, T, nand)                                                              \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v, int, int)       \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kSwap);       \
        return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                                  \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v, int, int)         \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kSwap);       \
        return __atomic_compare_exchange_n(a, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    }                                                                                                  \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int, int)             \
    {                                                                                                  \
        nn_cuda_cpu::race_atomic(a, sizeof(T), __builtin_return_address(0), nn_cuda_cpu::kSwap);       \
        __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
        return expected;                                                                               \
    }
#pragma GCC visibility push(hidden)
extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
NN_CUDA_CPU_TSAN_ACCESS(1)
NN_CUDA_CPU_TSAN_ACCESS(2)
NN_CUDA_CPU_TSAN_ACCESS(4)
NN_CUDA_CPU_TSAN_ACCESS(8)
NN_CUDA_CPU_TSAN_ACCESS(16)
void __tsan_read_range(void* a, unsigned long size) {
    nn_cuda_cpu::race_check(a, size, false, __builtin_return_address(0)); }
void __tsan_write_range(void* a, unsigned long size) {
    nn_cuda_cpu::race_check(a, size, true, __builtin_return_address(0)); }
NN_CUDA_CPU_TSAN_ATOMICS(8, char)
NN_CUDA_CPU_TSAN_ATOMICS(16, short)
NN_CUDA_CPU_TSAN_ATOMICS(32, int)
NN_CUDA_CPU_TSAN_ATOMICS(64, long)
// 16 bytes in plain loads and stores: the race check's launches run on one host thread, and x86-64
// has no 16-byte atomics without -mcx16 (GCC would call libatomic)
using Int128 = __int128;
Int128 __tsan_atomic128_load(const volatile Int128* a, int)
{
    nn_cuda_cpu::race_synchronized();
    return *a;
}
void __tsan_atomic128_store(volatile Int128* a, Int128 v, int)
{
    nn_cuda_cpu::race_synchronized();
    *a = v;
}
Int128 __tsan_atomic128_exchange(volatile Int128* a, Int128 v, int)
{
    nn_cuda_cpu::race_synchronized();
    const Int128 old = *a;
    *a = v;
    return old;
}
int __tsan_atomic128_compare_exchange_strong(volatile Int128* a, Int128* expected, Int128 v, int, int)
{
    nn_cuda_cpu::race_synchronized();
    const Int128 old = *a;
    if (old == *expected) {
        *a = v;
        return 1;
    }
    *expected = old;
    return 0;
}
int __tsan_atomic128_compare_exchange_weak(volatile Int128* a, Int128* expected, Int128 v, int mo, int fail)
{
    return __tsan_atomic128_compare_exchange_strong(a, expected, v, mo, fail);
}
Int128 __tsan_atomic128_compare_exchange_val(volatile Int128* a, Int128 expected, Int128 v, int mo, int fail)
{
    __tsan_atomic128_compare_exchange_strong(a, &expected, v, mo, fail);
    return expected;
}
void __tsan_atomic_thread_fence(int)
{
    nn_cuda_cpu::race_synchronized();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {}
}
#pragma GCC visibility pop

extern "C" {

// The arguments' spans, as [first, end) pairs, which the race check watches from the next launch on.
void nn_cuda_cpu_set_race_spans(const uintptr_t* spans, size_t count)
{
    nn_cuda_cpu::race_spans.clear();
    for (size_t i = 0; i < count; ++i) {
        nn_cuda_cpu::race_spans.push_back(nn_cuda_cpu::race_span(i, spans[2 * i], spans[2 * i + 1]));
    }
    nn_cuda_cpu::race_argument_spans = count;
}
void nn_cuda_cpu_set_race_tracking(int on) { nn_cuda_cpu::race_asked = on != 0; }
void nn_cuda_cpu_dynamic_shared_at(size_t* out) { *out = reinterpret_cast<uintptr_t>(nn_cuda_cpu::dynamic_shared); }
// The race the last launch ended at: 0 where none, else its kind (1: a read after another thread's
// write, 2: a write after another's read), and in `out` the word's address, the earlier and the later
// access's code address and thread (as one number), their threads' x, y, z, and the block's x, y, z.
int nn_cuda_cpu_race_found(unsigned long long* out)
{
    const nn_cuda_cpu::RaceFound& found = nn_cuda_cpu::race_found;
    const unsigned long long values[] = {
        found.address, nn_cuda_cpu::race_site(found.earlier.site), nn_cuda_cpu::race_site(found.later.site),
        found.earlier.tid, found.later.tid, found.earlier_thread.x, found.earlier_thread.y, found.earlier_thread.z,
        found.later_thread.x, found.later_thread.y, found.later_thread.z, found.block.x, found.block.y, found.block.z,
        found.first, found.end};
    std::copy(std::begin(values), std::end(values), out);
    return found.kind;
}
}
#endif
