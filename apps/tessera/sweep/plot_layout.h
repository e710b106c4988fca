// What a line plot draws, in the coordinates PLplot draws it in: the finite
// points of each series (log10 of the values on a log axis), split into runs
// where points were skipped, with their error bars; series that meet moved a
// little apart along x; and axis ranges with a margin around all of it.
#pragma once

#include <string>
#include <vector>

#include "apps/tessera/sweep/line_plot.h"
#include "core/status/status.h"

namespace tessera::sweep {

// A stretch of consecutive drawable points, joined by one line. y_low and
// y_high are the ends of each point's error bar (NaN where it has none; on a
// log axis a bar reaching 0 or below ends at the axis's bottom).
struct PointRun {
  std::vector<double> xs;
  std::vector<double> ys;
  std::vector<double> y_low;
  std::vector<double> y_high;
};

struct AxisRange {
  double min = 0;
  double max = 1;
};

struct PlotLayout {
  std::vector<std::vector<PointRun>> runs;  // per series, in the plot's order
  // Per series: how far it was moved along x (drawn coordinates, already
  // added to its runs' xs), 0 unless it meets another series.
  std::vector<double> x_offsets;
  std::vector<double> reference_ys;  // the plot's reference lines, drawn coordinates
  AxisRange x;
  AxisRange y;
};

// InvalidArgument, naming the series and point, for what write_line_plot refuses.
Result<PlotLayout> lay_out_plot(const LinePlot& plot);

// The data's extent widened by 5% each side; a single value gets a window
// around it (half a decade on a log axis, 10% of the value or 1 otherwise).
AxisRange padded_range(double data_min, double data_max, bool log_axis);

// Series that meet (at some x they share, y within 1.5% of the y axis's span
// of each other) are spread along x around their place, in series order,
// 1.5% of the x span apart, closer where the group's spread would pass 8% of
// the span or 40% of the smallest gap between distinct x values (so a point
// never reaches its neighbour's). Per series, the offset in drawn
// coordinates; `runs` are not changed.
std::vector<double> dodge_offsets(const std::vector<std::vector<PointRun>>& runs, AxisRange x,
                                  AxisRange y);

}  // namespace tessera::sweep
