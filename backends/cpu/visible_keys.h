// Which keys one query (a batch token, one kv head) sees, in the one order
// attention scores and sums them: the stored segments of its view, then the
// batch tokens. A stored entry is seen if the window rule keeps it and it is
// of the shared prefix or the query's branch (kv_view.h); a batch token if
// in_batch and the window rule do (in_batch already cuts other branches).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/backend/backend.h"
#include "core/compressor/compressor.h"
#include "core/compressor/kv_records.h"

namespace tessera::cpu {

// How attention reads a layer's stored K/V (one codec per layer): as f32
// rows (decoded, or no codec); as the codec's records where they are one of
// kv_records.h's layouts the CPU reads, attended as they are stored
// (converted in registers, no decode of the context): f16, bf16, int8 and
// int4 rows; or through the codec's own calls (kCodec: EncodedSegmentReader).
enum class StoredRows : uint8_t { kF32, kF16, kBF16, kInt8, kInt4, kCodec };

// How a layer's stored segments are read, settled once per attention call
// from its codec's record layout (every segment of a layer has the same):
// the row type and, for records, their bytes and scale group.
struct StoredLayout {
  StoredRows rows = StoredRows::kF32;
  int64_t record_bytes = 0;
  int64_t group = 0;  // int4: elements per scale
};

inline StoredLayout stored_layout_of(const KVSegment& seg, int64_t head_dim) {
  if (!seg.encoded()) return {};
  const KVRecordLayout layout =
      seg.codec->record_layout(static_cast<int>(seg.heads_per_record * head_dim));
  const auto read_as = [&](StoredRows rows) {
    return StoredLayout{rows, static_cast<int64_t>(kv_record_bytes(layout)), layout.group_size};
  };
  switch (layout.format) {
    case KVRecordFormat::kF16:
      return read_as(StoredRows::kF16);
    case KVRecordFormat::kBF16:
      return read_as(StoredRows::kBF16);
    case KVRecordFormat::kInt8Symmetric:
      // One scale per record (a record of several heads shares it).
      return read_as(layout.group_size == layout.width ? StoredRows::kInt8 : StoredRows::kCodec);
    case KVRecordFormat::kInt4Symmetric:
      // A head's first element must start a byte.
      return read_as(kv_record_bytes(layout) > 0 && head_dim % 2 == 0 ? StoredRows::kInt4
                                                                      : StoredRows::kCodec);
    default:
      return read_as(StoredRows::kCodec);
  }
}

// Entries stored one after another: entry i's key at k + i * k_stride bytes
// (head_dim elements of `type`: f32, f16, bf16 or int8 codes; for int4 the
// whole record), its value at v + i * v_stride, its position positions[i];
// the first is the index-th visible key of the range walked. An int8 row's
// fp16 scale lies scale_offset bytes after its first code; an int4 record's
// scales scale_offset bytes after its start, one per `group` elements, this
// kv head's elements from element `first` of the record on.
struct Run {
  const uint8_t* k;
  int64_t k_stride;
  const uint8_t* v;
  int64_t v_stride;
  StoredRows type;
  int64_t scale_offset = 0;
  int64_t first = 0, group = 0;  // int4
  const int32_t* positions;
  int64_t count, index;

  const uint8_t* key(int64_t i) const { return k + i * k_stride; }
  const uint8_t* value(int64_t i) const { return v + i * v_stride; }

  // Entries [from, to) of this run.
  Run slice(int64_t from, int64_t to) const {
    Run part = *this;
    part.k = key(from);
    part.v = value(from);
    part.positions += from;
    part.count = to - from;
    part.index += from;
    return part;
  }
};

// Which entries of one stored segment a query sees: by the window rule and,
// when the batch and the segment both carry branches, by branch.
class StoredFilter {
 public:
  // `branch`: the query's, or null when the batch carries none.
  StoredFilter(const WindowRule& rule, int64_t position, const BranchId* branch,
               const KVSegment& seg)
      : rule_(rule),
        position_(position),
        positions_(seg.positions),
        branch_(branch != nullptr ? *branch : 0),
        branches_(branch != nullptr ? seg.branches : nullptr) {}

  // Every entry: no test per entry needed.
  bool all() const { return !rule_.limits() && branches_ == nullptr; }
  bool operator()(int64_t j) const {
    return rule_.sees(position_, positions_[j]) &&
           (branches_ == nullptr || branch_sees(branch_, branches_[j]));
  }

 private:
  const WindowRule& rule_;
  int64_t position_;
  const int32_t* positions_;
  BranchId branch_;
  const BranchId* branches_;  // null: no test by branch
};

class VisibleKeys {
 public:
  // `stored`: how this layer's stored segments are read (stored_layout_of).
  VisibleKeys(const AttentionParams& a, int64_t t, int64_t kvh, const StoredLayout& stored)
      : a_(a),
        t_(t),
        kvh_(kvh),
        position_(a.positions[static_cast<std::size_t>(t)]),
        branch_(a.branches.empty() ? nullptr : &a.branches[static_cast<std::size_t>(t)]),
        view_(a.views[static_cast<std::size_t>(a.view_of[static_cast<std::size_t>(t)])]),
        stored_(stored) {}

  int64_t position() const { return position_; }

  // Walks the visible keys [first, first + limit) in order: on_run(const
  // Run&) for rows read as stored, in runs of entries stored one after
  // another; on_encoded(seg, filter) for a segment read through its codec,
  // whole and in its place (such segments come only with a range of every
  // key), returning how many of its entries `filter` lets through.
  template <class OnRun, class OnEncoded>
  void each(int64_t first, int64_t limit, OnRun&& on_run, OnEncoded&& on_encoded) const {
    RangeCut<OnRun> cut{-first, limit, on_run};
    for (const KVSegment& seg : view_.segments) {
      const StoredFilter visible(a_.rule, position_, branch_, seg);
      if (seg.encoded() && stored_.rows == StoredRows::kCodec) {
        cut.index += on_encoded(seg, visible);
        continue;
      }
      const Run entries = seg.encoded() ? record_rows(seg) : f32_rows(seg);
      if (visible.all())
        cut.offer(entries);
      else
        cut.offer_visible(entries, visible);
    }
    // The batch's K/V are [n, kv_heads, head_dim]: a head's rows stride[0] apart.
    const Run batch = f32_run(a_.batch_k, a_.batch_k.stride[1], a_.batch_k.stride[0], a_.batch_v,
                              a_.batch_v.stride[1], a_.batch_v.stride[0], a_.positions.data(),
                              static_cast<int64_t>(a_.positions.size()));
    cut.offer_visible(batch, [&](int64_t j) {
      return a_.in_batch.sees(t_, j) &&
             a_.rule.sees(position_, a_.positions[static_cast<std::size_t>(j)]);
    });
  }

 private:
  // Hands on_run the part of each run inside the range.
  template <class OnRun>
  struct RangeCut {
    int64_t index;  // the next entry's place among the visible keys, less `first`
    int64_t limit;
    OnRun& on_run;

    // Entries that are all visible.
    void offer(Run entries) {
      entries.index = index;
      const int64_t skip = std::max<int64_t>(0, -index);
      const int64_t end = std::min(entries.count, limit - index);
      if (skip < end) on_run(entries.slice(skip, end));
      index += entries.count;
    }
    // Entries visible where visible(j): in runs of visible ones.
    template <class Visible>
    void offer_visible(const Run& entries, const Visible& visible) {
      for (int64_t j = 0; j < entries.count && index < limit;) {
        if (!visible(j)) {
          ++j;
          continue;
        }
        int64_t end = j + 1;
        while (end < entries.count && visible(end)) ++end;
        offer(entries.slice(j, end));
        j = end;
      }
    }
  };

  // This kv head's rows of f32 K and V tensors: the head *_head floats from
  // the start, its rows *_row floats apart.
  Run f32_run(const Tensor& k, int64_t k_head, int64_t k_row, const Tensor& v, int64_t v_head,
              int64_t v_row, const int32_t* positions, int64_t count) const {
    Run run{};
    run.k = reinterpret_cast<const uint8_t*>(k.f32() + kvh_ * k_head);
    run.k_stride = k_row * 4;
    run.v = reinterpret_cast<const uint8_t*>(v.f32() + kvh_ * v_head);
    run.v_stride = v_row * 4;
    run.type = StoredRows::kF32;
    run.positions = positions;
    run.count = count;
    return run;
  }
  // A stored segment's f32 K/V are [kv_heads, count, head_dim].
  Run f32_rows(const KVSegment& seg) const {
    return f32_run(seg.k, seg.k.stride[0], seg.k.stride[1], seg.v, seg.v.stride[0], seg.v.stride[1],
                   seg.positions, seg.count);
  }
  // A segment's records (KVSegment: records of heads_per_record kv heads,
  // one after another per run of heads) as rows of this kv head.
  Run record_rows(const KVSegment& seg) const {
    const int64_t head_dim = a_.q.dim(2), width = seg.heads_per_record * head_dim;
    const int64_t head_at = (kvh_ % seg.heads_per_record) * head_dim;
    Run run{};
    run.type = stored_.rows;
    run.k_stride = run.v_stride = stored_.record_bytes;
    // Bytes from a record's start to this head's first element (int4: the
    // record's start; the head's elements from run.first on).
    int64_t at = 2 * head_at;
    if (stored_.rows == StoredRows::kInt8) {
      at = head_at;
      run.scale_offset = width - head_at;
    } else if (stored_.rows == StoredRows::kInt4) {
      at = 0;
      run.scale_offset = width / 2;
      run.first = head_at;
      run.group = stored_.group;
    }
    const std::size_t start = (kvh_ / seg.heads_per_record) * seg.record_head_stride;
    run.k = seg.k_records + start + at;
    run.v = seg.v_records + start + at;
    run.positions = seg.positions;
    run.count = seg.count;
    return run;
  }

  const AttentionParams& a_;
  int64_t t_, kvh_, position_;
  const BranchId* branch_;  // null: the batch carries no branches
  const KVView& view_;
  const StoredLayout& stored_;
};

}  // namespace tessera::cpu
