"""cuRAND's device API on the CPU runner (curand_kernel.h): XORWOW and Philox4_32_10.

What is checked against what does not come from the runner's header:
- Philox4_32_10 gives Random123's published known answers, reached through curand_init, skipahead
  and skipahead_sequence (so the counter layout and its carries are cuRAND's too);
- XORWOW's subsequence jump M^(2^67) has the first entry of cuRAND's own precomputed table
  (850664906), and jumps of 16 x 2^63 draws, and of 1,000 single draws, agree with it;
- both generators' draws follow a model of cuRAND's formulas written here in Python (seeding, the
  xorshift, the Weyl sequence, the counter), and the uniform floats and doubles are cuRAND's
  formulas of those draws, bit for bit; the normal draws are Box-Muller of them, within a few
  float32 ulps (the CPU's logf and sinf, not a GPU's), with the right moments;
- the states have cuRAND's sizes (48 and 64 bytes), and the generators the runner lacks stop the
  build in one line while int arguments still pick the XORWOW overloads.
"""

import numpy as np
import pytest

from nn_cuda.cuda_cpu import RawModule
from nn_cuda.cuda_cpu.build import KernelBuildError

pytestmark = pytest.mark.slow  # a module build (a few seconds)

CODE = r"""
#include <curand_kernel.h>

// Thread i: curand_init(seed, i, offset), then n draws; its state after them goes to states[i].
template <typename State>
__global__ void draws(unsigned long long seed, unsigned long long offset, int n, int threads, State* states,
                      unsigned int* out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < threads) {
        State state;
        curand_init(seed, i, offset, &state);
        for (int k = 0; k < n; ++k) {
            out[i * n + k] = curand(&state);
        }
        states[i] = state;
    }
}

// Philox from (seed, subsequence): `skips` skipaheads of `each` draws, then `before` single draws,
// then one curand4 (out[0..3]) and the next single draw (out[4]).
extern "C" __global__ void philox_four(unsigned long long seed, unsigned long long subsequence,
                                       unsigned long long each, int skips, int before, unsigned int* out)
{
    curandStatePhilox4_32_10_t state;
    curand_init(seed, subsequence, 0, &state);
    for (int s = 0; s < skips; ++s) {
        skipahead(each, &state);
    }
    for (int b = 0; b < before; ++b) {
        curand(&state);
    }
    const uint4 four = curand4(&state);
    out[0] = four.x, out[1] = four.y, out[2] = four.z, out[3] = four.w;
    out[4] = curand(&state);
}

// Thread i's XORWOW state, given by its words (d, v[0..4]), jumped four ways: by
// skipahead_sequence(1) (row 0 of out), 16 skipaheads of 2^63 (row 1), skipahead(1000) (row 2) and
// 1,000 draws (row 3).
extern "C" __global__ void jumps(const unsigned int* words, unsigned int* out)
{
    const int i = threadIdx.x;
    curandState states[4];
    for (int r = 0; r < 4; ++r) {
        states[r].d = words[6 * i];
        for (int k = 0; k < 5; ++k) {
            states[r].v[k] = words[6 * i + 1 + k];
        }
    }
    skipahead_sequence(1, &states[0]);
    for (int s = 0; s < 16; ++s) {
        skipahead(1ull << 63, &states[1]);
    }
    skipahead(1000, &states[2]);
    for (int s = 0; s < 1000; ++s) {
        curand(&states[3]);
    }
    for (int r = 0; r < 4; ++r) {
        out[(r * blockDim.x + i) * 6] = states[r].d;
        for (int k = 0; k < 5; ++k) {
            out[(r * blockDim.x + i) * 6 + 1 + k] = states[r].v[k];
        }
    }
}

// Thread i, from curand_init(seed, i, 0): the draws and what each distribution makes of the same
// state, one copy of the state per function.
template <typename State>
__global__ void distributions(unsigned long long seed, int threads, unsigned int* raw, float* uniform,
                              double* uniform_double, float* normal, double* normal_double, float* log_normal)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= threads) {
        return;
    }
    State start;
    curand_init(seed, i, 0, &start);
    State state = start;
    for (int k = 0; k < 8; ++k) {
        raw[i * 8 + k] = curand(&state);
    }
    state = start;
    uniform[i] = curand_uniform(&state);
    state = start;
    uniform_double[i] = curand_uniform_double(&state);
    state = start;
    for (int k = 0; k < 3; ++k) {
        normal[i * 3 + k] = curand_normal(&state);  // a pair, then the first of the next pair
    }
    state = start;
    for (int k = 0; k < 2; ++k) {
        normal_double[i * 2 + k] = curand_normal_double(&state);
    }
    state = start;
    for (int k = 0; k < 2; ++k) {
        log_normal[i * 2 + k] = curand_log_normal(&state, 0.5f, 2.0f);
    }
}
"""

INSTANCES = ("draws<curandState>", "draws<curandStatePhilox4_32_10_t>", "distributions<curandState>",
             "distributions<curandStatePhilox4_32_10_t>")
MASK = 0xFFFFFFFF


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "checking"])
def module(request):
    return RawModule(code=CODE, name_expressions=INSTANCES, check=request.param)


# ---- models of cuRAND's formulas -----------------------------------------------------------------


def xorwow_seeded(seed: int) -> list[int]:
    """[d, v0..v4] of curand_init(seed, 0, 0)."""
    t0 = (1099087573 * ((seed & MASK) ^ 0xAAD26B49)) & MASK
    t1 = (2591861531 * ((seed >> 32) ^ 0xF7DCEFDD)) & MASK
    return [(6615241 + t1 + t0) & MASK, (123456789 + t0) & MASK, 362436069 ^ t0, (521288629 + t1) & MASK,
            88675123 ^ t1, (5783321 + t0) & MASK]


def xorwow_draw(state: list[int]) -> int:
    d, v0, v1, v2, v3, v4 = state
    t = v0 ^ (v0 >> 2)
    new = (v4 ^ (v4 << 4) ^ t ^ (t << 1)) & MASK
    d = (d + 362437) & MASK
    state[:] = [d, v1, v2, v3, v4, new]
    return (new + d) & MASK


def philox(counter: list[int], key: list[int]) -> list[int]:
    c, k = list(counter), list(key)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & MASK]
        k = [(k[0] + 0x9E3779B9) & MASK, (k[1] + 0xBB67AE85) & MASK]
    return c


def philox_draws(seed: int, subsequence: int, count: int) -> list[int]:
    """The first `count` draws of curand_init(seed, subsequence, 0): counter (low 64 bits = block,
    high 64 bits = subsequence) under the key of the seed, four words a block."""
    key = [seed & MASK, seed >> 32]
    words = []
    for block in range(-(-count // 4)):
        words += philox([block & MASK, block >> 32, subsequence & MASK, subsequence >> 32], key)
    return words[:count]


def launch_draws(module, state, seed, offset, n, threads):
    states = np.full(threads * 64, 0xAB, np.uint8)  # room for either state (48 or 64 bytes)
    out = np.full((threads, n), 0xDEADBEEF, np.uint32)
    module.get_function(f"draws<{state}>")(((threads + 63) // 64,), (64,),
                                           (np.uint64(seed), np.uint64(offset), np.int32(n), np.int32(threads),
                                            states, out))
    return out


# ---- the generators ------------------------------------------------------------------------------


def test_the_states_have_curands_sizes(module):
    assert module.get_function("draws<curandState>").signature[-2] == "struct of 48 bytes*"
    assert module.get_function("draws<curandStatePhilox4_32_10_t>").signature[-2] == "struct of 64 bytes*"


@pytest.mark.parametrize("seed", [0, 1234, 0xDEADBEEFCAFEF00D])
def test_xorwow_draws_are_cuRANDs(module, seed):
    out = launch_draws(module, "curandState", seed, 0, 12, 3)
    model = xorwow_seeded(seed)
    expected = [xorwow_draw(model) for _ in range(12)]
    assert out[0].tolist() == expected
    assert len({tuple(row) for row in out.tolist()}) == 3  # each thread its own subsequence
    # an offset is the same sequence, that many draws on
    assert launch_draws(module, "curandState", seed, 5, 7, 1)[0].tolist() == expected[5:]


def test_xorwow_jumps_agree_with_cuRANDs_table_and_with_single_draws(module):
    rng = np.random.default_rng(7)
    words = np.concatenate([[0, 1, 0, 0, 0, 0],  # d = 0, v = bit 0 of v[0]
                            rng.integers(0, 2**32, 6 * 3, dtype=np.uint64)]).astype(np.uint32)
    out = np.full((4, 4, 6), 0xDEADBEEF, np.uint32)
    module.get_function("jumps")((1,), (4,), (words, out))
    assert out[0, 0, 1] == 850664906  # row 0 of cuRAND's precalc_xorwow_matrix[0], M^(2^67)
    assert out[0, 0, 0] == 0  # d moves by 362437 * 2^67, a multiple of 2^32
    np.testing.assert_array_equal(out[0], out[1])  # M^(2^67) = (M^(2^63))^16
    np.testing.assert_array_equal(out[2], out[3])  # skipahead(1000) = 1,000 draws, d included
    model = [int(w) for w in words[6:12]]
    for _ in range(1000):
        xorwow_draw(model)
    assert out[3, 1].tolist() == model


def test_xorwow_states_of_a_whole_block_are_made_under_the_race_check(monkeypatch):
    # the jump table was built by the first thread to ask, under a mutex, until 2026-11-28: a thread that
    # the race check's instrumented code made let another run while it held the mutex left that one
    # waiting for ever (the Oxford CUDA course's curand_init in blocks of 64 threads ended at the watchdog)
    monkeypatch.setenv("NN_CUDA_CPU_RACECHECK", "1")
    monkeypatch.setenv("NN_CUDA_CPU_WATCHDOG", "10")
    checked = RawModule(code=CODE, name_expressions=("draws<curandState>",))
    assert checked.race_check
    out = launch_draws(checked, "curandState", 1234, 3, 2, 64)
    model = xorwow_seeded(1234)
    assert out[0].tolist() == [xorwow_draw(model) for _ in range(5)][3:]
    assert len({tuple(row) for row in out.tolist()}) == 64  # each thread its own subsequence


@pytest.mark.parametrize("counter, key, known", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
], ids=["zeros", "ones", "pi"])
def test_philox_gives_random123s_known_answers(module, counter, key, known):
    """Random123's kat_vectors for philox4x32_10, the counter reached as a kernel reaches it: its high
    half is the subsequence, its low half the offset over 4, added in skipaheads that carry."""
    assert philox(counter, key) == list(known)  # the Python model, checked by the same vectors
    low = counter[0] | counter[1] << 32  # blocks of 4 draws to skip
    if low % 4 == 0:
        each, before = low, 0  # 4 skipaheads of low / 4 blocks
    else:  # all ones: 4 skipaheads of 2^62 - 1 blocks (the most one can take), then 3 blocks drawn
        each, before = 2**64 - 4, 4 * (low - (2**64 - 4))
    out = np.full(5, 0xDEADBEEF, np.uint32)
    module.get_function("philox_four")((1,), (1,), (np.uint64(key[0] | key[1] << 32),
                                                    np.uint64(counter[2] | counter[3] << 32), np.uint64(each),
                                                    np.int32(4), np.int32(before), out))
    assert out[:4].tolist() == list(known)
    # the next draw is the next counter's, a 128-bit increment (all ones carries into every word)
    following = (sum(word << 32 * i for i, word in enumerate(counter)) + 1) % 2**128
    assert out[4] == philox([following >> 32 * i & MASK for i in range(4)], key)[0]


@pytest.mark.parametrize("seed", [0, 42, 0x0123456789ABCDEF])
def test_philox_draws_are_cuRANDs_one_at_a_time_and_four_at_a_time(module, seed):
    out = launch_draws(module, "curandStatePhilox4_32_10_t", seed, 0, 10, 3)
    for thread in range(3):
        assert out[thread].tolist() == philox_draws(seed, thread, 10)
    # an offset that is not a multiple of 4 starts inside a block; so does curand4 after one draw
    assert launch_draws(module, "curandStatePhilox4_32_10_t", seed, 6, 4, 1)[0].tolist() == \
        philox_draws(seed, 0, 10)[6:]
    four = np.full(5, 0xDEADBEEF, np.uint32)
    module.get_function("philox_four")((1,), (1,), (np.uint64(seed), np.uint64(0), np.uint64(0), np.int32(0),
                                                    np.int32(1), four))
    assert four.tolist() == philox_draws(seed, 0, 6)[1:]


# ---- the distributions ---------------------------------------------------------------------------

INV32 = np.float32(2.3283064e-10)
INV32_2PI = np.float32(INV32 * np.float32(6.2831855))


def float32_uniform(x):
    """cuRAND's x * 2^-32 + 2^-33 in float32, each operation rounded (the runner's default build does
    not contract it into an FMA; see NN_CUDA_CPU_FMA)."""
    return np.float32(np.float32(x) * INV32) + np.float32(INV32 / np.float32(2))


def hq_double(x, y):
    z = (np.uint64(x) ^ (np.uint64(y) << np.uint64(21))).astype(np.float64)
    return z * 1.1102230246251565e-16 + 1.1102230246251565e-16 / 2


def box_muller(x, y):
    u = float32_uniform(x)
    v = np.float32(np.float32(y).astype(np.float32) * INV32_2PI) + np.float32(INV32_2PI / np.float32(2))
    s = np.sqrt(np.float32(-2) * np.log(u))
    return np.sin(v) * s, np.cos(v) * s


@pytest.mark.parametrize("state", ["curandState", "curandStatePhilox4_32_10_t"])
def test_the_distributions_are_cuRANDs_formulas_of_the_draws(module, state):
    threads = 4096
    raw = np.full((threads, 8), 0xDEADBEEF, np.uint32)
    uniform, normal, log_normal = (np.full(shape, np.nan, np.float32) for shape in (threads, (threads, 3),
                                                                                    (threads, 2)))
    uniform_double, normal_double = np.full(threads, np.nan), np.full((threads, 2), np.nan)
    module.get_function(f"distributions<{state}>")((threads // 128,), (128,), (
        np.uint64(2024), np.int32(threads), raw, uniform, uniform_double, normal, normal_double, log_normal))
    x = raw.astype(np.uint64)

    np.testing.assert_array_equal(uniform, float32_uniform(raw[:, 0]))  # bit for bit
    if state == "curandState":  # 53 bits of two draws
        np.testing.assert_array_equal(uniform_double, hq_double(x[:, 0], x[:, 1]))
    else:  # 32 bits of one draw
        np.testing.assert_array_equal(uniform_double, x[:, 0] * 2.3283064365386963e-10 + 2.3283064365386963e-10)
    assert 0 < uniform.min() and uniform.max() <= 1 and 0 < uniform_double.min() and uniform_double.max() <= 1

    # curand_normal: the pair of draws 0 and 1, one value a call, then a new pair from draws 2 and 3
    first, second = box_muller(raw[:, 0], raw[:, 1])
    third, _ = box_muller(raw[:, 2], raw[:, 3])
    expected = np.stack([first, second, third], axis=1)
    # the CPU's logf, sinf against NumPy's: a few float32 ulps of values of order 1 (measured: 2.4e-7)
    np.testing.assert_allclose(normal, expected, rtol=2e-6, atol=2e-6)
    assert abs(normal.mean()) < 0.02 and abs(normal.std() - 1) < 0.02  # 12,288 draws: 5 standard errors
    np.testing.assert_allclose(log_normal, np.exp(0.5 + 2 * expected[:, :2]), rtol=2e-5)

    # curand_normal_double: draws 0-3 make a pair (two 53-bit uniforms), returned one a call
    u, v = hq_double(x[:, 0], x[:, 1]), hq_double(x[:, 2], x[:, 3]) * 2  # v: the angle over pi
    radius = np.sqrt(-2 * np.log(u))
    np.testing.assert_allclose(normal_double, np.stack([np.sin(v * np.pi) * radius, np.cos(v * np.pi) * radius],
                                                       axis=1), rtol=1e-12, atol=1e-12)


def test_int_arguments_pick_xorwow_and_the_missing_generators_stop_the_build():
    used = r"""
#include <curand_kernel.h>
extern "C" __global__ void k(float* out)
{
    curandState state;
    curand_init(1234, threadIdx.x, 0, &state);  // int arguments, as most kernels write them
    out[threadIdx.x] = curand_uniform(&state);
}
"""
    out = np.full(2, np.nan, np.float32)
    RawModule(code=used).get_function("k")((1,), (2,), (out,))
    assert 0 < out.min() and out.max() <= 1 and out[0] != out[1]
    for body, named in [("curandStateMRG32k3a s; curand_init(1, 0, 0, &s); *out = curand_uniform(&s);",
                         "does not support cuRAND's MRG32k3a, MTGP32 and Sobol generators"),
                        ("curandState s; curand_init(1, 0, 0, &s); *out = curand_poisson(&s, 4.0);",
                         "does not support curand_poisson")]:
        code = f"#include <curand_kernel.h>\nextern \"C\" __global__ void k(float* out) {{ {body} }}\n"
        with pytest.raises(KernelBuildError, match=named) as raised:
            RawModule(code=code).get_function("k")
        assert "(RawModule code):2" in str(raised.value)  # the line of the call
