// What restored K/V pass through before the target attends to them: the
// identity (the restorer is the target, or close enough), or a per-layer,
// per-KV-head linear map fitted from the restorer's K/V to the target's
// (linear_projection.h).
#pragma once

#include <cstdint>
#include <memory>

#include "plugins/verifier_restored/history_kv.h"

namespace tessera {

class KVProjection {
 public:
  virtual ~KVProjection() = default;
  // Maps entries [begin, end) of `kv` (every layer, K and V) in place.
  virtual void apply(HistoryKV& kv, int64_t begin, int64_t end) const = 0;
};

class IdentityProjection final : public KVProjection {
 public:
  void apply(HistoryKV&, int64_t, int64_t) const override {}
};

}  // namespace tessera
