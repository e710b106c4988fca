// What a line plot draws before PLplot sees it: finite points only, runs
// broken where points were skipped, log10 on log axes, error bars, series
// that meet moved apart, ranges with a margin around all of it, and clear
// refusals for what cannot be drawn.
#include "apps/tessera/sweep/plot_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::sweep {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsNan;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

LinePlot plot_of(std::vector<PlotSeries> series) {
  LinePlot plot;
  plot.title = "t";
  plot.series = std::move(series);
  return plot;
}

TEST(PaddedRange, AddsFivePercentEachSide) {
  const AxisRange r = padded_range(0, 10, false);
  EXPECT_DOUBLE_EQ(r.min, -0.5);
  EXPECT_DOUBLE_EQ(r.max, 10.5);
}

TEST(PaddedRange, ASingleValueGetsAWindowAroundIt) {
  AxisRange r = padded_range(7.5, 7.5, false);
  EXPECT_DOUBLE_EQ(r.min, 6.75);
  EXPECT_DOUBLE_EQ(r.max, 8.25);
  r = padded_range(0, 0, false);
  EXPECT_DOUBLE_EQ(r.min, -1);
  EXPECT_DOUBLE_EQ(r.max, 1);
  r = padded_range(-20, -20, false);
  EXPECT_DOUBLE_EQ(r.min, -22);
  EXPECT_DOUBLE_EQ(r.max, -18);
  r = padded_range(2, 2, true);  // log10 of 100: half a decade each side
  EXPECT_DOUBLE_EQ(r.min, 1.5);
  EXPECT_DOUBLE_EQ(r.max, 2.5);
}

TEST(PaddedRange, NeverOverflowsToInfinity) {
  const double big = std::numeric_limits<double>::max();
  const AxisRange r = padded_range(-big, big, false);
  EXPECT_EQ(r.min, -big);
  EXPECT_EQ(r.max, big);
}

TEST(LayOutPlot, SkipsNonFinitePointsAndBreaksTheLineThere) {
  auto layout = lay_out_plot(plot_of({{"a", {1, 2, 3, 4, 5, 6}, {1, kNaN, 3, 4, kInf, 6}}}));
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  ASSERT_EQ(layout->runs.size(), 1u);
  const auto& runs = layout->runs[0];
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_THAT(runs[0].xs, ElementsAre(1));
  EXPECT_THAT(runs[1].xs, ElementsAre(3, 4));
  EXPECT_THAT(runs[1].ys, ElementsAre(3, 4));
  EXPECT_THAT(runs[2].xs, ElementsAre(6));
  EXPECT_DOUBLE_EQ(layout->y.min, 1 - 0.25);
  EXPECT_DOUBLE_EQ(layout->y.max, 6 + 0.25);
}

TEST(LayOutPlot, LogAxesDrawLog10OfTheValues) {
  LinePlot plot = plot_of({{"a", {1, 10, 1000}, {0.01, 1, 100}}});
  plot.log_x = true;
  plot.log_y = true;
  auto layout = lay_out_plot(plot);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_THAT(layout->runs[0][0].xs, ElementsAre(0, 1, 3));
  EXPECT_THAT(layout->runs[0][0].ys, ElementsAre(-2, 0, 2));
  EXPECT_DOUBLE_EQ(layout->x.min, -0.15);
  EXPECT_DOUBLE_EQ(layout->x.max, 3.15);
}

TEST(LayOutPlot, ASeriesWithNothingToDrawStillGetsItsPlace) {
  auto layout = lay_out_plot(plot_of({{"empty", {}, {}}, {"nan", {1}, {kNaN}}, {"b", {1}, {2}}}));
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  ASSERT_EQ(layout->runs.size(), 3u);
  EXPECT_TRUE(layout->runs[0].empty());
  EXPECT_TRUE(layout->runs[1].empty());
  EXPECT_EQ(layout->runs[2].size(), 1u);
}

TEST(LayOutPlot, ANonPositiveValueOnALogAxisIsAClearError) {
  LinePlot plot = plot_of({{"fine", {1, 2}, {1, 2}}, {"int4", {1, 2, 4}, {3, 0, 5}}});
  plot.log_y = true;
  auto layout = lay_out_plot(plot);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.status().message(),
            "plot 't', series 'int4': point 1 has y = 0, but the y axis is logarithmic and "
            "needs values > 0");

  plot = plot_of({{"neg", {-1, 2}, {1, 2}}});
  plot.log_x = true;
  layout = lay_out_plot(plot);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("point 0 has x = -1, but the x axis"));
}

TEST(LayOutPlot, ASkippedPointIsNotCheckedAgainstALogAxis) {
  LinePlot plot = plot_of({{"a", {1, kNaN, 3}, {1, 0, 3}}});
  plot.log_y = true;
  EXPECT_TRUE(lay_out_plot(plot).ok());
}

TEST(LayOutPlot, RefusesWhatCannotBeDrawn) {
  auto layout = lay_out_plot(plot_of({}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().message(), "plot 't': no series to draw");

  layout = lay_out_plot(plot_of({{"a", {1, 2, 3}, {1, 2}}}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("series 'a': 3 x values and 2 y values"));

  layout = lay_out_plot(plot_of({{"a", {kNaN}, {1}}, {"b", {}, {}}}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("no series has a point with finite x and y"));

  LinePlot tiny = plot_of({{"a", {1}, {1}}});
  tiny.width_px = 10;
  layout = lay_out_plot(tiny);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("a size of 10x700 pixels"));
}

TEST(LayOutPlot, ErrorBarsAreDrawnAndTheRangeHoldsThem) {
  LinePlot plot = plot_of({{"a", {1, 2, 3}, {1, 2, 3}, {0.5, kNaN, -1}}});
  auto layout = lay_out_plot(plot);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  const PointRun& run = layout->runs[0][0];
  EXPECT_THAT(run.y_low, ElementsAre(0.5, IsNan(), IsNan()));  // NaN or negative: no bar
  EXPECT_THAT(run.y_high, ElementsAre(1.5, IsNan(), IsNan()));
  EXPECT_DOUBLE_EQ(layout->y.min, 0.5 - 0.125);
  EXPECT_DOUBLE_EQ(layout->y.max, 3 + 0.125);

  // On a log axis: log10 of the ends; a bar reaching 0 ends at the bottom.
  plot = plot_of({{"a", {1, 2}, {10, 100}, {5, 100}}});
  plot.log_y = true;
  layout = lay_out_plot(plot);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_DOUBLE_EQ(layout->runs[0][0].y_high[1], std::log10(200.0));
  EXPECT_DOUBLE_EQ(layout->runs[0][0].y_low[0], std::log10(5.0));
  EXPECT_DOUBLE_EQ(layout->runs[0][0].y_low[1], layout->y.min);
}

TEST(LayOutPlot, RefusesErrorBarsAndReferencesThatDoNotFit) {
  auto layout = lay_out_plot(plot_of({{"a", {1, 2}, {1, 2}, {0.1}}}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("series 'a': 1 error bars for 2 points"));

  PlotSeries reference{"ref", {1}, {1}};
  reference.reference_for = 5;
  layout = lay_out_plot(plot_of({{"a", {1}, {1}}, reference}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("series 'ref': reference_for 5"));
  reference.reference_for = 1;  // itself: a reference
  EXPECT_FALSE(lay_out_plot(plot_of({{"a", {1}, {1}}, reference})).ok());

  LinePlot plot = plot_of({{"a", {1}, {1}}});
  plot.log_y = true;
  plot.reference_lines = {{0, "zero"}};
  layout = lay_out_plot(plot);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("reference line 'zero'"));
}

TEST(LayOutPlot, TheRangeHoldsTheReferenceLines) {
  LinePlot plot = plot_of({{"speed-up", {1, 2}, {1.5, 2.5}}});
  plot.reference_lines = {{1, "plain"}};
  auto layout = lay_out_plot(plot);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_THAT(layout->reference_ys, ElementsAre(1));
  EXPECT_LT(layout->y.min, 1);
}

TEST(LayOutPlot, SeriesThatMeetAreMovedApartAlongX) {
  // Three lines on one (bits per vector against the window for three stores
  // of one codec), and one apart from them.
  const std::vector<double> xs = {0, 10, 20};
  auto layout = lay_out_plot(plot_of({{"a", xs, {5, 5, 5}},
                                      {"far", xs, {50, 60, 70}},
                                      {"b", xs, {5, 5, 5}},
                                      {"c", xs, {5, 5, 5.2}}}));
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  const std::vector<double>& offsets = layout->x_offsets;
  ASSERT_EQ(offsets.size(), 4u);
  EXPECT_EQ(offsets[1], 0);
  EXPECT_LT(offsets[0], 0);
  EXPECT_DOUBLE_EQ(offsets[2], 0);  // the middle of three
  EXPECT_GT(offsets[3], 0);
  EXPECT_DOUBLE_EQ(offsets[3], -offsets[0]);
  // 1.5% of the x span apart, far less than the gap between the points.
  const double span = 22;  // 0 to 20, padded 5% each side
  EXPECT_NEAR(offsets[3] - offsets[2], 0.015 * span, 1e-9);
  EXPECT_THAT(layout->runs[0][0].xs, ElementsAre(DoubleEq(offsets[0]), DoubleEq(10 + offsets[0]),
                                                 DoubleEq(20 + offsets[0])));
  EXPECT_THAT(layout->runs[1][0].xs, ElementsAre(0, 10, 20));
  EXPECT_LT(layout->x.min, offsets[0]);  // the range holds the moved points
}

TEST(DodgeOffsets, ManySeriesStayWithinTheGapBetweenPoints) {
  std::vector<std::vector<PointRun>> runs;
  for (int s = 0; s < 9; ++s) runs.push_back({PointRun{{0, 1, 2}, {3, 3, 3}, {}, {}}});
  const std::vector<double> offsets = dodge_offsets(runs, {-0.1, 2.1}, {2, 4});
  const auto [low, high] = std::minmax_element(offsets.begin(), offsets.end());
  EXPECT_LE(*high - *low, 0.08 * 2.2 + 1e-9);  // 8% of the span at most
  EXPECT_LE(*high - *low, 0.4 * 1 + 1e-9);     // and 40% of the gap
  for (std::size_t s = 1; s < offsets.size(); ++s) EXPECT_GT(offsets[s], offsets[s - 1]);
}

}  // namespace
}  // namespace tessera::sweep
