// The fp16 scale of a symmetric integer quantizer, shared by the int8 and
// int4 codecs (header-only, so neither plugin links the other).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/tensor/dtype.h"

namespace tessera::symmetric {

inline constexpr uint16_t kHalfMaxBits = 0x7BFF;  // 65504
inline constexpr uint16_t kHalfNaN = 0x7E00;

// The smallest half >= max_abs / levels: rounding the scale up (not to
// nearest) means |x| / scale <= levels for every element, so no code clips
// and |x - x̂| <= scale / 2 holds everywhere. max_abs past 65504 · levels
// saturates the scale at 65504 (the largest elements then clip). A
// non-finite max_abs gives NaN: the group decodes to NaN.
inline uint16_t scale_half(float max_abs, int levels) {
  if (!std::isfinite(max_abs)) return kHalfNaN;
  const float scale = max_abs / static_cast<float>(levels);
  uint16_t h = float_to_half(scale);
  if ((h & 0x7FFF) >= 0x7C00) return kHalfMaxBits;  // rounded to inf
  if (half_to_float(h) < scale) h = h == kHalfMaxBits ? kHalfMaxBits : static_cast<uint16_t>(h + 1);
  return h;
}

// max |x_i| over n elements, or NaN when an element is NaN or inf. Compares
// the magnitude bit patterns (ordered like the values, NaN above inf) so the
// loop vectorises without fast-math.
inline float max_abs_or_nan(const float* x, int n) {
  uint32_t max_bits = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu;
    max_bits = bits > max_bits ? bits : max_bits;
  }
  constexpr uint32_t kInfBits = 0x7F800000u;
  return max_bits >= kInfBits ? std::numeric_limits<float>::quiet_NaN()
                              : std::bit_cast<float>(max_bits);
}

// codes[i] = round(x[i] / scale) (half to even) in [-levels, levels]; all 0
// for a zero or NaN scale. The rounding is the branch-free 1.5·2^23 trick
// (exact in the default rounding mode for |v| < 2^22; anything larger clamps
// to ±levels anyway), rounded before clamping: that order vectorises.
inline void quantize(const float* x, int n, float scale, int levels, int8_t* codes) {
  if (!(scale > 0.0f)) {
    for (int i = 0; i < n; ++i) codes[i] = 0;
    return;
  }
  const auto bound = static_cast<float>(levels);
  constexpr float kRoundingShift = 0x1.8p23f;
  for (int i = 0; i < n; ++i) {
    const float code = (x[i] / scale + kRoundingShift) - kRoundingShift;
    codes[i] = static_cast<int8_t>(std::min(std::max(code, -bound), bound));
  }
}

inline void put_half(uint16_t h, uint8_t* out) {
  out[0] = static_cast<uint8_t>(h & 0xFF);
  out[1] = static_cast<uint8_t>(h >> 8);
}

inline uint16_t get_half(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] | (in[1] << 8));
}

}  // namespace tessera::symmetric
