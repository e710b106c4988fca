// K/V records of core/compressor/kv_records.h's named layouts, bit for bit
// as the int8 and int4 codecs write them (symmetric_scale.h): encode (f32
// vectors -> records), round trip (f32 -> decode(encode(x)), the batch's K/V
// as the store will hold them) and decode (records -> f32, attention's
// gather). Vectors are indexed [n0, n1, n2] with strides in floats (f32) or
// bytes (records); both bindings are uint words, floats bit-cast.
//
// Encode and round trip: one invocation per vector, its groups in order
// (the scale needs the group's max first). A record's bytes are gathered
// into words; a word the record shares with a neighbour (records need not
// be 4-byte aligned) is merged with atomics, so neighbours never race.
// Decode: one invocation per element.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
// FORMAT * 4 + MODE: FORMAT 2 int8, 3 int4 (KVRecordFormat); MODE 0 encode,
// 1 round trip, 2 decode.
layout(constant_id = 0) const int VARIANT = 8;
const int FORMAT = VARIANT / 4;
const int MODE = VARIANT % 4;

layout(std430, binding = 0) buffer Src { uint src[]; };
layout(std430, binding = 1) buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
  uint n0, n1, n2, width, group;
  uint src_off, s0, s1, s2;
  uint dst_off, d0, d1, d2;
} p;

const uint LEVELS = FORMAT == 2 ? 127u : 7u;

// core/tensor/dtype.cpp's float_to_half (round to nearest even), in integers.
uint to_half(float f) {
  const uint bits = floatBitsToUint(f);
  const uint sign = (bits >> 16) & 0x8000u;
  const uint a = bits & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return sign;
    const uint exponent = a >> 23;
    const uint mantissa = (a & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - exponent;
    uint half_bits = mantissa >> shift;
    const uint rest = mantissa & ((1u << shift) - 1u);
    const uint halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half_bits & 1u) != 0u)) ++half_bits;
    return sign | half_bits;
  }
  uint half_bits = (a - 0x38000000u) >> 13;
  const uint rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half_bits & 1u) != 0u)) ++half_bits;
  return sign | half_bits;
}

// symmetric::scale_half: the smallest half >= max_abs / LEVELS, 65504 at most,
// NaN for a non-finite max (max_bits past inf's).
uint scale_half(uint max_bits) {
  if (max_bits >= 0x7f800000u) return 0x7e00u;
  precise float scale = uintBitsToFloat(max_bits) / float(LEVELS);
  uint h = to_half(scale);
  if ((h & 0x7fffu) >= 0x7c00u) return 0x7bffu;
  if (from_half(h) < scale) h = h == 0x7bffu ? 0x7bffu : h + 1u;
  return h;
}

// symmetric::quantize for one element: round half to even, clamped; 0 for a
// zero or NaN scale.
int quantize(float x, float scale) {
  if (!(scale > 0.0)) return 0;
  precise float q = x / scale;
  return int(clamp(roundEven(q), -float(LEVELS), float(LEVELS)));
}

float src_float(uint at) {
  return uintBitsToFloat(src[at]);
}

uint src_byte(uint at) {
  return (src[at >> 2] >> ((at & 3u) * 8u)) & 0xffu;
}

// The record's bytes, gathered a word at a time.
uint word_at = 0xffffffffu, word_bits = 0u, word_mask = 0u;

void flush_word() {
  if (word_mask == 0u) return;
  if (word_mask == 0xffffffffu) {
    dst[word_at] = word_bits;
  } else {
    atomicAnd(dst[word_at], ~word_mask);
    atomicOr(dst[word_at], word_bits);
  }
  word_mask = 0u;
  word_bits = 0u;
}

void put_byte(uint at, uint value) {
  if ((at >> 2) != word_at) {
    flush_word();
    word_at = at >> 2;
  }
  const uint shift = (at & 3u) * 8u;
  word_bits |= (value & 0xffu) << shift;
  word_mask |= 0xffu << shift;
}

// Code bytes of a record, then its scales: where group g's scale starts.
uint scale_byte(uint g) {
  return (FORMAT == 2 ? p.width : p.width / 2u) + 2u * g;
}

void encode_vector(uint from, uint to) {
  const uint groups = FORMAT == 2 ? 1u : p.width / p.group;
  const uint group = FORMAT == 2 ? p.width : p.group;
  for (uint g = 0u; g < groups; ++g) {
    uint max_bits = 0u;
    for (uint i = 0u; i < group; ++i)
      max_bits = max(max_bits, floatBitsToUint(src_float(from + g * group + i)) & 0x7fffffffu);
    const uint scale16 = scale_half(max_bits);
    const float scale = from_half(scale16);
    if (MODE == 1) {
      for (uint i = 0u; i < group; ++i) {
        const uint e = g * group + i;
        precise float value = float(quantize(src_float(from + e), scale)) * scale;
        dst[to + e] = floatBitsToUint(value);
      }
      continue;
    }
    if (FORMAT == 2) {
      for (uint i = 0u; i < group; ++i)
        put_byte(to + i, uint(quantize(src_float(from + i), scale)) & 0xffu);
    } else {
      for (uint i = 0u; i < group; i += 2u) {
        const uint e = g * group + i;
        const uint low = uint(quantize(src_float(from + e), scale) + 8);
        const uint high = uint(quantize(src_float(from + e + 1u), scale) + 8);
        put_byte(to + e / 2u, low | (high << 4));
      }
    }
    const uint at = to + scale_byte(g);
    put_byte(at, scale16 & 0xffu);
    put_byte(at + 1u, scale16 >> 8);
  }
  flush_word();
}

void main() {
  const uint g = flat_group() * 64u + gl_LocalInvocationID.x;
  const uint vectors = p.n0 * p.n1 * p.n2;
  if (MODE == 2) {
    if (g >= vectors * p.width) return;
    const uint e = g % p.width;
    const uint vec = g / p.width;
    const uint k = vec % p.n2, j = (vec / p.n2) % p.n1, i = vec / (p.n2 * p.n1);
    const uint from = p.src_off + i * p.s0 + j * p.s1 + k * p.s2;
    const uint to = p.dst_off + i * p.d0 + j * p.d1 + k * p.d2;
    int code;
    uint scale_at;
    if (FORMAT == 2) {
      code = int(src_byte(from + e) << 24) >> 24;
      scale_at = from + scale_byte(0u);
    } else {
      const uint byte_value = src_byte(from + e / 2u);
      code = int((e & 1u) != 0u ? byte_value >> 4 : byte_value & 0xfu) - 8;
      scale_at = from + scale_byte(e / p.group);
    }
    const float scale = from_half(src_byte(scale_at) | (src_byte(scale_at + 1u) << 8));
    precise float value = float(code) * scale;
    dst[to + e] = floatBitsToUint(value);
    return;
  }
  if (g >= vectors) return;
  const uint k = g % p.n2, j = (g / p.n2) % p.n1, i = g / (p.n2 * p.n1);
  encode_vector(p.src_off + i * p.s0 + j * p.s1 + k * p.s2,
                p.dst_off + i * p.d0 + j * p.d1 + k * p.d2);
}
