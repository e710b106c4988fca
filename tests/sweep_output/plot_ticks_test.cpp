// Labels of log axes: PLplot would label only powers of ten, leaving an axis
// within a decade bare; these tests pin what each kind of range gets.
#include "apps/tessera/sweep/plot_ticks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace tessera::sweep {
namespace {

using ::testing::ElementsAre;
using Labels = std::vector<std::string>;

Labels labels_for(double low, double high) {
  const double log_min = std::log10(low), log_max = std::log10(high);
  Labels labels;
  double previous = -1e300;
  for (const Tick& tick : log_axis_ticks(log_min, log_max)) {
    EXPECT_GT(tick.position, previous) << tick.label;
    EXPECT_GE(tick.position, log_min - 1e-9) << tick.label;
    EXPECT_LE(tick.position, log_max + 1e-9) << tick.label;
    previous = tick.position;
    labels.push_back(tick.label);
  }
  return labels;
}

TEST(LogTickLabel, PlainWhileShortThenPowersOfTen) {
  EXPECT_EQ(log_tick_label(1, 0), "1");
  EXPECT_EQ(log_tick_label(5, 1), "50");
  EXPECT_EQ(log_tick_label(1, 4), "10000");
  EXPECT_EQ(log_tick_label(2, -2), "0.02");
  EXPECT_EQ(log_tick_label(1, -3), "0.001");
  EXPECT_EQ(log_tick_label(1, 5), "10#u5#d");
  EXPECT_EQ(log_tick_label(2, 6), "2\u00D710#u6#d");
  EXPECT_EQ(log_tick_label(3, -4), "3\u00D710#u-4#d");
}

TEST(LogAxisTicks, SeveralDecadesGetThePowersOfTen) {
  EXPECT_THAT(labels_for(0.8, 1.2e5), ElementsAre("1", "10", "100", "1000", "10000", "10#u5#d"));
}

TEST(LogAxisTicks, ManyDecadesAreThinned) {
  const auto ticks = log_axis_ticks(0, 30);
  EXPECT_LE(ticks.size(), 10u);
  EXPECT_GE(ticks.size(), 5u);
  EXPECT_EQ(ticks.front().label, "1");
}

TEST(LogAxisTicks, TwoDecadesAddTwoAndFiveTimes) {
  EXPECT_THAT(labels_for(0.9, 70), ElementsAre("1", "2", "5", "10", "20", "50"));
}

TEST(LogAxisTicks, LessThanADecadeGetsEvenlySpacedValues) {
  EXPECT_THAT(labels_for(2.9, 7.2), ElementsAre("3", "4", "5", "6", "7"));
  EXPECT_THAT(labels_for(7.5, 32), ElementsAre("10", "15", "20", "25", "30"));
  EXPECT_THAT(labels_for(0.285, 0.36),
              ElementsAre("0.29", "0.30", "0.31", "0.32", "0.33", "0.34", "0.35", "0.36"));
}

}  // namespace
}  // namespace tessera::sweep
