// The `tree` proposer: an EAGLE-2-style dynamic draft tree over any drafter
// that can expand (decode.tree_drafter: self_draft, ar_draft, ngram, dlm, ...).
// Expand the root's top decode.tree_top_k tokens; then decode.tree_depth - 1
// times expand the frontier (the top-k candidates of the last level by
// cumulative log-probability) in one drafter forward, each frontier node's
// top-k children becoming candidates; finally keep the decode.tree_tokens
// best candidates by cumulative log-probability (a node only with its
// parent), in breadth-first order (algorithms.md §4.5). Children are
// deterministic (point masses): the verifier's multi-candidate rule keeps
// sampling exact.
#pragma once

#include <memory>
#include <vector>

#include "core/decode/proposer.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"

namespace tessera {

class TreeProposer final : public Proposer {
 public:
  TreeProposer(const OptionValues& options, PluginServices& services);

  Status begin(DecodeContext& context, SequenceState& lane) override;
  Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) override;
  void observe(DecodeContext& context, SequenceState& lane,
               std::span<const int32_t> emitted) override;
  void end(DecodeContext& context, SequenceState& lane) override;

 private:
  // Expands `frontier_` (-1: the root) and records each node's top-k children
  // as candidates; the new frontier is the top-k of them.
  Status grow(DecodeContext& context, SequenceState& lane);
  // The best tree_tokens candidates, parents first, into `draft`.
  void rerank(Draft& draft);

  int top_k_;
  int depth_;
  int tree_tokens_;
  std::size_t vocab_ = 0;
  std::unique_ptr<Proposer> drafter_;
  // Reused every step.
  Draft candidates_;
  std::vector<double> scores_;  // cumulative log-probability per candidate
  std::vector<int32_t> frontier_, next_frontier_, order_, chosen_, new_index_;
  std::vector<float> probs_;
  std::vector<int32_t> row_order_;
};

}  // namespace tessera
