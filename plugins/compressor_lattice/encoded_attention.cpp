// Attention on lattice records. Codes of at most 63 bits (every D4 setting,
// box-mode E8 up to Q = 116) go through the CodeUnpacker, a tile of records at
// a time, with the arithmetic of the plain loops below, so the results are the
// same floats; wider codes take the plain loops over RecordFormat::unpack.
#include <algorithm>
#include <cstring>

#include "plugins/compressor_lattice/hadamard.h"
#include "plugins/compressor_lattice/lattice_codec.h"

namespace tessera {
namespace {

using lattice::CodeUnpacker;

// Records scored together: one SIMD lane each in the dot products.
constexpr int kTile = 8;

// The largest record the unpacker reads: head_dim kMaxHeadDim in blocks of 4,
// codes of at most 63 bits, plus the two halves.
constexpr std::size_t kMaxFastRecord =
    (lattice::kMaxHeadDim / 4 * CodeUnpacker::kMaxBits + 7) / 8 + 4;

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

// Four lanes: the narrowest SIMD registers (SSE2, NEON), so the sums stay in
// registers; a tile is two of them.
typedef float FloatLanes __attribute__((vector_size(4 * sizeof(float))));
typedef int32_t IntLanes __attribute__((vector_size(4 * sizeof(int32_t))));

// Decodes the blocks of the tile's count records: coordinate i of record t
// goes to coords[t · record_stride + i · coord_stride].
template <CodeUnpacker::Layout kLayout>
void unpack_tile(const CodeUnpacker& shared, const uint8_t* tile, int count,
                 std::size_t record_bytes, int head_dim, int32_t* coords, int record_stride,
                 int coord_stride) {
  const CodeUnpacker unpacker = shared;  // a local copy: its fields stay in registers
  const int dim = unpacker.block_dim();
  const int bits = unpacker.bits();
  for (int t = 0; t < count; ++t) {
    const uint8_t* record = tile + t * record_bytes;
    int32_t* out = coords + t * record_stride;
    for (int start = 0, bit = 0; start < head_dim; start += dim, bit += bits)
      unpacker.decode<kLayout>(unpacker.read(record, bit), out + start * coord_stride,
                               coord_stride);
  }
}

// scale[t] = coordinate_scale of record t of the tile, for t < kTile (records
// past count are read as zero halves). A loop over the tile, so it vectorises.
void tile_scales(const LatticeCodec& codec, const uint8_t* tile, int count,
                 std::size_t record_bytes, std::size_t payload, float* scale) {
  lattice::RecordScalars scalars[kTile] = {};
  for (int t = 0; t < count; ++t)
    scalars[t] = lattice::RecordFormat::scalars_at(tile + t * record_bytes + payload);
  for (int t = 0; t < kTile; ++t) scale[t] = codec.quantizer().coordinate_scale(scalars[t]);
}

template <CodeUnpacker::Layout kLayout>
void dot_fast(const LatticeCodec& codec, const float* q_t, const uint8_t* records, int64_t n, int D,
              float* scores) {
  const CodeUnpacker& unpacker = *codec.format().unpacker();
  const std::size_t payload = codec.format().payload_bytes(D);
  const std::size_t record_bytes = codec.format().record_bytes(D);
  for_each_tile(records, n, record_bytes, payload,
                [&](const uint8_t* tile, int64_t first, int count) {
                  // Coordinate-major: coordinate i of the kTile records is one lane vector.
                  alignas(sizeof(IntLanes)) int32_t coords[lattice::kMaxHeadDim * kTile];
                  if (count < kTile) std::fill_n(coords, D * kTile, 0);
                  unpack_tile<kLayout>(unpacker, tile, count, record_bytes, D, coords, 1, kTile);
                  float scale[kTile];
                  tile_scales(codec, tile, count, record_bytes, payload, scale);
                  // Per record, the plain loop's sum in the plain loop's order.
                  FloatLanes low = {};
                  FloatLanes high = {};
                  for (int i = 0; i < D; ++i) {
                    IntLanes c_low;
                    IntLanes c_high;
                    std::memcpy(&c_low, coords + i * kTile, sizeof(c_low));
                    std::memcpy(&c_high, coords + i * kTile + 4, sizeof(c_high));
                    low += q_t[i] * __builtin_convertvector(c_low, FloatLanes);
                    high += q_t[i] * __builtin_convertvector(c_high, FloatLanes);
                  }
                  float dot[kTile];
                  std::memcpy(dot, &low, sizeof(low));
                  std::memcpy(dot + 4, &high, sizeof(high));
                  for (int t = 0; t < count; ++t) scores[first + t] = dot[t] * scale[t];
                });
}

template <CodeUnpacker::Layout kLayout>
void accumulate_fast(const LatticeCodec& codec, const float* weights, const uint8_t* records,
                     int64_t n, int D, float* acc) {
  const CodeUnpacker& unpacker = *codec.format().unpacker();
  const std::size_t payload = codec.format().payload_bytes(D);
  const std::size_t record_bytes = codec.format().record_bytes(D);
  for_each_tile(records, n, record_bytes, payload,
                [&](const uint8_t* tile, int64_t first, int count) {
                  // Record-major: each record's coordinates in a row.
                  int32_t coords[lattice::kMaxHeadDim * kTile];
                  unpack_tile<kLayout>(unpacker, tile, count, record_bytes, D, coords, D, 1);
                  float scale[kTile];
                  tile_scales(codec, tile, count, record_bytes, payload, scale);
                  for (int t = 0; t < count; ++t) {
                    const float factor = weights[first + t] * scale[t];
                    const int32_t* row = coords + t * D;
                    for (int i = 0; i < D; ++i) acc[i] += factor * static_cast<float>(row[i]);
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
  if (n == 0) return;
  check_or_abort(D);
  if (const lattice::CodeUnpacker* unpacker = format_.unpacker()) {
    unpacker->with_layout(
        [&](auto layout) { dot_fast<decltype(layout)::value>(*this, q_t, records, n, D, scores); });
    return;
  }
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    float dot = 0.0f;
    for (int i = 0; i < D; ++i) dot += q_t[i] * static_cast<float>(coords[i]);
    scores[j] = dot * quantizer_.coordinate_scale(scalars);
  }
}

void LatticeCodec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n,
                                      int D, float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  if (const lattice::CodeUnpacker* unpacker = format_.unpacker()) {
    unpacker->with_layout([&](auto layout) {
      accumulate_fast<decltype(layout)::value>(*this, weights, records, n, D, acc);
    });
    return;
  }
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    const float factor = weights[j] * quantizer_.coordinate_scale(scalars);
    for (int i = 0; i < D; ++i) acc[i] += factor * static_cast<float>(coords[i]);
  }
}

void LatticeCodec::finish_output(const float* acc, int D, float* out) const {
  check_or_abort(D);
  std::copy(acc, acc + D, out);
  lattice::hadamard_rotate(out, D);
}

}  // namespace tessera
