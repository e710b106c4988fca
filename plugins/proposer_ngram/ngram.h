// The `ngram` proposer (prompt lookup): find the last decode.ngram_n tokens
// earlier in the lane's tokens (the most recent match; shorter n-grams down
// to decode.ngram_min when none matches) and propose what followed them, up
// to decode.draft_tokens. No model: it pays off on text that repeats itself
// (code, quotes, extraction). For a tree, its next-token distribution after
// a context is the frequency of each token after the longest matching suffix.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/decode/proposer.h"
#include "core/plugin/options.h"

namespace tessera {

class NgramProposer final : public Proposer {
 public:
  explicit NgramProposer(const OptionValues& options);
  NgramProposer(int draft_tokens, int ngram_n, int ngram_min);

  Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) override;
  bool can_expand() const override { return true; }
  Status expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                std::span<const int32_t> at, std::span<float> probs) override;

  // The lookup itself: the draft for `tokens` (exposed for tests).
  void lookup(std::span<const int32_t> tokens, Draft& draft) const;
  // Counts of the token after each earlier occurrence of the longest suffix
  // of `context` (n from ngram_n down to ngram_min) found in `history`, as a
  // distribution in `probs` (all zeros when no suffix occurs).
  void next_token_distribution(std::span<const int32_t> history, std::span<const int32_t> context,
                               std::span<float> probs) const;

 private:
  int draft_tokens_;
  int ngram_n_;
  int ngram_min_;
  std::vector<int32_t> context_;  // lane tokens + a tree path, reused
};

}  // namespace tessera
