// Backend::masked_attention: one workgroup per (query, head). The scores of
// every key whose mask is finite go to a scratch row (scaled dot + mask),
// their max and the sum of exp(score - max) are reduced in shared memory,
// then each thread sums the weighted values of its dimensions in key order.
// A query that sees nothing gets zeros; a hidden key is never read.
// MASK_BITS 1 (Backend::attention, whose masks are 0 or -inf only): the mask
// is a bit per key instead, 1 seen, in 32-bit words (m_off and m_s0 count
// words), a 32nd of the bytes; a seen key adds 0, so the scores are the f32
// mask's bit for bit.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int MASK_BITS = 0;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer CK { float ck[]; };
layout(std430, binding = 2) readonly buffer CV { float cv[]; };
layout(std430, binding = 3) readonly buffer BK { float bk[]; };
layout(std430, binding = 4) readonly buffer BV { float bv[]; };
layout(std430, binding = 5) readonly buffer Mask { float mask[]; };
layout(std430, binding = 5) readonly buffer MaskWords { uint mask_words[]; };
layout(std430, binding = 6) writeonly buffer Out { float o[]; };
layout(std430, binding = 7) buffer Scores { float scores[]; };

layout(push_constant) uniform Push {
  uint n, heads, kv_heads, head_dim, slots;
  uint q_off, q_s0, q_s1;
  uint ck_off, ck_s0, ck_s1;
  uint cv_off, cv_s0, cv_s1;
  uint bk_off, bk_s0, bk_s1;
  uint bv_off, bv_s0, bv_s1;
  uint m_off, m_s0;
  uint o_off, o_s0, o_s1;
  float scale;
} p;

shared float reduce[WG];

// The first element of key (or value) c of kv head kv.
uint key_at(bool value, uint c, uint kv) {
  if (c < p.slots)
    return value ? p.cv_off + kv * p.cv_s0 + c * p.cv_s1 : p.ck_off + kv * p.ck_s0 + c * p.ck_s1;
  const uint j = c - p.slots;
  return value ? p.bv_off + j * p.bv_s0 + kv * p.bv_s1 : p.bk_off + j * p.bk_s0 + kv * p.bk_s1;
}

float key_element(uint at, uint c, uint d) {
  return c < p.slots ? ck[at + d] : bk[at + d];
}

float value_element(uint at, uint c, uint d) {
  return c < p.slots ? cv[at + d] : bv[at + d];
}

// What key c of the row at mb adds to its score: 0 or the mask's value
// when seen, -inf when hidden.
float mask_at(uint mb, uint c) {
  if (MASK_BITS == 1)
    return ((mask_words[mb + c / 32u] >> (c % 32u)) & 1u) != 0u ? 0.0 : negative_infinity();
  return mask[mb + c];
}

void main() {
  const uint g = flat_group();
  const uint h = g % p.heads;
  const uint i = g / p.heads;
  if (i >= p.n) return;  // uniform across the workgroup
  const uint tid = gl_LocalInvocationID.x;
  const uint kv = h / (p.heads / p.kv_heads);
  const uint width = p.slots + p.n;
  const uint srow = g * width;
  const uint qb = p.q_off + i * p.q_s0 + h * p.q_s1;
  const uint mb = p.m_off + i * p.m_s0;
  const uint ob = p.o_off + i * p.o_s0 + h * p.o_s1;
  const float hidden = negative_infinity();

  float top = hidden;
  for (uint c = tid; c < width; c += WG) {
    const float m = mask_at(mb, c);
    float score = hidden;
    if (m != hidden) {
      const uint at = key_at(false, c, kv);
      float dot = 0.0;
      for (uint d = 0u; d < p.head_dim; ++d) dot = fma(q[qb + d], key_element(at, c, d), dot);
      score = dot * p.scale + m;
      if (top < score) top = score;
    }
    scores[srow + c] = score;
  }
  reduce[tid] = top;
  barrier();
  for (uint step = WG / 2u; step > 0u; step >>= 1) {
    if (tid < step && reduce[tid] < reduce[tid + step]) reduce[tid] = reduce[tid + step];
    barrier();
  }
  top = reduce[0];
  barrier();
  if (top == hidden) {  // sees nothing
    for (uint d = tid; d < p.head_dim; d += WG) o[ob + d] = 0.0;
    return;
  }
  float sum = 0.0;
  for (uint c = tid; c < width; c += WG) {
    // -1 marks a hidden key for the pass below (a weight is never negative).
    float weight = -1.0;
    if (mask_at(mb, c) != hidden) {
      weight = exp(scores[srow + c] - top);
      sum += weight;
    }
    scores[srow + c] = weight;
  }
  reduce[tid] = sum;
  memoryBarrierBuffer();
  barrier();
  for (uint step = WG / 2u; step > 0u; step >>= 1) {
    if (tid < step) reduce[tid] += reduce[tid + step];
    barrier();
  }
  sum = reduce[0];
  for (uint d = tid; d < p.head_dim; d += WG) {
    float acc = 0.0;
    for (uint c = 0u; c < width; ++c) {
      const float weight = scores[srow + c];
      if (weight < 0.0) continue;
      acc = fma(weight, value_element(key_at(true, c, kv), c, d), acc);
    }
    o[ob + d] = acc / sum;
  }
}
