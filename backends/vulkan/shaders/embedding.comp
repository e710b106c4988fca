// out[t, :] = table[tokens[t], :] decoded to f32, for the tokens whose row
// lies in this piece of the table (a table past the largest binding is bound
// in pieces of rows).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const int DTYPE = 0;

layout(std430, binding = 0) readonly buffer Table { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

#include "weights.glsl"

layout(push_constant) uniform Push {
  uint n, dim;
  uint row_bytes, t_off;   // bytes per table row; the piece's first byte in the binding
  uint row_begin, row_end;  // the rows this piece holds
  uint o_off, o_stride;
} p;

void main() {
  const uint g = flat_group() * 256u + gl_LocalInvocationID.x;
  if (g >= p.n * p.dim) return;
  const uint t = g / p.dim, i = g - t * p.dim;
  const uint row = uint(tokens[t]);
  if (row < p.row_begin || row >= p.row_end) return;
  o[p.o_off + t * p.o_stride + i] = decode_element(DTYPE, p.t_off + (row - p.row_begin) * p.row_bytes, i);
}
