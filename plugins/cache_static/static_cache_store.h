// The `static` cache store: one preallocated arena per sequence, written in
// place, for edge use (fixed memory, no allocation after allocate()). It keeps
// every token: no window, no eviction, logical length == stored entries.
//
// Per sequence, allocate(seq, max_tokens) reserves a SlotArena of max_tokens
// slots (every layer's encoded K and V, plus a position per slot) and, when
// some layer's codec does not store raw f32, a decode scratch
// [2, kv_heads, max_tokens, head_dim] f32 (view() decodes one layer into it).
// append/truncate/copy write into that memory and view() reads it; none of
// them allocates. fork() allocates the new sequence like allocate() and
// copies the entries.
//
// Byte accounting (bytes()), summed over sequences:
//   capacity  everything allocate() reserved: arena + positions + branches + scratch
//   live      bytes holding entries: entries * (sum over layers of 2 * kv_heads *
//             vector_bytes(l) + 4 + 2); the scratch is a decode buffer, never
//             live, so `live` shows what the codec saves
//   peak      the most `live` ever was
//   copied    entry bytes written by copy() and fork()
//
// Entries carry a branch id (BIM, kv_view.h); views hand them to attention
// once a sequence holds a nonzero one.
//
// Views: one segment. For a raw-f32 layer it points straight into the arena
// (stride[0] = max_tokens * head_dim); otherwise into the sequence's decode
// scratch. Valid until the next mutation or view() of the sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "core/cache/cache_store.h"
#include "core/plugin/options.h"
#include "plugins/cache_common/codec_layout.h"
#include "plugins/cache_common/slot_arena.h"

namespace tessera {

class StaticCacheStore final : public CacheStore {
 public:
  StaticCacheStore() = default;
  // The plugin factory's constructor; the store has no options.
  explicit StaticCacheStore(const OptionValues& options);

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
  // Raw-f32 layers only: an encoding codec keeps no floats to point at.
  Result<DenseLayerKV> dense_layer(SequenceId seq, int layer) override;
  Status append_in_place(SequenceId seq, std::span<const int32_t> positions) override;

 private:
  struct Sequence {
    int64_t length = 0;
    SlotArena arena;
    std::unique_ptr<float[]> scratch;  // [2, kv_heads, max_tokens, head_dim] or null
    KVSegment segment;                 // what the last view() returned
    std::size_t reserved_bytes = 0;    // what this sequence adds to capacity
  };

  Sequence* find(SequenceId seq);
  const Sequence& get(SequenceId seq) const;
  Result<Sequence> make_sequence(SequenceId seq, int64_t capacity) const;
  std::size_t live_bytes(int64_t tokens) const {
    return static_cast<std::size_t>(tokens) *
           (layout_.token_bytes() + SlotArena::kPositionBytes + SlotArena::kBranchBytes);
  }
  void set_live(std::size_t live);

  CodecLayout layout_;
  KVPlacement placement_;
  std::unordered_map<SequenceId, Sequence> sequences_;
  CacheBytes bytes_;
};

}  // namespace tessera
