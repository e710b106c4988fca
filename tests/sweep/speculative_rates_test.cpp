// The rates of the decode counters and the speed-ups they predict: Leviathan
// et al.'s expected tokens per step at its limits and a worked value, and
// the tree's measured form.
#include "apps/tessera/sweep/speculative_rates.h"

#include <gtest/gtest.h>

namespace tessera::sweep {
namespace {

TEST(SpeculativeRates, RatesOfTheCounters) {
  DecodeCounters c;
  c.verify_steps = 10;
  c.drafted = 40;
  c.accepted = 30;
  c.emitted = 40;
  c.draft_forwards = 50;
  c.propose_seconds = 0.02;
  c.verify_seconds = 0.01;
  const SpeculativeRates r = rates_of(c);
  EXPECT_DOUBLE_EQ(r.acceptance, 0.75);
  EXPECT_DOUBLE_EQ(r.drafted_per_step, 4);
  EXPECT_DOUBLE_EQ(r.accepted_per_step, 3);
  EXPECT_DOUBLE_EQ(r.tokens_per_step, 4);
  EXPECT_DOUBLE_EQ(r.draft_forwards_per_step, 5);
  EXPECT_DOUBLE_EQ(r.propose_seconds_per_step, 0.002);
  EXPECT_DOUBLE_EQ(r.verify_seconds_per_step, 0.001);
  EXPECT_DOUBLE_EQ(r.propose_seconds_per_drafted, 0.0005);
}

TEST(SpeculativeRates, NothingCountedGivesZeros) {
  const SpeculativeRates r = rates_of(DecodeCounters{});
  EXPECT_EQ(r.acceptance, 0);
  EXPECT_EQ(r.tokens_per_step, 0);
}

TEST(SpeculativeRates, ChainTokensPerStep) {
  EXPECT_DOUBLE_EQ(chain_tokens_per_step(0, 4), 1);  // nothing accepted: the target's own token
  EXPECT_DOUBLE_EQ(chain_tokens_per_step(1, 4), 5);  // everything accepted
  // 1 + a + a^2 + a^3 + a^4 at a = 0.5.
  EXPECT_DOUBLE_EQ(chain_tokens_per_step(0.5, 4), 1.9375);
  EXPECT_NEAR(chain_tokens_per_step(0.999999, 4), 5, 1e-4);  // continuous at 1
}

TEST(SpeculativeRates, PredictedSpeedups) {
  // Free drafts: the speed-up is the tokens per step.
  EXPECT_DOUBLE_EQ(chain_speedup(0.5, 4, 0), 1.9375);
  // Drafts costing a quarter of a target forward each: twice the time per step.
  EXPECT_DOUBLE_EQ(chain_speedup(0.5, 4, 0.25), 1.9375 / 2);
  EXPECT_DOUBLE_EQ(tree_speedup(3, 0.001, 0.001), 1.5);
  EXPECT_EQ(tree_speedup(3, 0.001, 0), 0);
}

}  // namespace
}  // namespace tessera::sweep
