// The `self_draft` proposer: the target drafts for itself with its first
// decode.draft_layers layers, then its final norm and head (no second model,
// no second cache). It reads the target's cache for those layers, which holds
// every lane token but the last, and keeps its draft tokens in the batch.
#pragma once

#include <memory>

#include "core/decode/proposer.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "plugins/proposer_common/model_drafter.h"

namespace tessera {

class SelfDraftProposer final : public Proposer {
 public:
  SelfDraftProposer(const OptionValues& options, PluginServices& services);

  Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) override;
  bool can_expand() const override { return true; }
  Status expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                std::span<const int32_t> at, std::span<float> probs) override;

 private:
  DraftContext context_of(DecodeContext& context, const SequenceState& lane) const;

  int draft_tokens_;
  std::unique_ptr<Transformer> forward_;  // the target's weights, scratch of its own
  std::unique_ptr<ModelDrafter> drafter_;
};

}  // namespace tessera
