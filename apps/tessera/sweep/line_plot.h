// Line plots of sweep results as PNG files: one line per configuration, with
// markers, a distinct colour and line style each, and a legend naming them.
// Drawn by PLplot's cairo driver on a white page with dark axes.
#pragma once

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
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // a log10 axis; every drawn value on it must be > 0
  bool log_y = false;
  std::vector<PlotSeries> series;
  int width_px = 1000;  // the PNG's size, 200 to 8000 pixels each way
  int height_px = 700;
};

// Writes `plot` to `png_path` (through a temporary renamed into place). Prints
// nothing. Safe to call repeatedly and from several threads (calls take turns:
// PLplot keeps global state). Errors: InvalidArgument for a plot that cannot
// be drawn (no series, xs and ys of different lengths, no finite point, a
// value <= 0 on a log axis, a size out of range), naming the series and point;
// FailedPrecondition if PLplot's PNG driver is missing; the errors of
// OutputFile::create (core/io/output_file.h) for the path.
Status write_line_plot(const LinePlot& plot, const std::string& png_path);

}  // namespace tessera::sweep
