// Symmetric per-vector int8 KV codec, the 8-bit baseline (llama.cpp q8_0 with
// one block per vector): scale = max|x| / 127 as an fp16 (rounded up, see
// symmetric_scale.h), codes = round(x / scale) in [-127, 127].
//
// Record (D = head_dim): D int8 codes in element order, then the fp16 scale,
// little-endian: D + 2 bytes, 8·D + 16 bits. A vector with a NaN or inf
// element decodes to NaN.
//
// Attention on records needs no transform: scores are scale · Σ q·code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/compressor/compressor.h"
#include "core/plugin/options.h"
#include "core/status/status.h"

namespace tessera {

class Int8Codec final : public Compressor {
 public:
  Int8Codec() = default;
  // The plugin factory's constructor; the codec has no options.
  explicit Int8Codec(const OptionValues& options);

  // OK for any positive head_dim.
  Status check_head_dim(int head_dim) const;
  Status supports(int head_dim) const override { return check_head_dim(head_dim); }
  // The records are core/compressor/kv_records.h's kInt8Symmetric.
  KVRecordLayout record_layout(int head_dim) const override {
    return {KVRecordFormat::kInt8Symmetric, head_dim, head_dim};
  }

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override;
  double bits_per_vector(int head_dim) const override;
  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override;
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override;

  // Attention on records (same contract as LatticeCodec's; here the codec
  // domain is the original one, so the query and output are copied).
  bool attends_encoded() const override { return true; }
  void transform_query(const float* q, int D, float* q_out) const override;
  void dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                   float* scores) const override;
  void accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                          float* acc) const override;
  void finish_output(const float* acc, int D, float* out) const override;
  // Several query heads: each record is read and converted once for all.
  void dot_encoded_heads(const float* q_t, int n_heads, const uint8_t* records, int64_t n, int D,
                         float* scores) const override;
  void accumulate_encoded_heads(const float* weights, int n_heads, const uint8_t* records,
                                int64_t n, int D, float* acc) const override;

 private:
  void check_or_abort(int head_dim) const;
};

}  // namespace tessera
