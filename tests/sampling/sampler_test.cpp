#include "core/sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "core/sampling/rng.h"

namespace tessera {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> random_logits(std::size_t count, uint64_t seed, double scale = 4.0) {
  Rng rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>((rng.uniform() * 2.0 - 1.0) * scale);
  return v;
}

std::set<int32_t> support(const std::vector<float>& probs) {
  std::set<int32_t> s;
  for (std::size_t i = 0; i < probs.size(); ++i)
    if (probs[i] > 0) s.insert(static_cast<int32_t>(i));
  return s;
}

double sum(const std::vector<float>& probs) {
  return std::accumulate(probs.begin(), probs.end(), 0.0);
}

SamplingParams params(float temperature, int top_k = 0, float top_p = 1, uint64_t seed = 0) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

// ------------------------------------------------------------------- rng

TEST(Rng, IsDeterministicAndUniformInUnitInterval) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  double mean = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = a.uniform();
    EXPECT_EQ(x, b.uniform());
    differs |= x != c.uniform();
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
    mean += x / 10000;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(mean, 0.5, 0.02);
  a.reseed(7);
  Rng fresh(7);
  EXPECT_EQ(a.next_u64(), fresh.next_u64());
}

// ---------------------------------------------------------------- greedy

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
  Sampler sampler(params(0));
  EXPECT_TRUE(sampler.greedy());
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> logits = random_logits(50, seed);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sampler.sample(logits), best);
  }
  const std::vector<float> tied = {1, 3, kNegInf, 3, 2};
  EXPECT_EQ(sampler.sample(tied), 1);
  std::vector<float> probs;
  sampler.distribution(tied, probs);
  EXPECT_EQ(probs, (std::vector<float>{0, 1, 0, 0, 0}));
  EXPECT_EQ(argmax(std::vector<float>{kNegInf, kNegInf, -5}), 2);
  EXPECT_EQ(argmax(std::vector<float>{kNegInf}), -1);
  EXPECT_EQ(argmax(std::vector<float>{std::nanf(""), 1.0f, std::nanf("")}), 1);
}

TEST(Sampler, TopK1IsGreedyAtAnyTemperature) {
  Sampler sampler(params(1.5f, 1, 1.0f, 3));
  Sampler plain(params(0));
  EXPECT_TRUE(sampler.greedy());
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const std::vector<float> logits = random_logits(40, seed, 1.0);
    EXPECT_EQ(sampler.sample(logits), plain.sample(logits));
  }
  EXPECT_EQ(sampler.sample(std::vector<float>{0, 2, 2}), 1);
}

// ---------------------------------------------------------- reproducibility

std::vector<int32_t> draws(Sampler& sampler, int count) {
  const std::vector<float> logits = random_logits(64, 99, 1.0);
  std::vector<int32_t> out;
  for (int i = 0; i < count; ++i) out.push_back(sampler.sample(logits));
  return out;
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  Sampler a(params(1.0f, 0, 1.0f, 42)), b(params(1.0f, 0, 1.0f, 42)), c(params(1.0f, 0, 1.0f, 43));
  EXPECT_FALSE(a.greedy());
  const std::vector<int32_t> seq_a = draws(a, 200);
  EXPECT_EQ(seq_a, draws(b, 200));
  EXPECT_NE(seq_a, draws(c, 200));
  // reseed restarts the sequence.
  a.reseed(42);
  EXPECT_EQ(a.params().seed, 42u);
  EXPECT_EQ(draws(a, 200), seq_a);
  c.reseed(42);
  EXPECT_EQ(draws(c, 200), seq_a);
  // More than one token actually appears.
  EXPECT_GT(std::set<int32_t>(seq_a.begin(), seq_a.end()).size(), 10u);
}

// --------------------------------------------------------------- supports

TEST(Sampler, TopKKeepsExactlyTheKLargest) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.0f, 2.5f, 0.0f, 1.0f};
  Sampler sampler(params(0.8f, 3));
  std::vector<float> probs;
  sampler.distribution(logits, probs);
  EXPECT_EQ(support(probs), (std::set<int32_t>{1, 3, 4}));
  EXPECT_NEAR(sum(probs), 1.0, 1e-6);
  // Relative probabilities are those of softmax(logits / T).
  EXPECT_NEAR(probs[1] / probs[3], std::exp((3.0 - 2.0) / 0.8), 1e-4);
  EXPECT_NEAR(probs[4] / probs[3], std::exp((2.5 - 2.0) / 0.8), 1e-4);

  // Ties at the cut keep the lower id.
  Sampler two(params(1.0f, 2));
  two.distribution(std::vector<float>{1, 2, 1, 2, 2}, probs);
  EXPECT_EQ(support(probs), (std::set<int32_t>{1, 3}));
  // top_k larger than the vocabulary keeps everything finite.
  Sampler many(params(1.0f, 100));
  many.distribution(std::vector<float>{1, kNegInf, 2}, probs);
  EXPECT_EQ(support(probs), (std::set<int32_t>{0, 2}));
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities at T = 1: id 2: 0.5, id 0: 0.25, id 3: 0.15, id 1: 0.1.
  const std::vector<float> logits = {std::log(0.25f), std::log(0.1f), std::log(0.5f),
                                     std::log(0.15f)};
  std::vector<float> probs;
  const std::pair<float, std::set<int32_t>> cases[] = {
      {0.0f, {2}},       {0.3f, {2}},        {0.6f, {2, 0}},        {0.74f, {2, 0}},
      {0.8f, {2, 0, 3}}, {0.89f, {2, 0, 3}}, {0.95f, {2, 0, 3, 1}}, {1.0f, {2, 0, 3, 1}},
  };
  for (const auto& [top_p, want] : cases) {
    Sampler sampler(params(1.0f, 0, top_p));
    sampler.distribution(logits, probs);
    EXPECT_EQ(support(probs), want) << "top_p " << top_p;
    EXPECT_NEAR(sum(probs), 1.0, 1e-6);
  }
  Sampler sampler(params(1.0f, 0, 0.8f));
  sampler.distribution(logits, probs);
  EXPECT_NEAR(probs[2], 0.5 / 0.9, 1e-5);
  EXPECT_NEAR(probs[0], 0.25 / 0.9, 1e-5);
  EXPECT_NEAR(probs[3], 0.15 / 0.9, 1e-5);
}

// A large vocabulary against a nucleus computed here by a full sort.
TEST(Sampler, TopPMatchesAFullSortOnALargeVocabulary) {
  const std::vector<float> logits = random_logits(5000, 5, 6.0);
  for (float top_p : {0.1f, 0.5f, 0.9f, 0.99f}) {
    for (float temperature : {0.5f, 1.0f}) {
      std::vector<double> p(logits.size());
      double z = 0;
      const double max = *std::max_element(logits.begin(), logits.end());
      for (std::size_t i = 0; i < p.size(); ++i)
        z += p[i] = std::exp((logits[i] - max) / temperature);
      std::vector<int32_t> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
      std::set<int32_t> want;
      double cum = 0;
      for (int32_t id : order) {
        want.insert(id);
        cum += p[id] / z;
        if (cum >= top_p) break;
      }
      Sampler sampler(params(temperature, 0, top_p));
      std::vector<float> probs;
      sampler.distribution(logits, probs);
      EXPECT_EQ(support(probs), want) << "top_p " << top_p << " T " << temperature;
      EXPECT_NEAR(sum(probs), 1.0, 1e-5);
    }
  }
}

// top_p applies to the top_k distribution after renormalisation.
TEST(Sampler, TopKThenTopP) {
  // T = 1 probabilities 0.4, 0.3, 0.2, 0.1; top_k 2 renormalises to 4/7, 3/7.
  const std::vector<float> logits = {std::log(0.1f), std::log(0.4f), std::log(0.2f),
                                     std::log(0.3f)};
  std::vector<float> probs;
  Sampler small(params(1.0f, 2, 0.5f));
  small.distribution(logits, probs);
  EXPECT_EQ(support(probs), (std::set<int32_t>{1}));  // 4/7 >= 0.5
  Sampler large(params(1.0f, 2, 0.6f));
  large.distribution(logits, probs);
  EXPECT_EQ(support(probs), (std::set<int32_t>{1, 3}));  // 4/7 < 0.6 (of the full set: 0.4, 0.7)
  EXPECT_NEAR(probs[1], 4.0 / 7.0, 1e-6);
}

// ------------------------------------------------------------- infinities

TEST(Sampler, NegativeInfinityIsNeverSampled) {
  std::vector<float> logits = random_logits(20, 11, 1.0);
  for (int i : {0, 3, 7, 19}) logits[static_cast<std::size_t>(i)] = kNegInf;
  for (const SamplingParams& p :
       {params(2.0f, 0, 1.0f, 1), params(50.0f, 0, 0.999f, 2), params(10.0f, 18, 1.0f, 3)}) {
    Sampler sampler(p);
    std::vector<float> probs;
    sampler.distribution(logits, probs);
    for (int i : {0, 3, 7, 19}) EXPECT_EQ(probs[static_cast<std::size_t>(i)], 0.0f);
    for (int draw = 0; draw < 5000; ++draw) {
      const int32_t token = sampler.sample(logits);
      ASSERT_TRUE(token != 0 && token != 3 && token != 7 && token != 19) << token;
    }
  }
  // Only one finite logit: always that token.
  Sampler sampler(params(1.0f, 0, 1.0f, 4));
  const std::vector<float> one = {kNegInf, kNegInf, -100.0f, kNegInf};
  for (int draw = 0; draw < 100; ++draw) EXPECT_EQ(sampler.sample(one), 2);
}

TEST(Sampler, PositiveInfinityTakesAllTheMass) {
  const float inf = std::numeric_limits<float>::infinity();
  Sampler sampler(params(1.0f, 0, 1.0f, 6));
  std::vector<float> probs;
  sampler.distribution(std::vector<float>{1, inf, 3, inf}, probs);
  EXPECT_EQ(probs, (std::vector<float>{0, 0.5f, 0, 0.5f}));
}

TEST(SamplerDeathTest, AllNegativeInfinityIsABug) {
  Sampler sampler(params(1.0f));
  const std::vector<float> logits = {kNegInf, kNegInf};
  EXPECT_DEATH((void)sampler.sample(logits), "every logit");
}

// ---------------------------------------------------------- goodness of fit

// Pearson's chi-square statistic of observed draws against distribution().
// Critical values at p = 0.001 for 1..10 degrees of freedom.
constexpr double kChiSquare001[] = {0,      10.828, 13.816, 16.266, 18.467, 20.515,
                                    22.458, 24.322, 26.124, 27.877, 29.588};

void expect_fits(const SamplingParams& p, const std::vector<float>& logits, int draws) {
  Sampler sampler(p);
  std::vector<float> probs;
  sampler.distribution(logits, probs);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts[static_cast<std::size_t>(sampler.sample(logits))];
  double chi2 = 0;
  int cells = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the support";
      continue;
    }
    const double expected = draws * static_cast<double>(probs[i]);
    ASSERT_GE(expected, 5.0) << "test vocabulary too skewed for chi-square";
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++cells;
  }
  ASSERT_GE(cells, 2);
  ASSERT_LE(cells - 1, 10);
  EXPECT_LT(chi2, kChiSquare001[cells - 1]) << cells - 1 << " degrees of freedom";
}

TEST(Sampler, DrawsFollowTheDistributionAtTemperature07) {
  const std::vector<float> logits = {0.2f, -0.5f, 1.1f, 0.0f, 0.7f, -1.0f, 0.4f, 0.9f};
  expect_fits(params(0.7f, 0, 1.0f, 2024), logits, 20000);
}

TEST(Sampler, DrawsFollowTheTruncatedDistribution) {
  const std::vector<float> logits = {0.2f, -0.5f, 1.1f, 0.0f, 0.7f, -1.0f, 0.4f, 0.9f, kNegInf};
  expect_fits(params(0.7f, 6, 0.9f, 77), logits, 20000);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The residual draw of exact speculative acceptance: any non-negative weights,
// normalised by the sampler; zero weights are never drawn.
TEST(SamplerDraws, SampleFromFollowsTheWeights) {
  Sampler sampler(params(1.0f, 0, 1.0f, 5));
  const std::vector<float> weights = {0.0f, 2.0f, 0.0f, 6.0f, 2.0f};  // sum 10, unnormalised
  std::vector<int> counts(weights.size(), 0);
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<std::size_t>(sampler.sample_from(weights))];
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  for (const std::size_t id : {1u, 3u, 4u}) {
    const double expected = kDraws * weights[id] / 10.0;
    EXPECT_NEAR(counts[id], expected, 5 * std::sqrt(expected)) << "token " << id;
  }
}

TEST(SamplerDraws, UniformDrawsComeFromTheSamplersStream) {
  Sampler a(params(1.0f, 0, 1.0f, 9));
  Sampler b(params(1.0f, 0, 1.0f, 9));
  double sum = 0;
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform();
    EXPECT_EQ(u, b.uniform());  // the same seed, the same stream
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.05);
  // A draw taken from one sampler leaves another's stream alone.
  Sampler c(params(1.0f, 0, 1.0f, 9));
  Sampler d(params(1.0f, 0, 1.0f, 9));
  (void)c.uniform();
  const std::vector<float> logits = {0.1f, 0.4f, 0.2f};
  Sampler e(params(1.0f, 0, 1.0f, 9));
  EXPECT_EQ(d.sample(logits), e.sample(logits));
}

// -------------------------------------------------------------- penalties

SamplingParams penalised_params(float temperature, float presence, float frequency) {
  SamplingParams p = params(temperature);
  p.presence_penalty = presence;
  p.frequency_penalty = frequency;
  return p;
}

TEST(Penalties, LowerEveryEmittedTokenByPresenceOnceAndFrequencyPerEmission) {
  const std::vector<float> logits = random_logits(64, 5);
  Sampler penalised(penalised_params(0.9f, 0.5f, 0.25f));
  for (const int32_t token : {3, 3, 7, 3}) penalised.observe(token);
  std::vector<float> by_hand = logits;
  by_hand[3] -= 0.5f + 0.25f * 3;
  by_hand[7] -= 0.5f + 0.25f * 1;
  std::vector<float> got, want;
  penalised.distribution(logits, got);
  Sampler(params(0.9f)).distribution(by_hand, want);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "token " << i;
  const std::span<const float> row = penalised.penalised(logits);
  for (std::size_t i = 0; i < row.size(); ++i) EXPECT_EQ(row[i], by_hand[i]);
}

TEST(Penalties, GreedyTakesThePenalisedArgmax) {
  std::vector<float> logits(16, 0.0f);
  logits[4] = 2.0f;
  logits[9] = 1.5f;
  Sampler greedy(penalised_params(0, 0.0f, 1.0f));
  EXPECT_EQ(greedy.sample(logits), 4);
  greedy.observe(4);  // 2.0 - 1.0 < 1.5
  EXPECT_EQ(greedy.sample(logits), 9);
  std::vector<float> probs;
  greedy.distribution(logits, probs);
  EXPECT_EQ(probs[9], 1.0f);
}

TEST(Penalties, OffOrBeforeAnyEmissionTheRowIsUntouched) {
  const std::vector<float> logits = random_logits(32, 8);
  Sampler off(params(1.0f));
  off.observe(2);  // no penalty: nothing is counted
  EXPECT_EQ(off.penalised(logits).data(), logits.data());
  Sampler on(penalised_params(1.0f, 1.0f, 0.0f));
  EXPECT_EQ(on.penalised(logits).data(), logits.data());
  on.observe(500);  // past the row: counted, never applied to a shorter row
  EXPECT_EQ(on.penalised(logits)[31], logits[31]);
}

TEST(Penalties, ANegativePenaltyRaisesEmittedTokens) {
  std::vector<float> logits(8, 0.0f);
  logits[1] = 1.0f;
  Sampler favour(penalised_params(0, -2.0f, 0.0f));
  favour.observe(6);
  EXPECT_EQ(favour.sample(logits), 6);  // 0 + 2 > 1
}

}  // namespace
}  // namespace tessera
