// out = x * w^T for f32, f16 and bf16 weights, f32 throughout. The variant
// (specialisation constant 0) is the dtype plus 16 * the mode:
//  mode 0 (devices that are not CPUs): one workgroup per weight row and tile
//    of up to TILE tokens, each thread a strided share of k, the partial sums
//    added in shared memory by one thread per token, in order.
//  modes 1 and 2 (CPU devices such as lavapipe, where a workgroup runs as
//    SIMD strands and a barrier costs a strand switch): one invocation per
//    weight row, RPW rows per workgroup, summing its row from element 0 to
//    k - 1 with no barrier and no shared memory; the activations' addresses
//    are the same in every invocation, so they load once per strand. Mode 1
//    does one token per workgroup (tg), mode 2 TILE tokens (pp: the row is
//    read once per tile; tokens past n repeat the last one and are not
//    stored).
// Every mode sums an output element in an order that depends only on k and
// w's layout, never on n or the rest of the batch.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 8u
#define RPW WG  // rows per workgroup in modes 1 and 2

layout(local_size_x = 64) in;
layout(constant_id = 0) const int VARIANT = 0;
const int DTYPE = VARIANT & 15;
const int MODE = (VARIANT >> 4) & 15;
const bool ALIGNED = (VARIANT & 256) != 0;
const uint TOKENS = MODE == 1 ? 1u : TILE;

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

shared float partial[MODE == 0 ? TILE * WG : 1u];

void cooperative() {
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

// Modes 1 and 2. No control flow depends on the invocation before the
// stores (llvmpipe loads a uniform address once only outside such flow).
void per_row() {
  const uint g = flat_group();
  const uint row_groups = (p.rows + RPW - 1u) / RPW;
  const uint rg = g % row_groups;
  const uint t0 = (g / row_groups) * TOKENS;
  const uint r_wanted = rg * RPW + gl_LocalInvocationID.x;
  const uint r = min(r_wanted, p.rows - 1u);
  const uint row = p.w_off + r * p.row_bytes;
  uint xt[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t) xt[t] = p.x_off + min(t0 + t, p.n - 1u) * p.x_stride;
  float acc[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t) acc[t] = 0.0;
  // (a runtime branch would put the loads under control flow: the
  // alignment is in the variant)
  if (DTYPE == DT_F32) {
    // The CPU's order (backends/cpu/dot_kernels.h): 16 lanes over the
    // 16-aligned prefix, lane l + 8 added to lane l, the eight folded in
    // halves twice, then the tail by fma. A token at a time (16 sums each).
    const uint w0 = row / 4u;
    const uint body = p.k / 16u * 16u;
    for (uint t = 0u; t < TOKENS; ++t) {
      float lane[16];
      for (uint l = 0u; l < 16u; ++l) lane[l] = 0.0;
      for (uint e = 0u; e < body; e += 16u)
        for (uint l = 0u; l < 16u; ++l)
          lane[l] = fma(uintBitsToFloat(w_words[w0 + e + l]), x[xt[t] + e + l], lane[l]);
      precise float s[8];
      for (uint l = 0u; l < 8u; ++l) s[l] = lane[l] + lane[l + 8u];
      precise float r = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
      for (uint e = body; e < p.k; ++e)
        r = fma(uintBitsToFloat(w_words[w0 + e]), x[xt[t] + e], r);
      acc[t] = r;
    }
  } else if (ALIGNED) {  // two elements per word
    const uint w0 = row / 4u;
    for (uint e = 0u; e < p.k; e += 2u) {
      const uint word = w_words[w0 + e / 2u];
      float lo, hi;
      if (DTYPE == DT_F16) {
        const vec2 h = unpackHalf2x16(word);
        lo = h.x;
        hi = h.y;
      } else {
        lo = uintBitsToFloat(word << 16);
        hi = uintBitsToFloat(word & 0xFFFF0000u);
      }
      for (uint t = 0u; t < TOKENS; ++t) {
        acc[t] = fma(lo, x[xt[t] + e], acc[t]);
        acc[t] = fma(hi, x[xt[t] + e + 1u], acc[t]);
      }
    }
  } else {
    for (uint e = 0u; e < p.k; ++e) {
      const float wv = decode_element(DTYPE, row, e);
      for (uint t = 0u; t < TOKENS; ++t) acc[t] = fma(wv, x[xt[t] + e], acc[t]);
    }
  }
  if (r_wanted < p.rows) {
    for (uint t = 0u; t < TOKENS; ++t)
      if (t0 + t < p.n) o[p.o_off + (t0 + t) * p.o_stride + p.row_begin + r] = acc[t];
  }
}

void main() {
  if (MODE == 0) {
    cooperative();
  } else {
    per_row();
  }
}
