// The pieces of the summation order (dot_kernels.h) that the scalar and SIMD
// kernels share.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tessera::cpu {

inline constexpr int kFloatLanes = 16;
inline constexpr int64_t kQ8_0Bytes = 34;   // ggml block_q8_0: fp16 d, int8 q[32]
inline constexpr int64_t kQ4_0Bytes = 18;   // ggml block_q4_0: fp16 d, 16 bytes of nibbles
inline constexpr int64_t kQ4_KBytes = 144;  // ggml block_q4_K: 256 elements
inline constexpr int64_t kQ6_KBytes = 210;  // ggml block_q6_K: 256 elements

// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)): the order of a 256-bit
// register folded in halves twice.
inline float sum_eight_lanes(const float s[8]) {
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// exp(x) as attention's softmax takes it, in steps every kernel set repeats
// bit for bit (Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, a degree-7
// polynomial in r, times 2^n): x is clamped to [-87, 88] (so 2^n stays a
// normal float), x < -87 gives 0, NaN gives NaN (a NaN weight must reach the
// logits, where the engine reports it). About 1 ulp.
namespace softmax_exp {
inline constexpr float kLow = -87.0f, kHigh = 88.0f, kLog2e = 1.44269504088896341f;
inline constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
inline constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace softmax_exp

inline float exp_reference(float x) {
  using namespace softmax_exp;
  float c = kLow > x ? kLow : x;  // as max_ps(kLow, x): NaN stays NaN
  c = kHigh < c ? kHigh : c;      // as min_ps(kHigh, c)
  const float n = std::nearbyint(c * kLog2e);
  float r = std::fma(n, -kLn2High, c);
  r = std::fma(n, -kLn2Low, r);
  float y = kP[0];
  for (int i = 1; i < 6; ++i) y = std::fma(y, r, kP[i]);
  y = std::fma(y, r * r, r) + 1.0f;
  const int32_t power = n == n ? static_cast<int32_t>(n) : 0;  // NaN: y is NaN anyway
  const auto bits = static_cast<uint32_t>(power + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, 4);
  return x < kLow ? 0.0f : y * two_n;
}

}  // namespace tessera::cpu
