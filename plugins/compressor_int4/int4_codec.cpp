#include "plugins/compressor_int4/int4_codec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "core/tensor/dtype.h"
#include "core/tensor/half.h"
#include "core/tensor/vector_lanes.h"
#include "plugins/compressor_int8/symmetric_scale.h"

namespace tessera {
namespace {

constexpr int kLevels = 7;
constexpr int kNibbleOffset = 8;

std::size_t code_bytes(int head_dim) {
  return static_cast<std::size_t>(head_dim) / 2;
}

int32_t code_at(const uint8_t* codes, int i) {
  const uint8_t byte = codes[i / 2];
  const int nibble = (i & 1) ? (byte >> 4) : (byte & 0x0F);
  return nibble - kNibbleOffset;
}

// The two codes of each byte value as floats, low nibble first: a byte
// becomes two elements with one lookup.
constexpr std::array<std::array<float, 2>, 256> kBytePairs = [] {
  std::array<std::array<float, 2>, 256> pairs{};
  for (int b = 0; b < 256; ++b)
    pairs[b] = {static_cast<float>((b & 0x0F) - kNibbleOffset),
                static_cast<float>((b >> 4) - kNibbleOffset)};
  return pairs;
}();

// Group g's scale, inline (attention reads one per group and record); the
// same value as half_to_float.
float group_scale(const uint8_t* scales, int g) {
  return f16_to_f32(symmetric::get_half(scales + 2 * g));
}

// Records scored together, one vector lane each: per record, the plain loop's
// sums in the plain loop's order, kTile records at a time.
constexpr int kTile = kLaneTile;

// scores[t] for the kTile records from `records` on, record_bytes apart.
void dot_tile(const float* q, const uint8_t* records, std::size_t record_bytes, int head_dim,
              int group, float* scores) {
  const auto byte = [&](int t, int i) {
    return static_cast<int32_t>(records[t * record_bytes + static_cast<std::size_t>(i / 2)]);
  };
  const auto scale = [&](int t, int g) {
    return group_scale(records + t * record_bytes + code_bytes(head_dim), g);
  };
  FloatLanes score_low = {};
  FloatLanes score_high = {};
  for (int start = 0, g = 0; start < head_dim; start += group, ++g) {
    FloatLanes dot_low = {};
    FloatLanes dot_high = {};
    for (int i = start; i < start + group; ++i) {
      // Element i is the low nibble of byte i / 2 when i is even, else the high one.
      const int shift = (i & 1) * 4;
      const IntLanes b_low = {byte(0, i), byte(1, i), byte(2, i), byte(3, i)};
      const IntLanes b_high = {byte(4, i), byte(5, i), byte(6, i), byte(7, i)};
      const IntLanes c_low = ((b_low >> shift) & 0x0F) - kNibbleOffset;
      const IntLanes c_high = ((b_high >> shift) & 0x0F) - kNibbleOffset;
      dot_low += q[i] * __builtin_convertvector(c_low, FloatLanes);
      dot_high += q[i] * __builtin_convertvector(c_high, FloatLanes);
    }
    const FloatLanes s_low = {scale(0, g), scale(1, g), scale(2, g), scale(3, g)};
    const FloatLanes s_high = {scale(4, g), scale(5, g), scale(6, g), scale(7, g)};
    score_low += dot_low * s_low;
    score_high += dot_high * s_high;
  }
  for (int t = 0; t < 4; ++t) {
    scores[t] = score_low[t];
    scores[t + 4] = score_high[t];
  }
}

int group_size_from(const OptionValues& options) {
  const int64_t g = options.get_int("group_size");
  if (g < 1 || g > Int4Codec::kMaxGroupSize)
    throw std::invalid_argument("int4 codec: group_size must be in [1, 1024], not " +
                                std::to_string(g));
  return static_cast<int>(g);
}

}  // namespace

Int4Codec::Int4Codec(int group_size) : group_size_(group_size) {
  TESSERA_CHECK(group_size >= 1 && group_size <= kMaxGroupSize,
                "int4 codec: group_size must be in [1, 1024]");
}

Int4Codec::Int4Codec(const OptionValues& options) : Int4Codec(group_size_from(options)) {}

int Int4Codec::effective_group_size(int head_dim) const {
  return std::min(group_size_, head_dim);
}

std::string Int4Codec::group_size_note(int head_dim) const {
  if (group_size_ <= head_dim) return "";
  return "int4 codec: group_size " + std::to_string(group_size_) + " > head_dim " +
         std::to_string(head_dim) + ": group size clamped to head_dim " + std::to_string(head_dim);
}

Status Int4Codec::check_head_dim(int head_dim) const {
  const bool even = head_dim >= 2 && head_dim % 2 == 0;
  // Attention checks on every call: build no message when all is well.
  if (even && head_dim % effective_group_size(head_dim) == 0) return ok_status();
  const std::string who = "int4 codec: head_dim " + std::to_string(head_dim);
  if (!even) return invalid_argument(who + " must be positive and even (two codes per byte)");
  const int group = effective_group_size(head_dim);
  if (head_dim % group != 0)
    return invalid_argument(who + " is not a multiple of group_size " + std::to_string(group) +
                            "; pick a group_size that divides it");
  return ok_status();
}

KVRecordLayout Int4Codec::record_layout(int head_dim) const {
  if (!check_head_dim(head_dim).ok()) return {};
  return {KVRecordFormat::kInt4Symmetric, head_dim, effective_group_size(head_dim)};
}

void Int4Codec::check_or_abort(int head_dim) const {
  const Status status = check_head_dim(head_dim);
  TESSERA_CHECK(status.ok(), status.message());
}

std::size_t Int4Codec::encoded_bytes(int64_t n_vectors, int head_dim) const {
  if (head_dim <= 0) return 0;  // refused by check_head_dim; no division by zero here
  const auto groups = static_cast<std::size_t>(head_dim / effective_group_size(head_dim));
  return static_cast<std::size_t>(n_vectors) * (code_bytes(head_dim) + 2 * groups);
}

double Int4Codec::bits_per_vector(int head_dim) const {
  if (head_dim <= 0) return 0.0;
  return 4.0 * head_dim + 16.0 * (head_dim / effective_group_size(head_dim));
}

void Int4Codec::encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  const int group = effective_group_size(head_dim);
  const std::size_t record_bytes = encoded_bytes(1, head_dim);
  for (int64_t v = 0; v < n_vectors; ++v) {
    const float* x = src + v * head_dim;
    uint8_t* codes = dst + static_cast<std::size_t>(v) * record_bytes;
    uint8_t* scales = codes + code_bytes(head_dim);
    std::fill(codes, codes + code_bytes(head_dim), uint8_t{0});
    int8_t group_codes[kMaxGroupSize];  // staged on the stack: a step never allocates
    for (int start = 0; start < head_dim; start += group) {
      const uint16_t scale16 =
          symmetric::scale_half(symmetric::max_abs_or_nan(x + start, group), kLevels);
      symmetric::quantize(x + start, group, half_to_float(scale16), kLevels, group_codes);
      for (int i = 0; i < group; ++i) {
        const auto nibble = static_cast<uint8_t>(group_codes[i] + kNibbleOffset);
        const int at = start + i;
        codes[at / 2] |= (at & 1) ? static_cast<uint8_t>(nibble << 4) : nibble;
      }
      symmetric::put_half(scale16, scales + 2 * (start / group));
    }
  }
}

void Int4Codec::decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  const int group = effective_group_size(head_dim);
  const std::size_t record_bytes = encoded_bytes(1, head_dim);
  for (int64_t v = 0; v < n_vectors; ++v) {
    const uint8_t* codes = src + static_cast<std::size_t>(v) * record_bytes;
    const uint8_t* scales = codes + code_bytes(head_dim);
    float* x = dst + v * head_dim;
    for (int start = 0; start < head_dim; start += group) {
      const float scale = half_to_float(symmetric::get_half(scales + 2 * (start / group)));
      for (int i = start; i < start + group; ++i)
        x[i] = static_cast<float>(code_at(codes, i)) * scale;
    }
  }
}

void Int4Codec::transform_query(const float* q, int D, float* q_out) const {
  std::copy(q, q + D, q_out);
}

void Int4Codec::dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                            float* scores) const {
  if (n == 0) return;
  check_or_abort(D);
  const int group = effective_group_size(D);
  const std::size_t record_bytes = encoded_bytes(1, D);
  int64_t j = 0;
  for (; j + kTile <= n; j += kTile)
    dot_tile(q_t, records + static_cast<std::size_t>(j) * record_bytes, record_bytes, D, group,
             scores + j);
  for (; j < n; ++j) {
    const uint8_t* codes = records + static_cast<std::size_t>(j) * record_bytes;
    const uint8_t* scales = codes + code_bytes(D);
    float score = 0.0f;
    for (int start = 0; start < D; start += group) {
      float dot = 0.0f;
      for (int i = start; i < start + group; ++i)
        dot += q_t[i] * static_cast<float>(code_at(codes, i));
      score += dot * group_scale(scales, start / group);
    }
    scores[j] = score;
  }
}

void Int4Codec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                                   float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  const int group = effective_group_size(D);
  const std::size_t record_bytes = encoded_bytes(1, D);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* codes = records + static_cast<std::size_t>(j) * record_bytes;
    const uint8_t* scales = codes + code_bytes(D);
    for (int start = 0; start < D; start += group) {
      const float factor = weights[j] * group_scale(scales, start / group);
      if (group % 8 == 0) {
        // Four bytes, eight elements, two vectors at a time: no per-element
        // branch, and the loop vectorises.
        const FloatLanes f = {factor, factor, factor, factor};
        for (int i = start; i < start + group; i += 8) {
          const uint8_t* b = codes + i / 2;
          const FloatLanes low = {kBytePairs[b[0]][0], kBytePairs[b[0]][1], kBytePairs[b[1]][0],
                                  kBytePairs[b[1]][1]};
          const FloatLanes high = {kBytePairs[b[2]][0], kBytePairs[b[2]][1], kBytePairs[b[3]][0],
                                   kBytePairs[b[3]][1]};
          FloatLanes acc_low;
          FloatLanes acc_high;
          std::memcpy(&acc_low, acc + i, sizeof(acc_low));
          std::memcpy(&acc_high, acc + i + 4, sizeof(acc_high));
          acc_low += f * low;
          acc_high += f * high;
          std::memcpy(acc + i, &acc_low, sizeof(acc_low));
          std::memcpy(acc + i + 4, &acc_high, sizeof(acc_high));
        }
      } else {
        for (int i = start; i < start + group; ++i)
          acc[i] += factor * static_cast<float>(code_at(codes, i));
      }
    }
  }
}

void Int4Codec::finish_output(const float* acc, int D, float* out) const {
  std::copy(acc, acc + D, out);
}

}  // namespace tessera
