#include "plugins/compressor_identity/identity_codec.h"

#include <cstring>

namespace tessera {

IdentityCodec::IdentityCodec(const OptionValues& /*options*/) {}

std::size_t IdentityCodec::encoded_bytes(int64_t n_vectors, int head_dim) const {
  return static_cast<std::size_t>(n_vectors) * static_cast<std::size_t>(head_dim) * sizeof(float);
}

double IdentityCodec::bits_per_vector(int head_dim) const {
  return 32.0 * head_dim;
}

void IdentityCodec::encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const {
  // memcpy, not a cast: dst need not be float-aligned. (memcpy of 0 bytes
  // from a null pointer is undefined, hence the guard.)
  const std::size_t bytes = encoded_bytes(n_vectors, head_dim);
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void IdentityCodec::decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const {
  const std::size_t bytes = encoded_bytes(n_vectors, head_dim);
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

}  // namespace tessera
