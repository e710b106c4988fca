#include "plugins/compressor_int8/int8_codec.h"

#include <algorithm>
#include <string>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"
#include "plugins/compressor_int8/symmetric_scale.h"

namespace tessera {
namespace {

constexpr int kLevels = 127;

// 0 for head_dim <= 0 (which check_head_dim refuses).
std::size_t record_bytes(int head_dim) {
  return head_dim <= 0 ? 0 : static_cast<std::size_t>(head_dim) + 2;
}

// Inline (attention reads one per record), the same value as half_to_float.
float record_scale(const uint8_t* record, int head_dim) {
  return f16_to_f32(symmetric::get_half(record + head_dim));
}

// Records scored together, one vector lane each: per record, the plain loop's
// sum in the plain loop's order, kTile records at a time. Two vectors of four
// lanes, each the width of the narrowest SIMD registers (SSE2, NEON), so the
// sums stay in registers.
constexpr int kTile = 8;
typedef float FloatLanes __attribute__((vector_size(4 * sizeof(float))));
typedef int32_t IntLanes __attribute__((vector_size(4 * sizeof(int32_t))));

// scores[t] = dot(q, codes of record t) · scale of record t for the kTile
// records from `records` on, `bytes` apart.
void dot_tile(const float* q, const uint8_t* records, std::size_t bytes, int head_dim,
              float* scores) {
  const auto code = [&](int t, int i) {
    return static_cast<int32_t>(static_cast<int8_t>(records[t * bytes + i]));
  };
  FloatLanes low = {};
  FloatLanes high = {};
  for (int i = 0; i < head_dim; ++i) {
    const IntLanes c_low = {code(0, i), code(1, i), code(2, i), code(3, i)};
    const IntLanes c_high = {code(4, i), code(5, i), code(6, i), code(7, i)};
    low += q[i] * __builtin_convertvector(c_low, FloatLanes);
    high += q[i] * __builtin_convertvector(c_high, FloatLanes);
  }
  for (int t = 0; t < 4; ++t) {
    scores[t] = low[t] * record_scale(records + t * bytes, head_dim);
    scores[t + 4] = high[t] * record_scale(records + (t + 4) * bytes, head_dim);
  }
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
  const std::size_t bytes = record_bytes(D);
  int64_t j = 0;
  for (; j + kTile <= n; j += kTile)
    dot_tile(q_t, records + static_cast<std::size_t>(j) * bytes, bytes, D, scores + j);
  for (; j < n; ++j) {
    const uint8_t* record = records + static_cast<std::size_t>(j) * bytes;
    float dot = 0.0f;
    for (int i = 0; i < D; ++i) dot += q_t[i] * static_cast<float>(static_cast<int8_t>(record[i]));
    scores[j] = dot * record_scale(record, D);
  }
}

void Int8Codec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                                   float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  const std::size_t bytes = record_bytes(D);
  for (int64_t j = 0; j < n; ++j) {
    const auto* codes =
        reinterpret_cast<const int8_t*>(records + static_cast<std::size_t>(j) * bytes);
    const float factor =
        weights[j] * record_scale(records + static_cast<std::size_t>(j) * bytes, D);
    for (int i = 0; i < D; ++i) acc[i] += factor * static_cast<float>(codes[i]);
  }
}

void Int8Codec::finish_output(const float* acc, int D, float* out) const {
  std::copy(acc, acc + D, out);
}

}  // namespace tessera
