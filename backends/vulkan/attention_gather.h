// Backend::attention on the Vulkan backend: every stored entry a query of its
// view may see becomes a column of one dense K and V [kv_heads, S, head_dim],
// with a mask of a bit per query and column [n, S + n] (seen or hidden) built on the host
// from the CPU's rule (backends/cpu/visible_keys.h), so that masked_attention
// (shaders/masked_attention.comp) gives what the CPU's attention gives.
//
// Stored K/V on the host (a store in host memory) are gathered on the host
// and uploaded. Stored K/V in the device's memory (docs/backends.md, step 2)
// are not touched by the host: gather() then says which runs of columns come
// from which segment (or the batch, or a host segment such as restoration's
// transient K/V) and which runs are turned by RoPE, for the device to copy
// and turn; one device segment seen whole, in order and unturned, is bound
// in place with no copy at all.
//
// Keys that must be turned by RoPE as they are read (stored before RoPE, or
// sinks moved under WindowRule::reassign) are turned here, on the host, with
// the formula every backend shares (core/backend/rope_spec.h). Where the turn depends on the
// query (a sink moved by sink_shift of the query's position), the entry is
// gathered once per distinct turn, each copy seen only by the queries that
// turn it so. The batch's own keys need that too when they are kept before
// RoPE or a moved sink is among them: the caller then hands their host copies
// in, and they are gathered after the stored entries like them (their batch
// columns of the mask all hidden).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/backend/backend.h"

namespace tessera::vulkan {

// The batch's keys and values on the host: key j of kv head h at k + j * s0 +
// h * s1 (likewise v).
struct HostBatch {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t k_s0 = 0, k_s1 = 0, v_s0 = 0, v_s1 = 0;
};

class AttentionGather {
 public:
  // Whether the call is one gather() takes: f32 decoded host segments of
  // [kv_heads, count, head_dim], one position and view per token (a view that
  // exists), one branch per token or none, a visibility row per token, an
  // even head_dim and head_dim / 2 freq_factors when keys are turned. The
  // error names what is not.
  static Status check(const AttentionParams& p);
  // Whether the batch's keys must be gathered (turned on the host): kept
  // before RoPE, or a batch key below the sink seen by a query whose sinks
  // move.
  static bool batch_on_host(const AttentionParams& p);

  // Whether the device assembles p's columns (check() passed): a stored
  // segment lies in device memory, or nothing is stored yet. Else the
  // entries are a host store's, gathered on the host.
  static bool device_kv(const AttentionParams& p);

  // Gathers for `p` (check() passed); `batch` holds the batch's keys and
  // values when batch_on_host(p) and not device_kv(p), else is unused.
  void gather(const AttentionParams& p, const HostBatch& batch);

  // Whether this gather's plan (runs, turns, mask) holds for `p` as it is:
  // a device_kv() gather without host columns, made for a call of the same
  // forward (AttentionParams::visibility_id) with the same rule, stored_keys
  // and segments (count, positions and branches of each). Then only the
  // K/V differ, and the runs are read from p's own segments (segment_of).
  bool plan_holds_for(const AttentionParams& p) const;

  // Where a device_kv() gather's columns come from: `count` columns from
  // `column` on are entries `entry`.. of `segment` (kSegment), batch keys
  // `entry`.. (kBatch), or host columns `entry`.. of k() / v() (kHost:
  // [kv_heads, host_columns(), head_dim]).
  struct Run {
    enum Kind { kSegment, kBatch, kHost } kind;
    int32_t view, segment;  // kSegment: p.views[view].segments[segment]
    int64_t entry, column, count;
  };
  static const KVSegment& segment_of(const AttentionParams& p, const Run& run) {
    return p.views[static_cast<std::size_t>(run.view)]
        .segments[static_cast<std::size_t>(run.segment)];
  }
  // Columns [column, column + count) are turned by RoPE at
  // turn_positions()[first..first + count).
  struct TurnRun {
    int64_t column, count, first;
  };
  const std::vector<Run>& runs() const { return runs_; }
  const std::vector<TurnRun>& turn_runs() const { return turn_runs_; }
  const std::vector<int32_t>& turn_positions() const { return turn_positions_; }
  int64_t host_columns() const { return host_columns_; }
  // A single device segment whose entries, in order and unturned, are the
  // columns: bound as it lies (raw f32, or records attention reads as
  // stored).
  bool in_place(const AttentionParams& p) const {
    if (runs_.size() != 1 || runs_[0].kind != Run::kSegment || !turn_runs_.empty()) return false;
    const KVSegment& seg = segment_of(p, runs_[0]);
    return runs_[0].entry == 0 && runs_[0].count == seg.count;
  }

  int64_t columns() const { return columns_; }  // S
  const std::vector<float>& k() const { return k_; }
  const std::vector<float>& v() const { return v_; }
  // Which columns each query sees: [n, mask_words()] words, bit c % 32 of
  // word c / 32 for column c (S stored columns, then the n batch keys).
  const std::vector<uint32_t>& mask_bits() const { return mask_bits_; }
  int64_t mask_words() const { return mask_words_; }

 private:
  // One gathered entry: its key and value (kv head 0, then every head_stride
  // floats), the position it is turned at (kNoTurn: as stored), and which
  // stored entry or batch key it is, to test who sees it.
  struct Column {
    const float* k;  // null for an entry in device memory (a segment or the batch)
    const float* v;
    int64_t k_head, v_head;
    int64_t turn;
    int32_t view;  // -1: batch key `entry`
    int32_t segment_index;
    const KVSegment* segment;
    int64_t entry;
  };
  // What a plan was made from, beyond what visibility_id promises (one
  // entry per segment, view by view).
  struct SegmentKey {
    int32_t view;
    int64_t count;
    const int32_t* positions;
    const BranchId* branches;
    bool on_host;
    bool operator==(const SegmentKey&) const = default;
    static SegmentKey of(std::size_t view, const KVSegment& seg) {
      return {static_cast<int32_t>(view), seg.count, seg.positions, seg.branches, seg.k.on_host()};
    }
  };
  void remember(const AttentionParams& p);
  static constexpr int64_t kNoTurn = INT64_MIN;

  struct Query {
    int64_t position, shift;
    BranchId branch;
  };

  void start(const AttentionParams& p);
  // Whether query i sees the column's entry (by window, branch, in_batch),
  // and the turn it reads it at.
  bool sees(int64_t i, const Column& c, int64_t& turn) const;
  int64_t turn_for(int64_t p, int64_t shift) const;
  // One column per distinct turn the queries that see it use.
  void offer(const Column& c, const std::vector<int64_t>& queries);
  void fill_mask(int64_t n);
  void fill_keys(int64_t kv_heads, int64_t head_dim);
  // device_kv(): the runs, and the host columns packed in k_ / v_.
  void plan_runs(int64_t kv_heads, int64_t head_dim);
  void turn(const float* src, int64_t position, float* dst) const;
  void prepare_table(int64_t head_dim, const RopeSpec& rope, int64_t positions);

  const AttentionParams* p_ = nullptr;
  bool before_rope_ = false;
  bool has_branches_ = false;
  std::vector<Query> queries_;
  std::vector<std::vector<int64_t>> queries_of_view_;
  std::vector<int64_t> all_queries_;
  std::vector<Column> columns_list_;
  std::vector<int64_t> turns_;  // scratch of offer()
  bool batch_gathered_ = false;
  bool device_ = false;
  int64_t columns_ = 0;
  std::vector<float> k_, v_;
  std::vector<uint32_t> mask_bits_;
  int64_t mask_words_ = 0;
  std::vector<Run> runs_;
  std::vector<TurnRun> turn_runs_;
  std::vector<int32_t> turn_positions_;
  int64_t host_columns_ = 0;
  // The call the plan was made for (remember()).
  uint64_t visibility_id_ = 0;
  WindowRule rule_;
  StoredKeys stored_keys_ = StoredKeys::kRotated;
  std::vector<SegmentKey> segment_keys_;

  // RoPE's cos and sin for positions [0, table_positions_), as the CPU's
  // table (rope_table.h); past it they are computed on the spot.
  int64_t table_head_dim_ = 0;
  RopeSpec table_rope_;
  std::vector<float> table_factors_;
  int64_t table_positions_ = 0;
  std::vector<float> table_;
  RopeSpec rope_;
  int64_t head_dim_ = 0;
};

}  // namespace tessera::vulkan
