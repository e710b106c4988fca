// Automatic prefix caching on a store's shared blocks (vLLM's automatic
// prefix caching; llama-server's per-slot prompt cache, across requests):
// the full blocks of a sequence's plain prefix are kept after its request
// ends, keyed by a hash chain over their tokens that starts from everything
// else deciding their K/V (the engine's K/V identity: model file, codec and
// its options, cache settings, backend), and a new sequence begins with the
// longest cached prefix of its tokens, so only the rest is computed. A chat
// client that resends its whole conversation every turn prefills only the
// new turn.
//
// A held block is a reference in the store (CacheStore::hold_block): it
// outlives the sequence that wrote it, sequences that begin with it share it
// (copy-on-write when one writes into it), and it is freed when the cache
// evicts it and no sequence holds it. Eviction is LRU over the chains'
// leaves (a block is evicted only after every block that continues it), so
// what stays is always reachable from the root; the budget counts every
// held block at the store's block size.
//
// Exactness: a key names its parent's key and its block's tokens, and both
// are compared on lookup, so a hash collision is a miss, never a wrong
// prefix. The cached K/V are the bits a recompute would give (cache ==
// recompute and batch invariance), so output is the same with and without
// the cache (tests/engine/prefix_cache_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "core/status/status.h"

namespace tessera {

struct PrefixCacheStats {
  int64_t lookups = 0;  // sequences that asked for a cached prefix
  int64_t hits = 0;     // of them, those that began with one
  int64_t tokens_looked_up = 0;
  int64_t tokens_reused = 0;  // tokens whose K/V came from the cache
  int64_t blocks = 0;         // blocks held now
  std::size_t bytes = 0;      // their bytes (blocks * the store's block bytes)
  std::size_t budget_bytes = 0;
  int64_t block_size = 0;  // tokens per block
  int64_t inserted = 0;    // blocks ever added
  int64_t evicted = 0;     // blocks ever evicted
};

class PrefixCache {
 public:
  // `store` must share blocks (shared_block_size() > 0) and outlive the
  // cache. `identity` is a text naming what decides the K/V besides the
  // tokens; `budget_bytes` caps what the held blocks take.
  PrefixCache(CheckedCacheStore& store, std::string_view identity, std::size_t budget_bytes);
  ~PrefixCache();  // drops every held block
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  int64_t block_size() const { return block_size_; }

  // Begins `seq` (allocated, empty) with the longest cached prefix of
  // `tokens` in whole blocks that leaves at least `keep_uncached` of them
  // to compute; returns the tokens it holds now (0 on a miss).
  Result<int64_t> adopt(SequenceId seq, std::span<const int32_t> tokens, int64_t keep_uncached);
  // Keeps the full blocks of `seq`'s entries, whose tokens are `tokens`
  // (the tokens with K/V stored, from position 0), then evicts down to the
  // budget. Blocks already cached are only marked used; a block that is not
  // plain (positions other than its index, a branch) ends the chain there.
  Status publish(SequenceId seq, std::span<const int32_t> tokens);

  PrefixCacheStats stats() const;

 private:
  struct Entry {
    SharedBlock block = 0;
    uint64_t parent = 0;          // the key of the block before (the root's: identity_)
    std::vector<int32_t> tokens;  // the block's tokens
    int64_t children = 0;         // cached blocks that continue this one
    uint64_t last_use = 0;
  };

  uint64_t key_of(uint64_t parent, std::span<const int32_t> tokens) const;
  // The entry of this key when it holds exactly this parent and tokens.
  Entry* match(uint64_t key, uint64_t parent, std::span<const int32_t> tokens);
  void touch(uint64_t key, Entry& entry);
  Status evict_to(std::size_t budget);

  CheckedCacheStore& store_;
  uint64_t identity_ = 0;
  std::size_t budget_bytes_ = 0;
  int64_t block_size_ = 0;
  std::size_t block_bytes_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
  std::set<std::pair<uint64_t, uint64_t>> leaves_;  // (last_use, key) of childless entries
  uint64_t clock_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace tessera
