// The K/V cache of one model (the engine's target, a proposer's drafter):
// the configured store for every layer, or, for a model with sliding-window
// layers (gemma3) over a store that keeps every token, those layers apart in
// a `sink_window` store with no sinks that keeps their window plus `slack`
// entries, so their memory stays flat however long a sequence runs
// (checked_cache_store.h, "Layer groups" in docs/architecture.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "core/model/model.h"
#include "core/plugin/registry.h"

namespace tessera {

struct ModelCacheRequest {
  const PluginRegistry* registry = nullptr;
  const PluginRecord* store = nullptr;  // cache.plugin
  const OptionValues* store_options = nullptr;
  CacheGeometry geometry;
  std::span<const Compressor* const> layer_codecs;  // one per layer
  StoredKeys stored_keys = StoredKeys::kRotated;
  int64_t max_tokens = 0;  // cache.max_tokens: each sequence's capacity
  // Entries kept beyond a sliding layer's window, so a step can take back
  // what it appended: decode.max_batch.
  int64_t slack = 0;
  bool swa_full = false;  // cache.swa_full: keep every token in every layer
  // The engine's backend, offered to the store for its K/V
  // (CacheStore::use_backend); null keeps them in host memory.
  Backend* kv_backend = nullptr;
};

// The sliding-window layers of a model and the entries a store keeping
// them apart holds per sequence: the widest window + slack (no layers: none).
struct SlidingLayers {
  std::vector<int> layers;
  int64_t entries = 0;
};
SlidingLayers sliding_layers_of(const ModelConfig& model, int64_t slack);

// Allocates nothing yet. The sliding layers go apart unless request.swa_full,
// the configured store evicts already, or no sequence can outgrow them
// (max_tokens <= their entries); group_count() says whether they did.
Result<std::unique_ptr<CheckedCacheStore>> make_model_cache(const ModelConfig& model,
                                                            const ModelCacheRequest& request);

}  // namespace tessera
