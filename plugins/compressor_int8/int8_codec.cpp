#include "plugins/compressor_int8/int8_codec.h"

#include <algorithm>
#include <string>

#include "core/tensor/dtype.h"
#include "plugins/compressor_int8/symmetric_scale.h"

namespace tessera {
namespace {

constexpr int kLevels = 127;

// 0 for head_dim <= 0 (which check_head_dim refuses).
std::size_t record_bytes(int head_dim) {
  return head_dim <= 0 ? 0 : static_cast<std::size_t>(head_dim) + 2;
}

float record_scale(const uint8_t* record, int head_dim) {
  return half_to_float(symmetric::get_half(record + head_dim));
}

}  // namespace

Int8Codec::Int8Codec(const OptionValues& /*options*/) {}

Status Int8Codec::check_head_dim(int head_dim) const {
  if (head_dim < 1)
    return invalid_argument("int8 codec: head_dim " + std::to_string(head_dim) +
                            " must be positive");
  return ok_status();
}

void Int8Codec::check_or_abort(int head_dim) const {
  const Status status = check_head_dim(head_dim);
  TESSERA_CHECK(status.ok(), status.message());
}

std::size_t Int8Codec::encoded_bytes(int64_t n_vectors, int head_dim) const {
  return static_cast<std::size_t>(n_vectors) * record_bytes(head_dim);
}

double Int8Codec::bits_per_vector(int head_dim) const {
  return 8.0 * head_dim + 16.0;
}

void Int8Codec::encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  for (int64_t v = 0; v < n_vectors; ++v) {
    const float* x = src + v * head_dim;
    uint8_t* record = dst + static_cast<std::size_t>(v) * record_bytes(head_dim);
    const uint16_t scale16 = symmetric::scale_half(symmetric::max_abs_or_nan(x, head_dim), kLevels);
    symmetric::quantize(x, head_dim, half_to_float(scale16), kLevels,
                        reinterpret_cast<int8_t*>(record));
    symmetric::put_half(scale16, record + head_dim);
  }
}

void Int8Codec::decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  for (int64_t v = 0; v < n_vectors; ++v) {
    const uint8_t* record = src + static_cast<std::size_t>(v) * record_bytes(head_dim);
    const float scale = record_scale(record, head_dim);
    float* x = dst + v * head_dim;
    for (int i = 0; i < head_dim; ++i)
      x[i] = static_cast<float>(static_cast<int8_t>(record[i])) * scale;
  }
}

void Int8Codec::transform_query(const float* q, int D, float* q_out) const {
  std::copy(q, q + D, q_out);
}

void Int8Codec::dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                            float* scores) const {
  if (n == 0) return;
  check_or_abort(D);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* record = records + static_cast<std::size_t>(j) * record_bytes(D);
    float dot = 0.0f;
    for (int i = 0; i < D; ++i) dot += q_t[i] * static_cast<float>(static_cast<int8_t>(record[i]));
    scores[j] = dot * record_scale(record, D);
  }
}

void Int8Codec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                                   float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* record = records + static_cast<std::size_t>(j) * record_bytes(D);
    const float factor = weights[j] * record_scale(record, D);
    for (int i = 0; i < D; ++i)
      acc[i] += factor * static_cast<float>(static_cast<int8_t>(record[i]));
  }
}

void Int8Codec::finish_output(const float* acc, int D, float* out) const {
  std::copy(acc, acc + D, out);
}

}  // namespace tessera
