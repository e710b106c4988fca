// The only way the core reaches a CacheStore plugin. Before each call it checks
// the arguments (a caller's mistake: NotFound, InvalidArgument, OutOfRange,
// ResourceExhausted, FailedPrecondition); after each mutation it checks what the
// plugin did and returns Internal, naming the plugin, when the plugin broke
//   INV-1  for every layer, stored K length == stored V length == token count;
//   INV-2  positions().size() == token count and positions never decrease;
// or the byte accounting (live <= capacity, live <= peak, peak never falls), or
// the operation's own contract (the token count it should leave).
//
// Cost per mutation: O(layers) for INV-1 and O(tokens appended or moved) for
// INV-2 (only the new tail is compared with its predecessor; the prefix was
// checked by earlier calls). Nothing here allocates on success.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/cache/cache_store.h"
#include "core/compressor/compressor.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

namespace tessera {

class CheckedCacheStore {
 public:
  // Takes ownership of `store`; `plugin_name` ("static") names it in messages.
  CheckedCacheStore(std::unique_ptr<CacheStore> store, std::string plugin_name);

  // Checks the geometry (all positive) and the codec (not null), then hands both
  // to the store. Must succeed before any other call (FailedPrecondition otherwise).
  Status init(const CacheGeometry& geometry, std::unique_ptr<Compressor> codec);
  // capacity > 0; seq must not be allocated already.
  Status allocate(SequenceId seq, int64_t capacity);
  Status release(SequenceId seq);

  // positions: n entries, >= 0, non-decreasing and not below the last stored
  // position. k, v: f32 [layers, n, kv_heads, head_dim] with head_dim
  // contiguous (stride[3] == 1); borrowed for the call only.
  Status append(SequenceId seq, std::span<const int32_t> positions, const Tensor& k,
                const Tensor& v);
  // 0 <= n_tokens <= token count (OutOfRange past the length).
  Status truncate(SequenceId seq, int64_t n_tokens);
  // src: strictly increasing, each < token count, src[j] >= dst_start + j;
  // 0 <= dst_start <= token count. Borrowed for the call only.
  Status copy(SequenceId seq, std::span<const int64_t> src, int64_t dst_start);

  // f32 [kv_heads, token count, head_dim] each; the shape is checked. Valid
  // until the next mutation of seq (and, for stores that decode, the next view()
  // of seq; see the store's header).
  Result<KVView> view(SequenceId seq, int layer);

  bool contains(SequenceId seq) const { return sequences_.count(seq) != 0; }
  Result<int64_t> token_count(SequenceId seq) const;
  Result<int64_t> capacity(SequenceId seq) const;
  Result<int64_t> stored_length(SequenceId seq, int layer, int kv) const;
  // Borrowed from the store; valid until the next mutation of seq.
  Result<std::span<const int32_t>> positions(SequenceId seq) const;
  CacheBytes bytes() const { return store_->bytes(); }

  const CacheGeometry& geometry() const { return geometry_; }
  const std::string& plugin_name() const { return plugin_name_; }
  // The wrapped store, for tests and diagnostics; calls through it are unchecked.
  CacheStore& unchecked() { return *store_; }

 private:
  struct SequenceState {
    int64_t capacity = 0;  // tokens, as the store reported after allocate()
  };

  Status check_ready() const;
  Result<const SequenceState*> find(SequenceId seq, std::string_view op) const;
  Status check_kv_tensor(const Tensor& t, std::string_view which, int64_t n) const;

  // After a mutation `op` of seq: the token count must be `expected_tokens`,
  // INV-1 must hold, and positions from index `first_new` on must not decrease
  // (nor fall below the one before them). Returns Internal naming the plugin.
  Status check_after(std::string_view op, SequenceId seq, int64_t expected_tokens,
                     int64_t first_new);
  Status check_bytes(std::string_view op);
  Status broke(std::string_view what, std::string_view op, SequenceId seq,
               const std::string& detail) const;

  std::unique_ptr<CacheStore> store_;
  std::string plugin_name_;
  CacheGeometry geometry_;
  bool ready_ = false;
  std::unordered_map<SequenceId, SequenceState> sequences_;
  std::size_t last_peak_ = 0;
};

}  // namespace tessera
