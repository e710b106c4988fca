#include "plugins/proposer_ngram/ngram.h"

#include <algorithm>

#include "core/plugin/sdk.h"

namespace tessera {
namespace {

// Whether history[i, i + n) equals the last n tokens of `context`.
bool matches_suffix(std::span<const int32_t> history, std::size_t i,
                    std::span<const int32_t> context, std::size_t n) {
  return std::equal(history.begin() + static_cast<std::ptrdiff_t>(i),
                    history.begin() + static_cast<std::ptrdiff_t>(i + n), context.end() - n);
}

}  // namespace

NgramProposer::NgramProposer(const OptionValues& options)
    : NgramProposer(static_cast<int>(options.get_int("draft_tokens")),
                    static_cast<int>(options.get_int("ngram_n")),
                    static_cast<int>(options.get_int("ngram_min"))) {}

NgramProposer::NgramProposer(int draft_tokens, int ngram_n, int ngram_min)
    : draft_tokens_(draft_tokens), ngram_n_(ngram_n), ngram_min_(ngram_min) {
  if (ngram_min_ > ngram_n_)
    throw sdk::Refusal(invalid_argument("decode.ngram_min = " + std::to_string(ngram_min_) +
                                        " is above decode.ngram_n = " + std::to_string(ngram_n_)));
}

void NgramProposer::lookup(std::span<const int32_t> tokens, Draft& draft) const {
  const std::size_t size = tokens.size();
  for (auto n = static_cast<std::size_t>(ngram_n_); n >= static_cast<std::size_t>(ngram_min_);
       --n) {
    if (size < n + 1) continue;
    // The most recent earlier occurrence with something after it.
    for (std::size_t i = size - n; i-- > 0;) {
      if (!matches_suffix(tokens, i, tokens, n)) continue;
      const std::size_t from = i + n;
      const std::size_t to = std::min(size, from + static_cast<std::size_t>(draft_tokens_));
      for (std::size_t j = from; j < to; ++j)
        draft.add(tokens[j], static_cast<int32_t>(j - from) - 1);
      return;
    }
  }
}

void NgramProposer::next_token_distribution(std::span<const int32_t> history,
                                            std::span<const int32_t> context,
                                            std::span<float> probs) const {
  std::fill(probs.begin(), probs.end(), 0.0f);
  for (auto n = static_cast<std::size_t>(ngram_n_); n >= static_cast<std::size_t>(ngram_min_);
       --n) {
    if (context.size() < n || history.size() < n + 1) continue;
    double total = 0;
    for (std::size_t i = 0; i + n < history.size(); ++i)
      if (matches_suffix(history, i, context, n)) {
        const auto next = static_cast<std::size_t>(history[i + n]);
        if (next < probs.size()) {
          probs[next] += 1.0f;
          total += 1;
        }
      }
    if (total == 0) continue;
    for (float& p : probs) p = static_cast<float>(p / total);
    return;
  }
}

Status NgramProposer::propose(DecodeContext&, SequenceState& lane, Draft& draft) {
  lookup(lane.tokens, draft);
  return ok_status();
}

Status NgramProposer::expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                             std::span<const int32_t> at, std::span<float> probs) {
  (void)context;
  const std::size_t vocab = at.empty() ? 0 : probs.size() / at.size();
  for (std::size_t k = 0; k < at.size(); ++k) {
    // The lane's tokens, then the path to the node.
    context_.assign(lane.tokens.begin(), lane.tokens.end());
    const std::size_t base = context_.size();
    for (int32_t n = at[k]; n >= 0; n = tree.parents[static_cast<std::size_t>(n)])
      context_.insert(context_.begin() + static_cast<std::ptrdiff_t>(base),
                      tree.tokens[static_cast<std::size_t>(n)]);
    next_token_distribution(lane.tokens, context_, probs.subspan(k * vocab, vocab));
  }
  return ok_status();
}

}  // namespace tessera
