// Owns the K/V memory of every sequence and decides what is kept. The core
// reaches a store only through CheckedCacheStore, which validates arguments
// and checks the invariants after every mutation, so each plugin gets those
// checks for free:
//   INV-1  every layer stores exactly `stored` K entries and `stored` V entries;
//   INV-2  the positions of the stored entries, in stored order, never decrease.
//
// A sequence has a logical length (tokens appended so far, net of truncation:
// the next position of a chain) and a set of stored entries. A static or paged
// store keeps every token, so both agree; an evicting store (sink_window)
// keeps only what its WindowRule can still show, and its logical length grows
// past its capacity. docs/architecture.md, "The cache contract".
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/cache/kv_view.h"
#include "core/compressor/compressor.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

class Backend;

using SequenceId = int32_t;
// A block a store lets the core hold (CacheStore::hold_block): the store's
// own id for it.
using SharedBlock = int64_t;

struct CacheGeometry {
  int layers = 0;
  int kv_heads = 0;
  int head_dim = 0;
  // How many of a token's KV heads the codec takes as one vector: 1 (a vector
  // per head, cache.codec_span = "head") or kv_heads (one vector per token,
  // "token"), so the codec sees vector_width() floats, a token's heads in
  // order. One scale per vector then covers more coordinates, which pays at
  // small head_dim. A codec that stores raw f32 gives the same bytes either
  // way. (ABI 2.2)
  int heads_per_vector = 1;

  int vector_width() const { return heads_per_vector * head_dim; }
  int vectors_per_token() const { return heads_per_vector > 0 ? kv_heads / heads_per_vector : 0; }
};

// Bytes as stored: the codec's encoded bytes plus positions, not the decoded size.
struct CacheBytes {
  std::size_t live = 0;      // bytes holding entries now
  std::size_t capacity = 0;  // bytes reserved
  std::size_t peak = 0;      // most bytes ever live
  // Entry bytes ever written by copying stored entries: copy(), a fork that
  // copies, copy-on-write of a shared block (ABI 3.0). Never decreases.
  std::size_t copied = 0;
};

// What a store's policy means for the rest of the engine; fixed after init().
struct CachePolicy {
  WindowRule rule;      // which stored (and in-batch) keys a query sees
  bool evicts = false;  // drops entries on append: a sequence may run past its capacity
  // The most entries the store keeps per sequence, whatever the capacity
  // asked (sink + window + slack for sink_window); 0 = the capacity.
  int64_t max_entries = 0;
  // Keeps a branch id per entry (BIM, kv_view.h). A store without it refuses
  // an append of nonzero branches (ABI 3.0).
  bool keeps_branches = false;
};

// The bytes one sequence's stored entries take (ABI 6.1): `held` counts
// every entry it references, `shared` the part of them in memory another
// sequence references too (a fork's blocks on `paged`). Over all sequences,
// the sum of held - shared plus each shared block once is bytes().live.
struct SequenceBytes {
  std::size_t held = 0;
  std::size_t shared = 0;
};

struct SequenceInfo {
  int64_t logical_length = 0;  // tokens appended, net of truncation
  int64_t stored = 0;          // entries held now
  int64_t capacity = 0;        // entries it can hold
  // truncate() can restore any logical length from this one up to the
  // current; an evicting store cannot bring back what it dropped.
  int64_t min_truncatable = 0;
};

// One layer of a sequence as dense f32 tensors over EVERY slot, written or
// not: what a fixed-shape step reads under its additive mask and writes in
// place (CacheStore::dense_layer).
struct DenseLayerKV {
  Tensor k;  // f32 [kv_heads, capacity, head_dim], head_dim contiguous
  Tensor v;  // likewise
};

class CacheStore : public PluginObject {
 public:
  // Called once, before anything else. `layer_codecs` has one codec per layer
  // (layers kept uncompressed get the identity codec); the engine owns them
  // and keeps them alive as long as the store.
  virtual Status init(const CacheGeometry& geometry,
                      std::span<const Compressor* const> layer_codecs) = 0;
  virtual CachePolicy policy() const = 0;

  // A new, empty sequence that may hold `capacity` entries. All the memory of
  // a static store is taken here.
  virtual Status allocate(SequenceId seq, int64_t capacity) = 0;
  virtual Status release(SequenceId seq) = 0;
  // `dst` (not allocated) becomes a sequence holding what `src` holds, with its
  // logical length and capacity; from then on the two are independent. A
  // store may share the memory (copy-on-write) or copy it.
  virtual Status fork(SequenceId src, SequenceId dst) = 0;

  // Appends n entries at `positions`, of `branches` (n ids, or empty: all
  // 0); within each branch, the shared prefix's entries included, positions
  // never decrease. k, v are f32 [layers, n, kv_heads, head_dim], an entry's
  // heads contiguous when geometry.heads_per_vector > 1. The logical length
  // grows by n. An evicting store may drop older entries here.
  virtual Status append(SequenceId seq, std::span<const int32_t> positions,
                        std::span<const BranchId> branches, const Tensor& k, const Tensor& v) = 0;
  // Back to the state after `logical_length` tokens (min_truncatable <= it <=
  // the current logical length).
  virtual Status truncate(SequenceId seq, int64_t logical_length) = 0;
  // Stored entry dst_start + j becomes a copy of entry src[j] (K, V, position
  // and branch), then the store keeps dst_start + src.size() entries: the
  // compaction of an accepted draft path. src strictly increasing and src[j] >=
  // dst_start + j (so an in-order copy is safe in place). The logical length
  // shrinks by the number of entries dropped. A store may refuse a copy it
  // cannot do (Unimplemented, saying which).
  virtual Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) = 0;

  // The stored entries of one layer as attention reads them (kv_view.h).
  virtual Result<KVView> view(SequenceId seq, int layer) = 0;
  // The same, with encoded layers handed out as the codec's records instead
  // of decoded (for a codec that attends encoded; raw layers as in view()).
  // The default decodes.
  virtual Result<KVView> encoded_view(SequenceId seq, int layer) { return view(seq, layer); }

  // The queries below require an allocated sequence (CheckedCacheStore makes sure).
  virtual SequenceInfo info(SequenceId seq) const = 0;
  // Stored K (kv = 0) or V (kv = 1) entries of one layer; INV-1 compares them.
  virtual int64_t stored_length(SequenceId seq, int layer, int kv) const = 0;
  // The positions of the stored entries in stored order (info().stored of them).
  virtual std::span<const int32_t> positions(SequenceId seq) const = 0;
  // Their branches in the same order, or empty when every entry is of branch
  // 0 (always empty for a store that does not keep branches).
  virtual std::span<const BranchId> branches(SequenceId seq) const {
    (void)seq;
    return {};
  }
  virtual CacheBytes bytes() const = 0;

  // In-place access for fixed-shape steps (ABI 3.1). A store that keeps a
  // sequence as one f32 tensor per layer with every slot addressable (the
  // static store with raw-f32 codecs: [layers, 2, kv_heads, capacity,
  // head_dim]) hands out a layer's; stored entries are slots [0, stored).
  // Others refuse (the default).
  virtual Result<DenseLayerKV> dense_layer(SequenceId seq, int layer) {
    (void)seq;
    (void)layer;
    return unimplemented("this cache store keeps no dense f32 tensor of a sequence");
  }
  // The caller wrote n entries' K/V in place, slots [stored, stored + n) of
  // every layer's dense tensors; they become entries at `positions` (branch
  // 0), as append() would have made them.
  virtual Status append_in_place(SequenceId seq, std::span<const int32_t> positions) {
    (void)seq;
    (void)positions;
    return unimplemented("this cache store keeps no dense f32 tensor of a sequence");
  }

  // What one allocated sequence's entries take (ABI 6.1; SequenceBytes).
  virtual SequenceBytes sequence_bytes(SequenceId seq) const = 0;

  // The engine's backend, offered once after init() succeeded and before
  // any allocate() (ABI 8.1, appended). A store may keep its K/V in memory it
  // allocates there (Backend::allocate with BufferUsage::kKV), writing and
  // copying them with Backend::copy; it returns whether it does. Then
  // append() may be handed K/V in that backend's memory (device tensors, data
  // null), and views hand out tensors there. The in-tree stores take it where
  // the backend's memory is a device's and every layer stores raw f32. The
  // default keeps host memory, and a device's forward reads the K/V back.
  virtual bool use_backend(Backend& backend) {
    (void)backend;
    return false;
  }

  // Prefix caching (ABI 8.5, appended): a store that keeps entries in fixed
  // blocks may let the core keep blocks past the sequence that wrote them,
  // and begin a new sequence with them instead of computing their K/V again
  // (core/cache/prefix_cache.h keys them by their tokens). A held block is
  // shared: a sequence that writes into one it shares copies it first, as
  // after fork(). Entries per shareable block; 0 (the default): none.
  virtual int64_t shared_block_size() const { return 0; }
  // The bytes one full block's entries take (what a held block costs).
  virtual std::size_t shared_block_bytes() const { return 0; }
  // A reference to the block of seq's entries [index * size, (index + 1) *
  // size), which are stored (the core checks they are plain: positions
  // index * size + j, branch 0). It keeps the block until drop_block().
  virtual Result<SharedBlock> hold_block(SequenceId seq, int64_t index) {
    (void)seq;
    (void)index;
    return unimplemented("this cache store shares no blocks");
  }
  // Drops a reference hold_block() took; the block is freed once nothing
  // holds it.
  virtual void drop_block(SharedBlock block) { (void)block; }
  // An allocated, empty sequence begins with `blocks` in order (a reference
  // each): entries [0, blocks.size() * size) at positions 0, 1, ..., branch
  // 0; its logical length becomes that.
  virtual Status adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks) {
    (void)seq;
    (void)blocks;
    return unimplemented("this cache store shares no blocks");
  }
};

}  // namespace tessera
