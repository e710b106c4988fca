// What a line plot draws, in the coordinates PLplot draws it in: the finite
// points of each series (log10 of the values on a log axis), split into runs
// where points were skipped, and axis ranges with a margin around the data.
#pragma once

#include <string>
#include <vector>

#include "apps/tessera/sweep/line_plot.h"
#include "core/status/status.h"

namespace tessera::sweep {

// A stretch of consecutive drawable points, joined by one line.
struct PointRun {
  std::vector<double> xs;
  std::vector<double> ys;
};

struct AxisRange {
  double min = 0;
  double max = 1;
};

struct PlotLayout {
  std::vector<std::vector<PointRun>> runs;  // per series, in the plot's order
  AxisRange x;
  AxisRange y;
};

// InvalidArgument, naming the series and point, for what write_line_plot refuses.
Result<PlotLayout> lay_out_plot(const LinePlot& plot);

// The data's extent widened by 5% each side; a single value gets a window
// around it (half a decade on a log axis, 10% of the value or 1 otherwise).
AxisRange padded_range(double data_min, double data_max, bool log_axis);

}  // namespace tessera::sweep
