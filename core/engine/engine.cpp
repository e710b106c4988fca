#include "core/engine/engine.h"

#include <algorithm>
#include <chrono>

#include "core/engine/engine_services.h"
#include "core/engine/memory_budget.h"
#include "core/engine/request_run.h"

namespace tessera {

Engine::Engine() = default;

Engine::~Engine() {
  // Plugin objects go before the models they point into (the services own
  // the ones plugins loaded); the cache before its codecs and its backend.
  scheduler_.reset();
  verifier_.reset();
  alternates_.clear();
  proposer_.reset();
  services_.reset();
  prefix_cache_.reset();
  cache_.reset();
  codec_.reset();
  identity_codec_.reset();
  transformer_.reset();
  backend_.reset();
}

double Engine::codec_bits_per_head_vector() const {
  const CacheGeometry& geometry = cache_->geometry();
  return codec_->bits_per_vector(geometry.vector_width()) / geometry.heads_per_vector;
}

PluginServices& Engine::services() {
  return *services_;
}

DecodeContext Engine::context() {
  return {*transformer_, *cache_, *services_, counters_};
}

std::vector<std::string> Engine::proposer_choices() const {
  std::vector<std::string> names = {description_.proposer};
  for (const auto& [name, proposer] : alternates_) names.push_back(name);
  return names;
}

Status Engine::choose_proposer(SequenceState& lane, std::string_view name) const {
  if (lane.proposer_begun)
    return failed_precondition("a lane's proposer is chosen before its first step");
  const std::vector<std::string> names = proposer_choices();
  for (std::size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) {
      lane.proposer = static_cast<int>(k);
      return ok_status();
    }
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  return invalid_argument("proposer '" + std::string(name) + "' is not one this server runs (" +
                          listed + "; decode.proposer and decode.alternate_proposers)");
}

const std::string& Engine::proposer_name(const SequenceState& lane) const {
  return lane.proposer == 0 ? description_.proposer
                            : alternates_[static_cast<std::size_t>(lane.proposer - 1)].first;
}

Status Engine::begin_sequence(SequenceState& lane, std::optional<uint64_t> seed) {
  SamplingParams params = sampling_;
  if (seed) params.seed = *seed;
  lane.id = next_sequence_++;
  lane.branch = 0;
  lane.cached = 0;
  lane.capacity = max_tokens_;
  lane.sampler = Sampler(params);
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = 0;
  lane.owns_sequence = true;
  return cache_->allocate(lane.id, max_tokens_);
}

Status Engine::fork_sequence(const SequenceState& source, SequenceState& lane) {
  if (!source.owns_sequence)
    return invalid_argument("a branch kept in its prefix's sequence cannot be forked");
  const SequenceId id = next_sequence_++;
  RETURN_IF_ERROR(cache_->fork(source.id, id));
  lane.id = id;
  lane.branch = 0;
  lane.tokens = source.tokens;
  lane.cached = source.cached;
  lane.capacity = source.capacity;
  lane.sampler = source.sampler;
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = source.proposer;
  lane.owns_sequence = true;
  lane.last_draft = 0;
  return ok_status();
}

Status Engine::begin_branch(const SequenceState& prefix, BranchId branch, SequenceState& lane,
                            std::optional<uint64_t> seed) {
  if (branch < 1)
    return invalid_argument("branch ids start at 1 (0 is the shared prefix), got " +
                            std::to_string(branch));
  if (prefix.branch != 0)
    return invalid_argument("a branch continues a prefix lane, not another branch");
  SamplingParams params = sampling_;
  // Each branch draws its own numbers, the same in both layouts.
  params.seed =
      seed ? *seed
           : prefix.sampler.params().seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(branch);
  lane.tokens.assign(prefix.tokens.begin(),
                     prefix.tokens.begin() + static_cast<std::ptrdiff_t>(prefix.cached));
  lane.cached = prefix.cached;
  lane.capacity = prefix.capacity;
  lane.sampler = Sampler(params);
  lane.proposer_state.reset();
  lane.proposer_begun = false;
  lane.proposer = prefix.proposer;
  if (branch_layout_ == BranchLayout::kBim) {
    if (!cache_->policy().keeps_branches && cache_->group_count() > 1)
      return failed_precondition(
          "decode.branch_layout = \"bim\" keeps every branch in one sequence, but this model's "
          "sliding-window layers are kept apart in a store without branch ids (" +
          cache_->describe_groups() +
          "); use decode.branch_layout = \"batched\", or cache.swa_full = true to keep them "
          "with the others");
    if (!cache_->policy().keeps_branches)
      return failed_precondition(
          "decode.branch_layout = \"bim\" keeps every branch in one sequence, but cache plugin '" +
          cache_->plugin_name() +
          "' keeps no branch ids; use a store that does (cache.plugin = \"static\" or "
          "\"paged\") or decode.branch_layout = \"batched\"");
    lane.id = prefix.id;
    lane.branch = branch;
    lane.owns_sequence = false;
    return ok_status();
  }
  lane.id = next_sequence_++;
  lane.branch = 0;
  lane.owns_sequence = true;
  return cache_->fork(prefix.id, lane.id);
}

Status Engine::prefill(SequenceState& lane) {
  DecodeContext ctx = context();
  return verifier_->prefill(ctx, lane).with_context("verifier");
}

Status Engine::end_sequence(SequenceState& lane) {
  if (lane.proposer_begun) {
    DecodeContext ctx = context();
    proposer_of(lane).end(ctx, lane);
    lane.proposer_begun = false;
  }
  lane.proposer_state.reset();
  if (!lane.owns_sequence) return ok_status();
  return cache_->release(lane.id);
}

Status Engine::check_memory_for(int64_t sequences, uint64_t prefix_cache_bytes) const {
  MemoryRequest memory = memory_;
  memory.sequences = sequences;
  memory.prefix_cache_bytes = prefix_cache_bytes;
  // The weights are loaded already (what is available counts them as used).
  memory.weight_bytes = 0;
  return check_memory_budget(memory, available_memory());
}

Result<GenerationStats> Engine::generate(const GenerationRequest& request, const TokenSink& sink) {
  return run_request(*this, request, sink);
}

}  // namespace tessera
