#include "plugins/proposer_common/model_drafter.h"

#include <algorithm>
#include <cmath>

namespace tessera {

void softmax(std::span<const float> logits, std::span<float> probs) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) sum += std::exp(double{logits[i]} - max);
  for (std::size_t i = 0; i < logits.size(); ++i)
    probs[i] = static_cast<float>(std::exp(double{logits[i]} - max) / sum);
}

ModelDrafter::ModelDrafter(Transformer& forward, ForwardOptions options)
    : forward_(forward), options_(options) {
  batch_.reserve(static_cast<std::size_t>(forward.max_batch()));
}

Status ModelDrafter::draft_chain(const DraftContext& at, int count, Sampler& sampler, Draft& draft,
                                 DecodeCounters& counters) {
  for (int i = 0; i < count; ++i) {
    // The last token, then the chain so far; only the newest token's logits.
    batch_.clear();
    int32_t parent = batch_.add(at.last_token, at.seq, at.last_position, -1,
                                i == 0 ? kOutputLogits : 0, 0, at.branch);
    for (int j = 0; j < i; ++j)
      parent =
          batch_.add(draft.tokens[static_cast<std::size_t>(j)], at.seq, at.last_position + j + 1,
                     parent, j + 1 == i ? kOutputLogits : 0, 0, at.branch);
    ASSIGN_OR_RETURN(std::span<const float> logits, forward_.forward(*at.cache, batch_, options_));
    ++counters.draft_forwards;
    int32_t token = 0;
    if (sampler.greedy()) {
      token = argmax(logits);
    } else {
      sampler.distribution(logits, row_probs_);
      token = sampler.sample_from(row_probs_);
      // distribution() sized row_probs_ to the vocabulary.
      draft.probs.insert(draft.probs.end(), row_probs_.begin(), row_probs_.end());
    }
    draft.add(token, i - 1);
  }
  return ok_status();
}

Status ModelDrafter::expand(const DraftContext& at, const Draft& tree,
                            std::span<const int32_t> nodes, const Sampler& sampler,
                            std::span<float> probs, DecodeCounters& counters) {
  const auto vocab = static_cast<std::size_t>(forward_.config().vocab_size);
  // The nodes asked for and their ancestors, in tree order.
  wanted_.assign(tree.tokens.size(), 0);
  for (const int32_t node : nodes)
    for (int32_t n = node; n >= 0; n = tree.parents[static_cast<std::size_t>(n)])
      wanted_[static_cast<std::size_t>(n)] = 1;
  draft_depths(tree, depths_);
  batch_.clear();
  const int32_t root =
      batch_.add(at.last_token, at.seq, at.last_position, -1, kOutputLogits, 0, at.branch);
  row_of_.assign(tree.tokens.size(), -1);
  for (std::size_t n = 0; n < tree.tokens.size(); ++n) {
    if (!wanted_[n]) continue;
    const int32_t parent = tree.parents[n];
    row_of_[n] = batch_.add(tree.tokens[n], at.seq, at.last_position + depths_[n],
                            parent < 0 ? root : row_of_[static_cast<std::size_t>(parent)],
                            kOutputLogits, 0, at.branch);
  }
  if (batch_.size() > forward_.max_batch())
    return invalid_argument("drafting a tree needs " + std::to_string(batch_.size()) +
                            " tokens in one forward, more than decode.max_batch = " +
                            std::to_string(forward_.max_batch()) +
                            "; lower decode.tree_depth or decode.tree_top_k");
  ASSIGN_OR_RETURN(std::span<const float> logits, forward_.forward(*at.cache, batch_, options_));
  ++counters.draft_forwards;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int32_t row = nodes[i] < 0 ? root : row_of_[static_cast<std::size_t>(nodes[i])];
    const std::span<const float> row_logits =
        logits.subspan(static_cast<std::size_t>(row) * vocab, vocab);
    const std::span<float> out = probs.subspan(i * vocab, vocab);
    if (sampler.greedy()) {
      softmax(row_logits, out);
    } else {
      sampler.distribution(row_logits, row_probs_);
      std::copy(row_probs_.begin(), row_probs_.end(), out.begin());
    }
  }
  return ok_status();
}

}  // namespace tessera
