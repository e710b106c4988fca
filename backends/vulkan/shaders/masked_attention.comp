// Backend::masked_attention: one workgroup per (query, head). The scores of
// every key whose mask is finite go to a scratch row (scaled dot + mask),
// their max and the sum of exp(score - max) are reduced in shared memory,
// then each thread sums the weighted values of its dimensions in key order.
// A query that sees nothing gets zeros; a hidden key is never read.
// VARIANT = MASK_BITS + 2 * RECORDS, both for Backend::attention:
// MASK_BITS 1: the mask is a bit per key instead (its masks are 0 or -inf
// only), 1 seen, in 32-bit words (m_off and m_s0 count words), a 32nd of the
// bytes; a seen key adds 0, so the scores are the f32 mask's bit for bit.
// RECORDS 2 or 3: the cache K/V are records of the int8 or int4 layout
// (KVRecordFormat, core/compressor/kv_records.h) read as stored, ck/cv
// offsets and strides in bytes, each element decoded as kv_records.comp
// decodes it, so the result is that of decoding first, bit for bit, from a
// quarter (an eighth) of the bytes.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const int VARIANT = 0;
const int MASK_BITS = VARIANT % 2;
const int RECORDS = VARIANT / 2;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer CK { float ck[]; };
layout(std430, binding = 2) readonly buffer CV { float cv[]; };
layout(std430, binding = 1) readonly buffer CKRecords { uint ck_words[]; };
layout(std430, binding = 2) readonly buffer CVRecords { uint cv_words[]; };
layout(std430, binding = 3) readonly buffer BK { float bk[]; };
layout(std430, binding = 4) readonly buffer BV { float bv[]; };
layout(std430, binding = 5) readonly buffer Mask { float mask[]; };
layout(std430, binding = 5) readonly buffer MaskWords { uint mask_words[]; };
layout(std430, binding = 6) writeonly buffer Out { float o[]; };
layout(std430, binding = 7) buffer Scores { float scores[]; };  // and, for RECORDS, scales

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
  uint group;  // RECORDS 3: elements per scale
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

uint record_byte(bool value, uint at) {
  const uint word = value ? cv_words[at >> 2] : ck_words[at >> 2];
  return (word >> ((at & 3u) * 8u)) & 0xffu;
}

// The records' groups (a scale each): one for int8.
uint record_groups() {
  return RECORDS == 2 ? 1u : p.head_dim / p.group;
}

// The scale of group `group` of the record at byte `at`.
float record_scale(bool value, uint at, uint group) {
  const uint scale_at = at + (RECORDS == 2 ? p.head_dim : p.head_dim / 2u) + 2u * group;
  return from_half(record_byte(value, scale_at) | (record_byte(value, scale_at + 1u) << 8));
}

// Element d of the record at byte `at`, of scale `scale`, as kv_records.comp
// decodes it.
float record_element(bool value, uint at, uint d, float scale) {
  int code;
  if (RECORDS == 2) {
    code = int(record_byte(value, at + d) << 24) >> 24;
  } else {
    const uint byte_value = record_byte(value, at + d / 2u);
    code = int((d & 1u) != 0u ? byte_value >> 4 : byte_value & 0xfu) - 8;
  }
  precise float decoded = float(code) * scale;
  return decoded;
}

// q . key c (at `at`): f32, or a record decoded element by element with its
// groups' scales read once each.
float key_dot(uint qb, uint at, uint c) {
  float dot = 0.0;
  if (RECORDS != 0 && c < p.slots) {
    const uint group = RECORDS == 2 ? p.head_dim : p.group;
    float scale = 0.0;
    for (uint d = 0u; d < p.head_dim; ++d) {
      if (d % group == 0u) scale = record_scale(false, at, d / group);
      dot = fma(q[qb + d], record_element(false, at, d, scale), dot);
    }
    return dot;
  }
  for (uint d = 0u; d < p.head_dim; ++d) dot = fma(q[qb + d], key_element(at, c, d), dot);
  return dot;
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
  // RECORDS: the value records' scales follow the scores in the scratch,
  // `groups` per key.
  const uint groups = RECORDS != 0 ? record_groups() : 1u;
  const uint scales = p.n * p.heads * width;
  const uint qb = p.q_off + i * p.q_s0 + h * p.q_s1;
  const uint mb = p.m_off + i * p.m_s0;
  const uint ob = p.o_off + i * p.o_s0 + h * p.o_s1;
  const float hidden = negative_infinity();

  float top = hidden;
  for (uint c = tid; c < width; c += WG) {
    const float m = mask_at(mb, c);
    float score = hidden;
    if (m != hidden) {
      const float dot = key_dot(qb, key_at(false, c, kv), c);
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
      if (RECORDS != 0 && c < p.slots) {
        // The value record's scales, for the pass below to read once each.
        const uint at = key_at(true, c, kv);
        for (uint group = 0u; group < groups; ++group)
          scores[scales + (srow + c) * groups + group] = record_scale(true, at, group);
      }
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
      const uint at = key_at(true, c, kv);
      const float value =
          RECORDS != 0 && c < p.slots
              ? record_element(true, at, d,
                               scores[scales + (srow + c) * groups + d / (p.head_dim / groups)])
              : value_element(at, c, d);
      acc = fma(weight, value, acc);
    }
    o[ob + d] = acc / sum;
  }
}
