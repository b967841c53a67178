// The calls that the CPU runner writes in place of the inline PTX it translates (inline_ptx.py): each
// does what its one PTX instruction does on a GPU, bit for bit.
#pragma once

#include "nn_cuda_cpu_narrow_float.h"

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

}  // namespace nn_cuda_cpu
