// The scalar reference of dot_kernels.h: the summation order spelled out one
// element at a time (std::fma is the single-rounding multiply-add the SIMD
// paths use).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "core/tensor/block_quant.h"
#include "core/tensor/half.h"

namespace tessera::cpu {
namespace {

template <typename Weight>
float dot_float_rows(Weight w, const float* x, int64_t k) {
  float acc[kFloatLanes] = {};
  int64_t i = 0;
  for (; i + kFloatLanes <= k; i += kFloatLanes)
    for (int l = 0; l < kFloatLanes; ++l) acc[l] = std::fma(w(i + l), x[i + l], acc[l]);
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = (acc[l] + acc[l + 8]) + (acc[l + 16] + acc[l + 24]);
  float r = sum_eight_lanes(s);
  for (; i < k; ++i) r = std::fma(w(i), x[i], r);
  return r;
}

float dot_f32(const float* w, const float* x, int64_t k) {
  return dot_float_rows([w](int64_t i) { return w[i]; }, x, k);
}

float dot_f16(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_rows([w](int64_t i) { return f16_to_f32(w[i]); }, x, k);
}

float dot_bf16(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_rows([w](int64_t i) { return bf16_to_float(w[i]); }, x, k);
}

// Blocks of 32 int8 weights (unpacked by `unpack`, which also gives the
// block's scale) against Q8 activations.
template <typename Unpack>
float dot_int_blocks(Unpack unpack, const Q8Block* x, int64_t blocks) {
  float acc[16] = {};
  int8_t q[32];
  for (int64_t b = 0; b < blocks; ++b) {
    const float scale = unpack(b, q) * x[b].d;
    float* lanes = acc + (b & 1) * 8;
    for (int l = 0; l < 8; ++l) {
      int32_t sum = 0;
      for (int j = 0; j < 4; ++j) sum += int32_t{q[4 * l + j]} * int32_t{x[b].q[4 * l + j]};
      lanes[l] = std::fma(scale, static_cast<float>(sum), lanes[l]);
    }
  }
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = acc[l] + acc[l + 8];
  return sum_eight_lanes(s);
}

// The fp16 at p (block scales).
float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

float dot_q8_0(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  return dot_int_blocks(
      [w](int64_t b, int8_t* q) {
        const uint8_t* block = w + b * kQ8_0Bytes;
        std::memcpy(q, block + 2, 32);
        return half_at(block);
      },
      x, blocks);
}

float dot_q4_0(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  return dot_int_blocks(
      [w](int64_t b, int8_t* q) {
        const uint8_t* block = w + b * kQ4_0Bytes;
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>((block[2 + j] & 0xF) - 8);
          q[j + 16] = static_cast<int8_t>((block[2 + j] >> 4) - 8);
        }
        return half_at(block);
      },
      x, blocks);
}

// Eight sums of four consecutive products of block c's codes with x's.
void lane_sums(const int8_t* q, const Q8Block& x, int32_t sums[8]) {
  for (int l = 0; l < 8; ++l) {
    sums[l] = 0;
    for (int j = 0; j < 4; ++j) sums[l] += int32_t{q[4 * l + j]} * int32_t{x.q[4 * l + j]};
  }
}

float dot_q4_K(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  float acc[16] = {};
  float mins = 0;
  int8_t q[32];
  int32_t sums[8];
  for (int64_t c = 0; c < blocks; ++c) {
    const uint8_t* super = w + (c / 8) * kQ4_KBytes;
    const int s = static_cast<int>(c % 8);
    int sc, m;
    q4_K_scale_min(s, super + 4, sc, m);
    const uint8_t* codes = super + 16 + 32 * (s / 2);
    for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>((codes[i] >> (4 * (s % 2))) & 0xF);
    lane_sums(q, x[c], sums);
    const float scale = (half_at(super) * static_cast<float>(sc)) * x[c].d;
    float* lanes = acc + (c & 1) * 8;
    for (int l = 0; l < 8; ++l) lanes[l] = std::fma(scale, static_cast<float>(sums[l]), lanes[l]);
    const float min_scale = (half_at(super + 2) * static_cast<float>(m)) * x[c].d;
    mins = std::fma(min_scale, static_cast<float>(x[c].sum), mins);
  }
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = acc[l] + acc[l + 8];
  return sum_eight_lanes(s) - mins;
}

float dot_q6_K(const uint8_t* w, const Q8Block* x, int64_t blocks) {
  float acc[16] = {};
  int8_t q[32];
  int32_t sums[8];
  for (int64_t c = 0; c < blocks; ++c) {
    const uint8_t* super = w + (c / 8) * kQ6_KBytes;
    const int j = static_cast<int>(c % 8), half = j / 4, part = j % 4;
    const uint8_t* low = super + 64 * half + 32 * (part & 1);
    const uint8_t* high = super + 128 + 32 * half;
    for (int i = 0; i < 32; ++i)
      q[i] = static_cast<int8_t>(
          (((low[i] >> (4 * (part >> 1))) & 0xF) | (((high[i] >> (2 * part)) & 3) << 4)) - 32);
    lane_sums(q, x[c], sums);
    const auto* sub_scales = reinterpret_cast<const int8_t*>(super + 192) + 8 * half + 2 * part;
    const float d = half_at(super + 208);
    const float first = (d * static_cast<float>(sub_scales[0])) * x[c].d;
    const float second = (d * static_cast<float>(sub_scales[1])) * x[c].d;
    float* lanes = acc + (c & 1) * 8;
    for (int l = 0; l < 8; ++l)
      lanes[l] = std::fma(l < 4 ? first : second, static_cast<float>(sums[l]), lanes[l]);
  }
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = acc[l] + acc[l + 8];
  return sum_eight_lanes(s);
}

void quantize_q8(const float* x, int64_t k, Q8Block* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[i]));
    const float d = amax / 127.0f;
    const float inverse = d > 0 ? 1.0f / d : 0.0f;
    out[b].d = d;
    for (int i = 0; i < 32; ++i) {
      const float v = std::nearbyint(x[i] * inverse);
      // NaN (a diverged activation) becomes 0: d is NaN then, and so is the dot.
      out[b].q[i] = static_cast<int8_t>(v == v ? std::clamp(v, -127.0f, 127.0f) : 0.0f);
    }
    out[b].sum = 0;
    for (int i = 0; i < 32; ++i) out[b].sum += out[b].q[i];
  }
}

}  // namespace

const DotKernels& scalar_dot_kernels() {
  static const DotKernels kernels{"scalar", dot_f32,  dot_f16,  dot_bf16,   dot_q8_0,
                                  dot_q4_0, dot_q4_K, dot_q6_K, quantize_q8};
  return kernels;
}

IntegerDot integer_dot_for(const DotKernels& set, DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return set.q8_0;
    case DType::kQ4_0:
      return set.q4_0;
    case DType::kQ4_K:
      return set.q4_K;
    case DType::kQ6_K:
      return set.q6_K;
    default:
      return nullptr;
  }
}

const DotKernels& best_dot_kernels() {
  static const DotKernels& chosen = [&]() -> const DotKernels& {
    const char* forced = std::getenv("TESSERA_CPU_KERNELS");
    if (forced != nullptr && std::string_view(forced) == "scalar") return scalar_dot_kernels();
    const DotKernels* avx2 = avx2_dot_kernels();
    return avx2 ? *avx2 : scalar_dot_kernels();
  }();
  return chosen;
}

}  // namespace tessera::cpu
