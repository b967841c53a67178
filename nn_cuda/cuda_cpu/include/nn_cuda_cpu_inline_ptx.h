// The calls that the CPU runner writes in place of the inline PTX it translates (inline_ptx.py): each
// does what its one PTX instruction does on a GPU, bit for bit.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

// The host's uint64_t, also after code that declares its own under NVRTC (nvrtc_headers.own_integer_types:
// nvFuser's generated kernels write `using uint64_t = unsigned long long int;`)
#pragma push_macro("uint64_t")
#undef uint64_t

namespace nn_cuda_cpu {

// mov.u32 %0, %laneid; and the lane masks %lanemask_lt, _le, _eq, _ge, _gt of the calling lane
inline unsigned ptx_lane_id() { return lane_id(); }
inline unsigned ptx_lane_mask_lt() { return (1u << lane_id()) - 1u; }
inline unsigned ptx_lane_mask_le() { return static_cast<unsigned>((uint64_t{2} << lane_id()) - 1u); }
inline unsigned ptx_lane_mask_eq() { return 1u << lane_id(); }
inline unsigned ptx_lane_mask_ge() { return ~ptx_lane_mask_lt(); }
inline unsigned ptx_lane_mask_gt() { return ~ptx_lane_mask_le(); }

// mov.b64 %0, {%1, %2}; : 64 bits from two 32-bit halves, the low one first
template <typename Whole, typename Low, typename High>
inline void ptx_pack64(Whole& whole, Low low, High high)
{
    static_assert(sizeof(Whole) == 8 && sizeof(Low) == 4 && sizeof(High) == 4,
                  "mov.b64 %0, {%1, %2}: a 64-bit operand from two 32-bit ones");
    uint32_t low_bits, high_bits;
    memcpy(&low_bits, &low, 4);
    memcpy(&high_bits, &high, 4);
    const uint64_t bits = (static_cast<uint64_t>(high_bits) << 32) | low_bits;
    memcpy(&whole, &bits, 8);
}

// mov.b64 {%0, %1}, %2; : the two 32-bit halves of 64 bits, the low one first
template <typename Whole, typename Low, typename High>
inline void ptx_unpack64(Whole whole, Low& low, High& high)
{
    static_assert(sizeof(Whole) == 8 && sizeof(Low) == 4 && sizeof(High) == 4,
                  "mov.b64 {%0, %1}, %2: two 32-bit operands from a 64-bit one");
    uint64_t bits;
    memcpy(&bits, &whole, 8);
    const uint32_t low_bits = static_cast<uint32_t>(bits), high_bits = static_cast<uint32_t>(bits >> 32);
    memcpy(&low, &low_bits, 4);
    memcpy(&high, &high_bits, 4);
}

// cvt.rn.f16.f32 %0, %1; (rz, rm, rp): a float's binary16 bits, rounded as the instruction says
template <typename Bits>
inline void ptx_float_to_half(Bits& bits, float value, Rounding mode)
{
    static_assert(sizeof(Bits) == 2, "cvt.f16.f32: a 16-bit destination");
    const uint16_t narrow = narrow_bits<5, 10>(value, mode);
    memcpy(&bits, &narrow, 2);
}

// cvt.f32.f16 %0, %1; : the float of binary16 bits
template <typename Float, typename Bits>
inline void ptx_half_to_float(Float& value, Bits bits)
{
    static_assert(sizeof(Bits) == 2 && sizeof(Float) == 4, "cvt.f32.f16: a 16-bit source, a 32-bit destination");
    uint16_t narrow;
    memcpy(&narrow, &bits, 2);
    const float wide = widen<5, 10>(narrow);
    memcpy(&value, &wide, 4);
}

// prmt.b32 d, a, b, c; (its default mode): each byte of d is the byte of {b, a} (a's bytes 0-3, b's
// 4-7) that its nibble of c selects, or, where the nibble's bit 3 is set, that byte's sign in all 8 bits
inline unsigned ptx_prmt(unsigned a, unsigned b, unsigned selector)
{
    const uint64_t bytes = (static_cast<uint64_t>(b) << 32) | a;
    unsigned result = 0;
    for (int i = 0; i < 4; ++i) {
        const unsigned nibble = (selector >> (4 * i)) & 0xFu;
        unsigned byte = static_cast<unsigned>(bytes >> (8 * (nibble & 7u))) & 0xFFu;
        if (nibble & 8u) {
            byte = byte & 0x80u ? 0xFFu : 0u;
        }
        result |= byte << (8 * i);
    }
    return result;
}

// lop3.b32 d, a, b, c, lut; : each bit of d is the bit of lut at (a's bit, b's bit, c's bit) read as a
// number of three bits, a's the highest
inline unsigned ptx_lop3(unsigned a, unsigned b, unsigned c, unsigned lut)
{
    unsigned result = 0;
    for (unsigned index = 0; index < 8; ++index) {
        if (lut & (1u << index)) {
            result |= (index & 4u ? a : ~a) & (index & 2u ? b : ~b) & (index & 1u ? c : ~c);
        }
    }
    return result;
}

// bfe.u32 / bfe.s32 d, a, position, length; : `length` bits of a from bit `position` (both taken as
// their low 8 bits), the bits past bit 31 zero (.u32) or the field's top bit (.s32; of a's bit 31
// where the field reaches past it)
inline unsigned ptx_bfe_u32(unsigned a, unsigned position, unsigned length)
{
    position &= 0xFFu, length &= 0xFFu;
    if (length == 0 || position > 31) {
        return 0;
    }
    const unsigned field = a >> position;
    return length >= 32 ? field : field & ((1u << length) - 1u);
}
inline int ptx_bfe_s32(unsigned a, unsigned position, unsigned length)
{
    position &= 0xFFu, length &= 0xFFu;
    const unsigned top = position + length - 1 > 31 ? 31 : position + length - 1;
    const bool sign = length != 0 && ((a >> top) & 1u);
    // the field's bits that lie within a; the others are its sign
    const unsigned inside = position > 31 ? 0 : (length < 32 - position ? length : 32 - position);
    unsigned field = ptx_bfe_u32(a, position, inside);
    if (sign && inside < 32) {
        field |= ~((1u << inside) - 1u);
    }
    return static_cast<int>(field);
}

// shf.l / shf.r .wrap / .clamp .b32 d, a, b, c; : the 64 bits {b, a} shifted by c (modulo 32, or at
// most 32), d their upper (l) or lower (r) 32 bits
inline unsigned ptx_shf_l_wrap(unsigned a, unsigned b, unsigned c)
{
    return static_cast<unsigned>((((static_cast<uint64_t>(b) << 32) | a) << (c & 31u)) >> 32);
}
inline unsigned ptx_shf_r_wrap(unsigned a, unsigned b, unsigned c)
{
    return static_cast<unsigned>((((static_cast<uint64_t>(b) << 32) | a) >> (c & 31u)));
}
inline unsigned ptx_shf_l_clamp(unsigned a, unsigned b, unsigned c)
{
    return c >= 32 ? a : ptx_shf_l_wrap(a, b, c);
}
inline unsigned ptx_shf_r_clamp(unsigned a, unsigned b, unsigned c)
{
    return c >= 32 ? b : ptx_shf_r_wrap(a, b, c);
}

// red[.sem][.scope][.global].add[.noftz].type [a], b; : an atomic add whose old value nothing keeps
// (tiny-cuda-nn's gradient scatter), of the Element the instruction's type names; `value` holds its
// bits (an "r" operand for a float, as the code passes one), `address` is a pointer or a 64-bit integer
template <typename Element, typename Address, typename Value>
inline void ptx_red_add(Address address, Value value)
{
    static_assert(sizeof(Value) == sizeof(Element), "red.add: an operand of the size of the instruction's type");
    Element added;
    memcpy(&added, &value, sizeof(Element));
    if constexpr (std::is_pointer<Address>::value) {
        atomicAdd(reinterpret_cast<Element*>(address), added);
    } else {
        atomicAdd(reinterpret_cast<Element*>(static_cast<uintptr_t>(address)), added);
    }
}

}  // namespace nn_cuda_cpu

#pragma pop_macro("uint64_t")
