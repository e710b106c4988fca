#include "backends/vulkan/attention_gather.h"

#include <algorithm>
#include <string>

namespace tessera::vulkan {
namespace {

// Positions whose cos and sin are kept in the table (as the CPU's, at most).
constexpr int64_t kTablePositions = int64_t{1} << 16;

Status need(bool condition, const std::string& message) {
  return condition ? ok_status() : invalid_argument(message);
}

bool is_kv(const Tensor& t, int64_t kv_heads, int64_t count, int64_t head_dim) {
  return t.dtype == DType::kF32 && t.rank == 3 && t.dim(0) == kv_heads && t.dim(1) == count &&
         t.dim(2) == head_dim && (count == 0 || t.stride[2] == 1);
}

}  // namespace

Status AttentionGather::check(const AttentionParams& p) {
  RETURN_IF_ERROR(
      need(p.q.rank == 3 && p.batch_k.rank == 3 && p.batch_v.rank == 3 && p.out.rank == 3,
           "q, batch_k, batch_v and out must be 3-D"));
  const int64_t n = p.q.dim(0), heads = p.q.dim(1), head_dim = p.q.dim(2);
  const int64_t kv_heads = p.batch_k.dim(1);
  for (const Tensor* t : {&p.q, &p.batch_k, &p.batch_v, &p.out})
    RETURN_IF_ERROR(need(t->dtype == DType::kF32, "q, batch_k, batch_v and out must be f32"));
  RETURN_IF_ERROR(
      need(kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads"));
  RETURN_IF_ERROR(need(p.out.dim(0) == n && p.out.dim(1) == heads && p.out.dim(2) == head_dim,
                       "out must be [n, heads, head_dim] as q"));
  RETURN_IF_ERROR(need(p.batch_k.dim(0) == n && p.batch_k.dim(2) == head_dim &&
                           p.batch_v.dim(0) == n && p.batch_v.dim(1) == kv_heads &&
                           p.batch_v.dim(2) == head_dim,
                       "batch_k and batch_v must be [n, kv_heads, head_dim]"));
  RETURN_IF_ERROR(need(
      static_cast<int64_t>(p.positions.size()) == n && static_cast<int64_t>(p.view_of.size()) == n,
      std::to_string(p.positions.size()) + " positions and " + std::to_string(p.view_of.size()) +
          " views for " + std::to_string(n) + " tokens"));
  RETURN_IF_ERROR(need(p.branches.empty() || static_cast<int64_t>(p.branches.size()) == n,
                       std::to_string(p.branches.size()) + " branches for " + std::to_string(n) +
                           " tokens (one per token, or none)"));
  RETURN_IF_ERROR(
      need(n == 0 || (p.in_batch.words >= (n + 63) / 64 &&
                      static_cast<int64_t>(p.in_batch.mask.size()) >= n * p.in_batch.words),
           "in_batch must hold a row of ceil(n / 64) words per token"));
  for (int32_t v : p.view_of)
    RETURN_IF_ERROR(
        need(v >= 0 && static_cast<std::size_t>(v) < p.views.size(),
             "view_of names view " + std::to_string(v) + " of " + std::to_string(p.views.size())));
  for (std::size_t v = 0; v < p.views.size(); ++v)
    for (const KVSegment& seg : p.views[v].segments) {
      if (seg.encoded() && !seg.device_records())
        return unimplemented(
            "view " + std::to_string(v) +
            " has an encoded segment of host records: the Vulkan backend attends decoded f32 "
            "views or records in its own memory; the caller must pass CacheStore::view, not "
            "encoded_view");
      if (seg.count == 0) continue;
      if (seg.device_records()) {
        // Decoded by the backend as they are gathered (prepare_device_attention).
        for (const Tensor* t : {&seg.k, &seg.v})
          RETURN_IF_ERROR(need(t->buffer != nullptr && t->rank == 3 && t->dim(0) == kv_heads &&
                                   t->dim(1) == seg.count && t->stride[2] == 1,
                               "view " + std::to_string(v) + ": device records " + t->describe() +
                                   " must be u8 [kv_heads, count, record bytes] in a buffer"));
        RETURN_IF_ERROR(need(seg.positions != nullptr,
                             "view " + std::to_string(v) + ": a segment without positions"));
        continue;
      }
      const bool host = seg.k.on_host() && seg.v.on_host();
      RETURN_IF_ERROR(need(host || (seg.k.data == nullptr && seg.v.data == nullptr &&
                                    seg.k.buffer != nullptr && seg.v.buffer != nullptr),
                           "view " + std::to_string(v) + ": a segment whose k " + seg.k.describe() +
                               " and v are neither both host memory nor both in a buffer"));
      RETURN_IF_ERROR(need(is_kv(seg.k, kv_heads, seg.count, head_dim) &&
                               is_kv(seg.v, kv_heads, seg.count, head_dim),
                           "view " + std::to_string(v) + ": a segment's k " + seg.k.describe() +
                               " and v " + seg.v.describe() +
                               " must be f32 [kv_heads, count, head_dim], head_dim contiguous"));
      RETURN_IF_ERROR(need(seg.positions != nullptr,
                           "view " + std::to_string(v) + ": a segment without positions"));
    }
  const bool turns = p.stored_keys == StoredKeys::kBeforeRope || p.rule.reassign;
  if (turns) {
    RETURN_IF_ERROR(need(head_dim % 2 == 0, "keys turned by RoPE need an even head_dim"));
    RETURN_IF_ERROR(need(p.rope.freq_factors.empty() ||
                             static_cast<int64_t>(p.rope.freq_factors.size()) == head_dim / 2,
                         "rope.freq_factors must have head_dim / 2 entries"));
  }
  return ok_status();
}

bool AttentionGather::device_kv(const AttentionParams& p) {
  bool stored = false;
  for (const KVView& view : p.views)
    for (const KVSegment& seg : view.segments) {
      if (seg.count > 0 && !seg.k.on_host()) return true;
      stored = stored || seg.count > 0;
    }
  return !stored;
}

bool AttentionGather::batch_on_host(const AttentionParams& p) {
  if (p.stored_keys == StoredKeys::kBeforeRope) return true;
  if (!p.rule.reassign || p.rule.sink <= 0) return false;
  const int64_t n = static_cast<int64_t>(p.positions.size());
  for (int64_t i = 0; i < n; ++i) {
    if (p.rule.sink_shift(p.positions[static_cast<std::size_t>(i)]) == 0) continue;
    for (int64_t j = 0; j < n; ++j)
      if (p.positions[static_cast<std::size_t>(j)] < p.rule.sink && p.in_batch.sees(i, j))
        return true;
  }
  return false;
}

int64_t AttentionGather::turn_for(int64_t p, int64_t shift) const {
  const int64_t moved = p < p_->rule.sink ? shift : 0;
  if (before_rope_) return p + moved;
  return moved != 0 ? moved : kNoTurn;
}

bool AttentionGather::sees(int64_t i, const Column& c, int64_t& turn) const {
  const Query& q = queries_[static_cast<std::size_t>(i)];
  int64_t p = 0;
  if (c.view < 0) {
    p = p_->positions[static_cast<std::size_t>(c.entry)];
    if (!p_->in_batch.sees(i, c.entry)) return false;
  } else {
    p = c.segment->positions[c.entry];
    if (has_branches_ && c.segment->branches != nullptr &&
        !branch_sees(q.branch, c.segment->branches[c.entry]))
      return false;
  }
  if (!p_->rule.sees(q.position, p)) return false;
  turn = turn_for(p, q.shift);
  return true;
}

void AttentionGather::offer(const Column& c, const std::vector<int64_t>& queries) {
  turns_.clear();
  for (int64_t i : queries) {
    int64_t turn = 0;
    if (sees(i, c, turn) && std::find(turns_.begin(), turns_.end(), turn) == turns_.end())
      turns_.push_back(turn);
  }
  for (int64_t turn : turns_) {
    Column copy = c;
    copy.turn = turn;
    columns_list_.push_back(copy);
  }
}

void AttentionGather::start(const AttentionParams& p) {
  p_ = &p;
  before_rope_ = p.stored_keys == StoredKeys::kBeforeRope;
  has_branches_ = !p.branches.empty();
  rope_ = p.rope;
  head_dim_ = p.q.dim(2);
  const int64_t n = p.q.dim(0);
  queries_.resize(static_cast<std::size_t>(n));
  all_queries_.resize(static_cast<std::size_t>(n));
  queries_of_view_.resize(p.views.size());
  for (auto& list : queries_of_view_) list.clear();
  for (int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    queries_[at] = {p.positions[at], p.rule.sink_shift(p.positions[at]),
                    has_branches_ ? p.branches[at] : BranchId{0}};
    all_queries_[at] = i;
    queries_of_view_[static_cast<std::size_t>(p.view_of[at])].push_back(i);
  }
  columns_list_.clear();
}

void AttentionGather::gather(const AttentionParams& p, const HostBatch& batch) {
  start(p);
  const int64_t n = p.q.dim(0), head_dim = p.q.dim(2), kv_heads = p.batch_k.dim(1);
  device_ = device_kv(p);
  // The stored entries, view by view, in segment order (the CPU's order).
  for (std::size_t v = 0; v < p.views.size(); ++v) {
    const std::vector<int64_t>& queries = queries_of_view_[v];
    if (queries.empty()) continue;
    const std::span<const KVSegment> segments = p.views[v].segments;
    for (std::size_t s = 0; s < segments.size(); ++s) {
      const KVSegment& seg = segments[s];
      const bool host = seg.k.on_host();
      for (int64_t e = 0; e < seg.count; ++e)
        offer({host ? seg.k.f32() + e * seg.k.stride[1] : nullptr,
               host ? seg.v.f32() + e * seg.v.stride[1] : nullptr, seg.k.stride[0], seg.v.stride[0],
               kNoTurn, static_cast<int32_t>(v), static_cast<int32_t>(s), &seg, e},
              queries);
    }
  }
  // Then the batch's keys, when they are turned here (on a device: by it).
  batch_gathered_ = batch_on_host(p);
  if (batch_gathered_)
    for (int64_t j = 0; j < n; ++j)
      offer(device_ ? Column{nullptr, nullptr, 0, 0, kNoTurn, -1, -1, nullptr, j}
                    : Column{batch.k + j * batch.k_s0, batch.v + j * batch.v_s0, batch.k_s1,
                             batch.v_s1, kNoTurn, -1, -1, nullptr, j},
            all_queries_);
  columns_ = static_cast<int64_t>(columns_list_.size());
  fill_mask(n);
  if (device_) {
    plan_runs(kv_heads, head_dim);
  } else {
    fill_keys(kv_heads, head_dim);
  }
  if (device_) remember(p);  // only a device plan is reused (plan_holds_for)
}

void AttentionGather::remember(const AttentionParams& p) {
  visibility_id_ = p.visibility_id;
  rule_ = p.rule;
  stored_keys_ = p.stored_keys;
  segment_keys_.clear();
  for (std::size_t v = 0; v < p.views.size(); ++v)
    for (const KVSegment& seg : p.views[v].segments)
      segment_keys_.push_back(SegmentKey::of(v, seg));
}

bool AttentionGather::plan_holds_for(const AttentionParams& p) const {
  if (p.visibility_id == 0 || p.visibility_id != visibility_id_ || !device_ || host_columns_ != 0 ||
      p.stored_keys != stored_keys_ || p.rule.sink != rule_.sink || p.rule.window != rule_.window ||
      p.rule.reassign != rule_.reassign)
    return false;
  std::size_t at = 0;
  for (std::size_t v = 0; v < p.views.size(); ++v)
    for (const KVSegment& seg : p.views[v].segments) {
      if (at == segment_keys_.size() || !(segment_keys_[at] == SegmentKey::of(v, seg)))
        return false;
      ++at;
    }
  return at == segment_keys_.size();
}

void AttentionGather::plan_runs(int64_t kv_heads, int64_t head_dim) {
  runs_.clear();
  turn_runs_.clear();
  turn_positions_.clear();
  host_columns_ = 0;
  for (const Column& c : columns_list_) host_columns_ += c.k != nullptr ? 1 : 0;
  const auto size = static_cast<std::size_t>(kv_heads * host_columns_ * head_dim);
  if (k_.size() < size) {
    k_.resize(size);
    v_.resize(size);
  }
  int64_t host = 0;
  for (int64_t c = 0; c < columns_; ++c) {
    const Column& col = columns_list_[static_cast<std::size_t>(c)];
    const Run::Kind kind = col.k != nullptr ? Run::kHost
                           : col.view < 0   ? Run::kBatch
                                            : Run::kSegment;
    const int64_t entry = kind == Run::kHost ? host : col.entry;
    Run* last = runs_.empty() ? nullptr : &runs_.back();
    if (last != nullptr && last->kind == kind && last->entry + last->count == entry &&
        (kind != Run::kSegment || (last->view == col.view && last->segment == col.segment_index))) {
      ++last->count;
    } else {
      runs_.push_back({kind, col.view, col.segment_index, entry, c, 1});
    }
    if (kind == Run::kHost) {
      // Packed [kv_heads, host_columns, head_dim], as stored (turned later, with the rest).
      for (int64_t h = 0; h < kv_heads; ++h) {
        std::copy_n(col.k + h * col.k_head, head_dim,
                    k_.data() + (h * host_columns_ + host) * head_dim);
        std::copy_n(col.v + h * col.v_head, head_dim,
                    v_.data() + (h * host_columns_ + host) * head_dim);
      }
      ++host;
    }
    if (col.turn != kNoTurn) {
      TurnRun* turned = turn_runs_.empty() ? nullptr : &turn_runs_.back();
      if (turned != nullptr && turned->column + turned->count == c) {
        ++turned->count;
      } else {
        turn_runs_.push_back({c, 1, static_cast<int64_t>(turn_positions_.size())});
      }
      turn_positions_.push_back(static_cast<int32_t>(col.turn));
    }
  }
}

void AttentionGather::fill_mask(int64_t n) {
  mask_words_ = (columns_ + n + 31) / 32;
  mask_bits_.assign(static_cast<std::size_t>(n * mask_words_), 0);
  const auto see = [&](int64_t i, int64_t column) {
    mask_bits_[static_cast<std::size_t>(i * mask_words_ + column / 32)] |= uint32_t{1}
                                                                           << (column % 32);
  };
  for (int64_t c = 0; c < columns_; ++c) {
    const Column& col = columns_list_[static_cast<std::size_t>(c)];
    const std::vector<int64_t>& queries =
        col.view < 0 ? all_queries_ : queries_of_view_[static_cast<std::size_t>(col.view)];
    for (int64_t i : queries) {
      int64_t turn = 0;
      if (sees(i, col, turn) && turn == col.turn) see(i, c);
    }
  }
  if (batch_gathered_) return;  // the batch columns stay hidden
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = queries_[static_cast<std::size_t>(i)].position;
    for (int64_t j = 0; j < n; ++j)
      if (p_->in_batch.sees(i, j) && p_->rule.sees(t, p_->positions[static_cast<std::size_t>(j)]))
        see(i, columns_ + j);
  }
}

void AttentionGather::fill_keys(int64_t kv_heads, int64_t head_dim) {
  const auto size = static_cast<std::size_t>(kv_heads * columns_ * head_dim);
  if (k_.size() < size) {
    k_.resize(size);
    v_.resize(size);
  }
  int64_t most = -1;
  for (const Column& c : columns_list_) most = std::max(most, c.turn);
  if (most >= 0) prepare_table(head_dim, rope_, std::min(most + 1, kTablePositions));
  for (int64_t c = 0; c < columns_; ++c) {
    const Column& col = columns_list_[static_cast<std::size_t>(c)];
    for (int64_t h = 0; h < kv_heads; ++h) {
      float* k = k_.data() + (h * columns_ + c) * head_dim;
      float* v = v_.data() + (h * columns_ + c) * head_dim;
      const float* src_k = col.k + h * col.k_head;
      if (col.turn == kNoTurn)
        std::copy_n(src_k, head_dim, k);
      else
        turn(src_k, col.turn, k);
      std::copy_n(col.v + h * col.v_head, head_dim, v);
    }
  }
}

void AttentionGather::prepare_table(int64_t head_dim, const RopeSpec& rope, int64_t positions) {
  if (head_dim == table_head_dim_ && same_rope(rope, table_rope_) && positions <= table_positions_)
    return;
  if (head_dim != table_head_dim_ || !same_rope(rope, table_rope_)) table_positions_ = 0;
  table_head_dim_ = head_dim;
  table_factors_.assign(rope.freq_factors.begin(), rope.freq_factors.end());
  table_rope_ = rope;
  table_rope_.freq_factors = table_factors_;
  const int64_t pairs = head_dim / 2;
  // Grown, never shrunk: a doubling so a lengthening decode seldom refills it.
  const int64_t want = std::min(kTablePositions, std::max(positions, 2 * table_positions_));
  table_.resize(static_cast<std::size_t>(want * pairs * 2));
  for (int64_t p = table_positions_; p < want; ++p)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float* cs = table_.data() + (p * pairs + pair) * 2;
      rope_cos_sin(p, pair, head_dim, table_rope_, cs[0], cs[1]);
    }
  table_positions_ = want;
}

// As the CPU's RopeTable::rotate: dst = src turned at `position`.
void AttentionGather::turn(const float* src, int64_t position, float* dst) const {
  const int64_t pairs = head_dim_ / 2;
  const bool tabled = position >= 0 && position < table_positions_;
  const float* cs = tabled ? table_.data() + position * pairs * 2 : nullptr;
  for (int64_t pair = 0; pair < pairs; ++pair) {
    float c = 0, s = 0;
    if (tabled) {
      c = cs[2 * pair];
      s = cs[2 * pair + 1];
    } else {
      rope_cos_sin(position, pair, head_dim_, rope_, c, s);
    }
    const int64_t i0 = rope_.pairs == RopePairs::kHalves ? pair : 2 * pair;
    const int64_t i1 = rope_.pairs == RopePairs::kHalves ? pair + pairs : 2 * pair + 1;
    const float v0 = src[i0], v1 = src[i1];
    dst[i0] = v0 * c - v1 * s;
    dst[i1] = v0 * s + v1 * c;
  }
}

}  // namespace tessera::vulkan
