// What a line plot draws before PLplot sees it: finite points only, runs
// broken where points were skipped, log10 on log axes, ranges with a margin,
// and clear refusals for what cannot be drawn.
#include "apps/tessera/sweep/plot_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace tessera::sweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace tessera::sweep
