// The unmasking rules of block-diffusion decoding on hand-made logits: which
// masked positions each rule reveals, the quota, the last step, and that the
// mask token is never a candidate.
#include "plugins/diffusion_common/unmasking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera {
namespace {

constexpr int32_t kMask = 5;
const DiffusionModel kModel{4, kMask, 6};

// Logits for a block of 4 over a 6-token vocabulary: position i prefers
// token favourite[i] with probability about confidence[i].
std::vector<float> logits_for(const std::vector<int32_t>& favourite,
                              const std::vector<double>& confidence) {
  std::vector<float> logits(4 * 6, 0.0f);
  for (std::size_t i = 0; i < 4; ++i) {
    // softmax over 5 real tokens (the mask excluded): p = e^a / (e^a + 4).
    const double a = std::log(4.0 * confidence[i] / (1.0 - confidence[i]));
    logits[i * 6 + static_cast<std::size_t>(favourite[i])] = static_cast<float>(a);
  }
  return logits;
}

int revealed(const std::vector<int32_t>& tokens) {
  int n = 0;
  for (const int32_t t : tokens) n += t != kMask ? 1 : 0;
  return n;
}

TEST(Unmasking, QuotaSpreadsTheBlockOverTheSteps) {
  EXPECT_EQ(reveal_quota(4, 4, 0), 1);
  EXPECT_EQ(reveal_quota(4, 4, 3), 1);
  EXPECT_EQ(reveal_quota(4, 2, 0), 2);
  EXPECT_EQ(reveal_quota(4, 3, 0), 2);
  EXPECT_EQ(reveal_quota(4, 3, 1), 1);
  EXPECT_EQ(reveal_quota(4, 3, 2), 1);
  int sum = 0;
  for (int s = 0; s < 3; ++s) sum += reveal_quota(8, 3, s);
  EXPECT_EQ(sum, 8);
}

TEST(Unmasking, ThresholdRevealsEveryConfidentPositionAndAtLeastTheQuota) {
  BlockUnmasker unmasker;
  Sampler greedy;
  UnmaskSettings settings;  // threshold 0.9, 4 steps
  std::vector<int32_t> tokens = {kMask, kMask, kMask, kMask};
  const std::vector<float> logits = logits_for({0, 1, 2, 3}, {0.95, 0.5, 0.97, 0.6});
  EXPECT_EQ(unmasker.step(kModel, settings, 0, logits, tokens, greedy), 2);
  EXPECT_EQ(tokens, (std::vector<int32_t>{0, kMask, 2, kMask}));
  // Nothing above the threshold: the single most confident one.
  const std::vector<float> unsure = logits_for({0, 1, 2, 3}, {0.3, 0.5, 0.3, 0.6});
  EXPECT_EQ(unmasker.step(kModel, settings, 1, unsure, tokens, greedy), 1);
  EXPECT_EQ(tokens, (std::vector<int32_t>{0, kMask, 2, 3}));
  // The block's last step reveals the rest.
  EXPECT_EQ(unmasker.step(kModel, settings, 3, unsure, tokens, greedy), 1);
  EXPECT_EQ(tokens, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(unmasker.step(kModel, settings, 3, unsure, tokens, greedy), 0);
}

TEST(Unmasking, SequentialAndLowConfidenceTakeTheQuota) {
  BlockUnmasker unmasker;
  Sampler greedy;
  UnmaskSettings settings;
  settings.steps = 2;  // quota 2
  const std::vector<float> logits = logits_for({0, 1, 2, 3}, {0.4, 0.5, 0.97, 0.6});
  settings.rule = UnmaskRule::kSequential;
  std::vector<int32_t> tokens = {4, kMask, kMask, kMask};  // the first given
  EXPECT_EQ(unmasker.step(kModel, settings, 0, logits, tokens, greedy), 2);
  EXPECT_EQ(tokens, (std::vector<int32_t>{4, 1, 2, kMask}));
  settings.rule = UnmaskRule::kLowConfidence;
  tokens = {kMask, kMask, kMask, kMask};
  EXPECT_EQ(unmasker.step(kModel, settings, 0, logits, tokens, greedy), 2);
  EXPECT_EQ(tokens, (std::vector<int32_t>{kMask, kMask, 2, 3}));
}

TEST(Unmasking, EntropyBoundedRevealsTheLowEntropyPrefix) {
  BlockUnmasker unmasker;
  Sampler greedy;
  UnmaskSettings settings;
  settings.rule = UnmaskRule::kEntropyBounded;
  // Entropies ascend with falling confidence: 0.999 and 0.99 sum below 0.35,
  // 0.9 brings the sum past it, 0.3 stays masked.
  settings.entropy_bound = 0.35;
  std::vector<int32_t> tokens = {kMask, kMask, kMask, kMask};
  const std::vector<float> logits = logits_for({0, 1, 2, 3}, {0.3, 0.999, 0.9, 0.99});
  EXPECT_EQ(unmasker.step(kModel, settings, 0, logits, tokens, greedy), 3);
  EXPECT_EQ(tokens, (std::vector<int32_t>{kMask, 1, 2, 3}));
}

TEST(Unmasking, TheMaskTokenIsNeverACandidate) {
  BlockUnmasker unmasker;
  Sampler greedy;
  SamplingParams hot;
  hot.temperature = 1.5f;
  hot.seed = 11;
  Sampler sampling(hot);
  UnmaskSettings settings;
  std::vector<float> logits(4 * 6, 0.0f);
  for (std::size_t i = 0; i < 4; ++i) logits[i * 6 + kMask] = 30.0f;  // the model wants the mask
  for (Sampler* sampler : {&greedy, &sampling})
    for (int round = 0; round < 50; ++round) {
      std::vector<int32_t> tokens = {kMask, kMask, kMask, kMask};
      for (int step = 0; step < settings.steps && revealed(tokens) < 4; ++step)
        unmasker.step(kModel, settings, step, logits, tokens, *sampler);
      for (const int32_t t : tokens) {
        EXPECT_NE(t, kMask);
        EXPECT_GE(t, 0);
        EXPECT_LT(t, 6);
      }
    }
}

}  // namespace
}  // namespace tessera
