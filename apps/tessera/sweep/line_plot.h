// Line plots of sweep results as PNG files: one line per configuration, with
// markers, a distinct colour and line style each, and a legend naming them;
// error bars where a series has them, reference lines (a control, a
// baseline) beside the series they belong to, and series that meet drawn a
// little apart so none hides another. Drawn by PLplot's cairo driver on a
// white page with dark axes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/status/status.h"

namespace tessera::sweep {

struct PlotSeries {
  std::string name;  // the legend's text
  // Points in order (the line joins them as given, it does not sort). A point
  // with a NaN or infinite coordinate is skipped, and the line breaks there.
  std::vector<double> xs;
  std::vector<double> ys;
  // Error bars: y - y_errors[i] to y + y_errors[i] (one standard deviation,
  // say). Empty for none; a NaN or negative entry gives its point none.
  std::vector<double> y_errors = {};
  // A reference for series `reference_for` (an index into the plot's series,
  // which must not be a reference itself): its control or baseline, drawn in
  // that series' colour, thinner, dashed and with open markers.
  std::optional<std::size_t> reference_for = {};
};

// A horizontal line across the plot at `y` (speed-up 1: no gain), dashed
// grey, named in the legend.
struct ReferenceLine {
  double y;
  std::string name;
};

struct LinePlot {
  std::string title;
  std::string subtitle;  // a smaller second line under the title: what was measured on what
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // a log10 axis; every drawn value on it must be > 0
  bool log_y = false;
  std::vector<PlotSeries> series;
  std::vector<ReferenceLine> reference_lines;
  // With two or more reference series, the legend names them all in this one
  // entry (a thin dashed line) instead of one entry each; empty: one each.
  std::string references_legend;
  int width_px = 1000;  // the PNG's size, 200 to 8000 pixels each way
  int height_px = 700;
};

// Writes `plot` to `png_path` (through a temporary renamed into place). Prints
// nothing. Safe to call repeatedly and from several threads (calls take turns:
// PLplot keeps global state). Errors: InvalidArgument for a plot that cannot
// be drawn (no series, xs and ys of different lengths, y_errors neither empty
// nor as long as ys, a reference_for out of range or naming a reference, no
// finite point, a value <= 0 on a log axis, a size out of range), naming the
// series and point; FailedPrecondition if PLplot's PNG driver is missing; the
// errors of OutputFile::create (core/io/output_file.h) for the path.
Status write_line_plot(const LinePlot& plot, const std::string& png_path);

}  // namespace tessera::sweep
