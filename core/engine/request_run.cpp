#include "core/engine/request_run.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/engine/decode_loop.h"
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

// The lanes of a request: one, or a prefilled prefix and a lane per branch.
class RequestLanes {
 public:
  explicit RequestLanes(Engine& engine) : engine_(engine) {}
  ~RequestLanes() { (void)end(); }
  RequestLanes(const RequestLanes&) = delete;
  RequestLanes& operator=(const RequestLanes&) = delete;

  Status begin(const GenerationRequest& request) {
    if (request.branches.empty()) {
      lanes_.emplace_back();
      lanes_.back().tokens = request.prompt;
      return engine_.begin_sequence(lanes_.back(), request.seed);
    }
    // The prompt is stored once, but its last token (or, for block
    // diffusion, its partial block); every branch continues from there (so
    // an empty branch is the prompt's own continuation).
    prefix_.tokens = request.prompt;
    RETURN_IF_ERROR(engine_.begin_sequence(prefix_, request.seed));
    has_prefix_ = true;
    RETURN_IF_ERROR(engine_.prefill(prefix_));
    lanes_.resize(request.branches.size());
    for (std::size_t b = 0; b < request.branches.size(); ++b) {
      SequenceState& lane = lanes_[b];
      RETURN_IF_ERROR(engine_.begin_branch(prefix_, static_cast<BranchId>(b + 1), lane));
      // The prompt's tokens the prefix did not store (its last one; for
      // block diffusion, a partial block).
      lane.tokens.insert(lane.tokens.end(),
                         request.prompt.begin() + static_cast<std::ptrdiff_t>(prefix_.cached),
                         request.prompt.end());
      lane.tokens.insert(lane.tokens.end(), request.branches[b].begin(), request.branches[b].end());
    }
    return ok_status();
  }

  std::vector<SequenceState>& lanes() { return lanes_; }

  // Entries stored in the request's sequences (each counted once).
  int64_t stored_entries() const {
    std::vector<SequenceId> counted;
    int64_t entries = 0;
    const auto count = [&](const SequenceState& state) {
      if (std::find(counted.begin(), counted.end(), state.id) != counted.end()) return;
      counted.push_back(state.id);
      if (auto info = engine_.cache().info(state.id); info.ok()) entries += info->stored;
    };
    if (has_prefix_) count(prefix_);
    for (const SequenceState& lane : lanes_) count(lane);
    return entries;
  }

  Status end() {
    Status first;
    for (SequenceState& lane : lanes_) {
      const Status st = engine_.end_sequence(lane);
      if (first.ok() && !st.ok()) first = st;
    }
    lanes_.clear();
    if (has_prefix_) {
      const Status st = engine_.end_sequence(prefix_);
      if (first.ok() && !st.ok()) first = st;
      has_prefix_ = false;
    }
    return first;
  }

 private:
  Engine& engine_;
  std::vector<SequenceState> lanes_;
  SequenceState prefix_;  // the shared prompt of branches
  bool has_prefix_ = false;
};

// Steps the request's turns until each ends; fills the timing and counts.
Status run_turns(Engine& engine, const GenerationRequest& request, const TokenSink& sink,
                 std::vector<SequenceState>& lanes, GenerationStats& stats) {
  DecodeLoop loop(engine);
  std::vector<TurnOutcome> outcomes(lanes.size());
  std::vector<TurnId> ids;
  bool stopped = false;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    Turn turn;
    turn.lane = &lanes[i];
    turn.group = 1;
    turn.sink_lane = static_cast<int>(i);
    turn.max_new_tokens = request.max_new_tokens;
    turn.stop_at_eos = request.stop_at_eos;
    // A sink that says stop stops the whole request.
    turn.sink = [&](int32_t token, int lane, const TokenLogprob*) {
      if (sink(token, lane)) return true;
      stopped = true;
      for (const TurnId id : ids) loop.cancel(id, "stopped");
      return false;
    };
    turn.done = [&outcomes, i](const TurnOutcome& outcome) { outcomes[i] = outcome; };
    ids.push_back(loop.submit(std::move(turn)));
  }
  auto start = std::chrono::steady_clock::now();
  bool decoding = false;
  while (!loop.idle()) {
    RETURN_IF_ERROR(loop.step());
    if (!decoding && engine.counters().emitted > 0) {
      // The first step that emitted ends the prompt's part.
      decoding = true;
      stats.prefill_seconds = seconds_since(start);
      start = std::chrono::steady_clock::now();
    }
  }
  stats.steps = loop.steps();
  if (stats.steps > 1) stats.decode_seconds = seconds_since(start);
  for (const TurnOutcome& outcome : outcomes) stats.generated_tokens += outcome.generated;
  if (!request.branches.empty())
    for (const TurnOutcome& outcome : outcomes) {
      stats.branch_stop_reasons.push_back(outcome.stop_reason);
      stats.branch_tokens.push_back(outcome.generated);
    }
  stats.stop_reason = outcomes.front().stop_reason;
  for (const TurnOutcome& outcome : outcomes)
    if (outcome.stop_reason != stats.stop_reason) stats.stop_reason = "mixed";
  if (stopped) stats.stop_reason = "stopped";
  return ok_status();
}

}  // namespace

Result<GenerationStats> run_request(Engine& engine, const GenerationRequest& request,
                                    const TokenSink& sink) {
  RETURN_IF_ERROR(check_request(engine, request));
  engine.counters() = {};
  const std::size_t copied_before = engine.cache().bytes().copied;
  GenerationStats stats;
  stats.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  RequestLanes lanes(engine);
  Status status = lanes.begin(request);
  if (status.ok()) status = run_turns(engine, request, sink, lanes.lanes(), stats);
  const CacheBytes bytes = engine.cache().bytes();
  stats.kv_live_bytes = bytes.live;
  stats.kv_peak_bytes = bytes.peak;
  stats.kv_capacity_bytes = bytes.capacity;
  stats.kv_entries = lanes.stored_entries();
  stats.kv_copied_bytes = bytes.copied - copied_before;
  stats.decode = engine.counters();
  const Status ended = lanes.end();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(ended);
  return stats;
}

}  // namespace tessera
