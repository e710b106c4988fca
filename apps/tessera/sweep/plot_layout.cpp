#include "apps/tessera/sweep/plot_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/util/strings.h"

namespace tessera::sweep {
namespace {

constexpr int kMinSidePx = 200;
constexpr int kMaxSidePx = 8000;

std::string plot_name(const LinePlot& plot) {
  return plot.title.empty() ? std::string("plot") : "plot '" + plot.title + "'";
}

// Extent of the values seen so far.
struct Extent {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
};

}  // namespace

AxisRange padded_range(double data_min, double data_max, bool log_axis) {
  const double magnitude = std::max(std::abs(data_min), std::abs(data_max));
  // Nearly equal values (a flat line) get a window around them: a span of a
  // few ulps would make PLplot label every tick with the same number.
  if (data_max - data_min <= 1e-12 * magnitude) {
    const double centre = data_min + (data_max - data_min) / 2;
    double half = log_axis ? 0.5 : (centre == 0 ? 1.0 : std::abs(centre) * 0.1);
    return {centre - half, centre + half};
  }
  const double pad = (data_max - data_min) * 0.05;
  AxisRange range{data_min - pad, data_max + pad};
  // Values near the largest double: padding would overflow to infinity.
  if (!std::isfinite(range.min) || !std::isfinite(range.max)) range = {data_min, data_max};
  return range;
}

Result<PlotLayout> lay_out_plot(const LinePlot& plot) {
  if (plot.width_px < kMinSidePx || plot.width_px > kMaxSidePx || plot.height_px < kMinSidePx ||
      plot.height_px > kMaxSidePx)
    return invalid_argument(plot_name(plot) + ": a size of " + std::to_string(plot.width_px) + "x" +
                            std::to_string(plot.height_px) + " pixels; each side must be " +
                            std::to_string(kMinSidePx) + " to " + std::to_string(kMaxSidePx));
  if (plot.series.empty()) return invalid_argument(plot_name(plot) + ": no series to draw");

  PlotLayout layout;
  Extent x_extent, y_extent;
  for (const PlotSeries& series : plot.series) {
    const std::string where = plot_name(plot) + ", series '" + series.name + "'";
    if (series.xs.size() != series.ys.size())
      return invalid_argument(where + ": " + std::to_string(series.xs.size()) + " x values and " +
                              std::to_string(series.ys.size()) + " y values");
    std::vector<PointRun>& runs = layout.runs.emplace_back();
    PointRun run;
    const auto end_run = [&] {
      if (!run.xs.empty()) runs.push_back(std::move(run));
      run = PointRun{};
    };
    for (std::size_t i = 0; i < series.xs.size(); ++i) {
      double x = series.xs[i];
      double y = series.ys[i];
      if (!std::isfinite(x) || !std::isfinite(y)) {
        end_run();
        continue;
      }
      const auto check_log = [&](double value, bool log_axis, const char* axis) {
        if (!log_axis || value > 0) return ok_status();
        return invalid_argument(where + ": point " + std::to_string(i) + " has " + axis + " = " +
                                shortest_decimal(value) + ", but the " + axis +
                                " axis is logarithmic and needs values > 0");
      };
      RETURN_IF_ERROR(check_log(x, plot.log_x, "x"));
      RETURN_IF_ERROR(check_log(y, plot.log_y, "y"));
      if (plot.log_x) x = std::log10(x);
      if (plot.log_y) y = std::log10(y);
      run.xs.push_back(x);
      run.ys.push_back(y);
      x_extent.add(x);
      y_extent.add(y);
    }
    end_run();
  }
  if (x_extent.min > x_extent.max)
    return invalid_argument(plot_name(plot) +
                            ": no series has a point with finite x and y to draw");
  layout.x = padded_range(x_extent.min, x_extent.max, plot.log_x);
  layout.y = padded_range(y_extent.min, y_extent.max, plot.log_y);
  return layout;
}

}  // namespace tessera::sweep
