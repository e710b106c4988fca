#include "plugins/scheduler_single/single_scheduler.h"

#include <algorithm>

#include "core/engine/engine.h"

namespace tessera {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status check_request(Engine& engine, const GenerationRequest& request) {
  if (request.prompt.empty())
    return invalid_argument(
        "the prompt has no tokens, and this model has no BOS token to start from; give a prompt");
  // A store that evicts runs on past its capacity (its memory stays flat).
  if (engine.cache().policy().evicts) return ok_status();
  auto longest = static_cast<int64_t>(request.prompt.size());
  int64_t together = longest;
  for (const auto& branch : request.branches) {
    longest = std::max(longest, static_cast<int64_t>(request.prompt.size() + branch.size()));
    together += static_cast<int64_t>(branch.size()) + 1;
  }
  // Branches in one sequence share its capacity.
  const bool shared = !request.branches.empty() && engine.branch_layout() == BranchLayout::kBim;
  const int64_t needed = shared ? together : longest;
  const int64_t capacity = engine.max_tokens();
  if (needed >= capacity)
    return resource_exhausted(
        std::string(shared ? "the prompt and its branches (in one sequence) have "
                           : "the prompt has ") +
        std::to_string(needed) + " tokens but the cache holds " + std::to_string(capacity) +
        " (cache.max_tokens), which leaves no room to generate; raise cache.max_tokens (e.g. "
        "--set cache.max_tokens=" +
        std::to_string(needed + 256) + ") or shorten the prompt");
  return ok_status();
}

}  // namespace

SingleScheduler::SingleScheduler(const OptionValues&) {}

Result<GenerationStats> SingleScheduler::run(Engine& engine, const GenerationRequest& request,
                                             const TokenSink& sink) {
  RETURN_IF_ERROR(check_request(engine, request));
  engine.counters() = {};
  const std::size_t copied_before = engine.cache().bytes().copied;
  GenerationStats stats;
  stats.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  Status status = start_lanes(engine, request);
  if (status.ok()) status = run_lanes(engine, request, sink, stats);
  fill_cache_stats(engine, stats);
  stats.kv_copied_bytes = engine.cache().bytes().copied - copied_before;
  stats.decode = engine.counters();
  const Status ended = end_lanes(engine);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(ended);
  return stats;
}

Status SingleScheduler::start_lanes(Engine& engine, const GenerationRequest& request) {
  lanes_.clear();
  has_prefix_ = false;
  if (request.branches.empty()) {
    lanes_.emplace_back();
    lanes_.back().state.tokens = request.prompt;
    return engine.begin_sequence(lanes_.back().state, request.seed);
  }
  // The prompt is stored once, but its last token (or, for block diffusion,
  // its partial block); every branch continues from there (so an empty
  // branch is the prompt's own continuation).
  prefix_ = SequenceState();
  prefix_.tokens = request.prompt;
  RETURN_IF_ERROR(engine.begin_sequence(prefix_, request.seed));
  has_prefix_ = true;
  RETURN_IF_ERROR(engine.prefill(prefix_));
  lanes_.resize(request.branches.size());
  for (std::size_t b = 0; b < request.branches.size(); ++b) {
    SequenceState& lane = lanes_[b].state;
    RETURN_IF_ERROR(engine.begin_branch(prefix_, static_cast<BranchId>(b + 1), lane));
    // The prompt's tokens the prefix did not store (its last one; for block
    // diffusion, a partial block).
    lane.tokens.insert(lane.tokens.end(),
                       request.prompt.begin() + static_cast<std::ptrdiff_t>(prefix_.cached),
                       request.prompt.end());
    lane.tokens.insert(lane.tokens.end(), request.branches[b].begin(), request.branches[b].end());
  }
  return ok_status();
}

void SingleScheduler::stop_full_lanes(Engine& engine) {
  if (engine.cache().policy().evicts) return;
  // A step writes every running lane's pending tokens (and keeps the last
  // emitted one pending): they must fit below the sequence's capacity.
  for (Lane& lane : lanes_) {
    if (!lane.stop_reason.empty()) continue;
    int64_t pending = 0;
    for (const Lane& other : lanes_)
      if (other.stop_reason.empty() && other.state.id == lane.state.id)
        pending += static_cast<int64_t>(other.state.tokens.size()) - other.state.cached;
    auto info = engine.cache().info(lane.state.id);
    if (info.ok() && info->stored + pending > lane.state.capacity - 1)
      lane.stop_reason = "cache_full";
  }
}

bool SingleScheduler::deliver(const GenerationRequest& request, const TokenSink& sink,
                              std::size_t index, std::span<const int32_t> emitted,
                              const Tokenizer& tokenizer) {
  Lane& lane = lanes_[index];
  for (const int32_t token : emitted) {
    // The vocabulary's end-of-generation tokens (EOS, and end of turn:
    // <|im_end|>, <|eot_id|>, <end_of_turn>). llama2.c-trained models mark
    // the end of a story with BOS; treat it like EOS.
    if (request.stop_at_eos &&
        (tokenizer.is_end_of_generation(token) || token == tokenizer.bos())) {
      lane.stop_reason = "eos";
      return true;
    }
    ++lane.generated;
    if (!sink(token, static_cast<int>(index))) {
      lane.stop_reason = "stopped";
      return false;
    }
    if (lane.generated == request.max_new_tokens) {
      lane.stop_reason = "max_tokens";
      return true;
    }
  }
  return true;
}

Status SingleScheduler::run_lanes(Engine& engine, const GenerationRequest& request,
                                  const TokenSink& sink, GenerationStats& stats) {
  for (Lane& lane : lanes_)
    if (request.max_new_tokens <= 0) lane.stop_reason = "max_tokens";
  if (emitted_.size() < lanes_.size()) emitted_.resize(lanes_.size());
  auto start = std::chrono::steady_clock::now();
  bool stopped = false;
  while (!stopped) {
    stop_full_lanes(engine);
    active_.clear();
    active_index_.clear();
    for (std::size_t i = 0; i < lanes_.size(); ++i)
      if (lanes_[i].stop_reason.empty()) {
        emitted_[active_.size()].clear();
        active_.push_back(&lanes_[i].state);
        active_index_.push_back(i);
      }
    if (active_.empty()) break;
    // emitted_[a] holds what active lane a emitted.
    RETURN_IF_ERROR(engine.step(active_, std::span(emitted_).first(active_.size())));
    if (stats.steps++ == 0) {
      stats.prefill_seconds = seconds_since(start);
      start = std::chrono::steady_clock::now();
    }
    for (std::size_t a = 0; a < active_index_.size() && !stopped; ++a)
      stopped = !deliver(request, sink, active_index_[a], emitted_[a], engine.tokenizer());
  }
  if (stats.steps > 1) stats.decode_seconds = seconds_since(start);
  for (const Lane& lane : lanes_) stats.generated_tokens += lane.generated;
  if (has_prefix_)
    for (const Lane& lane : lanes_) {
      stats.branch_stop_reasons.push_back(lane.stop_reason.empty() ? "stopped" : lane.stop_reason);
      stats.branch_tokens.push_back(lane.generated);
    }
  stats.stop_reason = lanes_.front().stop_reason;
  for (const Lane& lane : lanes_)
    if (lane.stop_reason != stats.stop_reason) stats.stop_reason = "mixed";
  if (stopped) stats.stop_reason = "stopped";
  return ok_status();
}

void SingleScheduler::fill_cache_stats(Engine& engine, GenerationStats& stats) const {
  const CacheBytes bytes = engine.cache().bytes();
  stats.kv_live_bytes = bytes.live;
  stats.kv_peak_bytes = bytes.peak;
  stats.kv_capacity_bytes = bytes.capacity;
  std::vector<SequenceId> counted;
  const auto count = [&](const SequenceState& state) {
    if (std::find(counted.begin(), counted.end(), state.id) != counted.end()) return;
    counted.push_back(state.id);
    if (auto info = engine.cache().info(state.id); info.ok()) stats.kv_entries += info->stored;
  };
  if (has_prefix_) count(prefix_);
  for (const Lane& lane : lanes_) count(lane.state);
}

Status SingleScheduler::end_lanes(Engine& engine) {
  Status first;
  for (Lane& lane : lanes_) {
    const Status st = engine.end_sequence(lane.state);
    if (first.ok() && !st.ok()) first = st;
  }
  if (has_prefix_) {
    const Status st = engine.end_sequence(prefix_);
    if (first.ok() && !st.ok()) first = st;
    has_prefix_ = false;
  }
  lanes_.clear();
  return first;
}

}  // namespace tessera
