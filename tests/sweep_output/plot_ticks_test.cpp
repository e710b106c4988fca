// Axis labels: PLplot would label a log axis only at powers of ten, leaving
// one within a decade bare, and mix "50000" with "10^5"; these tests pin what
// each kind of range gets, and one format per axis.
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

TEST(TickLabels, PlainWhileEveryValueIsShort) {
  EXPECT_THAT(tick_labels({1, 50, 10000}), ElementsAre("1", "50", "10000"));
  EXPECT_THAT(tick_labels({0.02, 0.001, 0.5}), ElementsAre("0.02", "0.001", "0.5"));
  EXPECT_THAT(tick_labels({0, 0.25, 0.5}, 2), ElementsAre("0.00", "0.25", "0.50"));
}

TEST(TickLabels, OneLargeOrTinyValuePutsTheWholeAxisInPowersOfTen) {
  // Not "50000", "10^5", "5×10^5" on one axis.
  EXPECT_THAT(tick_labels({5e4, 1e5, 5e5}),
              ElementsAre("5\u00D710#u4#d", "1\u00D710#u5#d", "5\u00D710#u5#d"));
  EXPECT_THAT(tick_labels({1e4, 1e5, 1e6}), ElementsAre("10#u4#d", "10#u5#d", "10#u6#d"));
  EXPECT_THAT(tick_labels({3e-4, 1e-3}), ElementsAre("3\u00D710#u-4#d", "1\u00D710#u-3#d"));
  EXPECT_THAT(tick_labels({0, 1.5e5, 3e5}),
              ElementsAre("0", "1.5\u00D710#u5#d", "3.0\u00D710#u5#d"));
}

TEST(LogAxisTicks, SeveralDecadesGetThePowersOfTen) {
  EXPECT_THAT(labels_for(0.8, 1.2e4), ElementsAre("1", "10", "100", "1000", "10000"));
  EXPECT_THAT(labels_for(0.8, 1.2e5),
              ElementsAre("10#u0#d", "10#u1#d", "10#u2#d", "10#u3#d", "10#u4#d", "10#u5#d"));
}

TEST(LogAxisTicks, ManyDecadesAreThinned) {
  const auto ticks = log_axis_ticks(0, 30);
  EXPECT_LE(ticks.size(), 10u);
  EXPECT_GE(ticks.size(), 5u);
  EXPECT_EQ(ticks.front().label, "10#u0#d");
}

TEST(LogAxisTicks, TwoDecadesAddTwoAndFiveTimes) {
  EXPECT_THAT(labels_for(0.9, 70), ElementsAre("1", "2", "5", "10", "20", "50"));
}

TEST(LogAxisTicks, LessThanADecadeGetsEvenlySpacedValues) {
  EXPECT_THAT(labels_for(2.9, 7.2), ElementsAre("3", "4", "5", "6", "7"));
  EXPECT_THAT(labels_for(7.5, 32), ElementsAre("10", "15", "20", "25", "30"));
  EXPECT_THAT(labels_for(0.285, 0.36),
              ElementsAre("0.29", "0.30", "0.31", "0.32", "0.33", "0.34", "0.35", "0.36"));
  EXPECT_THAT(labels_for(1.9e5, 6.1e5),
              ElementsAre("2\u00D710#u5#d", "3\u00D710#u5#d", "4\u00D710#u5#d", "5\u00D710#u5#d",
                          "6\u00D710#u5#d"));
}

TEST(LogAxisTicks, TwoAndFiveTimesMixedWithPowersShareOneFormat) {
  EXPECT_THAT(labels_for(4e3, 7e5),
              ElementsAre("5\u00D710#u3#d", "1\u00D710#u4#d", "2\u00D710#u4#d", "5\u00D710#u4#d",
                          "1\u00D710#u5#d", "2\u00D710#u5#d", "5\u00D710#u5#d"));
}

std::vector<std::string> linear_labels(double low, double high) {
  std::vector<std::string> labels;
  double previous = -1e300;
  for (const Tick& tick : linear_axis_ticks(low, high)) {
    EXPECT_GT(tick.position, previous) << tick.label;
    EXPECT_GE(tick.position, low - 1e-9) << tick.label;
    EXPECT_LE(tick.position, high + 1e-9) << tick.label;
    previous = tick.position;
    labels.push_back(tick.label);
  }
  return labels;
}

TEST(LinearAxisTicks, MultiplesOfANiceStepAllWithItsDecimals) {
  EXPECT_THAT(linear_labels(-0.4, 10.4), ElementsAre("0", "2", "4", "6", "8", "10"));
  EXPECT_THAT(linear_labels(0.18, 0.76), ElementsAre("0.2", "0.3", "0.4", "0.5", "0.6", "0.7"));
  EXPECT_THAT(linear_labels(0.28, 0.52), ElementsAre("0.30", "0.35", "0.40", "0.45", "0.50"));
  EXPECT_THAT(linear_labels(-30000, 690000),
              ElementsAre("0", "1\u00D710#u5#d", "2\u00D710#u5#d", "3\u00D710#u5#d",
                          "4\u00D710#u5#d", "5\u00D710#u5#d", "6\u00D710#u5#d"));
  const auto ticks = linear_axis_ticks(-1, 1);
  ASSERT_FALSE(ticks.empty());
  for (const Tick& tick : ticks) EXPECT_NE(tick.label, "-0");
}

}  // namespace
}  // namespace tessera::sweep
