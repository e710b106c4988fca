// Activations to 8-bit codes for the integer matmul, as the CPU's
// quantize_q8 / quantize_q8k (dot_kernels_scalar.cpp): per block of 32
// (SUPER 0) or 256 (SUPER 1), d = max |x| / 127, codes round-to-even of
// x / d clamped to +-127, NaN to 0. Codes are packed four to a word
// (codes[t * k/4 + e/4]), scales per block (scales[t * blocks + b]), and the
// sum of each 32 codes (sums[t * k/32 + b]) for q4_K's minimums and q4_0's
// offset. One invocation per 32 values.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int SUPER = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Codes { uint codes[]; };
layout(std430, binding = 2) writeonly buffer Scales { float scales[]; };
layout(std430, binding = 3) writeonly buffer Sums { int sums[]; };

layout(push_constant) uniform Push {
  uint n, k;
  uint x_off, x_stride;
} p;

void main() {
  const uint blocks = p.k / 32u;
  const uint g = flat_group() * 64u + gl_LocalInvocationID.x;
  if (g >= p.n * blocks) return;
  const uint t = g / blocks, b = g - t * blocks;
  const uint row = p.x_off + t * p.x_stride;
  const uint first = SUPER != 0 ? row + 256u * (b / 8u) : row + 32u * b;
  const uint count = SUPER != 0 ? 256u : 32u;
  float amax = 0.0;
  for (uint i = 0u; i < count; ++i) {
    const float v = abs(x[first + i]);
    if (amax < v) amax = v;  // std::max(amax, v): a NaN is passed over
  }
  const float d = amax / 127.0;
  const float inverse = d > 0.0 ? 1.0 / d : 0.0;
  const uint xb = row + 32u * b;
  int sum = 0;
  for (uint j = 0u; j < 8u; ++j) {
    uint word = 0u;
    for (uint l = 0u; l < 4u; ++l) {
      const float v = roundEven(x[xb + 4u * j + l] * inverse);
      const int q = isnan(v) ? 0 : int(clamp(v, -127.0, 127.0));
      sum += q;
      word |= (uint(q) & 0xFFu) << (8u * l);
    }
    codes[t * (p.k / 4u) + 8u * b + j] = word;
  }
  sums[t * blocks + b] = sum;
  if (SUPER == 0) {
    scales[t * blocks + b] = d;
  } else if (b % 8u == 0u) {
    scales[t * (p.k / 256u) + b / 8u] = d;
  }
}
