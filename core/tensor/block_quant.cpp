#include "core/tensor/block_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/status/status.h"

namespace tessera {
namespace {

constexpr int kQ8Block = 32;
constexpr int kQ4Block = 32;
constexpr int kSuper = 256;  // q4_K and q6_K super-blocks

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void store_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, 2);
}
float load_half(const uint8_t* p) {
  return half_to_float(load_u16(p));
}

// The value of largest magnitude (its sign kept), for scales that map it to
// the most negative code exactly.
float signed_extreme(const float* x, int n) {
  float best = 0, best_abs = 0;
  for (int i = 0; i < n; ++i)
    if (std::abs(x[i]) > best_abs) {
      best_abs = std::abs(x[i]);
      best = x[i];
    }
  return best;
}

int nearest_clamped(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi);
}

// ---- q8_0 ----

void dequantize_q8_0(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 34, dst += kQ8Block) {
    const float d = load_half(src);
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int i = 0; i < kQ8Block; ++i) dst[i] = d * static_cast<float>(q[i]);
  }
}

void quantize_q8_0(const float* x, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, x += kQ8Block, dst += 34) {
    float amax = 0;
    for (int i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::abs(x[i]));
    const float d = amax / 127.0f;
    const float inverse = d > 0 ? 1.0f / d : 0.0f;
    store_u16(dst, float_to_half(d));
    auto* q = reinterpret_cast<int8_t*>(dst + 2);
    for (int i = 0; i < kQ8Block; ++i)
      q[i] = static_cast<int8_t>(nearest_clamped(x[i] * inverse, -127, 127));
  }
}

// ---- q4_0 ----

void dequantize_q4_0(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 18, dst += kQ4Block) {
    const float d = load_half(src);
    const uint8_t* q = src + 2;
    for (int j = 0; j < kQ4Block / 2; ++j) {
      dst[j] = d * static_cast<float>((q[j] & 0xF) - 8);
      dst[j + kQ4Block / 2] = d * static_cast<float>((q[j] >> 4) - 8);
    }
  }
}

void quantize_q4_0(const float* x, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, x += kQ4Block, dst += 18) {
    // The extreme maps to code 0 (-8 d); the other side reaches +7 d.
    const float d = signed_extreme(x, kQ4Block) / -8.0f;
    const float inverse = d != 0 ? 1.0f / d : 0.0f;
    store_u16(dst, float_to_half(d));
    uint8_t* q = dst + 2;
    for (int j = 0; j < kQ4Block / 2; ++j) {
      const int lo = nearest_clamped(x[j] * inverse + 8.0f, 0, 15);
      const int hi = nearest_clamped(x[j + kQ4Block / 2] * inverse + 8.0f, 0, 15);
      q[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// ---- q4_K ----
// Layout: d (2), dmin (2), scales (12), qs (128) = 144 bytes.

void dequantize_q4_K(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 144) {
    const float d = load_half(src);
    const float dmin = load_half(src + 2);
    const uint8_t* packed = src + 4;
    const uint8_t* q = src + 16;
    for (int pair = 0; pair < 4; ++pair, q += 32) {
      int sc0, m0, sc1, m1;
      q4_K_scale_min(2 * pair, packed, sc0, m0);
      q4_K_scale_min(2 * pair + 1, packed, sc1, m1);
      const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
      const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
      for (int l = 0; l < 32; ++l) *dst++ = d0 * static_cast<float>(q[l] & 0xF) - min0;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] >> 4) - min1;
    }
  }
}

void quantize_q4_K(const float* x, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, x += kSuper, dst += 144) {
    // Per sub-block of 32: x ~ scale * q - min with q in [0, 15], min >= 0
    // (the range always includes 0, so an all-positive block keeps min 0).
    float scale[8], min[8];
    float max_scale = 0, max_min = 0;
    for (int s = 0; s < 8; ++s) {
      const float* v = x + 32 * s;
      float lo = 0, hi = 0;
      for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, v[i]);
        hi = std::max(hi, v[i]);
      }
      scale[s] = (hi - lo) / 15.0f;
      min[s] = -lo;
      max_scale = std::max(max_scale, scale[s]);
      max_min = std::max(max_min, min[s]);
    }
    // The 6-bit sub-scales and mins, relative to the fp16 super-block ones.
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    store_u16(dst, float_to_half(d));
    store_u16(dst + 2, float_to_half(dmin));
    const float d_stored = load_half(dst), dmin_stored = load_half(dst + 2);
    int sc[8], m[8];
    for (int s = 0; s < 8; ++s) {
      sc[s] = d_stored > 0 ? nearest_clamped(scale[s] / d_stored, 0, 63) : 0;
      m[s] = dmin_stored > 0 ? nearest_clamped(min[s] / dmin_stored, 0, 63) : 0;
    }
    uint8_t* packed = dst + 4;
    std::memset(packed, 0, 12);
    for (int s = 0; s < 8; ++s) {
      if (s < 4) {
        packed[s] = static_cast<uint8_t>(sc[s]);
        packed[s + 4] = static_cast<uint8_t>(m[s]);
      } else {
        packed[s + 4] = static_cast<uint8_t>((sc[s] & 0xF) | ((m[s] & 0xF) << 4));
        packed[s - 4] = static_cast<uint8_t>(packed[s - 4] | ((sc[s] >> 4) << 6));
        packed[s] = static_cast<uint8_t>(packed[s] | ((m[s] >> 4) << 6));
      }
    }
    // Codes against the scales as stored, so decoding sees what was chosen.
    uint8_t codes[kSuper];
    for (int s = 0; s < 8; ++s) {
      const float step = d_stored * static_cast<float>(sc[s]);
      const float offset = dmin_stored * static_cast<float>(m[s]);
      for (int i = 0; i < 32; ++i)
        codes[32 * s + i] = static_cast<uint8_t>(
            step > 0 ? nearest_clamped((x[32 * s + i] + offset) / step, 0, 15) : 0);
    }
    uint8_t* q = dst + 16;
    for (int pair = 0; pair < 4; ++pair)
      for (int l = 0; l < 32; ++l)
        q[32 * pair + l] =
            static_cast<uint8_t>(codes[64 * pair + l] | (codes[64 * pair + 32 + l] << 4));
  }
}

// ---- q6_K ----
// Layout: ql (128), qh (64), scales (16, int8), d (2) = 210 bytes. In each
// half of 128 elements, element e's low nibble is in ql[e % 32 + 32 * (e / 32
// % 2)] (low nibble for e < 64, high above) and its top two bits in
// qh[e % 32] at bit 2 * (e / 32).

void dequantize_q6_K(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 210) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_half(src + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        const int s = 8 * half + l / 16;
        dst[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void quantize_q6_K(const float* x, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, x += kSuper, dst += 210) {
    // Per sub-block of 16, a signed scale that maps the extreme to code -32.
    float scale[16];
    float max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scale[s] = signed_extreme(x + 16 * s, 16) / -32.0f;
      max_abs_scale = std::max(max_abs_scale, std::abs(scale[s]));
    }
    const float d = max_abs_scale / 127.0f;
    store_u16(dst + 208, float_to_half(d));
    const float d_stored = load_half(dst + 208);
    auto* sc = reinterpret_cast<int8_t*>(dst + 192);
    uint8_t codes[kSuper];
    for (int s = 0; s < 16; ++s) {
      sc[s] =
          static_cast<int8_t>(d_stored > 0 ? nearest_clamped(scale[s] / d_stored, -127, 127) : 0);
      const float step = d_stored * static_cast<float>(sc[s]);
      for (int i = 0; i < 16; ++i)
        codes[16 * s + i] = static_cast<uint8_t>(
            (step != 0 ? nearest_clamped(x[16 * s + i] / step, -32, 31) : 0) + 32);
    }
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32) {
      const uint8_t* c = codes + 128 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((c[l] & 0xF) | ((c[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((c[l + 32] & 0xF) | ((c[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) |
                                     ((c[l + 64] >> 4) << 4) | ((c[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace

void dequantize_row(DType dtype, const void* src, int64_t n, float* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  const int64_t blocks = n / dtype_layout(dtype).block_elements;
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(load_u16(bytes + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(load_u16(bytes + 2 * i));
      return;
    case DType::kQ8_0:
      return dequantize_q8_0(bytes, blocks, dst);
    case DType::kQ4_0:
      return dequantize_q4_0(bytes, blocks, dst);
    case DType::kQ4_K:
      return dequantize_q4_K(bytes, blocks, dst);
    case DType::kQ6_K:
      return dequantize_q6_K(bytes, blocks, dst);
    case DType::kU8:
      break;  // K/V record bytes, not a number format
  }
  TESSERA_CHECK(false, "dequantize_row: u8 holds K/V records, not numbers");
}

void quantize_row(DType dtype, const float* src, int64_t n, void* dst) {
  auto* bytes = static_cast<uint8_t*>(dst);
  const int64_t blocks = n / dtype_layout(dtype).block_elements;
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) store_u16(bytes + 2 * i, float_to_half(src[i]));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) store_u16(bytes + 2 * i, float_to_bf16(src[i]));
      return;
    case DType::kQ8_0:
      return quantize_q8_0(src, blocks, bytes);
    case DType::kQ4_0:
      return quantize_q4_0(src, blocks, bytes);
    case DType::kQ4_K:
      return quantize_q4_K(src, blocks, bytes);
    case DType::kQ6_K:
      return quantize_q6_K(src, blocks, bytes);
    case DType::kU8:
      break;
  }
  TESSERA_CHECK(false, "quantize_row: u8 holds K/V records, not numbers");
}

}  // namespace tessera
