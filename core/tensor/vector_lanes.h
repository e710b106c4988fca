// Four-lane vectors (GCC/Clang vector extensions) for codecs and kernels that
// score several records at once, one record per lane. Four lanes are the width
// of the narrowest SIMD registers (SSE2, NEON), so sums kept in them stay in
// registers on every target; a tile of kLaneTile records is two of them.
#pragma once

#include <cstdint>

namespace tessera {

typedef float FloatLanes __attribute__((vector_size(4 * sizeof(float))));
typedef int32_t IntLanes __attribute__((vector_size(4 * sizeof(int32_t))));
typedef uint32_t UintLanes __attribute__((vector_size(4 * sizeof(uint32_t))));

// Records scored together: two four-lane vectors.
constexpr int kLaneTile = 8;

// f16_to_f32 (core/tensor/half.h) on four lanes: the same bit operations, so
// the same floats for every input (tests/backend checks all 65536).
inline FloatLanes f16_to_f32_lanes(UintLanes h) {
  const UintLanes sign = (h & 0x8000u) << 16;
  const UintLanes magnitude = (h & 0x7fffu) << 13;
  const auto finite =
      reinterpret_cast<UintLanes>(reinterpret_cast<FloatLanes>(magnitude) * 0x1.0p112f);
  const auto special = reinterpret_cast<UintLanes>((h & 0x7c00u) == 0x7c00u);
  return reinterpret_cast<FloatLanes>((finite & ~special) | ((magnitude | 0x7f800000u) & special) |
                                      sign);
}

}  // namespace tessera
