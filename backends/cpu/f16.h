// Inline f16 -> f32 conversion for the kernels' inner loops. Bitwise
// identical to tessera::half_to_float (core/tensor/dtype.h) for all 65536
// inputs (tests/backend checks every one); that function is out of line and
// branches per element, which keeps f16 rows from converting in vector code.
#pragma once

#include <bit>
#include <cstdint>

namespace tessera::cpu {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = static_cast<uint32_t>(h & 0x7fffu) << 13;
  // Finite halves: the shift leaves the value at 2^-112 of the target; the
  // power-of-two multiply rescales it exactly (normalising subnormals too,
  // in the default, non-flushing FP mode).
  const uint32_t finite = std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude) * 0x1.0p112f);
  // Infinity and NaN (half exponent all ones) keep their payload. A mask,
  // not a branch, so loops of this vectorise.
  const uint32_t special = (h & 0x7c00u) == 0x7c00u ? 0xffffffffu : 0u;
  const uint32_t bits = (finite & ~special) | ((magnitude | 0x7f800000u) & special);
  return std::bit_cast<float>(bits | sign);
}

// dst[i] = f16_to_f32(src[i]) for i < count. Blocks of 8 with a known trip
// count let -O2's cheap vectoriser handle the bulk.
inline void f16_to_f32_row(const uint16_t* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int l = 0; l < 8; ++l) dst[i + l] = f16_to_f32(src[i + l]);
  for (; i < count; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace tessera::cpu
