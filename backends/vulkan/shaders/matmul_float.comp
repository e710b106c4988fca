// out = x * w^T for f32, f16 and bf16 weights: one workgroup per weight row
// and tile of up to TILE tokens (the row is read once per tile), each thread
// a strided share of k, the partial sums added in shared memory. f32
// throughout.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 8u

layout(local_size_x = 64) in;
layout(constant_id = 0) const int DTYPE = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { uint w_words[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };

#include "weights.glsl"

layout(push_constant) uniform Push {
  uint n, k;
  uint rows, row_begin;  // this piece's rows, and the first one's output column
  uint row_bytes, w_off;
  uint x_off, x_stride, o_off, o_stride;
} p;

shared float partial[TILE * WG];

void main() {
  const uint g = flat_group();
  const uint r = g % p.rows;
  const uint t0 = (g / p.rows) * TILE;
  if (t0 >= p.n) return;  // uniform across the workgroup
  const uint tiles = min(TILE, p.n - t0);
  const uint tid = gl_LocalInvocationID.x;
  const uint row = p.w_off + r * p.row_bytes;
  float acc[TILE];
  for (uint t = 0u; t < TILE; ++t) acc[t] = 0.0;
  for (uint e = tid; e < p.k; e += WG) {
    const float wv = decode_element(DTYPE, row, e);
    for (uint t = 0u; t < tiles; ++t)
      acc[t] = fma(wv, x[p.x_off + (t0 + t) * p.x_stride + e], acc[t]);
  }
  for (uint t = 0u; t < TILE; ++t) partial[t * WG + tid] = acc[t];
  // One barrier, then a thread per token sums the shares in order (a tree
  // of barriers costs far more where invocations are emulated: lavapipe).
  barrier();
  if (tid < tiles) {
    float sum = 0.0;
    for (uint i = 0u; i < WG; ++i) sum += partial[tid * WG + i];
    o[p.o_off + (t0 + tid) * p.o_stride + p.row_begin + r] = sum;
  }
}
