// The identity KV codec: a vector of head_dim floats is stored as those floats
// (4 * head_dim bytes), so decode(encode(x)) == x bit for bit and a cache may
// hand out its storage as f32 views without decoding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/compressor/compressor.h"
#include "core/plugin/options.h"

namespace tessera {

class IdentityCodec final : public Compressor {
 public:
  IdentityCodec() = default;
  // The plugin factory's constructor; the codec has no options.
  explicit IdentityCodec(const OptionValues& options);

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override;
  double bits_per_vector(int head_dim) const override;
  bool stores_raw_f32() const override { return true; }
  KVRecordLayout record_layout(int head_dim) const override {
    return {KVRecordFormat::kF32, head_dim, head_dim};
  }
  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override;
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override;
};

}  // namespace tessera
