// The n-gram proposer's lookup (prompt lookup decoding) and its next-token
// distribution for trees.
#include "plugins/proposer_ngram/ngram.h"

#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <vector>

namespace tessera {
namespace {

using ::testing::ElementsAre;

TEST(Ngram, ProposesWhatFollowedTheMostRecentMatch) {
  const NgramProposer ngram(/*draft_tokens=*/3, /*ngram_n=*/2, /*ngram_min=*/1);
  // "7 8" occurs at 1 (then 9 10 11) and at 5 (then 12 13): the later wins.
  const std::vector<int32_t> tokens = {1, 7, 8, 9, 10, 7, 8, 12, 13, 4, 7, 8};
  Draft draft;
  ngram.lookup(tokens, draft);
  EXPECT_THAT(draft.tokens, ElementsAre(12, 13, 4));
  EXPECT_THAT(draft.parents, ElementsAre(-1, 0, 1));
  EXPECT_TRUE(draft.probs.empty()) << "a lookup is a point mass";
}

TEST(Ngram, FallsBackToShorterSuffixesAndStopsAtTheEnd) {
  const NgramProposer ngram(4, 3, 1);
  // No earlier "5 6 2" nor "6 2"; "2" occurs at 1, followed by 3.
  Draft draft;
  ngram.lookup(std::vector<int32_t>{1, 2, 3, 5, 6, 2}, draft);
  EXPECT_THAT(draft.tokens, ElementsAre(3, 5, 6, 2));
  // Nothing matches: nothing proposed.
  Draft none;
  ngram.lookup(std::vector<int32_t>{1, 2, 3, 4}, none);
  EXPECT_TRUE(none.empty());
  // Only ngram_min and up: a lone repeated token is not enough at min 2.
  const NgramProposer strict(4, 3, 2);
  Draft strict_draft;
  strict.lookup(std::vector<int32_t>{1, 2, 3, 5, 6, 2}, strict_draft);
  EXPECT_TRUE(strict_draft.empty());
}

TEST(Ngram, NextTokenDistributionCountsContinuations) {
  const NgramProposer ngram(4, 2, 1);
  // After "a b" (1 2): 3 twice, 4 once.
  const std::vector<int32_t> history = {1, 2, 3, 1, 2, 4, 1, 2, 3, 9, 1, 2};
  std::vector<float> probs(10);
  ngram.next_token_distribution(history, history, probs);
  EXPECT_FLOAT_EQ(probs[3], 2.0f / 3);
  EXPECT_FLOAT_EQ(probs[4], 1.0f / 3);
  // A context never seen has no prediction: all zeros.
  const std::vector<int32_t> unseen = {7, 8};
  ngram.next_token_distribution(history, unseen, probs);
  for (const float p : probs) EXPECT_EQ(p, 0.0f);
}

}  // namespace
}  // namespace tessera
