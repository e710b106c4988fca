// One CacheStore plugin with its checks; the core reaches stores only through
// CheckedCacheStore (checked_cache_store.h), which holds one of these per
// group of layers. Before each call it checks
// the arguments (a caller's mistake: NotFound, InvalidArgument, OutOfRange,
// ResourceExhausted, FailedPrecondition); after each mutation it checks what the
// plugin did and returns Internal, naming the plugin, when the plugin broke
//   INV-1  every layer stores exactly `stored` K and `stored` V entries;
//   INV-2  positions().size() == stored and positions never decrease: within
//          each branch (kv_view.h), the shared prefix's entries counting in
//          every branch, so every branch's positions may restart at the
//          prefix length;
// or the byte accounting (live <= capacity, live <= peak, peak never falls), or
// the operation's own contract (the logical length and entry count it should
// leave, stored <= capacity).
//
// Cost per mutation: O(layers) for INV-1; INV-2 compares the new tail of a
// store that keeps every token, and all entries of an evicting one (whose
// stored set is small). Nothing here allocates on success.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

class CheckedStore {
 public:
  // Takes ownership of `store`; `plugin_name` ("static") names it in messages.
  CheckedStore(std::unique_ptr<CacheStore> store, std::string plugin_name);

  // The calls below are CheckedCacheStore's (checked_cache_store.h, where
  // each one's arguments are spelled out) for this one store's layers.
  Status init(const CacheGeometry& geometry, std::span<const Compressor* const> layer_codecs,
              StoredKeys stored_keys = StoredKeys::kRotated, Backend* kv_backend = nullptr);
  const CachePolicy& policy() const { return policy_; }
  // Whether the store took init()'s backend for its K/V (CacheStore::use_backend).
  bool kv_in_backend() const { return kv_in_backend_; }
  StoredKeys stored_keys() const { return stored_keys_; }
  const Compressor& codec(int layer) const { return *codecs_[static_cast<std::size_t>(layer)]; }
  Status allocate(SequenceId seq, int64_t capacity);
  Status release(SequenceId seq);
  Status fork(SequenceId src, SequenceId dst);
  Status append(SequenceId seq, std::span<const int32_t> positions,
                std::span<const BranchId> branches, const Tensor& k, const Tensor& v);
  Result<DenseLayerKV> dense_layer(SequenceId seq, int layer);
  Status append_in_place(SequenceId seq, std::span<const int32_t> positions);
  Status truncate(SequenceId seq, int64_t logical_length);
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start);
  Result<KVView> view(SequenceId seq, int layer);
  Result<KVView> encoded_view(SequenceId seq, int layer);
  bool contains(SequenceId seq) const { return sequences_.count(seq) != 0; }
  // Prefix caching (CacheStore::hold_block); the checks: a held block's
  // entries are plain (positions index * size + j, branch 0), only blocks
  // held through this wrapper are dropped, and an adopting sequence is empty
  // and afterwards holds exactly the adopted entries at positions 0, 1, ...
  int64_t shared_block_size() const { return store_->shared_block_size(); }
  std::size_t shared_block_bytes() const { return store_->shared_block_bytes(); }
  Result<SharedBlock> hold_block(SequenceId seq, int64_t index);
  Status drop_block(SharedBlock block);
  Status adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks);
  Result<SequenceInfo> info(SequenceId seq) const;
  Result<SequenceBytes> sequence_bytes(SequenceId seq) const;
  Result<int64_t> stored_length(SequenceId seq, int layer, int kv) const;
  Result<std::span<const int32_t>> positions(SequenceId seq) const;
  Result<std::span<const BranchId>> branches(SequenceId seq) const;
  CacheBytes bytes() const { return store_->bytes(); }

  const CacheGeometry& geometry() const { return geometry_; }
  const std::string& plugin_name() const { return plugin_name_; }
  // The wrapped store, for tests and diagnostics; calls through it are unchecked.
  CacheStore& unchecked() { return *store_; }

 private:
  struct SequenceRecord {
    int64_t capacity = 0;  // entries, as the store reported after allocate()
    // Per branch, the last position a new entry of it must not go below:
    // the latest of its own and the prefix's entries ([0]: the prefix's).
    std::vector<int32_t> floor_of_branch = {0};
  };

  Status check_ready() const;
  // append()'s checks (INV-2 per branch, the capacity) around `mutate`, the
  // store call that adds positions.size() entries.
  template <typename Mutate>
  Status checked_append(std::string_view op, SequenceId seq, std::span<const int32_t> positions,
                        std::span<const BranchId> branches, Mutate&& mutate);
  Result<KVView> checked_view(SequenceId seq, int layer, bool encoded);
  Result<const SequenceRecord*> find(SequenceId seq, std::string_view op) const;
  Status check_kv_tensor(const Tensor& t, std::string_view which, int64_t n) const;

  // After a mutation `op` of seq: the logical length must be
  // `expected_logical`, the entry count `expected_stored` (-1: any count up to
  // the capacity, for an evicting store), INV-1 must hold, and positions from
  // index `first_new` on must not decrease. Returns Internal naming the plugin.
  Status check_after(std::string_view op, SequenceId seq, int64_t expected_logical,
                     int64_t expected_stored, int64_t first_new);
  Status check_bytes(std::string_view op);
  // INV-2 over every stored entry, branch by branch; refreshes the record's
  // floors. O(stored): after truncate, copy, fork and branched appends.
  Status check_branch_positions(std::string_view op, SequenceId seq, SequenceRecord& record);
  Status broke(std::string_view what, std::string_view op, SequenceId seq,
               const std::string& detail) const;

  std::unique_ptr<CacheStore> store_;
  std::string plugin_name_;
  CacheGeometry geometry_;
  CachePolicy policy_;
  bool kv_in_backend_ = false;
  // A K/V tensor's memory is there: a host address, or (for a store that
  // keeps its K/V in the backend) a buffer of it.
  bool holds_memory(const Tensor& t) const {
    return t.data != nullptr || (kv_in_backend_ && t.buffer != nullptr);
  }
  StoredKeys stored_keys_ = StoredKeys::kRotated;
  std::vector<const Compressor*> codecs_;
  bool ready_ = false;
  std::unordered_map<SequenceId, SequenceRecord> sequences_;
  std::unordered_map<SharedBlock, int64_t> held_blocks_;  // references taken by hold_block
  std::size_t last_peak_ = 0;
  std::size_t last_copied_ = 0;
};

}  // namespace tessera
