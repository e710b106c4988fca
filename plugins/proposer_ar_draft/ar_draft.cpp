#include "plugins/proposer_ar_draft/ar_draft.h"

#include <vector>

#include "core/model/model.h"
#include "core/plugin/sdk.h"

namespace tessera {
namespace {

// The lane's sequence in the draft cache: it holds the lane's tokens up to
// its logical length, and after a written chain the drafted tokens too
// (from `drafted_at`), until the next step keeps those the verifier accepted.
struct ArDraftState final : ProposerState {
  SequenceId seq = 0;
  int64_t drafted_at = -1;       // position of the first drafted token written, or -1
  std::vector<int32_t> drafted;  // the drafted tokens written there
};

ArDraftState& state_of(SequenceState& lane) {
  return static_cast<ArDraftState&>(*lane.proposer_state);
}

}  // namespace

Status check_same_vocabulary(const LoadedModel& draft, const LoadedModel& target) {
  const Vocabulary& a = draft.vocab;
  const Vocabulary& b = target.vocab;
  const std::string both = "draft model " + draft.path + " and target model " + target.path;
  if (a.size() != b.size())
    return invalid_argument(both + " have vocabularies of " + std::to_string(a.size()) + " and " +
                            std::to_string(b.size()) +
                            " tokens; a draft model must share the target's tokenizer");
  for (int32_t i = 0; i < a.size(); ++i)
    if (a.pieces[static_cast<std::size_t>(i)] != b.pieces[static_cast<std::size_t>(i)])
      return invalid_argument(both + " differ at token " + std::to_string(i) + " ('" +
                              a.pieces[static_cast<std::size_t>(i)] + "' against '" +
                              b.pieces[static_cast<std::size_t>(i)] +
                              "'); a draft model must share the target's tokenizer");
  return ok_status();
}

ArDraftProposer::ArDraftProposer(const OptionValues& options, PluginServices& services)
    : draft_tokens_(static_cast<int>(options.get_int("draft_tokens"))),
      capacity_(services.max_tokens()) {
  const std::string name = options.get_string("draft_model");
  if (name.empty())
    throw sdk::Refusal(invalid_argument(
        "decode.draft_model is empty: name the draft model file (found like model.path), e.g. "
        "decode.draft_model = \"stories260K.gguf\""));
  if (draft_tokens_ + 1 > services.max_batch())
    throw sdk::Refusal(invalid_argument("decode.draft_tokens = " + std::to_string(draft_tokens_) +
                                        " needs " + std::to_string(draft_tokens_ + 1) +
                                        " tokens per forward, more than decode.max_batch = " +
                                        std::to_string(services.max_batch())));
  model_ = sdk::value_or_refuse(
      services.load_model(name, "decode.draft_model", options.get_string("draft_tokenizer")));
  sdk::refuse_unless(check_same_vocabulary(*model_, *sdk::value_or_refuse(services.target_model()))
                         .with_context("decode.draft_model"));
  forward_ = sdk::value_or_refuse(services.make_transformer(*model_));
  cache_ = sdk::value_or_refuse(services.make_cache(*model_));
  drafter_ = std::make_unique<ModelDrafter>(*forward_, ForwardOptions{});
  feed_.reserve(static_cast<std::size_t>(services.max_batch()));
  // A step's accepted tokens fit easily; a prompt does not.
  inline_feed_ = static_cast<std::size_t>(services.max_batch()) / 4;
}

Status ArDraftProposer::begin(DecodeContext&, SequenceState& lane) {
  auto state = std::make_unique<ArDraftState>();
  state->seq = next_sequence_++;
  state->drafted.reserve(static_cast<std::size_t>(draft_tokens_));
  RETURN_IF_ERROR(cache_->allocate(state->seq, capacity_).with_context("the draft model's cache"));
  lane.proposer_state = std::move(state);
  return ok_status();
}

void ArDraftProposer::end(DecodeContext&, SequenceState& lane) {
  if (lane.proposer_state) (void)cache_->release(state_of(lane).seq);
}

Result<DraftContext> ArDraftProposer::catch_up(DecodeContext& context, SequenceState& lane) {
  ArDraftState& state = state_of(lane);
  // Drafted tokens written last step stay as far as the lane took them.
  if (state.drafted_at >= 0) {
    int64_t keep = state.drafted_at;
    for (const int32_t token : state.drafted) {
      if (keep >= static_cast<int64_t>(lane.tokens.size()) - 1 ||
          lane.tokens[static_cast<std::size_t>(keep)] != token)
        break;
      ++keep;
    }
    state.drafted_at = -1;
    ASSIGN_OR_RETURN(const SequenceInfo written, cache_->info(state.seq));
    if (written.logical_length > keep)
      RETURN_IF_ERROR(cache_->truncate(state.seq, keep).with_context("the draft model's cache"));
  }
  // What the draft cache holds is the truth (a failed step leaves no doubt).
  ASSIGN_OR_RETURN(const SequenceInfo info, cache_->info(state.seq));
  const auto last = static_cast<int64_t>(lane.tokens.size()) - 1;
  const std::span<const int32_t> missing(lane.tokens.data() + info.logical_length,
                                         static_cast<std::size_t>(last - info.logical_length));
  DraftContext at{cache_.get(), state.seq, 0, {}, lane.tokens.back(), static_cast<int32_t>(last)};
  // The tokens a step accepted ride with the first drafting forward; a long
  // prompt is fed on its own first (in chunks).
  if (missing.size() <= inline_feed_) {
    at.feed = missing;
    return at;
  }
  feed_.clear();
  int32_t parent = -1;
  for (std::size_t i = 0; i < missing.size(); ++i)
    parent = feed_.add(missing[i], state.seq,
                       static_cast<int32_t>(info.logical_length) + static_cast<int32_t>(i), parent,
                       kWriteKv);
  RETURN_IF_ERROR(forward_->forward(*cache_, feed_).status().with_context("the draft model"));
  ++context.counters.draft_forwards;
  return at;
}

Status ArDraftProposer::propose(DecodeContext& context, SequenceState& lane, Draft& draft) {
  ASSIGN_OR_RETURN(DraftContext at, catch_up(context, lane));
  ArDraftState& state = state_of(lane);
  // Writing the chain (one token per forward) needs a store that can take
  // the rejected tokens back, and room for them.
  ASSIGN_OR_RETURN(const SequenceInfo info, cache_->info(state.seq));
  const int64_t written =
      info.logical_length + static_cast<int64_t>(at.feed.size()) + draft_tokens_;
  at.write = !cache_->policy().evicts && written <= info.capacity;
  RETURN_IF_ERROR(drafter_->draft_chain(at, draft_tokens_, lane.sampler, draft, context.counters)
                      .with_context("the draft model"));
  if (at.write) {
    state.drafted_at = at.last_position + 1;
    state.drafted.assign(draft.tokens.begin(), draft.tokens.end() - 1);
  }
  return ok_status();
}

Status ArDraftProposer::expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                               std::span<const int32_t> at, std::span<float> probs) {
  ASSIGN_OR_RETURN(const DraftContext where, catch_up(context, lane));
  return drafter_->expand(where, tree, at, lane.sampler, probs, context.counters)
      .with_context("the draft model");
}

}  // namespace tessera
