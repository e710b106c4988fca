// Engine: one decode step of several lanes (propose, verify, observe), with
// other lanes' prefill chunks in its forward.
#include <algorithm>
#include <chrono>

#include "core/engine/engine.h"

namespace tessera {
namespace {

// Cuts drafts, a token from the end of the longest first, until the step's
// rows (the chunks' tokens, each lane's waiting token and draft) fit
// `max_rows`. Parents come before their children, so a draft's first tokens
// are a draft too. Which drafts are cut depends on their lengths alone.
void fit_drafts(std::span<Draft> drafts, int64_t rows, int64_t max_rows, std::size_t vocab) {
  while (rows > max_rows) {
    Draft* longest = nullptr;
    for (Draft& draft : drafts)
      if (!draft.empty() && (longest == nullptr || draft.size() > longest->size()))
        longest = &draft;
    if (longest == nullptr) return;  // nothing left to cut: the verifier says what is too long
    longest->tokens.pop_back();
    longest->parents.pop_back();
    if (!longest->probs.empty()) longest->probs.resize(longest->tokens.size() * vocab);
    --rows;
  }
}

}  // namespace

int64_t Engine::prefill_waiting(const SequenceState& lane) const {
  if (!verifier_->chunks_prefill()) return 0;
  return std::max<int64_t>(0, static_cast<int64_t>(lane.tokens.size()) - lane.cached - 1);
}

int64_t Engine::decode_rows(const SequenceState& lane) const {
  return 1 + lane.last_draft;  // 0 for a lane whose proposer drafts nothing
}

Status Engine::step(std::span<SequenceState* const> lanes,
                    std::span<std::vector<int32_t>> emitted) {
  return step({}, lanes, emitted);
}

Status Engine::step(SequenceState& lane, std::vector<int32_t>& emitted) {
  SequenceState* lanes[1] = {&lane};
  return step({}, lanes, std::span<std::vector<int32_t>>(&emitted, 1));
}

Status Engine::step(std::span<const PrefillChunk> chunks, std::span<SequenceState* const> lanes,
                    std::span<std::vector<int32_t>> emitted, bool fit) {
  TESSERA_CHECK(lanes.size() == emitted.size(), "Engine::step: one emitted list per lane");
  if (drafts_.size() < lanes.size()) {
    // Sized for the largest draft a forward can verify: drafts vary in length.
    drafts_.resize(lanes.size());
    for (Draft& draft : drafts_) {
      draft.tokens.reserve(static_cast<std::size_t>(transformer_->max_batch()));
      draft.parents.reserve(static_cast<std::size_t>(transformer_->max_batch()));
    }
  }
  lane_steps_.clear();
  DecodeContext ctx = context();
  std::vector<std::size_t>& before = emitted_before_;
  before.clear();
  const auto started = std::chrono::steady_clock::now();
  int64_t rows = 0;
  for (const PrefillChunk& chunk : chunks) rows += chunk.tokens;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    SequenceState& lane = *lanes[i];
    // A waiting prompt goes into the cache first: a proposer then sees one
    // uncached token (the last), and the verification batch stays small.
    RETURN_IF_ERROR(prefill(lane));
    if (!lane.proposer_begun) {
      RETURN_IF_ERROR(proposer_of(lane).begin(ctx, lane).with_context("proposer"));
      lane.proposer_begun = true;
    }
    drafts_[i].clear();
    RETURN_IF_ERROR(proposer_of(lane).propose(ctx, lane, drafts_[i]).with_context("proposer"));
    lane.last_draft = drafts_[i].size();
    rows += 1 + drafts_[i].size();
  }
  if (fit)
    fit_drafts(std::span(drafts_).first(lanes.size()), rows, transformer_->max_batch(),
               static_cast<std::size_t>(model_->config.vocab_size));
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    SequenceState& lane = *lanes[i];
    lane.step_logprobs.clear();
    const bool scored = lane.logprobs >= 0;
    lane_steps_.push_back({lanes[i], &drafts_[i], &emitted[i],
                           scored ? &lane.step_logprobs : nullptr,
                           std::min(std::max(lane.logprobs, 0), TokenLogprob::kMaxTop)});
    before.push_back(emitted[i].size());
  }
  const auto proposed = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(verifier_->feed_and_verify(ctx, chunks, lane_steps_).with_context("verifier"));
  const auto verified = std::chrono::steady_clock::now();
  counters_.propose_seconds += std::chrono::duration<double>(proposed - started).count();
  counters_.verify_seconds += std::chrono::duration<double>(verified - proposed).count();
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    SequenceState& lane = *lanes[i];
    if (emitted[i].size() == before[i]) return internal_error("the verifier emitted no token");
    const std::span<const int32_t> fresh(emitted[i].data() + before[i],
                                         emitted[i].size() - before[i]);
    if (lane.logprobs >= 0 && lane.step_logprobs.size() != fresh.size())
      return internal_error("the verifier '" + description_.verifier + "' scored " +
                            std::to_string(lane.step_logprobs.size()) + " of the " +
                            std::to_string(fresh.size()) +
                            " tokens it emitted; it does not report log-probabilities");
    lane.tokens.insert(lane.tokens.end(), fresh.begin(), fresh.end());
    proposer_of(lane).observe(ctx, lane, fresh);
  }
  return ok_status();
}

Status Engine::keep_tokens(SequenceState& lane, int64_t end) {
  if (static_cast<int64_t>(lane.tokens.size()) <= end) return ok_status();
  if (!lane.owns_sequence)
    return failed_precondition("a branch kept in its prefix's sequence cannot be cut back");
  lane.tokens.resize(static_cast<std::size_t>(end));
  if (lane.cached > end - 1) {
    RETURN_IF_ERROR(cache_->truncate(lane.id, end - 1));
    lane.cached = end - 1;
  }
  return ok_status();
}

}  // namespace tessera
