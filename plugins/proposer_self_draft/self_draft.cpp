#include "plugins/proposer_self_draft/self_draft.h"

#include "core/model/model.h"
#include "core/plugin/sdk.h"

namespace tessera {

using sdk::Refusal;
using sdk::value_or_refuse;

SelfDraftProposer::SelfDraftProposer(const OptionValues& options, PluginServices& services)
    : draft_tokens_(static_cast<int>(options.get_int("draft_tokens"))) {
  const LoadedModel& model = *value_or_refuse(services.target_model());
  const auto layers = static_cast<int>(options.get_int("draft_layers"));
  if (layers >= model.config.n_layers)
    throw Refusal(invalid_argument("decode.draft_layers = " + std::to_string(layers) +
                                   ", but model " + model.path + " has " +
                                   std::to_string(model.config.n_layers) +
                                   " layers; self-drafting runs fewer than all of them (1 to " +
                                   std::to_string(model.config.n_layers - 1) + ")"));
  if (draft_tokens_ + 1 > services.max_batch())
    throw Refusal(invalid_argument("decode.draft_tokens = " + std::to_string(draft_tokens_) +
                                   " needs " + std::to_string(draft_tokens_ + 1) +
                                   " tokens per forward, more than decode.max_batch = " +
                                   std::to_string(services.max_batch())));
  forward_ = value_or_refuse(services.make_transformer(model));
  ForwardOptions forward_options;
  forward_options.layer_end = layers;
  drafter_ = std::make_unique<ModelDrafter>(*forward_, forward_options);
}

DraftContext SelfDraftProposer::context_of(DecodeContext& context,
                                           const SequenceState& lane) const {
  const auto last = static_cast<int32_t>(lane.tokens.size()) - 1;
  return {&context.cache, lane.id, lane.branch, {}, lane.tokens.back(), last};
}

Status SelfDraftProposer::propose(DecodeContext& context, SequenceState& lane, Draft& draft) {
  if (lane.cached + 1 != static_cast<int64_t>(lane.tokens.size())) return ok_status();
  return drafter_->draft_chain(context_of(context, lane), draft_tokens_, lane.sampler, draft,
                               context.counters);
}

Status SelfDraftProposer::expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                                 std::span<const int32_t> at, std::span<float> probs) {
  return drafter_->expand(context_of(context, lane), tree, at, lane.sampler, probs,
                          context.counters);
}

}  // namespace tessera
