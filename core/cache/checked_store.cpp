#include "core/cache/checked_store.h"

#include <algorithm>
#include <utility>

namespace tessera {
namespace {

std::string seq_name(SequenceId seq) {
  return "sequence " + std::to_string(seq);
}

std::string str(int64_t v) {
  return std::to_string(v);
}

std::string shape_text(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (int64_t d : dims) {
    if (s.size() > 1) s += ", ";
    s += str(d);
  }
  return s + "]";
}

}  // namespace

CheckedStore::CheckedStore(std::unique_ptr<CacheStore> store, std::string plugin_name)
    : store_(std::move(store)), plugin_name_(std::move(plugin_name)) {
  TESSERA_CHECK(store_ != nullptr, "CheckedStore needs a store");
}

Status CheckedStore::init(const CacheGeometry& geometry,
                          std::span<const Compressor* const> layer_codecs, StoredKeys stored_keys,
                          Backend* kv_backend) {
  // Messages are built only on failure: a successful call allocates nothing.
  auto who = [this] { return "cache '" + plugin_name_ + "'"; };
  if (ready_) return failed_precondition(who() + ": init() called twice");
  if (geometry.layers <= 0 || geometry.kv_heads <= 0 || geometry.head_dim <= 0) {
    return invalid_argument(who() +
                            ": geometry needs positive layers, kv_heads and head_dim, got " +
                            str(geometry.layers) + ", " + str(geometry.kv_heads) + ", " +
                            str(geometry.head_dim) + " (check the model's attention config)");
  }
  if (geometry.heads_per_vector != 1 && geometry.heads_per_vector != geometry.kv_heads) {
    return invalid_argument(who() + ": a codec vector spans one KV head or all " +
                            str(geometry.kv_heads) + " of a token (cache.codec_span), not " +
                            str(geometry.heads_per_vector));
  }
  if (layer_codecs.size() != static_cast<std::size_t>(geometry.layers))
    return invalid_argument(who() + ": " + str(static_cast<int64_t>(layer_codecs.size())) +
                            " codecs for " + str(geometry.layers) + " layers");
  for (const Compressor* codec : layer_codecs)
    if (codec == nullptr)
      return invalid_argument(who() + ": no codec given ([cache.codec] plugin)");
  Status st = store_->init(geometry, layer_codecs);
  if (!st.ok()) return st.with_context(who());
  geometry_ = geometry;
  policy_ = store_->policy();
  stored_keys_ = stored_keys;
  codecs_.assign(layer_codecs.begin(), layer_codecs.end());
  if (policy_.rule.sink < 0 || policy_.rule.window < 0 || policy_.max_entries < 0)
    return internal_error("cache plugin '" + plugin_name_ +
                          "' reports a negative sink, window or entry limit (a bug in the plugin)");
  if (kv_backend != nullptr) kv_in_backend_ = store_->use_backend(*kv_backend);
  ready_ = true;
  return check_bytes("init");
}

Status CheckedStore::allocate(SequenceId seq, int64_t capacity) {
  RETURN_IF_ERROR(check_ready());
  // Messages are built only on failure: a successful call allocates nothing.
  auto who = [this] { return "cache '" + plugin_name_ + "'"; };
  if (capacity <= 0) {
    return invalid_argument(who() + ": capacity of " + seq_name(seq) + " must be positive, got " +
                            str(capacity) + " (set [cache] max_tokens)");
  }
  if (contains(seq)) {
    return failed_precondition(who() + ": " + seq_name(seq) +
                               " is already allocated; release it first");
  }
  Status st = store_->allocate(seq, capacity);
  if (!st.ok()) {
    RETURN_IF_ERROR(check_bytes("failed allocate"));
    return st.with_context(who());
  }
  const int64_t reported = store_->info(seq).capacity;
  sequences_.emplace(seq, SequenceRecord{reported});
  const int64_t expected =
      policy_.max_entries > 0 ? std::min(capacity, policy_.max_entries) : capacity;
  if (reported < expected) {
    return broke("its contract", "allocate", seq,
                 "capacity " + str(reported) + " entries, expected " + str(expected));
  }
  return check_after("allocate", seq, 0, 0, 0);
}

Status CheckedStore::release(SequenceId seq) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "release"));
  (void)state;
  Status st = store_->release(seq);
  if (!st.ok()) return st.with_context("cache '" + plugin_name_ + "'");
  sequences_.erase(seq);
  return check_bytes("release");
}

Status CheckedStore::fork(SequenceId src, SequenceId dst) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(src, "fork"));
  if (contains(dst)) {
    return failed_precondition("cache '" + plugin_name_ + "': fork " + seq_name(src) + " into " +
                               seq_name(dst) + ": " + seq_name(dst) +
                               " is already allocated; release it first");
  }
  const SequenceInfo before = store_->info(src);
  const int64_t capacity = state->capacity;
  Status st = store_->fork(src, dst);
  if (!st.ok()) {
    RETURN_IF_ERROR(check_bytes("failed fork"));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  sequences_.emplace(dst, SequenceRecord{capacity});
  RETURN_IF_ERROR(check_after("fork (source)", src, before.logical_length, before.stored, 0));
  RETURN_IF_ERROR(check_after("fork", dst, before.logical_length, before.stored, 0));
  const std::span<const int32_t> a = store_->positions(src);
  const std::span<const int32_t> b = store_->positions(dst);
  if (!std::equal(a.begin(), a.end(), b.begin(), b.end()))
    return broke("its contract", "fork", dst, "the positions differ from the source's");
  const std::span<const BranchId> a_branches = store_->branches(src);
  const std::span<const BranchId> b_branches = store_->branches(dst);
  if (!std::equal(a_branches.begin(), a_branches.end(), b_branches.begin(), b_branches.end()))
    return broke("its contract", "fork", dst, "the branches differ from the source's");
  return check_branch_positions("fork", dst, sequences_.at(dst));
}

Result<SharedBlock> CheckedStore::hold_block(SequenceId seq, int64_t index) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "hold_block"));
  (void)state;
  const int64_t size = store_->shared_block_size();
  if (size <= 0)
    return unimplemented("cache '" + plugin_name_ + "' shares no blocks (prefix caching)");
  const std::span<const int32_t> pos = store_->positions(seq);
  const std::span<const BranchId> br = store_->branches(seq);
  if (index < 0 || (index + 1) * size > static_cast<int64_t>(pos.size()))
    return out_of_range("cache '" + plugin_name_ + "': block " + str(index) + " of " +
                        seq_name(seq) + " is not full");
  for (int64_t i = index * size; i < (index + 1) * size; ++i)
    if (pos[static_cast<std::size_t>(i)] != i ||
        (!br.empty() && br[static_cast<std::size_t>(i)] != 0))
      return failed_precondition("cache '" + plugin_name_ + "': block " + str(index) + " of " +
                                 seq_name(seq) +
                                 " is not plain (an entry away from its position, or of a "
                                 "branch); only a plain prefix is shared");
  Result<SharedBlock> block = store_->hold_block(seq, index);
  if (!block.ok()) return block.status().with_context("cache '" + plugin_name_ + "'");
  ++held_blocks_[*block];
  RETURN_IF_ERROR(check_bytes("hold_block"));
  return *block;
}

Status CheckedStore::drop_block(SharedBlock block) {
  const auto it = held_blocks_.find(block);
  if (it == held_blocks_.end())
    return failed_precondition("cache '" + plugin_name_ + "': drop_block of block " + str(block) +
                               ", which the core does not hold");
  if (--it->second == 0) held_blocks_.erase(it);
  store_->drop_block(block);
  return check_bytes("drop_block");
}

Status CheckedStore::adopt_blocks(SequenceId seq, std::span<const SharedBlock> blocks) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "adopt_blocks"));
  const SequenceInfo before = store_->info(seq);
  if (before.logical_length != 0)
    return failed_precondition("cache '" + plugin_name_ + "': " + seq_name(seq) + " holds " +
                               str(before.logical_length) +
                               " tokens; only an empty sequence adopts blocks");
  for (const SharedBlock block : blocks)
    if (held_blocks_.count(block) == 0)
      return failed_precondition("cache '" + plugin_name_ + "': adopt_blocks of block " +
                                 str(block) + ", which the core does not hold");
  const int64_t entries = static_cast<int64_t>(blocks.size()) * store_->shared_block_size();
  if (entries > state->capacity)
    return resource_exhausted("cache '" + plugin_name_ + "': " + str(entries) +
                              " adopted entries exceed the capacity of " + seq_name(seq) + " (" +
                              str(state->capacity) + ")");
  Status st = store_->adopt_blocks(seq, blocks);
  if (!st.ok()) {
    RETURN_IF_ERROR(check_after("failed adopt_blocks", seq, 0, 0, 0));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  RETURN_IF_ERROR(check_after("adopt_blocks", seq, entries, entries, 0));
  const std::span<const int32_t> pos = store_->positions(seq);
  for (int64_t i = 0; i < entries; ++i)
    if (pos[static_cast<std::size_t>(i)] != i)
      return broke("its contract", "adopt_blocks", seq,
                   "entry " + str(i) + " is at position " + str(pos[static_cast<std::size_t>(i)]));
  RETURN_IF_ERROR(check_branch_positions("adopt_blocks", seq, sequences_.at(seq)));
  return check_bytes("adopt_blocks");
}

template <typename Mutate>
Status CheckedStore::checked_append(std::string_view op, SequenceId seq,
                                    std::span<const int32_t> positions,
                                    std::span<const BranchId> branches, Mutate&& mutate) {
  SequenceRecord& record = sequences_.at(seq);
  auto who = [&] {
    return "cache '" + plugin_name_ + "': " + std::string(op) + " to " + seq_name(seq);
  };
  const auto n = static_cast<int64_t>(positions.size());
  const SequenceInfo before = store_->info(seq);
  // INV-2 per branch, against the floors the record keeps (restored from the
  // store if the append is refused).
  Status refused;
  std::vector<int32_t>& floors = record.floor_of_branch;
  for (int64_t i = 0; i < n && refused.ok(); ++i) {
    const int32_t p = positions[static_cast<std::size_t>(i)];
    const BranchId b = branches.empty() ? BranchId{0} : branches[static_cast<std::size_t>(i)];
    if (p < 0) {
      refused = invalid_argument(who() + ": position " + str(i) + " is negative (" + str(p) + ")");
    } else if (b < 0) {
      refused = invalid_argument(who() + ": entry " + str(i) + " has branch " + str(b) +
                                 "; branch ids are >= 0 (0: the shared prefix)");
    } else if (b > 0 && !policy_.keeps_branches) {
      refused = invalid_argument(
          who() + ": entry " + str(i) + " is of branch " + str(b) + ", but cache plugin '" +
          plugin_name_ +
          "' does not keep branches (decode.branch_layout = \"bim\" needs a store that "
          "does, e.g. static or paged; or use branch_layout = \"batched\")");
    } else if (b == 0) {
      const int32_t floor = *std::max_element(floors.begin(), floors.end());
      if (p < floor)
        refused = invalid_argument(who() + ": position " + str(i) + " = " + str(p) +
                                   " is below the previous position " + str(floor) +
                                   "; positions must not decrease (INV-2)");
      std::fill(floors.begin(), floors.end(), p);
    } else {
      if (static_cast<std::size_t>(b) >= floors.size())
        floors.resize(static_cast<std::size_t>(b) + 1, floors[0]);
      const int32_t floor = floors[static_cast<std::size_t>(b)];
      if (p < floor)
        refused = invalid_argument(who() + ": position " + str(i) + " = " + str(p) +
                                   " is below the previous position " + str(floor) + " of branch " +
                                   str(b) +
                                   " (its own entries and the shared prefix's); positions must "
                                   "not decrease within a branch (INV-2)");
      floors[static_cast<std::size_t>(b)] = p;
    }
  }
  if (refused.ok() && !policy_.evicts && before.stored + n > record.capacity) {
    refused = resource_exhausted(who() + ": needs " + str(before.stored + n) + " entries (" +
                                 str(before.stored) + " stored + " + str(n) +
                                 " new) but the capacity is " + str(record.capacity) +
                                 "; raise [cache] max_tokens, truncate first, or use an evicting "
                                 "store (cache.plugin = \"sink_window\")");
  }
  if (!refused.ok()) {
    RETURN_IF_ERROR(check_branch_positions(std::string("refused ") + std::string(op), seq, record));
    return refused;
  }

  Status st = mutate();
  if (!st.ok()) {
    // A failed mutation must leave the sequence as it was.
    RETURN_IF_ERROR(check_after(std::string("failed ") + std::string(op), seq,
                                before.logical_length, before.stored, before.stored));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  return check_after(op, seq, before.logical_length + n, policy_.evicts ? -1 : before.stored + n,
                     policy_.evicts ? 0 : before.stored);
}

Status CheckedStore::append(SequenceId seq, std::span<const int32_t> positions,
                            std::span<const BranchId> branches, const Tensor& k, const Tensor& v) {
  RETURN_IF_ERROR(find(seq, "append").status());
  const auto n = static_cast<int64_t>(positions.size());
  RETURN_IF_ERROR(check_kv_tensor(k, "k", n));
  RETURN_IF_ERROR(check_kv_tensor(v, "v", n));
  if (!branches.empty() && static_cast<int64_t>(branches.size()) != n)
    return invalid_argument("cache '" + plugin_name_ + "': append to " + seq_name(seq) + ": " +
                            str(static_cast<int64_t>(branches.size())) + " branch ids for " +
                            str(n) + " entries (give one each, or none)");
  return checked_append("append", seq, positions, branches,
                        [&] { return store_->append(seq, positions, branches, k, v); });
}

Status CheckedStore::append_in_place(SequenceId seq, std::span<const int32_t> positions) {
  RETURN_IF_ERROR(find(seq, "append_in_place").status());
  if (policy_.evicts)
    return failed_precondition("cache '" + plugin_name_ +
                               "': entries written in place need a store that does not evict");
  return checked_append("append_in_place", seq, positions, {},
                        [&] { return store_->append_in_place(seq, positions); });
}

Result<DenseLayerKV> CheckedStore::dense_layer(SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const SequenceRecord* record, find(seq, "dense_layer"));
  if (layer < 0 || layer >= geometry_.layers)
    return out_of_range("cache '" + plugin_name_ + "': layer " + str(layer) + " of " +
                        str(geometry_.layers));
  auto dense = store_->dense_layer(seq, layer);
  if (!dense.ok()) return dense.status().with_context("cache '" + plugin_name_ + "'");
  for (const Tensor* t : {&dense->k, &dense->v})
    if (t->dtype != DType::kF32 || t->rank != 3 || t->dim(0) != geometry_.kv_heads ||
        t->dim(1) != record->capacity || t->dim(2) != geometry_.head_dim || t->stride[2] != 1 ||
        !holds_memory(*t))
      return broke("a dense layer that is not f32 [kv_heads, capacity, head_dim]", "dense_layer",
                   seq, "layer " + str(layer));
  return dense;
}

Status CheckedStore::truncate(SequenceId seq, int64_t logical_length) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "truncate"));
  (void)state;
  const SequenceInfo before = store_->info(seq);
  auto who = [&] { return "cache '" + plugin_name_ + "': truncate " + seq_name(seq); };
  if (logical_length < 0) {
    return invalid_argument(who() + " to " + str(logical_length) +
                            " tokens: the count must be >= 0");
  }
  if (logical_length > before.logical_length) {
    return out_of_range(who() + " to " + str(logical_length) + " tokens: it holds only " +
                        str(before.logical_length));
  }
  if (logical_length < before.min_truncatable) {
    return failed_precondition(
        who() + " to " + str(logical_length) + " tokens: the store already dropped entries that " +
        "length needs (it can go back to " + str(before.min_truncatable) + " at the least)");
  }
  Status st = store_->truncate(seq, logical_length);
  if (!st.ok()) {
    RETURN_IF_ERROR(
        check_after("failed truncate", seq, before.logical_length, before.stored, before.stored));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  // A store that keeps every token keeps exactly `logical_length` of them.
  const int64_t expected = policy_.evicts ? -1 : logical_length;
  return check_after("truncate", seq, logical_length, expected, policy_.evicts ? 0 : expected);
}

Status CheckedStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "copy"));
  (void)state;
  auto who = [&] { return "cache '" + plugin_name_ + "': copy in " + seq_name(seq); };
  const SequenceInfo before = store_->info(seq);
  const int64_t old_tokens = before.stored;
  if (dst_start < 0 || dst_start > old_tokens) {
    return invalid_argument(who() + ": dst_start " + str(dst_start) + " is outside [0, " +
                            str(old_tokens) + "]");
  }
  for (std::size_t j = 0; j < src.size(); ++j) {
    const int64_t s = src[j];
    const int64_t dst = dst_start + static_cast<int64_t>(j);
    if (s < 0 || s >= old_tokens) {
      return invalid_argument(who() + ": src[" + str(static_cast<int64_t>(j)) + "] = " + str(s) +
                              " is outside [0, " + str(old_tokens) + ")");
    }
    if (j > 0 && s <= src[j - 1]) {
      return invalid_argument(who() + ": src must be strictly increasing, but src[" +
                              str(static_cast<int64_t>(j)) + "] = " + str(s) + " after " +
                              str(src[j - 1]));
    }
    if (s < dst) {
      return invalid_argument(who() + ": src[" + str(static_cast<int64_t>(j)) + "] = " + str(s) +
                              " is below its destination " + str(dst) +
                              " (dst_start + j); an accepted path only moves tokens down");
    }
  }
  Status st = store_->copy(seq, src, dst_start);
  if (!st.ok()) {
    RETURN_IF_ERROR(check_after("failed copy", seq, before.logical_length, old_tokens, old_tokens));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  const int64_t kept = dst_start + static_cast<int64_t>(src.size());
  return check_after("copy", seq, before.logical_length - (old_tokens - kept), kept, dst_start);
}

Result<KVView> CheckedStore::view(SequenceId seq, int layer) {
  return checked_view(seq, layer, false);
}

Result<KVView> CheckedStore::encoded_view(SequenceId seq, int layer) {
  return checked_view(seq, layer, true);
}

Result<KVView> CheckedStore::checked_view(SequenceId seq, int layer, bool encoded) {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "view"));
  (void)state;
  if (layer < 0 || layer >= geometry_.layers) {
    return out_of_range("cache '" + plugin_name_ + "': view of layer " + str(layer) + " of " +
                        seq_name(seq) + ", but the model has " + str(geometry_.layers) + " layers");
  }
  Result<KVView> result = encoded ? store_->encoded_view(seq, layer) : store_->view(seq, layer);
  if (!result.ok()) return result.status().with_context("cache '" + plugin_name_ + "'");
  const int64_t stored = store_->info(seq).stored;
  const KVView& kv = *result;
  if (kv.entries() != stored) {
    return broke("its contract", "view", seq,
                 "layer " + str(layer) + " view has " +
                     str(static_cast<int64_t>(kv.segments.size())) + " segments of " +
                     str(kv.entries()) + " entries, but " + str(stored) + " are stored");
  }
  for (std::size_t s = 0; s < kv.segments.size(); ++s) {
    const KVSegment& segment = kv.segments[s];
    if (segment.device_records()) {
      const Compressor* codec = codecs_[static_cast<std::size_t>(layer)];
      const auto record =
          static_cast<int64_t>(kv_record_bytes(codec->record_layout(geometry_.vector_width())));
      bool records_ok =
          kv_in_backend_ && segment.codec == codec && geometry_.heads_per_vector == 1 && record > 0;
      for (const Tensor* t : {&segment.k, &segment.v})
        records_ok = records_ok && t->rank == 3 && t->dim(0) == geometry_.kv_heads &&
                     t->dim(1) == segment.count && t->dim(2) == record && t->stride[2] == 1 &&
                     (segment.count == 0 || (t->buffer != nullptr && segment.positions));
      if (!records_ok)
        return broke("its contract", "view", seq,
                     "layer " + str(layer) + " segment " + str(static_cast<int64_t>(s)) +
                         " holds device records, but the store does not keep its K/V in the "
                         "backend, or their codec, heads or shape are not the layer's");
      continue;
    }
    if (segment.encoded()) {
      const bool records_ok =
          encoded && segment.codec == codecs_[static_cast<std::size_t>(layer)] &&
          segment.codec->attends_encoded() &&
          segment.heads_per_record == geometry_.heads_per_vector &&
          (segment.count == 0 || (segment.k_records && segment.v_records && segment.positions));
      if (!records_ok)
        return broke("its contract", "view", seq,
                     "layer " + str(layer) + " segment " + str(static_cast<int64_t>(s)) +
                         " is encoded, but " +
                         (encoded ? "its records, codec or heads per record are not the layer's"
                                  : "a decoded view was asked for"));
      continue;
    }
    for (const Tensor* t : {&segment.k, &segment.v}) {
      const bool shape_ok = t->dtype == DType::kF32 && t->rank == 3 &&
                            t->dim(0) == geometry_.kv_heads && t->dim(1) == segment.count &&
                            t->dim(2) == geometry_.head_dim && t->stride[2] == 1 &&
                            (segment.count == 0 || (holds_memory(*t) && segment.positions));
      if (!shape_ok) {
        return broke("its contract", "view", seq,
                     "layer " + str(layer) + " segment " + str(static_cast<int64_t>(s)) + " is " +
                         t->describe() + " (stride[2] " + str(t->stride[2]) + "), expected f32" +
                         shape_text({geometry_.kv_heads, segment.count, geometry_.head_dim}) +
                         " with contiguous head_dim and positions");
      }
    }
  }
  return result;
}

Result<SequenceInfo> CheckedStore::info(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "info"));
  (void)state;
  return store_->info(seq);
}

Result<SequenceBytes> CheckedStore::sequence_bytes(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "sequence_bytes"));
  (void)state;
  return store_->sequence_bytes(seq);
}

Result<int64_t> CheckedStore::stored_length(SequenceId seq, int layer, int kv) const {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "stored_length"));
  (void)state;
  if (layer < 0 || layer >= geometry_.layers) {
    return out_of_range("cache '" + plugin_name_ + "': layer " + str(layer) + " of " +
                        str(geometry_.layers));
  }
  if (kv != 0 && kv != 1) {
    return invalid_argument("cache '" + plugin_name_ + "': kv must be 0 (K) or 1 (V), got " +
                            str(kv));
  }
  return store_->stored_length(seq, layer, kv);
}

Result<std::span<const int32_t>> CheckedStore::positions(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "positions"));
  (void)state;
  return store_->positions(seq);
}

Result<std::span<const BranchId>> CheckedStore::branches(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceRecord* state, find(seq, "branches"));
  (void)state;
  return store_->branches(seq);
}

Status CheckedStore::check_ready() const {
  if (!ready_) {
    return failed_precondition("cache '" + plugin_name_ + "': used before a successful init()");
  }
  return ok_status();
}

Result<const CheckedStore::SequenceRecord*> CheckedStore::find(SequenceId seq,
                                                               std::string_view op) const {
  RETURN_IF_ERROR(check_ready());
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) {
    return not_found("cache '" + plugin_name_ + "': " + std::string(op) + ": " + seq_name(seq) +
                     " is not allocated (allocate it first, or it was released)");
  }
  return &it->second;
}

Status CheckedStore::check_kv_tensor(const Tensor& t, std::string_view which, int64_t n) const {
  const bool ok = t.dtype == DType::kF32 && t.rank == 4 && t.dim(0) == geometry_.layers &&
                  t.dim(1) == n && t.dim(2) == geometry_.kv_heads && t.dim(3) == geometry_.head_dim;
  if (!ok) {
    return invalid_argument(
        "cache '" + plugin_name_ + "': append: " + std::string(which) + " is " + t.describe() +
        ", expected f32" +
        shape_text({geometry_.layers, n, geometry_.kv_heads, geometry_.head_dim}) +
        " ([layers, n, kv_heads, head_dim] with n = positions.size())");
  }
  if (n > 0 && !holds_memory(t)) {
    return invalid_argument("cache '" + plugin_name_ + "': append: " + std::string(which) +
                            (t.buffer == nullptr ? " has no data"
                                                 : " is in device memory, but the store keeps "
                                                   "host memory (CacheStore::use_backend)"));
  }
  if (t.stride[3] != 1 || t.stride[0] < 0 || t.stride[1] < 0 || t.stride[2] < 0) {
    return invalid_argument("cache '" + plugin_name_ + "': append: " + std::string(which) +
                            " needs a contiguous head_dim (stride[3] == 1) and non-negative "
                            "strides, got strides " +
                            shape_text({t.stride[0], t.stride[1], t.stride[2], t.stride[3]}));
  }
  if (geometry_.heads_per_vector > 1 && t.stride[2] != geometry_.head_dim) {
    return invalid_argument("cache '" + plugin_name_ + "': append: " + std::string(which) +
                            " needs an entry's heads contiguous (stride[2] == head_dim " +
                            str(geometry_.head_dim) + ") when a codec vector spans " +
                            str(geometry_.heads_per_vector) + " heads, got stride[2] " +
                            str(t.stride[2]));
  }
  return ok_status();
}

Status CheckedStore::check_after(std::string_view op, SequenceId seq, int64_t expected_logical,
                                 int64_t expected_stored, int64_t first_new) {
  const SequenceInfo info = store_->info(seq);
  if (info.logical_length != expected_logical) {
    return broke(
        "its contract", op, seq,
        "logical length " + str(info.logical_length) + ", expected " + str(expected_logical));
  }
  if (expected_stored >= 0 && info.stored != expected_stored) {
    return broke("its contract", op, seq,
                 "stores " + str(info.stored) + " entries, expected " + str(expected_stored));
  }
  const int64_t capacity = sequences_.at(seq).capacity;
  if (info.stored < 0 || info.stored > capacity || info.stored > info.logical_length ||
      info.min_truncatable < 0 || info.min_truncatable > info.logical_length) {
    return broke("its contract", op, seq,
                 "stores " + str(info.stored) + " entries of capacity " + str(capacity) +
                     " for a logical length of " + str(info.logical_length) + " (min_truncatable " +
                     str(info.min_truncatable) + ")");
  }
  const int64_t tokens = info.stored;
  // INV-1: O(layers).
  for (int layer = 0; layer < geometry_.layers; ++layer) {
    const int64_t k_len = store_->stored_length(seq, layer, 0);
    const int64_t v_len = store_->stored_length(seq, layer, 1);
    if (k_len != tokens || v_len != tokens) {
      return broke("INV-1", op, seq,
                   "layer " + str(layer) + " stores K length " + str(k_len) + " and V length " +
                       str(v_len) + " but " + str(tokens) + " entries are stored");
    }
  }
  const std::span<const int32_t> pos = store_->positions(seq);
  if (static_cast<int64_t>(pos.size()) != tokens) {
    return broke("INV-2", op, seq,
                 "positions() has " + str(static_cast<int64_t>(pos.size())) + " entries but " +
                     str(tokens) + " are stored");
  }
  SequenceRecord& record = sequences_.at(seq);
  // Branched entries, or a change in the middle: every entry, branch by branch.
  if (!store_->branches(seq).empty() || record.floor_of_branch.size() > 1) {
    RETURN_IF_ERROR(check_branch_positions(op, seq, record));
    return check_bytes(op);
  }
  // INV-2: the prefix before first_new was checked by earlier calls; compare
  // the new tail, starting with its link to the last old position.
  record.floor_of_branch[0] = tokens > 0 ? pos[static_cast<std::size_t>(tokens - 1)] : 0;
  for (int64_t i = std::max<int64_t>(first_new, 1); i < tokens; ++i) {
    const auto cur = static_cast<std::size_t>(i);
    if (pos[cur] < pos[cur - 1]) {
      return broke("INV-2", op, seq,
                   "position[" + str(i) + "] = " + str(pos[cur]) + " < position[" + str(i - 1) +
                       "] = " + str(pos[cur - 1]) + "; positions must never decrease");
    }
  }
  return check_bytes(op);
}

Status CheckedStore::check_bytes(std::string_view op) {
  const CacheBytes b = store_->bytes();
  auto where = [&] {
    return "cache plugin '" + plugin_name_ + "' broke its byte accounting after " +
           std::string(op) + ": ";
  };
  if (b.live > b.capacity) {
    return internal_error(where() + "live " + std::to_string(b.live) + " > capacity " +
                          std::to_string(b.capacity) + " bytes");
  }
  if (b.peak < b.live) {
    return internal_error(where() + "peak " + std::to_string(b.peak) + " < live " +
                          std::to_string(b.live) + " bytes");
  }
  if (b.peak < last_peak_) {
    return internal_error(where() + "peak fell from " + std::to_string(last_peak_) + " to " +
                          std::to_string(b.peak) + " bytes");
  }
  if (b.copied < last_copied_) {
    return internal_error(where() + "bytes copied fell from " + std::to_string(last_copied_) +
                          " to " + std::to_string(b.copied));
  }
  last_peak_ = b.peak;
  last_copied_ = b.copied;
  return ok_status();
}

Status CheckedStore::check_branch_positions(std::string_view op, SequenceId seq,
                                            SequenceRecord& record) {
  const std::span<const int32_t> pos = store_->positions(seq);
  const std::span<const BranchId> br = store_->branches(seq);
  if (!br.empty() && br.size() != pos.size())
    return broke("INV-2", op, seq,
                 "branches() has " + str(static_cast<int64_t>(br.size())) + " entries but " +
                     str(static_cast<int64_t>(pos.size())) + " positions");
  if (!br.empty() && !policy_.keeps_branches)
    return broke("its contract", op, seq, "it reports branches but its policy keeps none");
  std::vector<int32_t>& floors = record.floor_of_branch;
  floors.assign(1, 0);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    const BranchId b = br.empty() ? BranchId{0} : br[i];
    const int32_t p = pos[i];
    if (b < 0)
      return broke("INV-2", op, seq,
                   "entry " + str(static_cast<int64_t>(i)) + " has branch " + str(b));
    if (b == 0) {
      const int32_t floor = *std::max_element(floors.begin(), floors.end());
      if (p < floor)
        return broke("INV-2", op, seq,
                     "prefix entry " + str(static_cast<int64_t>(i)) + " at position " + str(p) +
                         " follows position " + str(floor) + "; positions must never decrease");
      std::fill(floors.begin(), floors.end(), p);
      continue;
    }
    if (static_cast<std::size_t>(b) >= floors.size())
      floors.resize(static_cast<std::size_t>(b) + 1, floors[0]);
    if (p < floors[static_cast<std::size_t>(b)])
      return broke("INV-2", op, seq,
                   "entry " + str(static_cast<int64_t>(i)) + " of branch " + str(b) +
                       " at position " + str(p) + " follows position " +
                       str(floors[static_cast<std::size_t>(b)]) +
                       " of its branch; positions must never decrease within a branch");
    floors[static_cast<std::size_t>(b)] = p;
  }
  return ok_status();
}

Status CheckedStore::broke(std::string_view what, std::string_view op, SequenceId seq,
                           const std::string& detail) const {
  return internal_error("cache plugin '" + plugin_name_ + "' broke " + std::string(what) +
                        " after " + std::string(op) + " on " + seq_name(seq) + ": " + detail +
                        " (a bug in the plugin)");
}

}  // namespace tessera
