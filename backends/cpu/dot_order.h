// The pieces of the summation order (dot_kernels.h) that the scalar and SIMD
// kernels share.
#pragma once

#include <cstdint>

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

}  // namespace tessera::cpu
