#include "plugins/compressor_int8/int8_codec.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"
#include "core/tensor/vector_lanes.h"
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
// sum in the plain loop's order, kTile records at a time.
constexpr int kTile = kLaneTile;

// Query heads scored together on a tile: the codes are read and converted
// once for all of them. Up to 4, so every sum stays in a register.
constexpr int kHeadsPerPass = 4;

// scores[h · n + t] = dot(q + h · head_dim, codes of record t) · its scale
// for h < kHeads and the kTile records from `records` on, `bytes` apart.
template <int kHeads>
void dot_tile(const float* q, const uint8_t* records, std::size_t bytes, int head_dim, int64_t n,
              float* scores) {
  const auto code = [&](int t, int i) {
    return static_cast<int32_t>(static_cast<int8_t>(records[t * bytes + i]));
  };
  FloatLanes low[kHeads] = {};
  FloatLanes high[kHeads] = {};
  for (int i = 0; i < head_dim; ++i) {
    const IntLanes c_low = {code(0, i), code(1, i), code(2, i), code(3, i)};
    const IntLanes c_high = {code(4, i), code(5, i), code(6, i), code(7, i)};
    const FloatLanes f_low = __builtin_convertvector(c_low, FloatLanes);
    const FloatLanes f_high = __builtin_convertvector(c_high, FloatLanes);
    for (int h = 0; h < kHeads; ++h) {
      low[h] += q[h * head_dim + i] * f_low;
      high[h] += q[h * head_dim + i] * f_high;
    }
  }
  for (int t = 0; t < 4; ++t) {
    const float scale_low = record_scale(records + t * bytes, head_dim);
    const float scale_high = record_scale(records + (t + 4) * bytes, head_dim);
    for (int h = 0; h < kHeads; ++h) {
      scores[h * n + t] = low[h][t] * scale_low;
      scores[h * n + t + 4] = high[h][t] * scale_high;
    }
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
  dot_encoded_heads(q_t, 1, records, n, D, scores);
}

void Int8Codec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                                   float* acc) const {
  accumulate_encoded_heads(weights, 1, records, n, D, acc);
}

void Int8Codec::dot_encoded_heads(const float* q_t, int n_heads, const uint8_t* records, int64_t n,
                                  int D, float* scores) const {
  if (n == 0) return;
  check_or_abort(D);
  const std::size_t bytes = record_bytes(D);
  for (int first_head = 0; first_head < n_heads; first_head += kHeadsPerPass) {
    const int heads = std::min(kHeadsPerPass, n_heads - first_head);
    const float* q = q_t + static_cast<std::ptrdiff_t>(first_head) * D;
    float* out = scores + first_head * n;
    int64_t j = 0;
    for (; j + kTile <= n; j += kTile) {
      const uint8_t* tile = records + static_cast<std::size_t>(j) * bytes;
      switch (heads) {
        case 1:
          dot_tile<1>(q, tile, bytes, D, n, out + j);
          break;
        case 2:
          dot_tile<2>(q, tile, bytes, D, n, out + j);
          break;
        case 3:
          dot_tile<3>(q, tile, bytes, D, n, out + j);
          break;
        default:
          dot_tile<4>(q, tile, bytes, D, n, out + j);
          break;
      }
    }
    for (; j < n; ++j) {
      const uint8_t* record = records + static_cast<std::size_t>(j) * bytes;
      for (int h = 0; h < heads; ++h) {
        float dot = 0.0f;
        for (int i = 0; i < D; ++i)
          dot += q[h * D + i] * static_cast<float>(static_cast<int8_t>(record[i]));
        out[h * n + j] = dot * record_scale(record, D);
      }
    }
  }
}

void Int8Codec::accumulate_encoded_heads(const float* weights, int n_heads, const uint8_t* records,
                                         int64_t n, int D, float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  const std::size_t bytes = record_bytes(D);
  const auto code = [&](int64_t j, int i) {
    return static_cast<int32_t>(
        static_cast<int8_t>(records[static_cast<std::size_t>(j) * bytes + i]));
  };
  int64_t j = 0;
  // Tiles of kTile records: four output sums at a time stay in a register
  // across the tile, each taking the records in order, as the plain loop does.
  for (; j + kTile <= n; j += kTile) {
    float scale[kTile];
    for (int t = 0; t < kTile; ++t)
      scale[t] = record_scale(records + static_cast<std::size_t>(j + t) * bytes, D);
    for (int h = 0; h < n_heads; ++h) {
      float factor[kTile];
      for (int t = 0; t < kTile; ++t) factor[t] = weights[h * n + j + t] * scale[t];
      float* a = acc + static_cast<std::ptrdiff_t>(h) * D;
      int i = 0;
      for (; i + 4 <= D; i += 4) {
        FloatLanes sum;
        std::memcpy(&sum, a + i, sizeof(sum));
        for (int t = 0; t < kTile; ++t) {
          const IntLanes c = {code(j + t, i), code(j + t, i + 1), code(j + t, i + 2),
                              code(j + t, i + 3)};
          sum += factor[t] * __builtin_convertvector(c, FloatLanes);
        }
        std::memcpy(a + i, &sum, sizeof(sum));
      }
      for (; i < D; ++i)
        for (int t = 0; t < kTile; ++t) a[i] += factor[t] * static_cast<float>(code(j + t, i));
    }
  }
  for (; j < n; ++j) {
    const float scale = record_scale(records + static_cast<std::size_t>(j) * bytes, D);
    for (int h = 0; h < n_heads; ++h) {
      const float factor = weights[h * n + j] * scale;
      float* a = acc + static_cast<std::ptrdiff_t>(h) * D;
      for (int i = 0; i < D; ++i) a[i] += factor * static_cast<float>(code(j, i));
    }
  }
}

void Int8Codec::finish_output(const float* acc, int D, float* out) const {
  std::copy(acc, acc + D, out);
}

}  // namespace tessera
