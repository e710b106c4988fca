// Inline IEEE half -> float, bitwise identical to half_to_float (dtype.h) for
// all 65536 inputs (tests/backend checks every one). That function is out of
// line in the core library and branches per element; inner loops of kernels
// and codecs use this one, which inlines and vectorises.
#pragma once

#include <bit>
#include <cstdint>

namespace tessera {

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

}  // namespace tessera
