// CUDA's cooperative groups on the CPU runner: the thread block, its tiles of 1 to 32 lanes (as
// thread_block_tile<N> or, sized at run time, as a thread_group), the grid's ranks, the partitions
// of a tile; the collectives are in cooperative_groups/reduce.h (cg::reduce, over a tile or a
// partition) and cooperative_groups/scan.h (cg::inclusive_scan and cg::exclusive_scan, over a tile),
// as in CUDA, which declares them, and their operators (cg::plus, ...), only there: code that
// includes this header alone may name its own `reduce` or `plus`.
//
// Built on runtime.h, which every CPU build includes first: a block's sync is __syncthreads(), a
// tile's is __syncwarp over the tile's lanes, and a tile's shuffles and votes are the *_sync ones
// with the tile's mask and width; the grid's sync is the runtime's grid_sync, in a cooperative launch
// (RawModule(..., enable_cooperative_groups=True)). What needs the lanes a branch leaves active
// (coalesced_threads) stops the build naming itself, as every function the runner lacks does. The
// partitions of a tile by a predicate or a label (binary_partition, labeled_partition) are coalesced
// groups: any lanes of one warp.
#pragma once

namespace cooperative_groups {

namespace details {
// The lanes of a tile of `size` lanes that hold this thread, as a mask over its warp (less in the
// block's last, partial warp).
inline unsigned tile_mask(unsigned size)
{
    const unsigned lane = nn_cuda_cpu::lane_id();
    const unsigned first = lane / size * size;
    const unsigned lanes = size == 32 ? 0xFFFFFFFFu : ((1u << size) - 1u) << first;
    return lanes & nn_cuda_cpu::lanes_of(nn_cuda_cpu::current->tid / nn_cuda_cpu::kWarpSize,
                                         nn_cuda_cpu::threads_in_block());
}

inline constexpr bool valid_tile(unsigned size) { return size >= 1 && size <= 32 && (size & (size - 1)) == 0; }

// A value of any type moved by `shuffle` (one of the *_sync shuffles): a number at once, anything
// else 8 bytes at a time, as a group's shuffles move any type on a GPU.
template <typename T, typename nn_cuda_cpu_shuffle>
T shuffle_words(T value, nn_cuda_cpu_shuffle shuffle)
{
    if constexpr (std::is_arithmetic<T>::value) {
        return shuffle(value);
    } else {
        unsigned long long words[(sizeof(T) + 7) / 8] = {};
        memcpy(words, &value, sizeof(T));
        for (unsigned long long& word : words) {
            word = shuffle(word);
        }
        T result;
        memcpy(&result, words, sizeof(T));
        return result;
    }
}

}  // namespace details

// ---- the thread block -----------------------------------------------------------------------------

// A group of threads as chosen at run time: the block, or a tile of it of 1 to 32 lanes
// (tiled_partition(parent, n)).
class thread_group {
public:
    void sync() const
    {
        if (tile_size_ == 0) {
            __syncthreads();
        } else {
            __syncwarp(details::tile_mask(tile_size_));
        }
    }
    unsigned thread_rank() const
    {
        const size_t tid = nn_cuda_cpu::current->tid;
        return static_cast<unsigned>(tile_size_ == 0 ? tid : tid % tile_size_);
    }
    unsigned long long num_threads() const
    {
        return tile_size_ == 0 ? nn_cuda_cpu::threads_in_block() : tile_size_;
    }
    unsigned long long size() const { return num_threads(); }

protected:
    explicit thread_group(unsigned tile_size) : tile_size_(tile_size) {}
    unsigned tile_size_;  // 0: the whole block
    friend thread_group tiled_partition(const thread_group& parent, unsigned size);
};

class thread_block : public thread_group {
public:
    thread_block() : thread_group(0) {}
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
    // the barrier split in two (CUDA 12): what a thread wrote before its arrival, every thread reads
    // after its wait; the wait is the block's barrier, which keeps that promise
    struct arrival_token {};
    arrival_token barrier_arrive() const { return arrival_token(); }
    void barrier_wait(arrival_token&&) const { __syncthreads(); }
};

inline thread_block this_thread_block() { return thread_block(); }

// The scratch memory that tiles of more than 32 threads need on a GPU: accepted, so that such code
// stops at its thread_block_tile<N> with the runner's own message.
template <unsigned MaxBlockSize = 1024>
struct block_tile_memory {
    unsigned char unused[8];
};
template <unsigned MaxBlockSize>
thread_block this_thread_block(block_tile_memory<MaxBlockSize>&)
{
    return thread_block();
}

// A tile of `size` lanes (a power of 2, at most 32) of `parent` (the block, or a larger tile).
inline thread_group tiled_partition(const thread_group& parent, unsigned size)
{
    if (!details::valid_tile(size) || (parent.tile_size_ != 0 && size > parent.tile_size_)) {
        nn_cuda_cpu::report("%s: tiled_partition(group, %u) in thread (%u, %u, %u) of block (%u, %u, %u): the CPU "
                            "runner takes tiles of 1, 2, 4, 8, 16 or 32 threads, no larger than their parent",
                            nn_cuda_cpu::launch.kernel, size, threadIdx.x, threadIdx.y, threadIdx.z,
                            blockIdx.x, blockIdx.y, blockIdx.z);
        nn_cuda_cpu::end_launch_reported();
    }
    return thread_group(size);
}

// ---- tiles of a size known when compiling ----------------------------------------------------------

template <unsigned Size, typename Parent = void>
class thread_block_tile {
    static_assert(details::valid_tile(Size), "the CPU runner does not support tiles other than 1, 2, 4, 8, 16 "
                                             "or 32 threads (thread_block_tile<N>)");

public:
    thread_block_tile() : thread_block_tile(nn_cuda_cpu::current->tid, nn_cuda_cpu::threads_in_block()) {}
    // a tile of `parent_size` threads (the block, or a larger tile) in which the calling thread's rank is
    // `parent_rank` (tiled_partition)
    thread_block_tile(unsigned long long parent_rank, unsigned long long parent_size)
        : meta_rank_(static_cast<unsigned>(parent_rank / Size)),
          meta_size_(static_cast<unsigned>((parent_size + Size - 1) / Size))
    {
    }
    template <typename OtherParent>
    thread_block_tile(const thread_block_tile<Size, OtherParent>& other)
        : meta_rank_(other.meta_group_rank()), meta_size_(other.meta_group_size())
    {
    }

    static constexpr unsigned long long num_threads() { return Size; }
    static constexpr unsigned long long size() { return Size; }
    unsigned thread_rank() const { return static_cast<unsigned>(nn_cuda_cpu::current->tid % Size); }
    // which tile of its parent this is, and how many tiles the parent has: of a tile cut from a tile of 32
    // (tiled_partition<8>(tiled_partition<32>(block))), 0-3 and 4, not the block's (the runner gave the
    // block's until 2026-11-28: Ansorge's cgwarp.cu)
    unsigned meta_group_rank() const { return meta_rank_; }
    unsigned meta_group_size() const { return meta_size_; }
    void sync() const { __syncwarp(details::tile_mask(Size)); }
    operator thread_group() const { return tiled_partition(thread_block(), Size); }

    template <typename T>
    T shfl(T value, int source) const
    {
        return details::shuffle_words(value, [&](auto v) { return __shfl_sync(details::tile_mask(Size), v, source, Size); });
    }
    template <typename T>
    T shfl_down(T value, unsigned delta) const
    {
        return details::shuffle_words(value, [&](auto v) { return __shfl_down_sync(details::tile_mask(Size), v, delta, Size); });
    }
    template <typename T>
    T shfl_up(T value, unsigned delta) const
    {
        return details::shuffle_words(value, [&](auto v) { return __shfl_up_sync(details::tile_mask(Size), v, delta, Size); });
    }
    template <typename T>
    T shfl_xor(T value, unsigned lane_mask) const
    {
        return details::shuffle_words(value, [&](auto v) { return __shfl_xor_sync(details::tile_mask(Size), v, lane_mask, Size); });
    }

    // votes: over the tile's lanes, the ballot's bits numbered from the tile's first lane
    int any(int predicate) const { return ballot(predicate) != 0; }
    int all(int predicate) const { return ballot(predicate) == low_lanes(); }
    unsigned ballot(int predicate) const { return __ballot_sync(details::tile_mask(Size), predicate) >> shift(); }
    template <typename T>
    unsigned match_any(T value) const { return __match_any_sync(details::tile_mask(Size), value) >> shift(); }
    template <typename T>
    unsigned match_all(T value, int& pred) const { return __match_all_sync(details::tile_mask(Size), value, &pred) >> shift(); }

private:
    static unsigned shift() { return nn_cuda_cpu::lane_id() / Size * Size; }
    static unsigned low_lanes() { return details::tile_mask(Size) >> shift(); }
    unsigned meta_rank_, meta_size_;
};

template <unsigned Size, typename Parent>
thread_block_tile<Size, Parent> tiled_partition(const Parent& parent)
{
    return thread_block_tile<Size, Parent>(parent.thread_rank(), parent.size());
}

// The calling thread alone, as a tile of one.
inline thread_block_tile<1, void> this_thread() { return thread_block_tile<1, void>(); }

template <typename Group>
void sync(const Group& group)
{
    group.sync();
}

// CUDA's free functions of any group (Ginkgo's cooperative_groups.cuh takes them; refused until 2026-11-27)
template <typename Group>
unsigned long long thread_rank(const Group& group)
{
    return group.thread_rank();
}
template <typename Group>
unsigned long long group_size(const Group& group)
{
    return group.size();
}

// ---- the grid: its ranks; a grid-wide barrier needs a cooperative launch ---------------------------

// Thread block clusters are sm_90's, where the runner's code is sm_80's (__CUDA_ARCH__ 800), whose
// compilers do not have them either.
template <typename Unused>
unsigned nn_cuda_cpu_no_clusters()
{
    static_assert(nn_cuda_cpu_unsupported<Unused>, "the CPU runner does not support thread block clusters "
                                                "(sm_90; its code is sm_80's, __CUDA_ARCH__ 800)");
    return 0;
}

class grid_group {
public:
    // as on a GPU: only a cooperative launch makes a grid that can sync
    bool is_valid() const { return nn_cuda_cpu::cooperative; }
    unsigned long long num_blocks() const { return 1ull * gridDim.x * gridDim.y * gridDim.z; }
    unsigned long long block_rank() const { return blockIdx.x + 1ull * gridDim.x * (blockIdx.y + 1ull * gridDim.y * blockIdx.z); }
    unsigned long long num_threads() const { return num_blocks() * nn_cuda_cpu::threads_in_block(); }
    unsigned long long size() const { return num_threads(); }
    unsigned long long thread_rank() const { return block_rank() * nn_cuda_cpu::threads_in_block() + nn_cuda_cpu::current->tid; }
    dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 dim_blocks() const { return gridDim; }
    dim3 group_dim() const { return gridDim; }
    // the thread's index in the grid, and the grid's size, in threads along each axis
    dim3 thread_index() const
    {
        return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                    blockIdx.z * blockDim.z + threadIdx.z);
    }
    dim3 dim_threads() const { return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z); }
    void sync() const { nn_cuda_cpu::grid_sync(); }
    // the grid's barrier split in two (CUDA 12), the wait being the grid's sync, as the block's
    using arrival_token = unsigned;
    arrival_token barrier_arrive() const { return 0; }
    void barrier_wait(arrival_token&&) const { nn_cuda_cpu::grid_sync(); }
    template <typename Unused = void>
    unsigned long long cluster_rank() const { return nn_cuda_cpu_no_clusters<Unused>(); }
    template <typename Unused = void>
    unsigned long long num_clusters() const { return nn_cuda_cpu_no_clusters<Unused>(); }
    template <typename Unused = void>
    dim3 cluster_index() const { return dim3(nn_cuda_cpu_no_clusters<Unused>()); }
    template <typename Unused = void>
    dim3 dim_clusters() const { return dim3(nn_cuda_cpu_no_clusters<Unused>()); }

};

inline grid_group this_grid() { return grid_group(); }

template <typename Unused = void>
grid_group this_cluster()
{
    nn_cuda_cpu_no_clusters<Unused>();
    return grid_group();
}

// ---- groups of any lanes of one warp: the partitions of a tile by a value ---------------------------

// The lanes of `mask` in this thread's warp, ranked from the lowest lane: what binary_partition and
// labeled_partition give each thread (the lanes of its tile with its predicate, or its label).
class coalesced_group {
public:
    explicit coalesced_group(unsigned mask) : mask_(mask) {}
    unsigned thread_rank() const { return __popc(mask_ & ((1u << nn_cuda_cpu::lane_id()) - 1u)); }
    unsigned long long num_threads() const { return __popc(mask_); }
    unsigned long long size() const { return num_threads(); }
    void sync() const { __syncwarp(mask_); }
    template <typename T>
    T shfl(T value, unsigned rank) const { return from_lane(value, lane_of(rank)); }
    template <typename T>
    T shfl_down(T value, unsigned delta) const
    {
        const unsigned rank = thread_rank() + delta;
        return from_lane(value, rank < num_threads() ? lane_of(rank) : nn_cuda_cpu::lane_id());
    }
    template <typename T>
    T shfl_up(T value, unsigned delta) const
    {
        const unsigned rank = thread_rank();
        return from_lane(value, rank >= delta ? lane_of(rank - delta) : nn_cuda_cpu::lane_id());
    }
    int any(int predicate) const { return __ballot_sync(mask_, predicate) != 0; }
    int all(int predicate) const { return __ballot_sync(mask_, predicate) == mask_; }
    // bit r for the thread of rank r
    unsigned ballot(int predicate) const
    {
        const unsigned lanes = __ballot_sync(mask_, predicate);
        unsigned bits = 0, rank = 0;
        for (unsigned lane = 0; lane < 32; ++lane) {
            if ((mask_ >> lane) & 1u) {
                bits |= ((lanes >> lane) & 1u) << rank++;
            }
        }
        return bits;
    }
    unsigned mask() const { return mask_; }

private:
    template <typename T>
    T from_lane(T value, unsigned lane) const
    {
        return details::shuffle_words(value, [&](auto v) { return __shfl_sync(mask_, v, lane); });
    }
    unsigned lane_of(unsigned rank) const  // the lane of the thread of this rank
    {
        unsigned lane = 0;
        for (unsigned seen = 0; lane < 32; ++lane) {
            if (((mask_ >> lane) & 1u) && seen++ == rank) {
                break;
            }
        }
        return lane;
    }
    unsigned mask_;
};

// The threads of `parent` (a tile of at most 32 lanes) whose predicate is as this thread's.
template <unsigned Size, typename Parent>
coalesced_group binary_partition(const thread_block_tile<Size, Parent>&, bool predicate)
{
    const unsigned tile = details::tile_mask(Size), set = __ballot_sync(tile, predicate);
    return coalesced_group(predicate ? set : tile & ~set);
}

// The threads of `parent` whose label equals this thread's.
template <unsigned Size, typename Parent, typename Label>
coalesced_group labeled_partition(const thread_block_tile<Size, Parent>&, Label label)
{
    return coalesced_group(__match_any_sync(details::tile_mask(Size), label));
}

// The lanes that a branch leaves active: the runner's lanes take turns, so it cannot tell which
// ones a branch took.
template <typename Unused = void>
coalesced_group coalesced_threads()
{
    static_assert(nn_cuda_cpu_unsupported<Unused>, "the CPU runner does not support coalesced_threads (the lanes a "
                                                "branch leaves active; binary_partition and labeled_partition "
                                                "are supported)");
    return coalesced_group(0);
}

// ---- one thread of a tile or a partition calls (CUDA 12) ---------------------------------------------

// The group's thread of rank 0 calls fn(args...), as a GPU before sm_90 picks it.
template <typename Group, typename Fn, typename... Args>
void invoke_one(const Group& group, Fn&& fn, Args&&... args)
{
    if (group.thread_rank() == 0) {
        std::forward<Fn>(fn)(std::forward<Args>(args)...);
    }
}

// As invoke_one, and every thread of the group gets what the call returned.
template <typename Group, typename Fn, typename... Args>
auto invoke_one_broadcast(const Group& group, Fn&& fn, Args&&... args)
{
    typename std::decay<decltype(fn(args...))>::type result{};
    if (group.thread_rank() == 0) {
        result = std::forward<Fn>(fn)(std::forward<Args>(args)...);
    }
    return group.shfl(result, 0);
}

}  // namespace cooperative_groups

#ifdef NN_CUDA_CPU_RESTORE_FOR_cuda_header  // an NVRTC build: the limits macros CUDA's headers bring (nvrtc_headers.py)
NN_CUDA_CPU_RESTORE_FOR_cuda_header
#endif
