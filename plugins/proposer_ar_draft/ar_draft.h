// The `ar_draft` proposer: a second, smaller model on the same tokenizer
// (decode.draft_model) drafts a chain, one forward per token. It keeps a
// cache of its own (the configured store, identity codec) in step with the
// lane: the tokens a step accepted ride with the next step's first drafting
// forward. On a store that can truncate, a chain writes its tokens (each
// forward one token) and the next step truncates what the verifier rejected;
// on an evicting store, which cannot take entries back, each forward carries
// the chain so far instead and writes nothing (a tree's nodes never are).
#pragma once

#include <memory>
#include <string>

#include "core/decode/proposer.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "plugins/proposer_common/model_drafter.h"

namespace tessera {

class ArDraftProposer final : public Proposer {
 public:
  ArDraftProposer(const OptionValues& options, PluginServices& services);

  Status begin(DecodeContext& context, SequenceState& lane) override;
  Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) override;
  void end(DecodeContext& context, SequenceState& lane) override;
  bool can_expand() const override { return true; }
  Status expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                std::span<const int32_t> at, std::span<float> probs) override;

 private:
  // Where the lane stands in the draft cache: the tokens it lacks (all but
  // the last) either fed now (a long prompt) or left to ride with the first
  // drafting forward.
  Result<DraftContext> catch_up(DecodeContext& context, SequenceState& lane);

  int draft_tokens_;
  int64_t capacity_;
  const LoadedModel* model_ = nullptr;
  std::unique_ptr<Transformer> forward_;
  std::unique_ptr<CheckedCacheStore> cache_;
  std::unique_ptr<ModelDrafter> drafter_;
  Batch feed_;
  std::size_t inline_feed_ = 0;  // at most this many missing tokens ride with a drafting forward
  SequenceId next_sequence_ = 0;
};

// Refuses a draft model whose vocabulary is not the target's (size and every
// piece), naming both files and the first difference.
Status check_same_vocabulary(const LoadedModel& draft, const LoadedModel& target);

}  // namespace tessera
