// Inline f16 -> f32 conversion for the kernels' inner loops: the core's
// tessera::f16_to_f32 (core/tensor/half.h), bitwise identical to
// tessera::half_to_float, plus a row helper.
#pragma once

#include <cstdint>

#include "core/tensor/half.h"

namespace tessera::cpu {

using ::tessera::f16_to_f32;

// dst[i] = f16_to_f32(src[i]) for i < count. Blocks of 8 with a known trip
// count let -O2's cheap vectoriser handle the bulk.
inline void f16_to_f32_row(const uint16_t* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int l = 0; l < 8; ++l) dst[i + l] = f16_to_f32(src[i + l]);
  for (; i < count; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace tessera::cpu
