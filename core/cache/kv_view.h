// What attention reads from a cache store: the entries stored for one
// sequence and layer, as one or more segments (a contiguous store has one; a
// ring with sinks, two or three; a paged store, one per run of blocks), each
// with the logical position of every entry. Plus the store's rule for which of
// them a query sees. docs/architecture.md, "Attention over stored K/V".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/tensor/tensor.h"

namespace tessera {

// Keys as a store keeps them: rotated by RoPE before they were written
// (cache.codec_stage = "post_rope"), or before RoPE, rotated when attention
// reads them ("pre_rope"). The core decides; the store keeps what it is given.
enum class StoredKeys : uint8_t { kRotated, kBeforeRope };

class Compressor;

// A branch of a sequence (multi-branch decoding in one sequence, BIM): 0 is
// the shared prefix, 1.. the branches. A query of branch b sees stored and
// in-batch entries of branch 0 and of b, never another branch's.
using BranchId = int16_t;
inline bool branch_sees(BranchId query, BranchId key) {
  return key == 0 || key == query;
}

// One contiguous run of stored entries of one layer: decoded f32 tensors, or
// (from CacheStore::encoded_view, for a codec that attends encoded) the
// codec's records, which attention reads through the codec without decoding.
struct KVSegment {
  Tensor k;  // f32 [kv_heads, count, head_dim], head_dim contiguous, other strides free
  Tensor v;  // likewise; both without data when `codec` is set
  const int32_t* positions = nullptr;  // count logical positions, non-decreasing
  int64_t count = 0;
  // The encoded form: each record holds heads_per_record consecutive kv heads
  // of one entry (CacheGeometry::heads_per_vector), heads_per_record *
  // head_dim floats once decoded. The count records holding kv head h (one
  // after another) start at k_records + (h / heads_per_record) *
  // record_head_stride (bytes), h's floats at (h % heads_per_record) *
  // head_dim within each; likewise V.
  const Compressor* codec = nullptr;
  const uint8_t* k_records = nullptr;
  const uint8_t* v_records = nullptr;
  std::size_t record_head_stride = 0;
  int heads_per_record = 1;  // (ABI 2.2)
  // The branch of every entry (count of them), or null when all are 0 (the
  // shared prefix); attention keeps an entry only if branch_sees() (ABI 3.0).
  const BranchId* branches = nullptr;

  bool encoded() const { return codec != nullptr; }
  // Records in a device's memory (a store whose K/V the backend holds, for a
  // layout the backend reads: Backend::supports_kv_records): `codec` set,
  // k_records / v_records null, and k / v the records as u8 [kv_heads,
  // count, record bytes] tensors in the backend's buffers, which only the
  // backend's attention reads (any view, encoded or not). (ABI 8.2)
  bool device_records() const { return codec != nullptr && k.dtype == DType::kU8; }
};

// A sequence's stored entries of one layer, segments in position order. The
// segments array belongs to the store: valid until the next mutation of the
// sequence or the next view() of it.
struct KVView {
  std::span<const KVSegment> segments;

  int64_t entries() const {
    int64_t n = 0;
    for (const KVSegment& s : segments) n += s.count;
    return n;
  }
};

// Which keys a query at position t may see by positions, stored and in-batch
// alike: every key with p < sink, and the keys with p > t - window (window 0:
// all). Causality is not its business: stored entries precede the batch, and
// within the batch the parents and blocks decide (a block's tokens see later
// positions of the block). With `reassign` (StreamingLLM), the visible keys in
// position order take RoPE positions 0..n-1 and the query n-1, instead of
// their own.
struct WindowRule {
  int64_t sink = 0;
  int64_t window = 0;
  bool reassign = false;

  bool limits() const { return window > 0; }
  // Whether a key at position p is inside the window of a query at position t.
  bool sees(int64_t t, int64_t p) const {
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
