// What attention reads from a cache store: the entries stored for one
// sequence and layer, as one or more segments (a contiguous store has one; a
// ring with sinks, two or three; a paged store, one per run of blocks), each
// with the logical position of every entry. Plus the store's rule for which of
// them a query sees. docs/architecture.md, "Attention over stored K/V".
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor/tensor.h"

namespace tessera {

// Keys as a store keeps them: rotated by RoPE before they were written
// (cache.codec_stage = "post_rope"), or before RoPE, rotated when attention
// reads them ("pre_rope"). The core decides; the store keeps what it is given.
enum class StoredKeys : uint8_t { kRotated, kBeforeRope };

// One contiguous run of stored entries of one layer.
struct KVSegment {
  Tensor k;  // f32 [kv_heads, count, head_dim], head_dim contiguous, other strides free
  Tensor v;  // likewise
  const int32_t* positions = nullptr;  // count logical positions, non-decreasing
  int64_t count = 0;
};

inline constexpr int kMaxKVSegments = 8;

// A sequence's stored entries of one layer, segments in position order. Valid
// until the next mutation of the sequence, or the next view() of it for stores
// that decode into a scratch buffer (see each store's header).
struct KVView {
  std::array<KVSegment, kMaxKVSegments> segments{};
  int segment_count = 0;

  int64_t entries() const {
    int64_t n = 0;
    for (int s = 0; s < segment_count; ++s) n += segments[static_cast<std::size_t>(s)].count;
    return n;
  }
};

// Which keys a query at position t sees, by positions, stored and in-batch
// alike: every key with p < sink, and the keys with t - window < p <= t
// (window 0: every p <= t). With `reassign` (StreamingLLM), the visible keys in
// position order take RoPE positions 0..n-1 and the query n-1, instead of their
// own.
struct WindowRule {
  int64_t sink = 0;
  int64_t window = 0;
  bool reassign = false;

  bool limits() const { return window > 0; }
  // Whether a key at position p is visible to a query at position t, leaving
  // aside causality within the batch (the batch's own rule).
  bool sees(int64_t t, int64_t p) const {
    if (p > t) return false;
    if (window <= 0 || p < sink) return true;
    return p > t - window;
  }
  // Under reassign: how far RoPE must move sink keys for a query at t. The
  // visible window keeps its distances to the query; only the sinks move, to
  // sit right before the window (0 while the window still reaches the sinks).
  int64_t sink_shift(int64_t t) const {
    if (!reassign || window <= 0) return 0;
    const int64_t gap = t - window + 1 - sink;
    return gap > 0 ? gap : 0;
  }
};

}  // namespace tessera
