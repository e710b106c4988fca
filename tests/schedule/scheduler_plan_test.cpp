// The scheduler policies' plans: which lanes decode, which feed a chunk.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/plugin/options.h"
#include "plugins/scheduler_continuous/continuous_scheduler.h"
#include "plugins/scheduler_single/single_scheduler.h"

namespace tessera {
namespace {

OptionValues continuous_options(int64_t max_batch_tokens, int64_t prefill_chunk) {
  OptionValues values;
  values.set("max_batch_tokens", max_batch_tokens);
  values.set("prefill_chunk", prefill_chunk);
  return values;
}

using Chunks = std::vector<std::pair<std::size_t, int64_t>>;

TEST(ContinuousPlan, DecodesGoFirstThenChunksInTheRowsLeft) {
  ContinuousScheduler scheduler(continuous_options(0, 16));
  // Lane 0: a history of 100 waiting; lanes 1, 2 ready (2 with a draft of 3).
  const std::vector<LaneView> lanes = {
      {.group = 1, .submitted = 0, .prefill_waiting = 100, .decode_rows = 1},
      {.group = 2, .submitted = 1, .prefill_waiting = 0, .decode_rows = 1},
      {.group = 3, .submitted = 2, .prefill_waiting = 0, .decode_rows = 4}};
  StepPlan plan;
  scheduler.plan(lanes, 32, plan);
  EXPECT_EQ(plan.decode, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(plan.prefill, (Chunks{{0, 16}}));  // the chunk limit
  plan.clear();
  scheduler.plan(lanes, 10, plan);  // 5 rows of decodes leave 5
  EXPECT_EQ(plan.prefill, (Chunks{{0, 5}}));
}

TEST(ContinuousPlan, OlderLanesComeFirstWithinTheBudget) {
  ContinuousScheduler scheduler(continuous_options(6, 64));
  const std::vector<LaneView> lanes = {
      {.group = 7, .submitted = 5, .prefill_waiting = 0, .decode_rows = 3},
      {.group = 8, .submitted = 2, .prefill_waiting = 0, .decode_rows = 3},
      {.group = 9, .submitted = 1, .prefill_waiting = 0, .decode_rows = 3},
      {.group = 4, .submitted = 0, .prefill_waiting = 9, .decode_rows = 1}};
  StepPlan plan;
  scheduler.plan(lanes, 128, plan);  // max_batch_tokens = 6 is the tighter bound
  EXPECT_EQ(plan.decode, (std::vector<std::size_t>{2, 1}));
  EXPECT_TRUE(plan.prefill.empty());
}

TEST(ContinuousPlan, ARequestsLanesDecodeTogetherOnceAllAreFed) {
  ContinuousScheduler scheduler(continuous_options(0, 4));
  const std::vector<LaneView> lanes = {
      {.group = 1, .submitted = 0, .prefill_waiting = 0, .decode_rows = 1},
      {.group = 1, .submitted = 1, .prefill_waiting = 6, .decode_rows = 1},
      {.group = 2, .submitted = 2, .prefill_waiting = 0, .decode_rows = 1}};
  StepPlan plan;
  scheduler.plan(lanes, 32, plan);
  EXPECT_EQ(plan.decode, (std::vector<std::size_t>{2}));
  EXPECT_EQ(plan.prefill, (Chunks{{1, 4}}));
}

// The oldest ready request runs even when it alone is over the budget (its
// drafts are cut to fit), and a lone history feeds at least one token.
TEST(ContinuousPlan, EveryPlanRunsSomething) {
  ContinuousScheduler scheduler(continuous_options(2, 64));
  StepPlan plan;
  const std::vector<LaneView> big = {
      {.group = 1, .submitted = 0, .prefill_waiting = 0, .decode_rows = 9}};
  scheduler.plan(big, 128, plan);
  EXPECT_EQ(plan.decode, (std::vector<std::size_t>{0}));
  plan.clear();
  const std::vector<LaneView> filling = {
      {.group = 1, .submitted = 0, .prefill_waiting = 50, .decode_rows = 1}};
  scheduler.plan(filling, 128, plan);
  EXPECT_EQ(plan.prefill, (Chunks{{0, 2}}));
}

TEST(SinglePlan, RunsTheOldestRequestsLanesOnly) {
  SingleScheduler scheduler{OptionValues()};
  const std::vector<LaneView> lanes = {
      {.group = 2, .submitted = 3, .prefill_waiting = 0, .decode_rows = 1},
      {.group = 1, .submitted = 1, .prefill_waiting = 40, .decode_rows = 1},
      {.group = 1, .submitted = 2, .prefill_waiting = 0, .decode_rows = 1}};
  StepPlan plan;
  scheduler.plan(lanes, 32, plan);
  EXPECT_EQ(plan.decode, (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(plan.prefill.empty());  // its prompts are fed inside the step
}

}  // namespace
}  // namespace tessera
