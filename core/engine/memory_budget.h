// The memory a config asks for, checked before anything is allocated: the KV
// cache that cache.max_tokens implies, with the model's weights, against an
// explicit cap (cache.max_memory_mib) and the memory the machine has left. A
// config asking for too much is refused with what it needs, what there is,
// and the largest cache.max_tokens that fits, instead of ending in bad_alloc
// or in the kernel's OOM killer after gigabytes were zeroed.
#pragma once

#include <cstdint>
#include <string>

#include "core/cache/cache_store.h"
#include "core/compressor/compressor.h"
#include "core/status/status.h"
#include "core/util/system_memory.h"

namespace tessera {

struct MemoryRequest {
  int64_t max_tokens = 0;       // cache.max_tokens
  CacheGeometry geometry;       // the model's layers, kv heads, head size
  double bytes_per_vector = 0;  // the codec's storage per head_dim vector
  uint64_t weight_bytes = 0;    // the model file (mapped; resident once used)
  uint64_t cap_bytes = 0;       // cache.max_memory_mib in bytes; 0 = no cap
  std::string codec_name;       // for messages
  // Layers kept apart in a window store (model_cache.h): they hold at most
  // sliding_entries entries per sequence, not max_tokens.
  int sliding_layers = 0;
  int64_t sliding_entries = 0;
  // Sequences that may hold max_tokens each at once (tessera serve:
  // server.max_sessions).
  int64_t sequences = 1;
  // K/V blocks the prefix cache may keep besides (server.prefix_cache_mib).
  uint64_t prefix_cache_bytes = 0;
  // A backend whose buffers are device memory holds the weights there: they
  // are checked against the device's free memory (0: unknown, unchecked),
  // not the host's; so are the K/V of a store that keeps them there
  // (CheckedCacheStore::kv_in_backend).
  bool weights_on_device = false;
  bool kv_on_device = false;
  uint64_t device_free_bytes = 0;
  std::string device_name;
};

// The KV bytes any store needs at least to hold max_tokens tokens in each of
// `sequences`: tokens * layers * 2 (K and V) * kv_heads * bytes_per_vector,
// the sliding layers kept apart counting min(tokens, sliding_entries).
double kv_cache_bytes(const MemoryRequest& request);

// The codec's storage per vector, averaged over a run (a codec may pack
// several vectors together).
double codec_bytes_per_vector(const Compressor& codec, int head_dim);

// ResourceExhausted when the KV cache exceeds the cap, when the weights held
// on a device exceed its free memory, or when what the host holds (the cache,
// and the weights unless a device holds them) exceeds `available` (skipped
// when that is unknown).
Status check_memory_budget(const MemoryRequest& request, const AvailableMemory& available);

}  // namespace tessera
