// What every cache store needs to know of the per-layer codecs: the bytes of
// one encoded vector (head_dim floats, or a token's kv_heads * head_dim when
// geometry.heads_per_vector says so), whether the bytes are the floats
// themselves, and what one token costs across the model. Checked once, at
// init.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/compressor/compressor.h"
#include "core/status/status.h"

namespace tessera {

class CodecLayout {
 public:
  // Requires per-vector codecs (encoded_bytes(n, w) == n * encoded_bytes(1, w),
  // the encoding of a run being its vectors' encodings one after another):
  // stores keep each vector at a slot of its own. `store` names the store in
  // messages.
  Status init(const CacheGeometry& geometry, std::span<const Compressor* const> codecs,
              const std::string& store);
  bool ready() const { return !codecs_.empty(); }

  const CacheGeometry& geometry() const { return geometry_; }
  const Compressor& codec(int layer) const { return *codecs_[index(layer)]; }
  std::size_t vector_bytes(int layer) const { return vector_bytes_[index(layer)]; }
  bool raw(int layer) const { return raw_[index(layer)]; }
  // Codec vectors per token and K or V (kv_heads, or 1 for one per token),
  // and the kv heads each holds.
  int vectors_per_token() const { return geometry_.vectors_per_token(); }
  int heads_per_vector() const { return geometry_.heads_per_vector; }
  // Whether some layer decodes into a scratch buffer to be viewed.
  bool any_encoded() const { return any_encoded_; }
  // Bytes of one token's K and V over every layer (without its position).
  std::size_t token_bytes() const { return token_bytes_; }
  // Where layer l starts in a token-major slab, in bytes per slot.
  std::size_t layer_start(int layer) const { return layer_start_[index(layer)]; }

 private:
  static std::size_t index(int layer) { return static_cast<std::size_t>(layer); }

  CacheGeometry geometry_;
  std::vector<const Compressor*> codecs_;
  std::vector<std::size_t> vector_bytes_;
  std::vector<std::size_t> layer_start_;
  std::vector<bool> raw_;
  bool any_encoded_ = false;
  std::size_t token_bytes_ = 0;
};

}  // namespace tessera
