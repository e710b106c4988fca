// out = x * w^T for block-quantised weights against activations quantised by
// quantize_q8.comp, as the CPU's integer kernels (dot_kernels.h): per block
// (q8_0, q4_0: 32) or super-block (q4_K, q6_K: 256) one exact int32 sum of
// code products, then acc = fma(d_w * d_x, float(sum), acc) (q4_K's minimums
// after it). The variant (specialisation constant 0) is the dtype plus 16 *
// the mode:
//  mode 0 (devices that are not CPUs): one workgroup per weight row and tile
//    of up to TILE tokens; threads take blocks in turn, then one thread per
//    token adds the partial sums from shared memory, in order.
//  modes 1 and 2 (CPU devices such as lavapipe): one invocation per weight
//    row, WG rows per workgroup, taking its row's blocks in order with no
//    barrier; the activations' codes and scales are at the same address in
//    every invocation (one load per strand). Mode 1 does one token per
//    workgroup, mode 2 TILE (tokens past n repeat the last, not stored).
// Each output's order of operations depends only on k, never on n.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 8u

layout(local_size_x = 64) in;
layout(constant_id = 0) const int VARIANT = DT_Q8_0;
const int DTYPE = VARIANT & 15;
const int MODE = (VARIANT >> 4) & 15;
const uint TOKENS = MODE == 1 ? 1u : TILE;

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

shared float partial[MODE == 0 ? TILE * WG : 1u];

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

void cooperative() {
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

// Modes 1 and 2. No control flow depends on the invocation before the
// stores (llvmpipe loads a uniform address once only outside such flow).
void per_row() {
  const uint g = flat_group();
  const uint row_groups = (p.rows + WG - 1u) / WG;
  const uint rg = g % row_groups;
  const uint t0 = (g / row_groups) * TOKENS;
  const uint r_wanted = rg * WG + gl_LocalInvocationID.x;
  const uint r = min(r_wanted, p.rows - 1u);
  const uint row = p.w_off + r * p.row_bytes;
  const uint words = p.k / 4u;     // code words per token
  const uint blocks = p.k / 32u;   // sums (and q8 scales) per token
  const uint last_word = uint(w_words.length()) - 1u;
  uint tok[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t) tok[t] = min(t0 + t, p.n - 1u);
  float acc[TOKENS];
  for (uint t = 0u; t < TOKENS; ++t) acc[t] = 0.0;

  if (DTYPE == DT_Q8_0 || DTYPE == DT_Q4_0) {
    for (uint blk = 0u; blk < blocks; ++blk) {
      uint q[8];
      float dw;
      if (DTYPE == DT_Q8_0) {
        // 34 bytes at an even address: the scale's word, then the codes'
        // 8 words from the 9 (or 8) words after the scale.
        const uint base = row + 34u * blk;
        dw = w_half(base);
        const uint c = base + 2u;
        const uint shift = (c & 2u) * 8u;
        const uint i = c >> 2;
        uint lo = w_words[i];
        for (uint j = 0u; j < 8u; ++j) {
          const uint hi = w_words[j == 7u ? min(i + 8u, last_word) : i + j + 1u];
          q[j] = (lo >> shift) | ((hi << 16) << (16u - shift));
          lo = hi;
        }
      } else {
        const uint base = row + 18u * blk;
        dw = w_half(base);
        const uint c = base + 2u;
        const uint shift = (c & 2u) * 8u;
        const uint i = c >> 2;
        uint lo = w_words[i];
        for (uint j = 0u; j < 4u; ++j) {
          const uint hi = w_words[j == 3u ? min(i + 4u, last_word) : i + j + 1u];
          const uint packed = (lo >> shift) | ((hi << 16) << (16u - shift));
          lo = hi;
          q[j] = packed & 0x0F0F0F0Fu;             // elements 4j .. 4j+3
          q[j + 4u] = (packed >> 4) & 0x0F0F0F0Fu;  // elements 16+4j ..
        }
      }
      for (uint t = 0u; t < TOKENS; ++t) {
        const uint xt = tok[t] * words + 8u * blk;
        int sum = 0;
        if (DTYPE == DT_Q8_0) {
          for (uint j = 0u; j < 8u; ++j) sum += dot4_ss(q[j], codes[xt + j]);
        } else {
          for (uint j = 0u; j < 8u; ++j) sum += dot4_us(q[j], codes[xt + j]);
          sum -= 8 * sums[tok[t] * blocks + blk];
        }
        acc[t] = fma(dw * scales[tok[t] * blocks + blk], float(sum), acc[t]);
      }
    }
  } else {
    const uint supers = p.k / 256u;
    for (uint s = 0u; s < supers; ++s) {
      if (DTYPE == DT_Q4_K) {
        const uint base = row + 144u * s;
        const float d = w_half(base), dmin = w_half(base + 2u);
        int sc[8], m[8];
        for (uint c = 0u; c < 8u; ++c) q4_K_scale_min(c, base + 4u, sc[c], m[c]);
        int sum[TOKENS], min_sum[TOKENS];
        for (uint t = 0u; t < TOKENS; ++t) {
          sum[t] = 0;
          min_sum[t] = 0;
        }
        for (uint c = 0u; c < 8u; ++c) {
          const uint codes_at = base + 16u + 32u * (c / 2u);
          const uint shift = 4u * (c % 2u);
          uint q[8];
          for (uint j = 0u; j < 8u; ++j) q[j] = (w_u32(codes_at + 4u * j) >> shift) & 0x0F0F0F0Fu;
          for (uint t = 0u; t < TOKENS; ++t) {
            const uint xt = tok[t] * words + 64u * s + 8u * c;
            int block_sum = 0;
            for (uint j = 0u; j < 8u; ++j) block_sum += dot4_us(q[j], codes[xt + j]);
            sum[t] += sc[c] * block_sum;
            min_sum[t] += m[c] * sums[tok[t] * blocks + 8u * s + c];
          }
        }
        for (uint t = 0u; t < TOKENS; ++t) {
          const float dx = scales[tok[t] * supers + s];
          acc[t] = fma(d * dx, float(sum[t]), acc[t]);
          acc[t] = fma(-(dmin * dx), float(min_sum[t]), acc[t]);
        }
      } else {  // q6_K
        const uint base = row + 210u * s;
        const float d = w_half(base + 208u);
        int sum[TOKENS];
        for (uint t = 0u; t < TOKENS; ++t) sum[t] = 0;
        for (uint c = 0u; c < 8u; ++c) {
          const uint half_index = c / 4u, part = c % 4u;
          const uint low = base + 64u * half_index + 32u * (part & 1u);
          const uint high = base + 128u + 32u * half_index;
          uint q[8];
          for (uint j = 0u; j < 8u; ++j) {
            const uint lw = w_u32(low + 4u * j), hw = w_u32(high + 4u * j);
            q[j] = ((lw >> (4u * (part >> 1))) & 0x0F0F0F0Fu) |
                   (((hw >> (2u * part)) & 0x03030303u) << 4);
          }
          const int sc0 = w_int8(base + 192u + 2u * c), sc1 = w_int8(base + 193u + 2u * c);
          for (uint t = 0u; t < TOKENS; ++t) {
            const uint xt = tok[t] * words + 64u * s + 8u * c;
            for (uint h = 0u; h < 2u; ++h) {
              int block_sum = 0, x_sum = 0;
              for (uint j = 4u * h; j < 4u * h + 4u; ++j) {
                const uint xw = codes[xt + j];
                block_sum += dot4_us(q[j], xw);
                x_sum += sum4(xw);
              }
              sum[t] += (h == 0u ? sc0 : sc1) * (block_sum - 32 * x_sum);
            }
          }
        }
        for (uint t = 0u; t < TOKENS; ++t)
          acc[t] = fma(d * scales[tok[t] * supers + s], float(sum[t]), acc[t]);
      }
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
