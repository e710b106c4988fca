// Backend::cache_update: cache = cache * keep + insert x rows per kv head,
// one invocation per cached element, in the CPU's order (a slot kept whole
// and given nothing is left as it is; a dropped slot's old value is never
// read).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const int UNUSED = 0;

layout(std430, binding = 0) buffer Cache { float cache[]; };
layout(std430, binding = 1) readonly buffer Keep { float keep[]; };
layout(std430, binding = 2) readonly buffer Insert { float insert_rows[]; };
layout(std430, binding = 3) readonly buffer Rows { float rows[]; };

layout(push_constant) uniform Push {
  uint kv_heads, slots, head_dim, n;
  uint c_off, c_s0, c_s1;
  uint k_off;
  uint i_off, i_s0;
  uint r_off, r_s0, r_s1;
} p;

void main() {
  const uint g = flat_group() * 256u + gl_LocalInvocationID.x;
  if (g >= p.kv_heads * p.slots * p.head_dim) return;
  const uint d = g % p.head_dim;
  const uint s = (g / p.head_dim) % p.slots;
  const uint h = g / (p.head_dim * p.slots);
  const float k = keep[p.k_off + s];
  const uint into = p.i_off + s * p.i_s0;
  bool inserted = false;
  for (uint j = 0u; j < p.n; ++j) inserted = inserted || insert_rows[into + j] != 0.0;
  if (k == 1.0 && !inserted) return;
  const uint at = p.c_off + h * p.c_s0 + s * p.c_s1 + d;
  precise float v = k != 0.0 ? cache[at] * k : 0.0;
  for (uint j = 0u; j < p.n; ++j) {
    const float f = insert_rows[into + j];
    if (f == 0.0) continue;
    precise float add = f * rows[p.r_off + j * p.r_s0 + h * p.r_s1 + d];
    v = v + add;
  }
  cache[at] = v;
}
