#include "core/cache/checked_cache_store.h"

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

CheckedCacheStore::CheckedCacheStore(std::unique_ptr<CacheStore> store, std::string plugin_name)
    : store_(std::move(store)), plugin_name_(std::move(plugin_name)) {
  TESSERA_CHECK(store_ != nullptr, "CheckedCacheStore needs a store");
}

Status CheckedCacheStore::init(const CacheGeometry& geometry, std::unique_ptr<Compressor> codec) {
  // Messages are built only on failure: a successful call allocates nothing.
  auto who = [this] { return "cache '" + plugin_name_ + "'"; };
  if (ready_) return failed_precondition(who() + ": init() called twice");
  if (geometry.layers <= 0 || geometry.kv_heads <= 0 || geometry.head_dim <= 0) {
    return invalid_argument(who() +
                            ": geometry needs positive layers, kv_heads and head_dim, got " +
                            str(geometry.layers) + ", " + str(geometry.kv_heads) + ", " +
                            str(geometry.head_dim) + " (check the model's attention config)");
  }
  if (codec == nullptr) return invalid_argument(who() + ": no codec given ([cache.codec] plugin)");
  Status st = store_->init(geometry, std::move(codec));
  if (!st.ok()) return st.with_context(who());
  geometry_ = geometry;
  ready_ = true;
  return check_bytes("init");
}

Status CheckedCacheStore::allocate(SequenceId seq, int64_t capacity) {
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
  const int64_t reported = store_->capacity(seq);
  sequences_.emplace(seq, SequenceState{reported});
  if (reported < capacity) {
    return broke("its contract", "allocate", seq,
                 "capacity " + str(reported) + " tokens, asked for " + str(capacity));
  }
  return check_after("allocate", seq, 0, 0);
}

Status CheckedCacheStore::release(SequenceId seq) {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "release"));
  (void)state;
  Status st = store_->release(seq);
  if (!st.ok()) return st.with_context("cache '" + plugin_name_ + "'");
  sequences_.erase(seq);
  return check_bytes("release");
}

Status CheckedCacheStore::append(SequenceId seq, std::span<const int32_t> positions,
                                 const Tensor& k, const Tensor& v) {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "append"));
  auto who = [&] { return "cache '" + plugin_name_ + "': append to " + seq_name(seq); };
  const auto n = static_cast<int64_t>(positions.size());
  RETURN_IF_ERROR(check_kv_tensor(k, "k", n));
  RETURN_IF_ERROR(check_kv_tensor(v, "v", n));

  const int64_t old_tokens = store_->token_count(seq);
  const std::span<const int32_t> stored = store_->positions(seq);
  int64_t last = stored.empty() ? 0 : stored.back();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = positions[static_cast<std::size_t>(i)];
    if (p < 0) {
      return invalid_argument(who() + ": position " + str(i) + " is negative (" + str(p) + ")");
    }
    if (p < last) {
      return invalid_argument(who() + ": position " + str(i) + " = " + str(p) +
                              " is below the previous position " + str(last) +
                              "; positions must not decrease (INV-2)");
    }
    last = p;
  }
  if (old_tokens + n > state->capacity) {
    return resource_exhausted(who() + ": needs " + str(old_tokens + n) + " tokens (" +
                              str(old_tokens) + " stored + " + str(n) +
                              " new) but the capacity is " + str(state->capacity) +
                              " tokens; raise [cache] max_tokens or truncate first");
  }

  Status st = store_->append(seq, positions, k, v);
  if (!st.ok()) {
    // A failed mutation must leave the sequence as it was.
    RETURN_IF_ERROR(check_after("failed append", seq, old_tokens, old_tokens));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  return check_after("append", seq, old_tokens + n, old_tokens);
}

Status CheckedCacheStore::truncate(SequenceId seq, int64_t n_tokens) {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "truncate"));
  (void)state;
  const int64_t old_tokens = store_->token_count(seq);
  if (n_tokens < 0) {
    return invalid_argument("cache '" + plugin_name_ + "': truncate " + seq_name(seq) + " to " +
                            str(n_tokens) + " tokens: the count must be >= 0");
  }
  if (n_tokens > old_tokens) {
    return out_of_range("cache '" + plugin_name_ + "': cannot truncate " + seq_name(seq) + " to " +
                        str(n_tokens) + " tokens, it holds only " + str(old_tokens));
  }
  Status st = store_->truncate(seq, n_tokens);
  if (!st.ok()) {
    RETURN_IF_ERROR(check_after("failed truncate", seq, old_tokens, old_tokens));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  return check_after("truncate", seq, n_tokens, n_tokens);
}

Status CheckedCacheStore::copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start) {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "copy"));
  (void)state;
  auto who = [&] { return "cache '" + plugin_name_ + "': copy in " + seq_name(seq); };
  const int64_t old_tokens = store_->token_count(seq);
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
    RETURN_IF_ERROR(check_after("failed copy", seq, old_tokens, old_tokens));
    return st.with_context("cache '" + plugin_name_ + "'");
  }
  return check_after("copy", seq, dst_start + static_cast<int64_t>(src.size()), dst_start);
}

Result<KVView> CheckedCacheStore::view(SequenceId seq, int layer) {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "view"));
  (void)state;
  if (layer < 0 || layer >= geometry_.layers) {
    return out_of_range("cache '" + plugin_name_ + "': view of layer " + str(layer) + " of " +
                        seq_name(seq) + ", but the model has " + str(geometry_.layers) + " layers");
  }
  Result<KVView> result = store_->view(seq, layer);
  if (!result.ok()) return result.status().with_context("cache '" + plugin_name_ + "'");
  const int64_t tokens = store_->token_count(seq);
  const KVView& kv = *result;
  for (const Tensor* t : {&kv.k, &kv.v}) {
    const bool shape_ok = t->dtype == DType::kF32 && t->rank == 3 &&
                          t->dim(0) == geometry_.kv_heads && t->dim(1) == tokens &&
                          t->dim(2) == geometry_.head_dim && t->stride[2] == 1 &&
                          (tokens == 0 || t->data != nullptr);
    if (!shape_ok) {
      return broke("its contract", "view", seq,
                   "layer " + str(layer) + " view is " + t->describe() + " (stride[2] " +
                       str(t->stride[2]) + "), expected f32" +
                       shape_text({geometry_.kv_heads, tokens, geometry_.head_dim}) +
                       " with contiguous head_dim");
    }
  }
  return result;
}

Result<int64_t> CheckedCacheStore::token_count(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "token_count"));
  (void)state;
  return store_->token_count(seq);
}

Result<int64_t> CheckedCacheStore::capacity(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "capacity"));
  return state->capacity;
}

Result<int64_t> CheckedCacheStore::stored_length(SequenceId seq, int layer, int kv) const {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "stored_length"));
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

Result<std::span<const int32_t>> CheckedCacheStore::positions(SequenceId seq) const {
  ASSIGN_OR_RETURN(const SequenceState* state, find(seq, "positions"));
  (void)state;
  return store_->positions(seq);
}

Status CheckedCacheStore::check_ready() const {
  if (!ready_) {
    return failed_precondition("cache '" + plugin_name_ + "': used before a successful init()");
  }
  return ok_status();
}

Result<const CheckedCacheStore::SequenceState*> CheckedCacheStore::find(SequenceId seq,
                                                                        std::string_view op) const {
  RETURN_IF_ERROR(check_ready());
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) {
    return not_found("cache '" + plugin_name_ + "': " + std::string(op) + ": " + seq_name(seq) +
                     " is not allocated (allocate it first, or it was released)");
  }
  return &it->second;
}

Status CheckedCacheStore::check_kv_tensor(const Tensor& t, std::string_view which,
                                          int64_t n) const {
  const bool ok = t.dtype == DType::kF32 && t.rank == 4 && t.dim(0) == geometry_.layers &&
                  t.dim(1) == n && t.dim(2) == geometry_.kv_heads && t.dim(3) == geometry_.head_dim;
  if (!ok) {
    return invalid_argument(
        "cache '" + plugin_name_ + "': append: " + std::string(which) + " is " + t.describe() +
        ", expected f32" +
        shape_text({geometry_.layers, n, geometry_.kv_heads, geometry_.head_dim}) +
        " ([layers, n, kv_heads, head_dim] with n = positions.size())");
  }
  if (n > 0 && t.data == nullptr) {
    return invalid_argument("cache '" + plugin_name_ + "': append: " + std::string(which) +
                            " has no data");
  }
  if (t.stride[3] != 1 || t.stride[0] < 0 || t.stride[1] < 0 || t.stride[2] < 0) {
    return invalid_argument("cache '" + plugin_name_ + "': append: " + std::string(which) +
                            " needs a contiguous head_dim (stride[3] == 1) and non-negative "
                            "strides, got strides " +
                            shape_text({t.stride[0], t.stride[1], t.stride[2], t.stride[3]}));
  }
  return ok_status();
}

Status CheckedCacheStore::check_after(std::string_view op, SequenceId seq, int64_t expected_tokens,
                                      int64_t first_new) {
  const int64_t tokens = store_->token_count(seq);
  if (tokens != expected_tokens) {
    return broke("its contract", op, seq,
                 "token count " + str(tokens) + ", expected " + str(expected_tokens));
  }
  // INV-1: O(layers).
  for (int layer = 0; layer < geometry_.layers; ++layer) {
    const int64_t k_len = store_->stored_length(seq, layer, 0);
    const int64_t v_len = store_->stored_length(seq, layer, 1);
    if (k_len != tokens || v_len != tokens) {
      return broke("INV-1", op, seq,
                   "layer " + str(layer) + " stores K length " + str(k_len) + " and V length " +
                       str(v_len) + " but the token count is " + str(tokens));
    }
  }
  // INV-2: the prefix before first_new was checked by earlier calls; compare
  // the new tail, starting with its link to the last old position.
  const std::span<const int32_t> pos = store_->positions(seq);
  if (static_cast<int64_t>(pos.size()) != tokens) {
    return broke("INV-2", op, seq,
                 "positions() has " + str(static_cast<int64_t>(pos.size())) +
                     " entries but the token count is " + str(tokens));
  }
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

Status CheckedCacheStore::check_bytes(std::string_view op) {
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
  last_peak_ = b.peak;
  return ok_status();
}

Status CheckedCacheStore::broke(std::string_view what, std::string_view op, SequenceId seq,
                                const std::string& detail) const {
  return internal_error("cache plugin '" + plugin_name_ + "' broke " + std::string(what) +
                        " after " + std::string(op) + " on " + seq_name(seq) + ": " + detail +
                        " (a bug in the plugin)");
}

}  // namespace tessera
