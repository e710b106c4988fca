// The only way the core reaches the K/V cache: one or more cache store
// plugins, each holding a group of the model's layers, each behind a
// CheckedStore (checked_store.h) that checks the arguments before every call
// and INV-1 / INV-2 and the byte accounting after every mutation.
//
// Most models have one group: every layer in the configured store. A model
// with sliding-window layers (gemma3) whose configured store keeps every
// token gets a second group: the sliding layers in a `sink_window` store with
// no sinks, the layers' window and `slack` more entries (so rejected drafts
// and a chat turn's tail can still be taken back), as llama.cpp keeps them in
// a cache of n_swa + n_ubatch cells. Their memory stays flat however long the
// sequence runs; the global layers keep every token.
//
// Across groups: every mutation goes to every group (an append that one group
// refuses is taken back from those that took it); a layer's view, stored
// length and dense tensors come from its group; info() and positions() are
// the first group's (the layers that keep the most), except that
// min_truncatable is the largest of any group. Each group's entries are the
// newest of the first group's: a copy() is translated to each group's stored
// indices. docs/architecture.md, "Layer groups".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/cache/checked_store.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

class CheckedCacheStore {
 public:
  // Takes ownership of `store` (the first group: every layer not given to
  // another); `plugin_name` ("static") names it in messages.
  CheckedCacheStore(std::unique_ptr<CacheStore> store, std::string plugin_name);
  ~CheckedCacheStore();

  // Before init(): `layers` (model layer indices, none in another group) are
  // kept by `store` instead of the first group's. `role` says why in messages
  // ("sliding-window layers").
  Status give_layers_to(std::unique_ptr<CacheStore> store, std::string plugin_name,
                        std::vector<int> layers, std::string role);

  // Checks the geometry and that there is one codec per layer, then hands each
  // group its layers' geometry and codecs. `stored_keys` records which keys
  // the core will append (every store keeps whatever it is given). Must
  // succeed before any other call.
  // `kv_backend` (the engine's backend) is offered to the stores for their
  // K/V (CacheStore::use_backend). With several groups all place theirs
  // alike: the later groups are offered it only when the first took it and
  // every layer keeps its K/V there by the stores' own rule
  // (backend_keeps_kv), and append then splits the layers on the device
  // (Backend::copy) instead of on the host.
  Status init(const CacheGeometry& geometry, std::span<const Compressor* const> layer_codecs,
              StoredKeys stored_keys = StoredKeys::kRotated, Backend* kv_backend = nullptr);
  // The first group's policy; keeps_branches only when every group keeps them.
  const CachePolicy& policy() const { return policy_; }
  // Whether the K/V lie in the backend's memory: append() then takes K/V
  // there, and views hand out tensors there (device tensors on a device).
  bool kv_in_backend() const { return kv_in_backend_; }
  StoredKeys stored_keys() const { return stored_keys_; }
  // The codec of a layer (the engine owns it).
  const Compressor& codec(int layer) const { return *codecs_[static_cast<std::size_t>(layer)]; }

  // capacity > 0; seq must not be allocated already.
  Status allocate(SequenceId seq, int64_t capacity);
  Status release(SequenceId seq);
  // src allocated, dst not.
  Status fork(SequenceId src, SequenceId dst);

  // positions: n entries, >= 0, never below the last position stored in the
  // entry's branch (INV-2). branches: n ids >= 0, or empty for all 0; nonzero
  // ones need a policy that keeps branches. k, v: f32 [layers, n, kv_heads,
  // head_dim] with head_dim contiguous (stride[3] == 1); borrowed for the
  // call only. A store that does not evict must have room for n more entries.
  Status append(SequenceId seq, std::span<const int32_t> positions,
                std::span<const BranchId> branches, const Tensor& k, const Tensor& v);
  // The common case: every entry of the shared prefix (branch 0).
  Status append(SequenceId seq, std::span<const int32_t> positions, const Tensor& k,
                const Tensor& v) {
    return append(seq, positions, {}, k, v);
  }
  // Fixed-shape steps (CacheStore::dense_layer): a layer's dense tensors,
  // checked to be f32 [kv_heads, capacity, head_dim]; and entries the caller
  // wrote there in place, slots [stored, stored + n), taken at `positions`
  // with append()'s checks. A store that evicts cannot take them, nor can a
  // cache of several groups.
  Result<DenseLayerKV> dense_layer(SequenceId seq, int layer);
  Status append_in_place(SequenceId seq, std::span<const int32_t> positions);
  // min_truncatable <= logical_length <= the current logical length.
  Status truncate(SequenceId seq, int64_t logical_length);
  // src: strictly increasing, each < stored, src[j] >= dst_start + j;
  // 0 <= dst_start <= stored (the first group's entries). Borrowed for the
  // call only.
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start);

  // The segments are checked: f32 [kv_heads, count, head_dim] each with
  // contiguous head_dim, counts adding up to what the layer's group stores.
  // Valid as the store's header says (until the next mutation, or next view
  // of the sequence).
  Result<KVView> view(SequenceId seq, int layer);
  // The same, encoded segments allowed (their records and codec checked).
  Result<KVView> encoded_view(SequenceId seq, int layer);

  bool contains(SequenceId seq) const { return groups_.front().store->contains(seq); }
  // Prefix caching (CacheStore::hold_block; core/cache/prefix_cache.h): the
  // store's shareable blocks, where there is one group of layers (a model
  // whose sliding-window layers live apart shares none: the window's
  // entries are not a prefix's).
  int64_t shared_block_size() const {
    return groups_.size() == 1 ? groups_.front().store->shared_block_size() : 0;
  }
  std::size_t shared_block_bytes() const { return groups_.front().store->shared_block_bytes(); }
  Result<SharedBlock> hold_block(SequenceId seq, int64_t index) {
    return groups_.front().store->hold_block(seq, index);
  }
  Status drop_block(SharedBlock block) { return groups_.front().store->drop_block(block); }
  Status adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks) {
    if (groups_.size() != 1)
      return unimplemented("a cache of " + std::to_string(groups_.size()) +
                           " groups of layers shares no blocks");
    return groups_.front().store->adopt_blocks(seq, blocks);
  }
  Result<SequenceInfo> info(SequenceId seq) const;
  // Over every group of layers.
  Result<SequenceBytes> sequence_bytes(SequenceId seq) const;
  // What the layer's group stores.
  Result<int64_t> stored_length(SequenceId seq, int layer, int kv) const;
  // The first group's, borrowed from its store; valid until the next mutation
  // of seq.
  Result<std::span<const int32_t>> positions(SequenceId seq) const;
  // Their branches (empty: all 0). Borrowed likewise.
  Result<std::span<const BranchId>> branches(SequenceId seq) const;
  // Every group's bytes added up; peak is the most ever live in all of them
  // together.
  CacheBytes bytes() const;

  const CacheGeometry& geometry() const { return geometry_; }
  // The first group's plugin.
  const std::string& plugin_name() const { return groups_.front().store->plugin_name(); }
  // How many groups and which layers each keeps ("static: layers 1, 3;
  // sink_window (sliding-window layers): 0, 2, 4").
  int group_count() const { return static_cast<int>(groups_.size()); }
  std::string describe_groups() const;
  // The first group's store, for tests and diagnostics; calls through it are
  // unchecked.
  CacheStore& unchecked() { return groups_.front().store->unchecked(); }

 private:
  struct Group {
    std::unique_ptr<CheckedStore> store;
    std::string role;
    std::vector<int> layers;                  // model layer indices, increasing
    std::vector<const Compressor*> codecs;    // theirs, in that order
    std::vector<float> k_scratch, v_scratch;  // their K/V gathered for an append
    // The same in the backend's memory, for K/V there (grown, never shrunk).
    std::unique_ptr<Buffer> k_device, v_device;
  };
  struct LayerPlace {
    int group = 0;
    int local = 0;  // the layer's index within its group
  };

  Result<const LayerPlace*> place_of(int layer, std::string_view op) const;
  // allocate() and fork(): `add` seq to each group in turn; when a group
  // refuses, seq is released from the groups before it.
  Status add_to_every_group(SequenceId seq, const std::function<Status(CheckedStore&)>& add);
  // This group's part of a [layers, n, kv_heads, head_dim] tensor: a view
  // when it is the only group, else gathered into the group's scratch (on
  // the host, or by Backend::copy for K/V in the backend's memory).
  Result<Tensor> group_part(Group& group, const Tensor& t, bool is_k);
  // After group `failed` refused a mutation of seq: the groups before it go
  // back to `logical_length`.
  Status undo_before(std::size_t failed, SequenceId seq, int64_t logical_length, const Status& why);
  void note_peak() const;

  std::vector<Group> groups_;
  std::vector<LayerPlace> places_;  // per model layer
  CacheGeometry geometry_;
  CachePolicy policy_;
  StoredKeys stored_keys_ = StoredKeys::kRotated;
  std::vector<const Compressor*> codecs_;
  bool ready_ = false;
  bool kv_in_backend_ = false;
  Backend* kv_backend_ = nullptr;  // where the K/V lie, when kv_in_backend_
  mutable std::size_t peak_ = 0;
};

}  // namespace tessera
