// out = x * w^T for block-quantised weights against activations quantised by
// quantize_q8.comp, as the CPU's integer kernels (dot_kernels.h): per block
// (q8_0, q4_0: 32) or super-block (q4_K, q6_K: 256) one exact int32 sum of
// code products, then acc = fma(d_w * d_x, float(sum), acc) (q4_K's minimums
// after it). One workgroup per weight row and tile of up to TILE tokens;
// threads take blocks in turn, then the partial sums are added in shared
// memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 8u

layout(local_size_x = 64) in;
layout(constant_id = 0) const int DTYPE = DT_Q8_0;

layout(std430, binding = 0) readonly buffer Codes { uint codes[]; };
layout(std430, binding = 1) readonly buffer Scales { float scales[]; };
layout(std430, binding = 2) readonly buffer Sums { int sums[]; };
layout(std430, binding = 3) readonly buffer W { uint w_words[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };

#include "weights.glsl"

layout(push_constant) uniform Push {
  uint n, k;
  uint rows, row_begin;  // this piece's rows, and the first one's output column
  uint row_bytes, w_off;
  uint o_off, o_stride;
} p;

shared float partial[TILE * WG];

// Four signed 8-bit codes times four signed ones.
int dot4_ss(uint a, uint b) {
  int s = 0;
  for (int l = 0; l < 32; l += 8) s += bitfieldExtract(int(a), l, 8) * bitfieldExtract(int(b), l, 8);
  return s;
}

// Four unsigned 8-bit codes times four signed ones.
int dot4_us(uint a, uint b) {
  int s = 0;
  for (int l = 0; l < 32; l += 8) s += int((a >> l) & 0xFFu) * bitfieldExtract(int(b), l, 8);
  return s;
}

int sum4(uint b) {
  int s = 0;
  for (int l = 0; l < 32; l += 8) s += bitfieldExtract(int(b), l, 8);
  return s;
}

void main() {
  const uint g = flat_group();
  const uint r = g % p.rows;
  const uint t0 = (g / p.rows) * TILE;
  if (t0 >= p.n) return;  // uniform across the workgroup
  const uint tiles = min(TILE, p.n - t0);
  const uint tid = gl_LocalInvocationID.x;
  const uint row = p.w_off + r * p.row_bytes;
  const uint words = p.k / 4u;     // code words per token
  const uint blocks = p.k / 32u;   // sums (and q8 scales) per token
  float acc[TILE];
  for (uint t = 0u; t < TILE; ++t) acc[t] = 0.0;

  if (DTYPE == DT_Q8_0 || DTYPE == DT_Q4_0) {
    for (uint blk = tid; blk < blocks; blk += WG) {
      uint q[8];
      float dw;
      if (DTYPE == DT_Q8_0) {
        const uint base = row + 34u * blk;
        dw = w_half(base);
        for (uint j = 0u; j < 8u; ++j) q[j] = w_u32(base + 2u + 4u * j);
      } else {
        const uint base = row + 18u * blk;
        dw = w_half(base);
        for (uint j = 0u; j < 4u; ++j) {
          const uint packed = w_u32(base + 2u + 4u * j);
          q[j] = packed & 0x0F0F0F0Fu;             // elements 4j .. 4j+3
          q[j + 4u] = (packed >> 4) & 0x0F0F0F0Fu;  // elements 16+4j ..
        }
      }
      for (uint t = 0u; t < tiles; ++t) {
        const uint xt = (t0 + t) * words + 8u * blk;
        int sum = 0;
        if (DTYPE == DT_Q8_0) {
          for (uint j = 0u; j < 8u; ++j) sum += dot4_ss(q[j], codes[xt + j]);
        } else {
          for (uint j = 0u; j < 8u; ++j) sum += dot4_us(q[j], codes[xt + j]);
          sum -= 8 * sums[(t0 + t) * blocks + blk];
        }
        acc[t] = fma(dw * scales[(t0 + t) * blocks + blk], float(sum), acc[t]);
      }
    }
  } else {
    const uint supers = p.k / 256u;
    for (uint s = tid; s < supers; s += WG) {
      if (DTYPE == DT_Q4_K) {
        const uint base = row + 144u * s;
        const float d = w_half(base), dmin = w_half(base + 2u);
        int sc[8], m[8];
        for (uint c = 0u; c < 8u; ++c) q4_K_scale_min(c, base + 4u, sc[c], m[c]);
        for (uint t = 0u; t < tiles; ++t) {
          const uint xt = (t0 + t) * words + 64u * s;
          const uint st = (t0 + t) * blocks + 8u * s;
          int sum = 0, min_sum = 0;
          for (uint c = 0u; c < 8u; ++c) {
            const uint codes_at = base + 16u + 32u * (c / 2u);
            const uint shift = 4u * (c % 2u);
            int block_sum = 0;
            for (uint j = 0u; j < 8u; ++j)
              block_sum += dot4_us((w_u32(codes_at + 4u * j) >> shift) & 0x0F0F0F0Fu,
                                   codes[xt + 8u * c + j]);
            sum += sc[c] * block_sum;
            min_sum += m[c] * sums[st + c];
          }
          const float dx = scales[(t0 + t) * supers + s];
          acc[t] = fma(d * dx, float(sum), acc[t]);
          acc[t] = fma(-(dmin * dx), float(min_sum), acc[t]);
        }
      } else {  // q6_K
        const uint base = row + 210u * s;
        const float d = w_half(base + 208u);
        for (uint t = 0u; t < tiles; ++t) {
          const uint xt = (t0 + t) * words + 64u * s;
          int sum = 0;
          for (uint c = 0u; c < 8u; ++c) {
            const uint half_index = c / 4u, part = c % 4u;
            const uint low = base + 64u * half_index + 32u * (part & 1u);
            const uint high = base + 128u + 32u * half_index;
            for (uint h = 0u; h < 2u; ++h) {
              int block_sum = 0, x_sum = 0;
              for (uint j = 4u * h; j < 4u * h + 4u; ++j) {
                const uint lw = w_u32(low + 4u * j), hw = w_u32(high + 4u * j);
                const uint q = ((lw >> (4u * (part >> 1))) & 0x0F0F0F0Fu) |
                               (((hw >> (2u * part)) & 0x03030303u) << 4);
                const uint xw = codes[xt + 8u * c + j];
                block_sum += dot4_us(q, xw);
                x_sum += sum4(xw);
              }
              sum += w_int8(base + 192u + 2u * c + h) * (block_sum - 32 * x_sum);
            }
          }
          acc[t] = fma(d * scales[(t0 + t) * supers + s], float(sum), acc[t]);
        }
      }
    }
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
