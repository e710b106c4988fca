// The `sink_window` cache store (StreamingLLM): per sequence it keeps the
// entries at positions below `sink` (the attention sinks) and the last
// `window` others, and drops the rest as new tokens arrive, so memory stays
// flat however long the sequence runs. Its WindowRule tells attention, for
// prefill and decode alike, that a query at position t sees keys with p < sink
// and t - window < p <= t; with positions = "reassign" the visible keys take
// RoPE positions 0..n-1 (kv_view.h). Meant for chains (a position is its
// logical index); with window >= the sequence length it is the static store.
//
// Per sequence, allocate() reserves a SlotArena of sink + window slots: slots
// [0, sink) for the sinks, then a ring of `window` slots, the oldest entry
// overwritten once the ring is full (it is the one no later query sees).
// Keeping `window` entries, one more than the next query needs, lets
// truncate() take back the last token; `slack` more ring slots (entries no
// query sees until tokens are taken back) let it go back slack + 1 tokens:
// what speculative drafts and the sliding-window layers of a model (the
// engine keeps them in a store like this one) need. Further back, the entries
// it would need are gone (min_truncatable says where it stops). Views: up to
// three segments: the sinks, then the ring from its oldest entry, wrapping
// once (the slack entries included; the WindowRule hides them).
#pragma once

#include <array>
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

class SinkWindowCacheStore final : public CacheStore {
 public:
  // Options: sink (entries kept from the start), window (recent entries
  // seen), positions ("keep" | "reassign"), slack (entries kept beyond the
  // window so the last tokens can be taken back).
  explicit SinkWindowCacheStore(const OptionValues& options);
  SinkWindowCacheStore(int64_t sink, int64_t window, bool reassign, int64_t slack = 0);

  Status init(const CacheGeometry& geometry,
              std::span<const Compressor* const> layer_codecs) override;
  CachePolicy policy() const override;
  Status allocate(SequenceId seq, int64_t capacity) override;
  Status release(SequenceId seq) override;
  Status fork(SequenceId src, SequenceId dst) override;

  // Branches must be empty or all 0: one window per sequence (the policy
  // keeps no branches; multi-branch decoding uses a sequence per branch here).
  Status append(SequenceId seq, std::span<const int32_t> positions,
                std::span<const BranchId> branches, const Tensor& k, const Tensor& v) override;
  Status truncate(SequenceId seq, int64_t logical_length) override;
  // Only within the window (dst_start at or past the sinks): what compacting
  // an accepted draft needs; Unimplemented otherwise.
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) override;

  Result<KVView> view(SequenceId seq, int layer) override;
  Result<KVView> encoded_view(SequenceId seq, int layer) override;
  SequenceInfo info(SequenceId seq) const override;
  int64_t stored_length(SequenceId seq, int layer, int kv) const override;
  std::span<const int32_t> positions(SequenceId seq) const override;
  CacheBytes bytes() const override { return bytes_; }
  SequenceBytes sequence_bytes(SequenceId seq) const override;
  bool use_backend(Backend& backend) override { return placement_.offer(backend, layout_); }

 private:
  struct Sequence {
    SlotArena arena;
    std::unique_ptr<float[]> scratch;   // [2, kv_heads, sink + window + slack, head_dim] or null
    std::vector<int64_t> logical;       // per slot: the logical index it was appended at
    std::vector<int32_t> ordered;       // positions in stored order (sinks, then the ring)
    std::array<KVSegment, 3> segments;  // what the last view() returned
    int64_t sinks = 0;                  // sink slots in use
    int64_t ring_start = 0;             // ring offset of the oldest ring entry
    int64_t ring_count = 0;
    int64_t logical_length = 0;
    int64_t min_truncatable = 0;
    std::size_t reserved_bytes = 0;

    int64_t stored() const { return sinks + ring_count; }
  };

  Sequence* find(SequenceId seq);
  const Sequence& get(SequenceId seq) const;
  Result<Sequence> make_sequence(SequenceId seq) const;
  // The slot of the entry at stored index i.
  int64_t slot_of(const Sequence& s, int64_t i) const;
  void drop_oldest(Sequence& s);
  void refresh_order(Sequence& s) const;
  Result<KVView> make_view(SequenceId seq, int layer, bool encoded);
  std::size_t live_bytes(int64_t entries) const {
    return static_cast<std::size_t>(entries) * (layout_.token_bytes() + sizeof(int32_t));
  }
  void set_live(std::size_t live);

  int64_t sink_;
  int64_t window_;
  int64_t slack_;
  int64_t ring_;  // window + slack slots after the sinks
  bool reassign_;
  CodecLayout layout_;
  KVPlacement placement_;
  std::unordered_map<SequenceId, Sequence> sequences_;
  CacheBytes bytes_;
};

}  // namespace tessera
