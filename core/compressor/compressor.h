// A KV codec: turns runs of K or V vectors into bytes and back. Stateless and
// deterministic, so the same input always encodes to the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Compressor : public PluginObject {
 public:
  // Whether the codec can store vectors of head_dim floats (a lattice codec
  // needs a power of two); the message names head_dim and what would work.
  virtual Status supports(int head_dim) const {
    (void)head_dim;
    return ok_status();
  }
  // Bytes needed to store n vectors of head_dim floats.
  virtual std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const = 0;
  // Storage cost of one vector, in bits (for reports).
  virtual double bits_per_vector(int head_dim) const = 0;
  // True when decode(encode(x)) == x bit for bit and the bytes are the floats
  // themselves, so a cache may hand out its storage as f32 without decoding.
  virtual bool stores_raw_f32() const { return false; }
  // src: n_vectors * head_dim floats; dst: encoded_bytes(n_vectors, head_dim) bytes.
  virtual void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const = 0;
  virtual void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const = 0;
};

}  // namespace tessera
