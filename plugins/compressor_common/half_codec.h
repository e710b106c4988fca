// K/V as 16-bit floats, f16 or bf16: half of f32's memory and bandwidth, with
// a relative rounding error of at most 2^-11 (f16, normal range) or 2^-8
// (bf16). The records are kv_records.h's kF16 / kBF16: head_dim halves in
// element order, which a backend attends as they are stored (the CPU's
// attention converts them in registers: backends/cpu/visible_keys.h) with no
// decode of the context. f16 clamps to +-65504, so a large key stays finite
// (an inf key would turn every score of its query into NaN); bf16 has f32's
// range and needs none.
//
// The attention-on-records calls (Compressor) are plain loops, for a
// backend that reads neither format itself (the CPU reads the records as
// stored and gives the bits of attention over the decoded floats).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/compressor/compressor.h"
#include "core/plugin/options.h"
#include "core/status/status.h"

namespace tessera {

class HalfCodec : public Compressor {
 public:
  Status supports(int head_dim) const override;
  KVRecordLayout record_layout(int head_dim) const override {
    return {format_, head_dim, head_dim};
  }

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override;
  double bits_per_vector(int head_dim) const override { return 16.0 * head_dim; }
  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override;
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override;

  // The codec domain is the original one: the query and output are copied.
  bool attends_encoded() const override { return true; }
  void transform_query(const float* q, int D, float* q_out) const override;
  void dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                   float* scores) const override;
  void accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                          float* acc) const override;
  void finish_output(const float* acc, int D, float* out) const override;

 protected:
  explicit HalfCodec(KVRecordFormat format) : format_(format) {}

 private:
  float element(const uint8_t* record, int i) const;

  KVRecordFormat format_;  // kF16 or kBF16
};

class F16Codec final : public HalfCodec {
 public:
  F16Codec() : HalfCodec(KVRecordFormat::kF16) {}
  // The plugin factory's constructor; the codec has no options.
  explicit F16Codec(const OptionValues&) : F16Codec() {}
};

class Bf16Codec final : public HalfCodec {
 public:
  Bf16Codec() : HalfCodec(KVRecordFormat::kBF16) {}
  explicit Bf16Codec(const OptionValues&) : Bf16Codec() {}
};

}  // namespace tessera
