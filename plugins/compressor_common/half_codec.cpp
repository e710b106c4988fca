#include "plugins/compressor_common/half_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"

namespace tessera {
namespace {

constexpr float kHalfMax = 65504.0f;  // the largest finite half

}  // namespace

Status HalfCodec::supports(int head_dim) const {
  if (head_dim > 0) return ok_status();
  return invalid_argument("the " + std::string(format_ == KVRecordFormat::kF16 ? "f16" : "bf16") +
                          " codec needs a positive head_dim, not " + std::to_string(head_dim));
}

std::size_t HalfCodec::encoded_bytes(int64_t n_vectors, int head_dim) const {
  return kv_record_bytes(record_layout(head_dim)) * static_cast<std::size_t>(n_vectors);
}

void HalfCodec::encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const {
  const int64_t n = n_vectors * head_dim;
  for (int64_t i = 0; i < n; ++i) {
    // std::clamp keeps a NaN a NaN (both comparisons are false).
    const uint16_t h = format_ == KVRecordFormat::kF16
                           ? float_to_half(std::clamp(src[i], -kHalfMax, kHalfMax))
                           : float_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);  // dst has no alignment guarantee
  }
}

float HalfCodec::element(const uint8_t* record, int i) const {
  uint16_t h;
  std::memcpy(&h, record + 2 * i, 2);
  return format_ == KVRecordFormat::kF16 ? f16_to_f32(h) : bf16_to_float(h);
}

void HalfCodec::decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const {
  for (int64_t v = 0; v < n_vectors; ++v)
    for (int i = 0; i < head_dim; ++i) dst[v * head_dim + i] = element(src + v * 2 * head_dim, i);
}

void HalfCodec::transform_query(const float* q, int D, float* q_out) const {
  std::copy(q, q + D, q_out);
}

// One fma chain over the elements in order.
void HalfCodec::dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                            float* scores) const {
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* record = records + j * 2 * D;
    float acc = 0.0f;
    for (int i = 0; i < D; ++i) acc = std::fma(element(record, i), q_t[i], acc);
    scores[j] = acc;
  }
}

// The records in order, one fma each.
void HalfCodec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                                   float* acc) const {
  for (int64_t j = 0; j < n; ++j)
    for (int i = 0; i < D; ++i)
      acc[i] = std::fma(weights[j], element(records + j * 2 * D, i), acc[i]);
}

void HalfCodec::finish_output(const float* acc, int D, float* out) const {
  std::copy(acc, acc + D, out);
}

}  // namespace tessera
