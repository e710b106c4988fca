// The engine's side of prefix caching (core/cache/prefix_cache.h): when it
// may be on, and a lane's prompt begun from it or kept in it.
#include "core/engine/engine.h"

namespace tessera {

Status Engine::enable_prefix_cache(std::size_t budget_bytes) {
  if (budget_bytes == 0) {
    prefix_cache_.reset();
    return ok_status();
  }
  if (cache_->shared_block_size() <= 0)
    return failed_precondition(
        "prefix caching needs a cache store that shares blocks: cache.plugin = \"paged\" (this "
        "config's is '" +
        cache_->plugin_name() + "'" +
        (cache_->group_count() > 1 ? ", and its sliding-window layers are kept apart" : "") +
        "); or set server.prefix_cache_mib = 0");
  if (description_.verifier != "ar")
    return failed_precondition(
        "prefix caching reuses K/V a causal forward wrote; decode.verifier "
        "= \"" +
        description_.verifier + "\" writes others; set server.prefix_cache_mib = 0");
  prefix_cache_ = std::make_unique<PrefixCache>(*cache_, kv_identity_, budget_bytes);
  return ok_status();
}

Result<int64_t> Engine::reuse_cached_prefix(SequenceState& lane) {
  if (!prefix_cache_ || lane.cached != 0 || !lane.owns_sequence) return int64_t{0};
  ASSIGN_OR_RETURN(const int64_t reused,
                   prefix_cache_->adopt(lane.id, lane.tokens, /*keep_uncached=*/1));
  lane.cached = reused;
  return reused;
}

Status Engine::publish_prefix(const SequenceState& lane) {
  if (!prefix_cache_ || !lane.owns_sequence) return ok_status();
  const auto cached = std::min(static_cast<std::size_t>(lane.cached), lane.tokens.size());
  return prefix_cache_->publish(lane.id, std::span(lane.tokens).first(cached));
}

std::optional<PrefixCacheStats> Engine::prefix_cache_stats() const {
  if (!prefix_cache_) return std::nullopt;
  return prefix_cache_->stats();
}

}  // namespace tessera
