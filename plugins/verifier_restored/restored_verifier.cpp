#include "plugins/verifier_restored/restored_verifier.h"

#include <algorithm>
#include <string>

#include "core/model/transformer.h"
#include "core/plugin/sdk.h"

namespace tessera {
namespace {

Status refuse_branches(const SequenceState& lane) {
  if (lane.branch == 0) return ok_status();
  return unimplemented(
      "verifier 'restored' decodes whole sequences, not branches kept in one sequence; use "
      "decode.branch_layout = \"batched\"");
}

}  // namespace

RestoredVerifier::RestoredVerifier(const OptionValues& options, PluginServices& services)
    : settings_(RestorationSettings::from(options)) {
  Transformer* target = sdk::value_or_refuse(services.target());
  parts_ = sdk::value_or_refuse(make_restorer_parts(services, settings_));
  const int64_t chunk = settings_.restore_chunk;
  forward_ = std::make_unique<RestoringForward>(
      *target, parts_.restorer(*target), *parts_.projection,
      static_cast<int>(chunk > 0 ? std::min<int64_t>(chunk, services.max_batch())
                                 : services.max_batch()),
      services.max_tokens());
}

Status RestoredVerifier::check_key_stage(const DecodeContext& context) {
  if (key_stage_checked_) return ok_status();
  RETURN_IF_ERROR(tessera::check_key_stage(parts_, settings_, context.cache.stored_keys()));
  key_stage_checked_ = true;
  return ok_status();
}

Status RestoredVerifier::prefill(DecodeContext& context, SequenceState& lane) {
  RETURN_IF_ERROR(check_key_stage(context));
  const auto end = static_cast<int64_t>(lane.tokens.size()) - 1;
  if (end <= lane.cached) return ok_status();
  RETURN_IF_ERROR(refuse_branches(lane));
  const std::span<const int32_t> history(lane.tokens.data(), static_cast<std::size_t>(end));
  RETURN_IF_ERROR(
      forward_->prefill(context.cache, lane.id, history, lane.cached, context.counters));
  lane.cached = end;
  return ok_status();
}

Status RestoredVerifier::step(DecodeContext& context, const LaneStep& lane_step) {
  SequenceState& lane = *lane_step.lane;
  if (!lane_step.draft->empty()) return invalid_argument("verifier 'restored' takes no drafts");
  RETURN_IF_ERROR(refuse_branches(lane));
  RETURN_IF_ERROR(prefill(context, lane));
  ASSIGN_OR_RETURN(const std::span<const float> logits,
                   forward_->step(context.cache, lane.id, lane.tokens, context.counters));
  ++context.counters.verify_steps;
  ++context.counters.emitted;
  const int32_t token = lane.sampler.sample(logits);
  lane.sampler.observe(token);
  lane_step.emitted->push_back(token);
  if (lane_step.logprobs)
    lane_step.logprobs->push_back(score_token(logits, token, lane_step.top_logprobs));
  lane.cached = static_cast<int64_t>(lane.tokens.size());
  return ok_status();
}

Status RestoredVerifier::verify(DecodeContext& context, std::span<const LaneStep> lanes) {
  for (const LaneStep& lane_step : lanes) RETURN_IF_ERROR(step(context, lane_step));
  return ok_status();
}

}  // namespace tessera
