// K/V a caller computed for one forward and holds itself, never stored: how
// a restoring verifier hands back the K/V of entries an evicting store
// dropped. The forward merges them into each layer's attention view by
// position and puts them through the layer's codec first, exactly like
// stored entries, so attending to them equals attending to stored ones.
// docs/architecture.md, "Transient K/V segments". (ABI 3.2)
#pragma once

#include <cstdint>
#include <span>

#include "core/cache/cache_store.h"

namespace tessera {

struct TransientKV {
  SequenceId seq = 0;
  // Entry e of layer l: kv_heads * head_dim floats at k + l * layer_stride +
  // e * kv_heads * head_dim, as CacheStore::append takes them (before the
  // codec; keys rotated or not as the store keeps them, StoredKeys). V likewise.
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t layer_stride = 0;
  // One strictly increasing position per entry; none of them may be stored
  // for the sequence (the forward attends to both).
  std::span<const int32_t> positions;

  int64_t count() const { return static_cast<int64_t>(positions.size()); }
};

}  // namespace tessera
