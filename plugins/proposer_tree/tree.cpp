#include "plugins/proposer_tree/tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/model/model.h"
#include "core/plugin/sdk.h"

namespace tessera {

TreeProposer::TreeProposer(const OptionValues& options, PluginServices& services)
    : top_k_(static_cast<int>(options.get_int("tree_top_k"))),
      depth_(static_cast<int>(options.get_int("tree_depth"))),
      tree_tokens_(static_cast<int>(options.get_int("tree_tokens"))) {
  const std::string name = options.get_string("tree_drafter");
  if (name == "tree")
    throw sdk::Refusal(invalid_argument("decode.tree_drafter: a tree cannot grow over a tree"));
  if (tree_tokens_ + 1 > services.max_batch())
    throw sdk::Refusal(invalid_argument("decode.tree_tokens = " + std::to_string(tree_tokens_) +
                                        " needs " + std::to_string(tree_tokens_ + 1) +
                                        " tokens in the verification forward, more than "
                                        "decode.max_batch = " +
                                        std::to_string(services.max_batch()) +
                                        "; lower decode.tree_tokens or raise decode.max_batch"));
  vocab_ =
      static_cast<std::size_t>(sdk::value_or_refuse(services.target_model())->config.vocab_size);
  drafter_ = sdk::value_or_refuse(create_plugin_as<Proposer>(services, "proposer", name));
  // Sized once: a level adds at most top_k^2 candidates (frontier_ and
  // next_frontier_ trade their buffers every level).
  const auto per_level = static_cast<std::size_t>(top_k_) * static_cast<std::size_t>(top_k_);
  frontier_.reserve(per_level);
  next_frontier_.reserve(per_level);
  // Every candidate a tree can record: the root's top_k, then per_level a level.
  const std::size_t most =
      static_cast<std::size_t>(top_k_) + static_cast<std::size_t>(depth_ - 1) * per_level;
  for (auto* v : {&candidates_.tokens, &candidates_.parents, &order_, &chosen_, &new_index_})
    v->reserve(most);
  scores_.reserve(most);
  if (!drafter_->can_expand())
    throw sdk::Refusal(invalid_argument("decode.tree_drafter: proposer '" + name +
                                        "' cannot expand a tree; choose one that can (self_draft, "
                                        "ar_draft, ngram, dlm)"));
}

Status TreeProposer::begin(DecodeContext& context, SequenceState& lane) {
  return drafter_->begin(context, lane);
}

void TreeProposer::observe(DecodeContext& context, SequenceState& lane,
                           std::span<const int32_t> emitted) {
  drafter_->observe(context, lane, emitted);
}

void TreeProposer::end(DecodeContext& context, SequenceState& lane) {
  drafter_->end(context, lane);
}

Status TreeProposer::grow(DecodeContext& context, SequenceState& lane) {
  probs_.resize(frontier_.size() * vocab_);
  RETURN_IF_ERROR(drafter_->expand(context, lane, candidates_, frontier_, probs_));
  const auto first_new = static_cast<int32_t>(candidates_.tokens.size());
  row_order_.resize(vocab_);
  for (std::size_t f = 0; f < frontier_.size(); ++f) {
    const float* row = probs_.data() + f * vocab_;
    std::iota(row_order_.begin(), row_order_.end(), 0);
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(top_k_), vocab_);
    std::partial_sort(
        row_order_.begin(), row_order_.begin() + static_cast<std::ptrdiff_t>(k), row_order_.end(),
        [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    const int32_t parent = frontier_[f];
    const double base = parent < 0 ? 0.0 : scores_[static_cast<std::size_t>(parent)];
    for (std::size_t j = 0; j < k; ++j) {
      const float p = row[row_order_[j]];
      if (!(p > 0)) break;  // the drafter has nothing more to say here
      candidates_.add(row_order_[j], parent);
      scores_.push_back(base + std::log(static_cast<double>(p)));
    }
  }
  // The next frontier: the best top_k of the candidates just added.
  next_frontier_.resize(candidates_.tokens.size() - static_cast<std::size_t>(first_new));
  std::iota(next_frontier_.begin(), next_frontier_.end(), first_new);
  const auto keep = std::min<std::size_t>(static_cast<std::size_t>(top_k_), next_frontier_.size());
  std::partial_sort(
      next_frontier_.begin(), next_frontier_.begin() + static_cast<std::ptrdiff_t>(keep),
      next_frontier_.end(), [&](int32_t a, int32_t b) {
        return scores_[static_cast<std::size_t>(a)] > scores_[static_cast<std::size_t>(b)] ||
               (scores_[static_cast<std::size_t>(a)] == scores_[static_cast<std::size_t>(b)] &&
                a < b);
      });
  next_frontier_.resize(keep);
  frontier_.swap(next_frontier_);
  return ok_status();
}

void TreeProposer::rerank(Draft& draft) {
  const std::size_t n = candidates_.tokens.size();
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  // A child never scores above its parent, which comes earlier: in this order
  // a parent is always considered before its children.
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return scores_[static_cast<std::size_t>(a)] > scores_[static_cast<std::size_t>(b)] ||
           (scores_[static_cast<std::size_t>(a)] == scores_[static_cast<std::size_t>(b)] && a < b);
  });
  chosen_.assign(n, 0);
  int taken = 0;
  for (const int32_t c : order_) {
    if (taken == tree_tokens_) break;
    const int32_t parent = candidates_.parents[static_cast<std::size_t>(c)];
    if (parent >= 0 && !chosen_[static_cast<std::size_t>(parent)]) continue;
    chosen_[static_cast<std::size_t>(c)] = 1;
    ++taken;
  }
  // Breadth-first (the candidates' own order), parents renumbered.
  new_index_.assign(n, -1);
  for (std::size_t c = 0; c < n; ++c) {
    if (!chosen_[c]) continue;
    const int32_t parent = candidates_.parents[c];
    new_index_[c] = draft.add(candidates_.tokens[c],
                              parent < 0 ? -1 : new_index_[static_cast<std::size_t>(parent)]);
  }
}

Status TreeProposer::propose(DecodeContext& context, SequenceState& lane, Draft& draft) {
  candidates_.clear();
  scores_.clear();
  frontier_.assign(1, -1);
  for (int level = 0; level < depth_ && !frontier_.empty(); ++level)
    RETURN_IF_ERROR(grow(context, lane));
  rerank(draft);
  return ok_status();
}

}  // namespace tessera
