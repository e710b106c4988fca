// RoPE in place: pair `pair` of head h of token t turned by the angle whose
// cos and sin the host computed (cs[t, pair] = (cos, sin), with the CPU's
// expressions), as adjacent pairs (2i, 2i+1) or halves (i, i + head_dim/2).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const int HALVES = 0;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer CS { float cs[]; };

layout(push_constant) uniform Push {
  uint n, heads, head_dim;
  uint x_off, s0, s1;
} p;

void main() {
  const uint pairs = p.head_dim / 2u;
  const uint g = flat_group() * 256u + gl_LocalInvocationID.x;
  if (g >= p.n * p.heads * pairs) return;
  const uint pair = g % pairs;
  const uint h = (g / pairs) % p.heads;
  const uint t = g / (pairs * p.heads);
  const float c = cs[(t * pairs + pair) * 2u];
  const float s = cs[(t * pairs + pair) * 2u + 1u];
  const uint base = p.x_off + t * p.s0 + h * p.s1;
  const uint i0 = HALVES != 0 ? base + pair : base + 2u * pair;
  const uint i1 = HALVES != 0 ? base + pair + pairs : base + 2u * pair + 1u;
  const float v0 = x[i0], v1 = x[i1];
  precise float r0 = v0 * c - v1 * s;
  precise float r1 = v0 * s + v1 * c;
  x[i0] = r0;
  x[i1] = r1;
}
