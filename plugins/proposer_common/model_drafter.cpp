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
  picked_.reserve(static_cast<std::size_t>(forward.max_batch()));
}

int32_t ModelDrafter::start_batch(const DraftContext& at, bool logits) {
  batch_.clear();
  int32_t parent = -1;
  const auto first = at.last_position - static_cast<int32_t>(at.feed.size());
  for (std::size_t i = 0; i < at.feed.size(); ++i)
    parent = batch_.add(at.feed[i], at.seq, first + static_cast<int32_t>(i), parent, kWriteKv, 0,
                        at.branch);
  const auto flags = static_cast<uint8_t>((logits ? kOutputLogits : 0) | (at.write ? kWriteKv : 0));
  return batch_.add(at.last_token, at.seq, at.last_position, parent, flags, 0, at.branch);
}

Status ModelDrafter::draft_chain(const DraftContext& at, int count, Sampler& sampler, Draft& draft,
                                 DecodeCounters& counters) {
  DraftContext next = at;
  for (int i = 0; i < count; ++i) {
    if (at.write && i > 0) {
      // The previous token alone: everything before it is stored.
      batch_.clear();
      batch_.add(draft.tokens[static_cast<std::size_t>(i - 1)], at.seq, at.last_position + i, -1,
                 kWriteKv | kOutputLogits, 0, at.branch);
    } else {
      // (The feed, once,) the last token, then the chain so far; only the
      // newest token's logits.
      int32_t parent = start_batch(next, i == 0);
      for (int j = 0; j < i; ++j)
        parent =
            batch_.add(draft.tokens[static_cast<std::size_t>(j)], at.seq, at.last_position + j + 1,
                       parent, j + 1 == i ? kOutputLogits : 0, 0, at.branch);
    }
    next.feed = {};
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
  // The batch holds the feed, the last token and the picked nodes.
  const std::size_t room = static_cast<std::size_t>(forward_.max_batch()) - at.feed.size() - 1;
  // The nodes asked for and their ancestors, each once, in tree order
  // (parents first). Bounded by the batch, so nothing here grows with the tree.
  picked_.clear();
  for (const int32_t node : nodes)
    for (int32_t n = node; n >= 0; n = tree.parents[static_cast<std::size_t>(n)]) {
      if (std::find(picked_.begin(), picked_.end(), n) != picked_.end()) break;
      if (picked_.size() >= room)
        return invalid_argument("drafting a tree needs more than decode.max_batch = " +
                                std::to_string(forward_.max_batch()) +
                                " tokens in one forward; lower decode.tree_depth or "
                                "decode.tree_top_k");
      picked_.push_back(n);
    }
  std::sort(picked_.begin(), picked_.end());
  // A picked node's place among the picked: its logits row is 1 + that (the
  // last token's row is 0; the feed has no logits), its batch index follows
  // the last token's.
  const auto index_of = [&](int32_t n) {
    return static_cast<int32_t>(std::lower_bound(picked_.begin(), picked_.end(), n) -
                                picked_.begin());
  };
  const int32_t root = start_batch(at, true);
  for (const int32_t n : picked_) {
    int32_t depth = 0;
    for (int32_t up = n; up >= 0; up = tree.parents[static_cast<std::size_t>(up)]) ++depth;
    const int32_t parent = tree.parents[static_cast<std::size_t>(n)];
    batch_.add(tree.tokens[static_cast<std::size_t>(n)], at.seq, at.last_position + depth,
               parent < 0 ? root : root + 1 + index_of(parent), kOutputLogits, 0, at.branch);
  }
  ASSIGN_OR_RETURN(std::span<const float> logits, forward_.forward(*at.cache, batch_, options_));
  ++counters.draft_forwards;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int32_t row = nodes[i] < 0 ? 0 : 1 + index_of(nodes[i]);
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
