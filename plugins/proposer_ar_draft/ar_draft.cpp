#include "plugins/proposer_ar_draft/ar_draft.h"

#include "core/model/model.h"
#include "core/plugin/sdk.h"

namespace tessera {
namespace {

// The lane's place in the draft cache.
struct ArDraftState final : ProposerState {
  SequenceId seq = 0;
  int64_t fed = 0;  // lane tokens [0, fed) are in the draft cache
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
}

Status ArDraftProposer::begin(DecodeContext&, SequenceState& lane) {
  auto state = std::make_unique<ArDraftState>();
  state->seq = next_sequence_++;
  RETURN_IF_ERROR(cache_->allocate(state->seq, capacity_).with_context("the draft model's cache"));
  lane.proposer_state = std::move(state);
  return ok_status();
}

void ArDraftProposer::end(DecodeContext&, SequenceState& lane) {
  if (lane.proposer_state) (void)cache_->release(state_of(lane).seq);
}

Result<DraftContext> ArDraftProposer::catch_up(DecodeContext& context, SequenceState& lane) {
  ArDraftState& state = state_of(lane);
  const auto last = static_cast<int64_t>(lane.tokens.size()) - 1;
  if (state.fed < last) {
    feed_.clear();
    int32_t parent = -1;
    for (int64_t i = state.fed; i < last; ++i)
      parent = feed_.add(lane.tokens[static_cast<std::size_t>(i)], state.seq,
                         static_cast<int32_t>(i), parent, kWriteKv);
    RETURN_IF_ERROR(forward_->forward(*cache_, feed_).status().with_context("the draft model"));
    ++context.counters.draft_forwards;
    state.fed = last;
  }
  return DraftContext{cache_.get(), state.seq, 0, lane.tokens.back(), static_cast<int32_t>(last)};
}

Status ArDraftProposer::propose(DecodeContext& context, SequenceState& lane, Draft& draft) {
  ASSIGN_OR_RETURN(const DraftContext at, catch_up(context, lane));
  return drafter_->draft_chain(at, draft_tokens_, lane.sampler, draft, context.counters)
      .with_context("the draft model");
}

Status ArDraftProposer::expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                               std::span<const int32_t> at, std::span<float> probs) {
  ASSIGN_OR_RETURN(const DraftContext where, catch_up(context, lane));
  return drafter_->expand(where, tree, at, lane.sampler, probs, context.counters)
      .with_context("the draft model");
}

}  // namespace tessera
