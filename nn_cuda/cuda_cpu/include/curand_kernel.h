// cuRAND's device API on the CPU runner: the XORWOW generator (curandState, the default) and
// Philox4_32_10, with the numbers a GPU draws from the same seed, subsequence and offset.
//
// - The states have cuRAND's layout and size (48 and 64 bytes), so a host that allocates them by
//   size, or saves and reloads them, works as it does on a GPU.
// - curand(), curand4(), the uniform floats and doubles and the skip-aheads follow cuRAND's
//   formulas: the same integers, and the same floats where the build contracts a * b + c as a GPU
//   does (NN_CUDA_CPU_FMA; without it a uniform float may differ in its last bit).
// - The normal and log-normal draws are Box-Muller over the same integers, through the CPU's logf,
//   sinf, cosf, expf (log, sin, cos, exp for doubles): they may differ from a GPU's in the last
//   bits, as every math function of the runner may.
//
// XORWOW is linear over GF(2) in its 160 bits of v[]: skipping n draws multiplies v by M^n, M the
// matrix of one draw. cuRAND ships powers of M precomputed; here they are computed once per library,
// on the first skip: M^(2^i) for offsets and M^(2^(67 + i)) for subsequences (a subsequence is 2^67
// draws). Philox is a counter: the subsequence is the counter's high half, the offset its low half.
//
// MRG32k3a, MTGP32, the Sobol generators, curand_poisson and curand_discrete stop the build at their
// use, in a line that says so.
#pragma once

#include <cmath>
#include <cstring>

#define EXTRA_FLAG_NORMAL 0x00000001
#define EXTRA_FLAG_LOG_NORMAL 0x00000002
#define CURAND_2POW32_INV (2.3283064e-10f)
#define CURAND_2POW32_INV_DOUBLE (2.3283064365386963e-10)
#define CURAND_2POW53_INV_DOUBLE (1.1102230246251565e-16)
#define CURAND_2POW32_INV_2PI (2.3283064e-10f * 6.2831855f)
#define CURAND_PI_DOUBLE (3.1415926535897932)

struct curandStateXORWOW {
    unsigned int d, v[5];
    int boxmuller_flag;
    int boxmuller_flag_double;
    float boxmuller_extra;
    double boxmuller_extra_double;
};
typedef curandStateXORWOW curandStateXORWOW_t;
typedef curandStateXORWOW curandState_t;
typedef curandStateXORWOW curandState;

struct curandStatePhilox4_32_10 {
    uint4 ctr;
    uint4 output;  // the four draws of the current counter; the next one is output[STATE]
    uint2 key;
    unsigned int STATE;
    int boxmuller_flag;
    int boxmuller_flag_double;
    float boxmuller_extra;
    double boxmuller_extra_double;
};
typedef curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;

// ---- XORWOW -------------------------------------------------------------------------------------

namespace nn_cuda_cpu {

// One draw of Marsaglia's xorshift over v[] (without the Weyl sequence d, which is not linear).
inline void xorwow_shift(unsigned int v[5])
{
    const unsigned int t = v[0] ^ (v[0] >> 2);
    v[0] = v[1];
    v[1] = v[2];
    v[2] = v[3];
    v[3] = v[4];
    v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

// A linear map of the 160 bits of v[]: row b is the image of bit b (bit b % 32 of word b / 32).
struct Gf2Matrix {
    unsigned int rows[160][5];
};

inline void xorwow_apply(const Gf2Matrix& matrix, unsigned int v[5])
{
    unsigned int image[5] = {0, 0, 0, 0, 0};
    for (int word = 0; word < 5; ++word) {
        for (unsigned int bits = v[word]; bits != 0; bits &= bits - 1) {
            const unsigned int* row = matrix.rows[word * 32 + __builtin_ctz(bits)];
            for (int k = 0; k < 5; ++k) {
                image[k] ^= row[k];
            }
        }
    }
    memcpy(v, image, sizeof image);
}

inline void xorwow_square(const Gf2Matrix& matrix, Gf2Matrix& squared)
{
    for (int b = 0; b < 160; ++b) {
        memcpy(squared.rows[b], matrix.rows[b], sizeof squared.rows[b]);
        xorwow_apply(matrix, squared.rows[b]);
    }
}

struct XorwowJumps {
    Gf2Matrix offset[64];    // M^(2^i)
    Gf2Matrix sequence[64];  // M^(2^(67 + i))
};

inline void build_xorwow_jumps(XorwowJumps& jumps)
{
    for (int b = 0; b < 160; ++b) {
        unsigned int* row = jumps.offset[0].rows[b];
        memset(row, 0, sizeof jumps.offset[0].rows[b]);
        row[b / 32] = 1u << (b % 32);
        xorwow_shift(row);
    }
    for (int i = 1; i < 64; ++i) {
        xorwow_square(jumps.offset[i - 1], jumps.offset[i]);
    }
    Gf2Matrix power = jumps.offset[63];  // M^(2^63), squared 4 times to M^(2^67)
    for (int i = 0; i < 4; ++i) {
        xorwow_square(power, jumps.sequence[0]);
        power = jumps.sequence[0];
    }
    for (int i = 1; i < 64; ++i) {
        xorwow_square(jumps.sequence[i - 1], jumps.sequence[i]);
    }
}

// At namespace scope: the runner takes a function's static variables for __shared__ arrays. Built when
// the library loads, outside every kernel's threads. (Until 2026-11-28 the first thread to ask built it
// under a mutex; a thread that the race check's instrumented code switched out while it held the mutex
// left the next one waiting for ever on the same host thread: the Oxford CUDA course's curand_init in
// blocks of 64 threads.)
inline const XorwowJumps xorwow_jumps_table = [] {
    XorwowJumps jumps;
    build_xorwow_jumps(jumps);
    return jumps;
}();

inline const XorwowJumps& xorwow_jumps() { return xorwow_jumps_table; }

inline void xorwow_skip(const Gf2Matrix (&powers)[64], unsigned long long n, unsigned int v[5])
{
    for (int i = 0; n != 0; ++i, n >>= 1) {
        if (n & 1) {
            xorwow_apply(powers[i], v);
        }
    }
}

}  // namespace nn_cuda_cpu

inline unsigned int curand(curandStateXORWOW_t* state)
{
    nn_cuda_cpu::xorwow_shift(state->v);
    state->d += 362437;
    return state->v[4] + state->d;
}

inline void skipahead(unsigned long long n, curandStateXORWOW_t* state)
{
    nn_cuda_cpu::xorwow_skip(nn_cuda_cpu::xorwow_jumps().offset, n, state->v);
    state->d += 362437 * static_cast<unsigned int>(n);
}

// 2^67 n draws: d moves by a multiple of 2^32, so it stays.
inline void skipahead_sequence(unsigned long long n, curandStateXORWOW_t* state)
{
    nn_cuda_cpu::xorwow_skip(nn_cuda_cpu::xorwow_jumps().sequence, n, state->v);
}

inline void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                        curandStateXORWOW_t* state)
{
    const unsigned int t0 = 1099087573u * (static_cast<unsigned int>(seed) ^ 0xaad26b49u);
    const unsigned int t1 = 2591861531u * (static_cast<unsigned int>(seed >> 32) ^ 0xf7dcefddu);
    state->d = 6615241u + t1 + t0;
    state->v[0] = 123456789u + t0;
    state->v[1] = 362436069u ^ t0;
    state->v[2] = 521288629u + t1;
    state->v[3] = 88675123u ^ t1;
    state->v[4] = 5783321u + t0;
    skipahead_sequence(subsequence, state);
    skipahead(offset, state);
    state->boxmuller_flag = 0;
    state->boxmuller_flag_double = 0;
    state->boxmuller_extra = 0.0f;
    state->boxmuller_extra_double = 0.0;
}

// ---- Philox4_32_10 --------------------------------------------------------------------------------

namespace nn_cuda_cpu {

inline uint4 philox_round(uint4 counter, uint2 key)
{
    const unsigned long long product0 = 0xD2511F53ull * counter.x;
    const unsigned long long product1 = 0xCD9E8D57ull * counter.z;
    return uint4{static_cast<unsigned int>(product1 >> 32) ^ counter.y ^ key.x, static_cast<unsigned int>(product1),
                 static_cast<unsigned int>(product0 >> 32) ^ counter.w ^ key.y, static_cast<unsigned int>(product0)};
}

// The counter plus n, n added to its low 64 bits with the carry going on into the high ones.
inline void add_to_counter(uint4& counter, unsigned long long n)
{
    const unsigned long long low = (static_cast<unsigned long long>(counter.y) << 32 | counter.x) + n;
    counter.x = static_cast<unsigned int>(low);
    counter.y = static_cast<unsigned int>(low >> 32);
    if (low < n && ++counter.z == 0) {
        ++counter.w;
    }
}

}  // namespace nn_cuda_cpu

inline uint4 curand_Philox4x32_10(uint4 counter, uint2 key)
{
    for (int round = 0; round < 9; ++round) {
        counter = nn_cuda_cpu::philox_round(counter, key);
        key.x += 0x9E3779B9u;
        key.y += 0xBB67AE85u;
    }
    return nn_cuda_cpu::philox_round(counter, key);
}

inline unsigned int curand(curandStatePhilox4_32_10_t* state)
{
    const unsigned int words[4] = {state->output.x, state->output.y, state->output.z, state->output.w};
    const unsigned int drawn = words[state->STATE++ & 3];
    if (state->STATE == 4) {
        nn_cuda_cpu::add_to_counter(state->ctr, 1);
        state->output = curand_Philox4x32_10(state->ctr, state->key);
        state->STATE = 0;
    }
    return drawn;
}

// The next four draws: the rest of this counter's output, then the first of the next counter's.
inline uint4 curand4(curandStatePhilox4_32_10_t* state)
{
    const uint4 current = state->output;
    nn_cuda_cpu::add_to_counter(state->ctr, 1);
    state->output = curand_Philox4x32_10(state->ctr, state->key);
    const unsigned int words[8] = {current.x, current.y, current.z, current.w,
                                   state->output.x, state->output.y, state->output.z, state->output.w};
    const unsigned int* next = words + (state->STATE & 3);
    return uint4{next[0], next[1], next[2], next[3]};
}

inline void skipahead(unsigned long long n, curandStatePhilox4_32_10_t* state)
{
    state->STATE += n & 3;
    n /= 4;
    if (state->STATE > 3) {
        n += 1;
        state->STATE -= 4;
    }
    nn_cuda_cpu::add_to_counter(state->ctr, n);
    state->output = curand_Philox4x32_10(state->ctr, state->key);
}

// 2^66 n draws: n is added to the counter's high 64 bits.
inline void skipahead_sequence(unsigned long long n, curandStatePhilox4_32_10_t* state)
{
    const unsigned long long high = (static_cast<unsigned long long>(state->ctr.w) << 32 | state->ctr.z) + n;
    state->ctr.z = static_cast<unsigned int>(high);
    state->ctr.w = static_cast<unsigned int>(high >> 32);
    state->output = curand_Philox4x32_10(state->ctr, state->key);
}

inline void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                        curandStatePhilox4_32_10_t* state)
{
    state->ctr = uint4{0, 0, 0, 0};
    state->key = uint2{static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32)};
    state->STATE = 0;
    state->boxmuller_flag = 0;
    state->boxmuller_flag_double = 0;
    state->boxmuller_extra = 0.0f;
    state->boxmuller_extra_double = 0.0;
    skipahead_sequence(subsequence, state);
    skipahead(offset, state);
}

// ---- the distributions ----------------------------------------------------------------------------

namespace nn_cuda_cpu {
// 53 random bits of two draws: x, and y's low 21 bits above it.
inline unsigned long long bits53(unsigned int x, unsigned int y)
{
    return static_cast<unsigned long long>(x) ^ (static_cast<unsigned long long>(y) << (53 - 32));
}
}  // namespace nn_cuda_cpu

// A float in (0, 1] from 32 bits; a double from 32 bits, or from 53 of two draws.
inline float _curand_uniform(unsigned int x) { return x * CURAND_2POW32_INV + (CURAND_2POW32_INV / 2.0f); }
inline double _curand_uniform_double(unsigned int x) { return x * CURAND_2POW32_INV_DOUBLE + CURAND_2POW32_INV_DOUBLE; }
inline double _curand_uniform_double_hq(unsigned int x, unsigned int y)
{
    return nn_cuda_cpu::bits53(x, y) * CURAND_2POW53_INV_DOUBLE + (CURAND_2POW53_INV_DOUBLE / 2.0);
}

// Box-Muller: two normal draws from two uniform ones (x the radius, y the angle).
inline float2 _curand_box_muller(unsigned int x, unsigned int y)
{
    const float u = _curand_uniform(x);
    const float v = y * CURAND_2POW32_INV_2PI + (CURAND_2POW32_INV_2PI / 2);
    const float s = sqrtf(-2.0f * logf(u));
    return float2{sinf(v) * s, cosf(v) * s};
}

inline double2 _curand_box_muller_double(unsigned int x0, unsigned int x1, unsigned int y0, unsigned int y1)
{
    const double u = _curand_uniform_double_hq(x0, x1);
    // the angle over pi, in (0, 2]
    const double v = nn_cuda_cpu::bits53(y0, y1) * (CURAND_2POW53_INV_DOUBLE * 2.0) + CURAND_2POW53_INV_DOUBLE;
    const double s = sqrt(-2.0 * log(u));
    return double2{sin(v * CURAND_PI_DOUBLE) * s, cos(v * CURAND_PI_DOUBLE) * s};
}

namespace nn_cuda_cpu {

template <typename State>
constexpr bool is_curand_state =
    std::is_same<State, curandStateXORWOW_t>::value || std::is_same<State, curandStatePhilox4_32_10_t>::value;

// The two normal floats of a draw pair, and the two normal doubles of four draws (Philox takes them
// with one curand4, as cuRAND does).
template <typename State>
float2 box_muller(State* state)
{
    const unsigned int x = curand(state);
    const unsigned int y = curand(state);
    return _curand_box_muller(x, y);
}

template <typename State>
double2 box_muller_double(State* state)
{
    if constexpr (std::is_same<State, curandStatePhilox4_32_10_t>::value) {
        const uint4 w = curand4(state);
        return _curand_box_muller_double(w.x, w.y, w.z, w.w);
    } else {
        const unsigned int x0 = curand(state), x1 = curand(state), y0 = curand(state), y1 = curand(state);
        return _curand_box_muller_double(x0, x1, y0, y1);
    }
}

// A pair's first value now and its second at the next call of the same kind (flag says which).
template <typename Value, typename Pair, typename Map>
Value one_at_a_time(int& flag, Value& kept, int kind, Pair pair, Map map)
{
    if (flag != kind) {
        const auto both = pair();
        kept = map(both.y);
        flag = kind;
        return map(both.x);
    }
    flag = 0;
    return kept;
}

}  // namespace nn_cuda_cpu

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline float curand_uniform(State* state)
{
    return _curand_uniform(curand(state));
}

inline double curand_uniform_double(curandStateXORWOW_t* state)
{
    const unsigned int x = curand(state);
    const unsigned int y = curand(state);
    return _curand_uniform_double_hq(x, y);
}

inline double curand_uniform_double(curandStatePhilox4_32_10_t* state) { return _curand_uniform_double(curand(state)); }

inline float4 curand_uniform4(curandStatePhilox4_32_10_t* state)
{
    const uint4 w = curand4(state);
    return float4{_curand_uniform(w.x), _curand_uniform(w.y), _curand_uniform(w.z), _curand_uniform(w.w)};
}

inline double2 curand_uniform2_double(curandStatePhilox4_32_10_t* state)
{
    const uint4 w = curand4(state);
    return double2{_curand_uniform_double_hq(w.x, w.y), _curand_uniform_double_hq(w.z, w.w)};
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline float curand_normal(State* state)
{
    return nn_cuda_cpu::one_at_a_time(state->boxmuller_flag, state->boxmuller_extra, EXTRA_FLAG_NORMAL,
                                      [&] { return nn_cuda_cpu::box_muller(state); }, [](float z) { return z; });
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline float2 curand_normal2(State* state)
{
    return nn_cuda_cpu::box_muller(state);
}

inline float4 curand_normal4(curandStatePhilox4_32_10_t* state)
{
    const uint4 w = curand4(state);
    const float2 first = _curand_box_muller(w.x, w.y), second = _curand_box_muller(w.z, w.w);
    return float4{first.x, first.y, second.x, second.y};
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline double curand_normal_double(State* state)
{
    return nn_cuda_cpu::one_at_a_time(state->boxmuller_flag_double, state->boxmuller_extra_double, EXTRA_FLAG_NORMAL,
                                      [&] { return nn_cuda_cpu::box_muller_double(state); },
                                      [](double z) { return z; });
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline double2 curand_normal2_double(State* state)
{
    return nn_cuda_cpu::box_muller_double(state);
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline float curand_log_normal(State* state, float mean, float stddev)
{
    return nn_cuda_cpu::one_at_a_time(state->boxmuller_flag, state->boxmuller_extra, EXTRA_FLAG_LOG_NORMAL,
                                      [&] { return nn_cuda_cpu::box_muller(state); },
                                      [&](float z) { return expf(mean + (stddev * z)); });
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline float2 curand_log_normal2(State* state, float mean, float stddev)
{
    const float2 z = nn_cuda_cpu::box_muller(state);
    return float2{expf(mean + (stddev * z.x)), expf(mean + (stddev * z.y))};
}

inline float4 curand_log_normal4(curandStatePhilox4_32_10_t* state, float mean, float stddev)
{
    const float4 z = curand_normal4(state);
    return float4{expf(mean + (stddev * z.x)), expf(mean + (stddev * z.y)), expf(mean + (stddev * z.z)),
                  expf(mean + (stddev * z.w))};
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline double curand_log_normal_double(State* state, double mean, double stddev)
{
    return nn_cuda_cpu::one_at_a_time(state->boxmuller_flag_double, state->boxmuller_extra_double,
                                      EXTRA_FLAG_LOG_NORMAL, [&] { return nn_cuda_cpu::box_muller_double(state); },
                                      [&](double z) { return exp(mean + (stddev * z)); });
}

template <typename State, typename = std::enable_if_t<nn_cuda_cpu::is_curand_state<State>>>
inline double2 curand_log_normal2_double(State* state, double mean, double stddev)
{
    const double2 z = nn_cuda_cpu::box_muller_double(state);
    return double2{exp(mean + (stddev * z.x)), exp(mean + (stddev * z.y))};
}

// ---- what the runner does not have ----------------------------------------------------------------

// The other generators' states exist, so that a kernel compiles up to the call that uses one, which
// stops the build there (a call with an XORWOW or Philox state never matches these).
struct curandStateMRG32k3a {};
struct curandStateMtgp32 {};
struct curandStateSobol32 {};
struct curandStateScrambledSobol32 {};
struct curandStateSobol64 {};
struct curandStateScrambledSobol64 {};
typedef curandStateMRG32k3a curandStateMRG32k3a_t;
typedef curandStateMtgp32 curandStateMtgp32_t;
typedef curandStateSobol32 curandStateSobol32_t;
typedef curandStateScrambledSobol32 curandStateScrambledSobol32_t;
typedef curandStateSobol64 curandStateSobol64_t;
typedef curandStateScrambledSobol64 curandStateScrambledSobol64_t;

namespace nn_cuda_cpu {
template <typename State>
constexpr bool is_missing_curand_state =
    std::is_same<State, curandStateMRG32k3a>::value || std::is_same<State, curandStateMtgp32>::value ||
    std::is_same<State, curandStateSobol32>::value || std::is_same<State, curandStateScrambledSobol32>::value ||
    std::is_same<State, curandStateSobol64>::value || std::is_same<State, curandStateScrambledSobol64>::value;
}  // namespace nn_cuda_cpu

#define NN_CUDA_CPU_MISSING_GENERATOR(function, ...)                                                       \
    template <__VA_ARGS__, typename State,                                                                  \
              typename = std::enable_if_t<nn_cuda_cpu::is_missing_curand_state<std::remove_cv_t<State>>>>  \
    inline unsigned int function                                                                             \
    {                                                                                                        \
        static_assert(nn_cuda_cpu_unsupported<State>, "the CPU runner does not support cuRAND's MRG32k3a, "  \
                                                      "MTGP32 and Sobol generators (curand_kernel.h; it has " \
                                                      "XORWOW, curandState, and Philox4_32_10)");            \
        return 0;                                                                                            \
    }
// the state first (curand, the distributions), or last (curand_init, the skips)
NN_CUDA_CPU_MISSING_GENERATOR(curand(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_uniform(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_uniform_double(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_normal(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_normal2(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_normal_double(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_log_normal(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_log_normal_double(State*, A...), typename... A)
NN_CUDA_CPU_MISSING_GENERATOR(curand_init(N, State*), typename N)
NN_CUDA_CPU_MISSING_GENERATOR(curand_init(V, N, State*), typename V, typename N)
NN_CUDA_CPU_MISSING_GENERATOR(curand_init(S, N, O, State*), typename S, typename N, typename O)
NN_CUDA_CPU_MISSING_GENERATOR(skipahead(N, State*), typename N)
NN_CUDA_CPU_MISSING_GENERATOR(skipahead_sequence(N, State*), typename N)
NN_CUDA_CPU_MISSING_GENERATOR(skipahead_subsequence(N, State*), typename N)
#undef NN_CUDA_CPU_MISSING_GENERATOR
NN_CUDA_CPU_UNSUPPORTED(curand_poisson, "cuRAND's Poisson draws")
NN_CUDA_CPU_UNSUPPORTED(curand_poisson4, "cuRAND's Poisson draws")
NN_CUDA_CPU_UNSUPPORTED(curand_discrete, "cuRAND's discrete distributions")
NN_CUDA_CPU_UNSUPPORTED(curand_discrete4, "cuRAND's discrete distributions")

#ifdef NN_CUDA_CPU_RESTORE_FOR_cuda_header  // an NVRTC build: the limits macros CUDA's headers bring (nvrtc_headers.py)
NN_CUDA_CPU_RESTORE_FOR_cuda_header
#endif
