// score_token is log_softmax of the raw row, with the most likely
// alternatives in order: checked against a direct computation.
#include "core/sampling/token_logprob.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/sampling/rng.h"

namespace tessera {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<double> log_softmax(const std::vector<float>& logits) {
  double max = kNegInf;
  for (const float l : logits) max = std::max(max, static_cast<double>(l));
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l) - max);
  std::vector<double> out;
  for (const float l : logits) out.push_back(static_cast<double>(l) - max - std::log(sum));
  return out;
}

TEST(ScoreToken, IsLogSoftmaxWithTheBestAlternativesInOrder) {
  Rng rng(11);
  std::vector<float> logits(300);
  for (float& l : logits) l = static_cast<float>(rng.uniform() * 12 - 6);
  const std::vector<double> expected = log_softmax(logits);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)];
  });
  for (const int top : {0, 1, 5, 20}) {
    const TokenLogprob record = score_token(logits, 42, top);
    EXPECT_EQ(record.token, 42);
    EXPECT_NEAR(record.logprob, expected[42], 1e-5);
    ASSERT_EQ(record.top_count, top);
    for (int j = 0; j < top; ++j) {
      const auto at = static_cast<std::size_t>(j);
      EXPECT_EQ(record.top_tokens[at], order[at]) << "alternative " << j;
      EXPECT_NEAR(record.top_logprobs[at],
                  expected[static_cast<std::size_t>(record.top_tokens[at])], 1e-5);
    }
  }
}

TEST(ScoreToken, TiesGoToTheLowerIdAndImpossibleTokensAreNeverAlternatives) {
  std::vector<float> logits = {1, 3, kNegInf, 3, std::nanf(""), 2};
  const TokenLogprob record = score_token(logits, 2, 20);
  EXPECT_EQ(record.logprob, kNegInf);
  ASSERT_EQ(record.top_count, 4);  // only the finite ones
  EXPECT_EQ(record.top_tokens[0], 1);
  EXPECT_EQ(record.top_tokens[1], 3);
  EXPECT_EQ(record.top_tokens[2], 5);
  EXPECT_EQ(record.top_tokens[3], 0);
  double mass = 0;
  for (int j = 0; j < record.top_count; ++j)
    mass += std::exp(static_cast<double>(record.top_logprobs[static_cast<std::size_t>(j)]));
  EXPECT_NEAR(mass, 1.0, 1e-6);
  EXPECT_EQ(score_token(logits, 1, 99).top_count, 4);  // clamped to what exists
  EXPECT_EQ(score_token(logits, 1, -3).top_count, 0);
}

TEST(ScoreToken, HugeLogitsStayFinite) {
  const std::vector<float> logits = {1e30f, 1e30f, 0};
  const TokenLogprob record = score_token(logits, 0, 2);
  EXPECT_NEAR(record.logprob, std::log(0.5), 1e-6);
  EXPECT_TRUE(std::isfinite(record.top_logprobs[1]));
}

}  // namespace
}  // namespace tessera
