// Sampled speculative decoding keeps the target's distribution exactly: over
// many seeds, the first emitted token and the first two together follow the
// target's sampling distribution (temperature, top-k and top-p applied), for
// a chain (stories260K drafting for tok512-ar-1m) and for a tree over it.
#include <gtest/gtest.h>

#include "tests/decode/target_distribution_fit.h"

namespace tessera {
namespace {

constexpr int kSeeds = testing::kSanitized ? 150 : 1600;

TEST(SpeculativeSampling, ChainKeepsTheTargetDistribution) {
  testing::expect_fits(testing::fit_target_distribution(
      "proposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n", kSeeds));
}

TEST(SpeculativeSampling, TreeKeepsTheTargetDistribution) {
  testing::expect_fits(testing::fit_target_distribution(
      "proposer = \"tree\"\ntree_drafter = \"ar_draft\"\n"
      "draft_model = \"stories260K.gguf\"\ntree_top_k = 3\ntree_depth = 3\n",
      kSeeds));
}

}  // namespace
}  // namespace tessera
