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

// f32 rows: 16 lanes, folded, then the tail; w(i) the row's element i as
// a float.
template <typename Weight>
float dot_float_order(Weight w, const float* x, int64_t k) {
  float acc[kFloatLanes] = {};
  int64_t i = 0;
  for (; i + kFloatLanes <= k; i += kFloatLanes)
    for (int l = 0; l < kFloatLanes; ++l) acc[l] = std::fma(w(i + l), x[i + l], acc[l]);
  float s[8];
  for (int l = 0; l < 8; ++l) s[l] = acc[l] + acc[l + 8];
  float r = sum_eight_lanes(s);
  for (; i < k; ++i) r = std::fma(w(i), x[i], r);
  return r;
}

float dot_f32(const float* w, const float* x, int64_t k) {
  return dot_float_order([w](int64_t i) { return w[i]; }, x, k);
}

float dot_f16_as_f32(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_order([w](int64_t i) { return f16_to_f32(w[i]); }, x, k);
}

float dot_bf16_as_f32(const uint16_t* w, const float* x, int64_t k) {
  return dot_float_order([w](int64_t i) { return bf16_to_float(w[i]); }, x, k);
}

// Half rows: one chain, element by element.
template <typename Weight>
float dot_half_rows(Weight w, const float* x, int64_t k) {
  float acc = 0;
  for (int64_t i = 0; i < k; ++i) acc = std::fma(w(i), x[i], acc);
  return acc;
}

float dot_f16(const uint16_t* w, const float* x, int64_t k) {
  return dot_half_rows([w](int64_t i) { return f16_to_f32(w[i]); }, x, k);
}

float dot_bf16(const uint16_t* w, const float* x, int64_t k) {
  return dot_half_rows([w](int64_t i) { return bf16_to_float(w[i]); }, x, k);
}

void exp_shifted(float* x, int64_t n, float shift) {
  for (int64_t i = 0; i < n; ++i) x[i] = exp_reference(x[i] - shift);
}

void axpy_rows(const float* a, const float* rows, int64_t row_stride, int64_t count, float* y,
               int64_t n) {
  for (int64_t j = 0; j < count; ++j)
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a[j], rows[j * row_stride + i], y[i]);
}

void axpy_f16_rows(const float* a, const uint16_t* rows, int64_t row_stride, int64_t count,
                   float* y, int64_t n) {
  for (int64_t j = 0; j < count; ++j)
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::fma(a[j], f16_to_f32(rows[j * row_stride + i]), y[i]);
}

void axpy_bf16_rows(const float* a, const uint16_t* rows, int64_t row_stride, int64_t count,
                    float* y, int64_t n) {
  for (int64_t j = 0; j < count; ++j)
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::fma(a[j], bf16_to_float(rows[j * row_stride + i]), y[i]);
}

float int8_row_scale(const Int8Rows& rows, int64_t j) {
  uint16_t h;
  std::memcpy(&h, rows.codes + j * rows.row_bytes + rows.scale_offset, 2);
  return f16_to_f32(h);
}

// The f32-row order over the decoded elements (dot_f32's).
void int8_row_scores(const Int8Rows& rows, const float* x, int64_t x_stride, int64_t heads,
                     float* out, int64_t out_stride) {
  for (int64_t j = 0; j < rows.count; ++j) {
    const auto* codes = reinterpret_cast<const int8_t*>(rows.codes + j * rows.row_bytes);
    const float scale = int8_row_scale(rows, j);
    const auto element = [&](int64_t i) { return static_cast<float>(codes[i]) * scale; };
    for (int64_t h = 0; h < heads; ++h)
      out[h * out_stride + j] = dot_float_order(element, x + h * x_stride, rows.k);
  }
}

void axpy_int8_rows(const float* a, const Int8Rows& rows, float* y) {
  for (int64_t j = 0; j < rows.count; ++j) {
    const auto* codes = reinterpret_cast<const int8_t*>(rows.codes + j * rows.row_bytes);
    const float scale = int8_row_scale(rows, j);
    for (int64_t i = 0; i < rows.k; ++i)
      y[i] = std::fma(a[j], static_cast<float>(codes[i]) * scale, y[i]);
  }
}

// Element i of row j of int4 rows, decoded.
float int4_element(const Int4Rows& rows, int64_t j, int64_t i) {
  const uint8_t* record = rows.records + j * rows.row_bytes;
  const int64_t e = rows.first + i;
  const uint8_t byte = record[e / 2];
  const int code = ((e & 1) != 0 ? byte >> 4 : byte & 0x0F) - 8;
  uint16_t h;
  std::memcpy(&h, record + rows.scale_offset + 2 * (e / rows.group), 2);
  return static_cast<float>(code) * f16_to_f32(h);
}

void int4_row_scores(const Int4Rows& rows, const float* x, int64_t x_stride, int64_t heads,
                     float* out, int64_t out_stride) {
  for (int64_t j = 0; j < rows.count; ++j)
    for (int64_t h = 0; h < heads; ++h)
      out[h * out_stride + j] = dot_float_order([&](int64_t i) { return int4_element(rows, j, i); },
                                                x + h * x_stride, rows.k);
}

void axpy_int4_rows(const float* a, const Int4Rows& rows, float* y) {
  for (int64_t j = 0; j < rows.count; ++j)
    for (int64_t i = 0; i < rows.k; ++i) y[i] = std::fma(a[j], int4_element(rows, j, i), y[i]);
}

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * (1.0f / (1.0f + exp_reference(-g[i]))) * u[i];
}

// The sum of n products of codes with x's (exact).
int32_t code_dot(const int8_t* q, const int8_t* x, int n) {
  int32_t sum = 0;
  for (int i = 0; i < n; ++i) sum += int32_t{q[i]} * int32_t{x[i]};
  return sum;
}

// Blocks of 32 int8 weights (unpacked by `unpack`, which also gives the
// block's scale) against Q8 activations: one exact int32 per block, one fma
// per block, in block order.
template <typename Unpack>
float dot_int_blocks(Unpack unpack, const Q8Block* x, int64_t blocks) {
  float acc = 0;
  int8_t q[32];
  for (int64_t b = 0; b < blocks; ++b) {
    const float scale = unpack(b, q) * x[b].d;
    acc = std::fma(scale, static_cast<float>(code_dot(q, x[b].q, 32)), acc);
  }
  return acc;
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

float dot_q4_K(const uint8_t* w, const Q8KBlock* x, int64_t supers) {
  float acc = 0;
  int8_t q[32];
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* super = w + s * kQ4_KBytes;
    int32_t sum = 0, min_sum = 0;
    for (int c = 0; c < 8; ++c) {
      int sc, m;
      q4_K_scale_min(c, super + 4, sc, m);
      const uint8_t* codes = super + 16 + 32 * (c / 2);
      for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>((codes[i] >> (4 * (c % 2))) & 0xF);
      sum += sc * code_dot(q, x[s].q + 32 * c, 32);
      min_sum += m * x[s].sums[c];
    }
    acc = std::fma(half_at(super) * x[s].d, static_cast<float>(sum), acc);
    acc = std::fma(-(half_at(super + 2) * x[s].d), static_cast<float>(min_sum), acc);
  }
  return acc;
}

float dot_q6_K(const uint8_t* w, const Q8KBlock* x, int64_t supers) {
  float acc = 0;
  int8_t q[32];
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* super = w + s * kQ6_KBytes;
    const auto* sub_scales = reinterpret_cast<const int8_t*>(super + 192);
    int32_t sum = 0;
    for (int c = 0; c < 8; ++c) {
      const int half = c / 4, part = c % 4;
      const uint8_t* low = super + 64 * half + 32 * (part & 1);
      const uint8_t* high = super + 128 + 32 * half;
      for (int i = 0; i < 32; ++i)
        q[i] = static_cast<int8_t>(
            (((low[i] >> (4 * (part >> 1))) & 0xF) | (((high[i] >> (2 * part)) & 3) << 4)) - 32);
      // Elements 0-15 of the block have one sub-scale, 16-31 the next.
      for (int h = 0; h < 2; ++h)
        sum += int32_t{sub_scales[2 * c + h]} * code_dot(q + 16 * h, x[s].q + 32 * c + 16 * h, 16);
    }
    acc = std::fma(half_at(super + 208) * x[s].d, static_cast<float>(sum), acc);
  }
  return acc;
}

// 32 values to codes against `inverse` (1 / d), rounded to nearest even and
// clamped; NaN (a diverged activation) becomes 0: d is NaN then, and so is
// every dot.
int32_t codes_of(const float* x, float inverse, int8_t* q) {
  int32_t sum = 0;
  for (int i = 0; i < 32; ++i) {
    const float v = std::nearbyint(x[i] * inverse);
    q[i] = static_cast<int8_t>(v == v ? std::clamp(v, -127.0f, 127.0f) : 0.0f);
    sum += q[i];
  }
  return sum;
}

float largest_magnitude(const float* x, int n) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::abs(x[i]));
  return amax;
}

void quantize_q8k(const float* x, int64_t k, Q8KBlock* out) {
  for (int64_t b = 0; b < k / 256; ++b, x += 256) {
    const float d = largest_magnitude(x, 256) / 127.0f;
    const float inverse = d > 0 ? 1.0f / d : 0.0f;
    out[b].d = d;
    for (int c = 0; c < 8; ++c)
      out[b].sums[c] = static_cast<int16_t>(codes_of(x + 32 * c, inverse, out[b].q + 32 * c));
    sum_halves(out[b]);
  }
}

void quantize_q8(const float* x, int64_t k, Q8Block* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    const float d = largest_magnitude(x, 32) / 127.0f;
    out[b].d = d;
    codes_of(x, d > 0 ? 1.0f / d : 0.0f, out[b].q);
  }
}

// A panel one output at a time: the reference of every tiling.
template <typename Weight, float (*dot)(const Weight*, const float*, int64_t)>
void float_panel(const FloatPanel& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const auto* row =
        reinterpret_cast<const Weight*>(p.w + static_cast<std::size_t>(r) * p.row_bytes);
    for (int64_t t = 0; t < p.tokens; ++t)
      p.out[t * p.out_stride + r] = dot(row, p.x + t * p.x_stride, p.k);
  }
}

template <typename Block, float (*dot)(const uint8_t*, const Block*, int64_t)>
void quant_panel(const QuantPanel& p) {
  const auto* x = static_cast<const Block*>(p.x);
  for (int64_t r = 0; r < p.rows; ++r) {
    const uint8_t* row = p.w + static_cast<std::size_t>(r) * p.row_bytes;
    for (int64_t t = 0; t < p.tokens; ++t)
      p.out[t * p.out_stride + r] = dot(row, x + t * p.x_stride, p.blocks);
  }
}

}  // namespace

void sum_halves(Q8KBlock& block) {
  for (int h = 0; h < 16; ++h) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += block.q[16 * h + i];
    block.half_sums[h] = static_cast<int16_t>(sum);
  }
}

const DotKernels& scalar_dot_kernels() {
  static const DotKernels kernels{"scalar",
                                  float_panel<float, dot_f32>,
                                  float_panel<uint16_t, dot_f16>,
                                  float_panel<uint16_t, dot_bf16>,
                                  nullptr,
                                  nullptr,
                                  float_panel<uint16_t, dot_f16_as_f32>,
                                  float_panel<uint16_t, dot_bf16_as_f32>,
                                  quant_panel<Q8Block, dot_q8_0>,
                                  quant_panel<Q8Block, dot_q4_0>,
                                  nullptr,
                                  nullptr,
                                  quant_panel<Q8KBlock, dot_q4_K>,
                                  quant_panel<Q8KBlock, dot_q6_K>,
                                  nullptr,
                                  nullptr,
                                  quantize_q8,
                                  quantize_q8k,
                                  nullptr,
                                  nullptr,
                                  exp_shifted,
                                  axpy_rows,
                                  axpy_f16_rows,
                                  axpy_bf16_rows,
                                  int8_row_scores,
                                  axpy_int8_rows,
                                  int4_row_scores,
                                  axpy_int4_rows,
                                  silu_mul};
  return kernels;
}

FloatPanelKernel float_panel_for(const DotKernels& set, DType dtype, bool interleaved) {
  if (dtype == DType::kF32) return interleaved ? nullptr : set.f32;
  if (dtype == DType::kF16) return interleaved ? set.f16_groups : set.f16;
  if (dtype == DType::kBF16) return interleaved ? set.bf16_groups : set.bf16;
  return nullptr;
}

QuantPanelKernel integer_panel_for(const DotKernels& set, DType dtype, bool interleaved) {
  if (dtype == DType::kQ8_0) return interleaved ? set.q8_0_groups : set.q8_0;
  if (dtype == DType::kQ4_0) return interleaved ? set.q4_0_groups : set.q4_0;
  return nullptr;
}

QuantPanelKernel kquant_panel_for(const DotKernels& set, DType dtype, bool interleaved) {
  if (dtype == DType::kQ4_K) return interleaved ? set.q4_K_groups : set.q4_K;
  if (dtype == DType::kQ6_K) return interleaved ? set.q6_K_groups : set.q6_K;
  return nullptr;
}

bool reads_interleaved(const DotKernels& set, DType dtype) {
  return float_panel_for(set, dtype, true) != nullptr ||
         integer_panel_for(set, dtype, true) != nullptr ||
         kquant_panel_for(set, dtype, true) != nullptr;
}

IntegerActivationLayout integer_activation_layout(const DotKernels& set, int64_t blocks) {
  if (set.arrange_q8 == nullptr)
    return {static_cast<std::size_t>(blocks) * sizeof(Q8Block), blocks};
  return set.arranged_q8_layout(blocks);
}

void quantize_for_integer_kernel(const DotKernels& set, DType dtype, const float* x, int64_t k,
                                 Q8Block* blocks, void* out) {
  if (set.arrange_q8 == nullptr) {
    set.quantize_q8(x, k, static_cast<Q8Block*>(out));
    return;
  }
  set.quantize_q8(x, k, blocks);
  set.arrange_q8(dtype, blocks, k / 32, out);
}

const DotKernels& best_dot_kernels() {
  static const DotKernels& chosen = [&]() -> const DotKernels& {
    const char* env = std::getenv("TESSERA_CPU_KERNELS");
    const std::string_view cap = env != nullptr ? env : "";
    if (cap == "scalar") return scalar_dot_kernels();
    const DotKernels* avx512 = cap == "avx2" ? nullptr : avx512_dot_kernels();
    if (avx512 != nullptr) return *avx512;
    const DotKernels* avx2 = avx2_dot_kernels();
    return avx2 ? *avx2 : scalar_dot_kernels();
  }();
  return chosen;
}

}  // namespace tessera::cpu
