#include "plugins/verifier_ar/ar_verifier.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/cache/checked_cache_store.h"
#include "core/decode/lane_prefill.h"
#include "core/model/transformer.h"

namespace tessera {

ArVerifier::ArVerifier(const OptionValues&) {}

Status ArVerifier::plan_depths(DecodeContext& context, std::span<const LaneStep> lanes) {
  if (rows_.size() < lanes.size()) {
    // Sized for the largest draft a forward can verify: drafts vary in length.
    const auto most = static_cast<std::size_t>(context.target.max_batch());
    rows_.resize(lanes.size());
    for (LaneRows& rows : rows_) {
      rows.depths.reserve(most);
      rows.node_rows.reserve(most);
      rows.acceptance.path.reserve(most);
    }
    scratch_.children.reserve(most);
    commit_rows_.reserve(most);
  }
  const bool bounded = !context.cache.policy().evicts;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const SequenceState& lane = *lanes[i].lane;
    LaneRows& rows = rows_[i];
    draft_depths(*lanes[i].draft, rows.depths);
    rows.max_depth = std::numeric_limits<int32_t>::max();
    if (!bounded) continue;
    // What stays after the step: the sequence's entries, every lane's last
    // token, and the accepted nodes; the last emitted token waits, so at most
    // capacity - 1. Lanes sharing a sequence (branches) share the room.
    ASSIGN_OR_RETURN(const SequenceInfo info, context.cache.info(lane.id));
    int64_t sharing = 0;
    for (const LaneStep& other : lanes) sharing += other.lane->id == lane.id ? 1 : 0;
    const int64_t room = lane.capacity - 1 - info.stored - sharing;
    rows.max_depth = static_cast<int32_t>(std::max<int64_t>(0, room / sharing));
  }
  return ok_status();
}

Status ArVerifier::build_batch(DecodeContext& context, std::span<const PrefillChunk> chunks,
                               std::span<const LaneStep> lanes) {
  batch_.clear();
  int64_t tokens = 0;
  for (const PrefillChunk& chunk : chunks) tokens += chunk.tokens;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    tokens += 1;
    for (const int32_t depth : rows_[i].depths) tokens += depth <= rows_[i].max_depth ? 1 : 0;
  }
  if (tokens > context.target.max_batch())
    return invalid_argument("the drafts of " + std::to_string(lanes.size()) + " lane" +
                            (lanes.size() == 1 ? "" : "s") + " need " + std::to_string(tokens) +
                            " tokens in one verification forward, more than decode.max_batch = " +
                            std::to_string(context.target.max_batch()) +
                            "; draft fewer tokens (decode.draft_tokens, decode.tree_tokens) or "
                            "raise decode.max_batch");
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const SequenceState& lane = *lanes[i].lane;
    const Draft& draft = *lanes[i].draft;
    LaneRows& rows = rows_[i];
    const auto last = static_cast<int32_t>(lane.tokens.size()) - 1;
    rows.root_row =
        batch_.add(lane.tokens.back(), lane.id, last, -1, kWriteKv | kOutputLogits, 0, lane.branch);
    rows.node_rows.assign(draft.tokens.size(), -1);
    for (int32_t d = 0; d < draft.size(); ++d) {
      const auto index = static_cast<std::size_t>(d);
      if (rows.depths[index] > rows.max_depth) continue;
      const int32_t parent = draft.parents[index];
      const int32_t parent_row =
          parent < 0 ? rows.root_row : rows.node_rows[static_cast<std::size_t>(parent)];
      rows.node_rows[index] = batch_.add(draft.tokens[index], lane.id, last + rows.depths[index],
                                         parent_row, kOutputLogits, 0, lane.branch);
    }
  }
  // After the lanes' rows, so the logits' rows (kOutputLogits tokens only)
  // are the batch's.
  for (const PrefillChunk& chunk : chunks) add_chunk_rows(*chunk.lane, chunk.tokens, batch_);
  return ok_status();
}

Status ArVerifier::verify(DecodeContext& context, std::span<const LaneStep> lanes) {
  return feed_and_verify(context, {}, lanes);
}

Status ArVerifier::feed_and_verify(DecodeContext& context, std::span<const PrefillChunk> chunks,
                                   std::span<const LaneStep> lanes) {
  for (const PrefillChunk& chunk : chunks)
    if (chunk.tokens <= 0 ||
        chunk.tokens >= static_cast<int64_t>(chunk.lane->tokens.size()) - chunk.lane->cached)
      return invalid_argument("a prefill chunk of " + std::to_string(chunk.tokens) +
                              " tokens for a lane with " +
                              std::to_string(chunk.lane->tokens.size() - chunk.lane->cached) +
                              " waiting; the last one waits for its step");
  for (const LaneStep& step : lanes) {
    SequenceState& lane = *step.lane;
    if (lane.tokens.size() <= static_cast<std::size_t>(lane.cached))
      return failed_precondition("the sequence has no token to feed");
    const Draft& draft = *step.draft;
    if (draft.parents.size() != draft.tokens.size())
      return invalid_argument("the draft has " + std::to_string(draft.tokens.size()) +
                              " tokens but " + std::to_string(draft.parents.size()) + " parents");
    for (int32_t d = 0; d < draft.size(); ++d) {
      const int32_t parent = draft.parents[static_cast<std::size_t>(d)];
      if (parent < -1 || parent >= d)
        return invalid_argument("draft token " + std::to_string(d) + " has parent " +
                                std::to_string(parent) + "; a parent comes before its children");
    }
    const std::size_t vocab = static_cast<std::size_t>(context.target.config().vocab_size);
    if (!draft.probs.empty() && draft.probs.size() != draft.tokens.size() * vocab)
      return invalid_argument(
          "the draft's probabilities are not one row of the vocabulary per "
          "token");
    // A waiting prompt goes in first, so the verification batch stays small
    // (a scheduler that chunks prompts steps a lane only once it is fed).
    RETURN_IF_ERROR(
        feed_all_but_last(context.target, context.cache, lane, prefill_batch_, context.counters));
  }
  RETURN_IF_ERROR(plan_depths(context, lanes));
  RETURN_IF_ERROR(build_batch(context, chunks, lanes));
  ASSIGN_OR_RETURN(std::span<const float> logits, context.target.forward(context.cache, batch_));
  ++context.counters.target_forwards;
  for (const PrefillChunk& chunk : chunks) chunk.lane->cached += chunk.tokens;
  if (lanes.empty()) return ok_status();
  ++context.counters.verify_steps;

  const std::size_t vocab = static_cast<std::size_t>(context.target.config().vocab_size);
  commit_rows_.clear();
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    SequenceState& lane = *lanes[i].lane;
    LaneRows& rows = rows_[i];
    const NodeLogits node_logits{logits, vocab, rows.root_row, rows.node_rows};
    accept_draft(*lanes[i].draft, rows.depths, rows.max_depth, node_logits, lane.sampler, scratch_,
                 rows.acceptance);
    for (const int32_t row : rows.node_rows) context.counters.drafted += row >= 0 ? 1 : 0;
    context.counters.accepted += static_cast<int64_t>(rows.acceptance.path.size());
    context.counters.emitted += static_cast<int64_t>(rows.acceptance.path.size()) + 1;
    std::vector<int32_t>& emitted = *lanes[i].emitted;
    // Each emitted token is scored on the row of the node before it.
    int32_t previous = -1;
    for (const int32_t node : rows.acceptance.path) {
      const int32_t token = lanes[i].draft->tokens[static_cast<std::size_t>(node)];
      emitted.push_back(token);
      if (lanes[i].logprobs)
        lanes[i].logprobs->push_back(
            score_token(node_logits(previous), token, lanes[i].top_logprobs));
      commit_rows_.push_back(rows.node_rows[static_cast<std::size_t>(node)]);
      previous = node;
    }
    emitted.push_back(rows.acceptance.next);
    if (lanes[i].logprobs)
      lanes[i].logprobs->push_back(
          score_token(node_logits(previous), rows.acceptance.next, lanes[i].top_logprobs));
    lane.cached = static_cast<int64_t>(lane.tokens.size() + rows.acceptance.path.size());
  }
  return context.target.commit_pending(context.cache, batch_, commit_rows_);
}

}  // namespace tessera
