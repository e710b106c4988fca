// The `paged` cache store: fixed blocks of `block_size` entries from one pool,
// and a block table per sequence (vLLM's layout). fork() shares the source's
// blocks by reference count; a block is copied only when a sequence writes
// into one it shares (copy-on-write), so branches that share a prompt share
// its memory. A released sequence returns its blocks to the pool.
//
// Memory: allocate(seq, capacity) makes sure the pool can give the sequence
// ceil(capacity / block_size) blocks, adding blocks only when the free ones
// are already promised to other sequences; fork() promises the new sequence
// the blocks it may still need, plus one for copying a shared partial block.
// So append, truncate and copy never allocate; the pool never shrinks.
//
// Views: one segment per block. Raw-f32 layers point into the blocks;
// encoded layers decode into the sequence's scratch [2, kv_heads, capacity,
// head_dim]. Valid until the next mutation or view() of the sequence.
//
// Bytes: capacity = the pool's blocks, block tables and decode scratches;
// live = the entries written in blocks some sequence holds, each shared block
// counted once; copied = entry bytes written by copy() and copy-on-write.
//
// Prefix caching (CacheStore::hold_block): the core may hold full blocks
// past their sequence's release, a reference each, and a new sequence may
// begin with held blocks (adopt_blocks): it is then promised as many fewer
// blocks, as a fork takes blocks only when it writes.
//
// Entries carry a branch id (BIM, kv_view.h): one sequence may hold several
// branches after a shared prefix; a block's segment hands its branches to
// attention once it holds a nonzero one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_store.h"
#include "core/plugin/options.h"
#include "plugins/cache_common/codec_layout.h"
#include "plugins/cache_common/slot_arena.h"

namespace tessera {

class PagedCacheStore final : public CacheStore {
 public:
  // Option: block_size (entries per block).
  explicit PagedCacheStore(const OptionValues& options);
  explicit PagedCacheStore(int64_t block_size);

  Status init(const CacheGeometry& geometry,
              std::span<const Compressor* const> layer_codecs) override;
  CachePolicy policy() const override {
    CachePolicy policy;
    policy.keeps_branches = true;
    return policy;
  }
  Status allocate(SequenceId seq, int64_t capacity) override;
  Status release(SequenceId seq) override;
  Status fork(SequenceId src, SequenceId dst) override;

  Status append(SequenceId seq, std::span<const int32_t> positions,
                std::span<const BranchId> branches, const Tensor& k, const Tensor& v) override;
  Status truncate(SequenceId seq, int64_t logical_length) override;
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) override;

  Result<KVView> view(SequenceId seq, int layer) override;
  Result<KVView> encoded_view(SequenceId seq, int layer) override;
  SequenceInfo info(SequenceId seq) const override;
  int64_t stored_length(SequenceId seq, int layer, int kv) const override;
  std::span<const int32_t> positions(SequenceId seq) const override;
  std::span<const BranchId> branches(SequenceId seq) const override;
  CacheBytes bytes() const override { return bytes_; }
  SequenceBytes sequence_bytes(SequenceId seq) const override;
  bool use_backend(Backend& backend) override { return placement_.offer(backend, layout_); }

  // Prefix caching: a held block is one more reference to it, so the
  // copy-on-write of fork() covers a sequence that writes into one.
  int64_t shared_block_size() const override { return block_size_; }
  std::size_t shared_block_bytes() const override {
    return static_cast<std::size_t>(block_size_) * entry_bytes();
  }
  Result<SharedBlock> hold_block(SequenceId seq, int64_t index) override;
  void drop_block(SharedBlock block) override;
  Status adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks) override;

  // For tests: blocks in the pool, and how many sequences hold block `id`.
  int64_t pool_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t block_references(int32_t id) const {
    return blocks_[static_cast<std::size_t>(id)].references;
  }
  std::span<const int32_t> block_table(SequenceId seq) const { return get(seq).table; }

 private:
  struct Block {
    SlotArena arena;
    int64_t references = 0;
    int64_t written = 0;  // slots written (live while referenced)
  };
  struct Sequence {
    int64_t capacity = 0;
    int64_t length = 0;
    int64_t promised = 0;              // free blocks reserved for this sequence
    std::vector<int32_t> table;        // block ids, in order
    std::vector<int32_t> ordered;      // positions in stored order
    std::vector<BranchId> branch_of;   // branches in stored order
    bool any_branch = false;           // a nonzero branch was ever appended
    std::vector<KVSegment> segments;   // what the last view() returned
    std::unique_ptr<float[]> scratch;  // [2, kv_heads, capacity, head_dim] or null
    std::size_t reserved_bytes = 0;    // tables and scratch
  };

  Sequence* find(SequenceId seq);
  const Sequence& get(SequenceId seq) const;
  int64_t blocks_for(int64_t entries) const { return (entries + block_size_ - 1) / block_size_; }
  // Adds blocks until `count` free ones are not promised to anyone.
  Status ensure_free(int64_t count);
  Result<Sequence> make_sequence(SequenceId seq, int64_t capacity, int64_t promised);
  // A free block for `s`, from its promise.
  int32_t take_block(Sequence& s);
  void drop_reference(int32_t id);
  // Makes the block at table index `b` the sequence's own (copying a shared one).
  Status own_block(Sequence& s, int64_t b);
  void set_written(int32_t id, int64_t written);
  Result<KVView> make_view(SequenceId seq, int layer, bool encoded);
  void set_live(std::size_t live);
  std::size_t entry_bytes() const {
    return layout_.token_bytes() + SlotArena::kPositionBytes + SlotArena::kBranchBytes;
  }

  int64_t block_size_;
  CodecLayout layout_;
  KVPlacement placement_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  int64_t promised_ = 0;  // free blocks promised to sequences, all together
  std::unordered_map<SequenceId, Sequence> sequences_;
  CacheBytes bytes_;
};

}  // namespace tessera
