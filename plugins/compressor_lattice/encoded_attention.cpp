// Attention on lattice records. Codes of at most 63 bits (every D4 setting,
// box-mode E8 up to Q = 116) go through the CodeUnpacker, a tile of records at
// a time, with the arithmetic of the plain loops below, so the results are the
// same floats; wider codes take the plain loops over RecordFormat::unpack.
#include <algorithm>
#include <cstring>

#include "core/tensor/vector_lanes.h"
#include "plugins/compressor_lattice/hadamard.h"
#include "plugins/compressor_lattice/lattice_codec.h"

namespace tessera {
namespace {

using lattice::CodeUnpacker;

// Records scored together: one SIMD lane each in the dot products.
constexpr int kTile = kLaneTile;

// The largest record the unpacker reads.
constexpr std::size_t kMaxFastRecord =
    lattice::RecordFormat::kMaxUnpackerPayload + lattice::RecordFormat::kScalarBytes;

// Calls visit(tile_records, first, count) for consecutive tiles of at most
// kTile records, in order. A code read may load up to kReadBytes from its
// block's first byte on, which for the last record runs past the n records;
// the tiles that hold such records are read from a zero-padded copy.
template <typename Visit>
void for_each_tile(const uint8_t* records, int64_t n, std::size_t record_bytes,
                   std::size_t payload_bytes, Visit&& visit) {
  const auto reach = static_cast<int64_t>(payload_bytes - 1 + CodeUnpacker::kReadBytes);
  const auto bytes = static_cast<int64_t>(record_bytes);
  // Records j < direct have all their reads inside [records, records + n · bytes).
  const int64_t direct = n * bytes >= reach ? (n * bytes - reach) / bytes + 1 : 0;
  int64_t first = 0;
  for (; first + kTile <= std::min(direct, n); first += kTile)
    visit(records + first * bytes, first, kTile);
  alignas(8) uint8_t padded[kTile * kMaxFastRecord + CodeUnpacker::kReadBytes];
  for (; first < n; first += kTile) {
    const int count = static_cast<int>(std::min<int64_t>(kTile, n - first));
    const std::size_t size = static_cast<std::size_t>(count) * record_bytes;
    std::memcpy(padded, records + first * bytes, size);
    std::fill_n(padded + size, CodeUnpacker::kReadBytes, uint8_t{0});
    visit(static_cast<const uint8_t*>(padded), first, count);
  }
}

// Decodes the blocks of the tile's count records: coordinate i of record t
// goes to coords[t · record_stride + i · kCoordStride].
template <CodeUnpacker::Layout kLayout, int kCoordStride>
void unpack_tile(const CodeUnpacker& shared, const uint8_t* tile, int count,
                 std::size_t record_bytes, int head_dim, int32_t* coords, int record_stride) {
  const CodeUnpacker unpacker = shared;  // a local copy: its fields stay in registers
  const int dim = unpacker.block_dim();
  const int bits = unpacker.bits();
  // Block by block, so a block's byte offset and shift serve every record.
  for (int start = 0, bit = 0; start < head_dim; start += dim, bit += bits) {
    const uint8_t* at = tile + (bit >> 3);
    const int shift = bit & 7;
    int32_t* out = coords + start * kCoordStride;
    for (int t = 0; t < count; ++t)
      unpacker.decode<kLayout>(unpacker.read_at(at + t * record_bytes, shift),
                               out + t * record_stride, kCoordStride);
  }
}

// scale[t] = quantizer().coordinate_scale of record t of the tile for
// t < kTile (records past count are read as zero halves), four at a time.
void tile_scales(const LatticeCodec& codec, const uint8_t* tile, int count,
                 std::size_t record_bytes, std::size_t payload, float* scale) {
  uint32_t norm16[kTile] = {};
  uint32_t qmax16[kTile] = {};
  for (int t = 0; t < count; ++t) {
    const lattice::RecordScalars s =
        lattice::RecordFormat::scalars_at(tile + t * record_bytes + payload);
    norm16[t] = s.norm16;
    qmax16[t] = s.qmax16;
  }
  // Quantizer::coordinate_scale's arithmetic: unit · (qmax / Q) · norm.
  const float unit = codec.quantizer().coordinate_unit();
  const auto q = static_cast<float>(codec.config().q);
  for (int t = 0; t < kTile; t += 4) {
    UintLanes norm_bits;
    UintLanes qmax_bits;
    std::memcpy(&norm_bits, norm16 + t, sizeof(norm_bits));
    std::memcpy(&qmax_bits, qmax16 + t, sizeof(qmax_bits));
    const FloatLanes lanes = unit * (f16_to_f32_lanes(qmax_bits) / q) * f16_to_f32_lanes(norm_bits);
    std::memcpy(scale + t, &lanes, sizeof(lanes));
  }
}

// scores[h · n + j] for the n_heads queries q_t + h · D.
template <CodeUnpacker::Layout kLayout>
void dot_fast(const LatticeCodec& codec, const float* q_t, int n_heads, const uint8_t* records,
              int64_t n, int D, float* scores) {
  const CodeUnpacker& unpacker = *codec.format().unpacker();
  const std::size_t payload = codec.format().payload_bytes(D);
  const std::size_t record_bytes = codec.format().record_bytes(D);
  for_each_tile(records, n, record_bytes, payload,
                [&](const uint8_t* tile, int64_t first, int count) {
                  // Coordinate-major: coordinate i of the kTile records is one lane
                  // vector. Unpacked once for every head.
                  alignas(sizeof(IntLanes)) int32_t coords[lattice::kMaxHeadDim * kTile];
                  if (count < kTile) std::fill_n(coords, D * kTile, 0);
                  unpack_tile<kLayout, kTile>(unpacker, tile, count, record_bytes, D, coords, 1);
                  float scale[kTile];
                  tile_scales(codec, tile, count, record_bytes, payload, scale);
                  for (int h = 0; h < n_heads; ++h) {
                    const float* q = q_t + static_cast<std::ptrdiff_t>(h) * D;
                    // Per record, the plain loop's sum in the plain loop's order.
                    FloatLanes low = {};
                    FloatLanes high = {};
                    for (int i = 0; i < D; ++i) {
                      IntLanes c_low;
                      IntLanes c_high;
                      std::memcpy(&c_low, coords + i * kTile, sizeof(c_low));
                      std::memcpy(&c_high, coords + i * kTile + 4, sizeof(c_high));
                      low += q[i] * __builtin_convertvector(c_low, FloatLanes);
                      high += q[i] * __builtin_convertvector(c_high, FloatLanes);
                    }
                    float dot[kTile];
                    std::memcpy(dot, &low, sizeof(low));
                    std::memcpy(dot + 4, &high, sizeof(high));
                    float* out = scores + h * n + first;
                    for (int t = 0; t < count; ++t) out[t] = dot[t] * scale[t];
                  }
                });
}

// acc + h · D += Σ_j weights[h · n + j] · coords of record j · its scale.
template <CodeUnpacker::Layout kLayout>
void accumulate_fast(const LatticeCodec& codec, const float* weights, int n_heads,
                     const uint8_t* records, int64_t n, int D, float* acc) {
  const CodeUnpacker& unpacker = *codec.format().unpacker();
  const std::size_t payload = codec.format().payload_bytes(D);
  const std::size_t record_bytes = codec.format().record_bytes(D);
  for_each_tile(records, n, record_bytes, payload,
                [&](const uint8_t* tile, int64_t first, int count) {
                  // Record-major: each record's coordinates in a row, unpacked once
                  // for every head.
                  int32_t coords[lattice::kMaxHeadDim * kTile];
                  unpack_tile<kLayout, 1>(unpacker, tile, count, record_bytes, D, coords, D);
                  float scale[kTile];
                  tile_scales(codec, tile, count, record_bytes, payload, scale);
                  for (int h = 0; h < n_heads; ++h) {
                    float factor[kTile];
                    for (int t = 0; t < count; ++t)
                      factor[t] = weights[h * n + first + t] * scale[t];
                    float* a = acc + static_cast<std::ptrdiff_t>(h) * D;
                    // Four sums at a time kept in a register across the tile's
                    // records, each taking them in order, as the plain loop does.
                    for (int i = 0; i < D; i += 4) {
                      FloatLanes sum;
                      std::memcpy(&sum, a + i, sizeof(sum));
                      for (int t = 0; t < count; ++t) {
                        IntLanes c;
                        std::memcpy(&c, coords + t * D + i, sizeof(c));
                        sum += factor[t] * __builtin_convertvector(c, FloatLanes);
                      }
                      std::memcpy(a + i, &sum, sizeof(sum));
                    }
                  }
                });
}

}  // namespace

void LatticeCodec::transform_query(const float* q, int D, float* q_out) const {
  check_or_abort(D);
  std::copy(q, q + D, q_out);
  lattice::hadamard_rotate(q_out, D);
}

void LatticeCodec::dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                               float* scores) const {
  dot_encoded_heads(q_t, 1, records, n, D, scores);
}

void LatticeCodec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n,
                                      int D, float* acc) const {
  accumulate_encoded_heads(weights, 1, records, n, D, acc);
}

void LatticeCodec::dot_encoded_heads(const float* q_t, int n_heads, const uint8_t* records,
                                     int64_t n, int D, float* scores) const {
  if (n == 0 || n_heads == 0) return;
  check_or_abort(D);
  if (const lattice::CodeUnpacker* unpacker = format_.unpacker()) {
    unpacker->with_layout([&](auto layout) {
      dot_fast<decltype(layout)::value>(*this, q_t, n_heads, records, n, D, scores);
    });
    return;
  }
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    const float scale = quantizer_.coordinate_scale(scalars);
    for (int h = 0; h < n_heads; ++h) {
      const float* q = q_t + static_cast<std::ptrdiff_t>(h) * D;
      float dot = 0.0f;
      for (int i = 0; i < D; ++i) dot += q[i] * static_cast<float>(coords[i]);
      scores[h * n + j] = dot * scale;
    }
  }
}

void LatticeCodec::accumulate_encoded_heads(const float* weights, int n_heads,
                                            const uint8_t* records, int64_t n, int D,
                                            float* acc) const {
  if (n == 0 || n_heads == 0) return;
  check_or_abort(D);
  if (const lattice::CodeUnpacker* unpacker = format_.unpacker()) {
    unpacker->with_layout([&](auto layout) {
      accumulate_fast<decltype(layout)::value>(*this, weights, n_heads, records, n, D, acc);
    });
    return;
  }
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    const float scale = quantizer_.coordinate_scale(scalars);
    for (int h = 0; h < n_heads; ++h) {
      const float factor = weights[h * n + j] * scale;
      float* a = acc + static_cast<std::ptrdiff_t>(h) * D;
      for (int i = 0; i < D; ++i) a[i] += factor * static_cast<float>(coords[i]);
    }
  }
}

void LatticeCodec::finish_output(const float* acc, int D, float* out) const {
  check_or_abort(D);
  std::copy(acc, acc + D, out);
  lattice::hadamard_rotate(out, D);
}

}  // namespace tessera
