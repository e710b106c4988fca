#include "apps/tessera/sweep/plot_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/util/strings.h"

namespace tessera::sweep {
namespace {

constexpr int kMinSidePx = 200;
constexpr int kMaxSidePx = 8000;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// dodge_offsets(): when series meet, and how far apart they are spread.
constexpr double kMeetFraction = 0.015;
constexpr double kMaxSpreadOfSpan = 0.08;
constexpr double kMaxSpreadOfGap = 0.4;
constexpr double kMaxStepOfSpan = 0.015;

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

std::vector<double> dodge_offsets(const std::vector<std::vector<PointRun>>& runs, AxisRange x,
                                  AxisRange y) {
  const std::size_t n = runs.size();
  std::vector<double> offsets(n, 0.0);
  const double x_span = x.max - x.min, y_span = y.max - y.min;
  if (n < 2 || !(x_span > 0) || !(y_span > 0)) return offsets;
  const double same_x = 1e-9 * x_span, near_y = kMeetFraction * y_span;
  std::vector<std::vector<std::pair<double, double>>> points(n);  // per series
  std::vector<double> all_xs;
  for (std::size_t s = 0; s < n; ++s)
    for (const PointRun& run : runs[s])
      for (std::size_t i = 0; i < run.xs.size(); ++i) {
        points[s].emplace_back(run.xs[i], run.ys[i]);
        all_xs.push_back(run.xs[i]);
      }
  // The groups: series joined when any of their points meet (union-find).
  std::vector<std::size_t> parent(n);
  for (std::size_t s = 0; s < n; ++s) parent[s] = s;
  const auto root = [&](std::size_t s) {
    while (parent[s] != s) s = parent[s] = parent[parent[s]];
    return s;
  };
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      const bool meet = std::any_of(points[a].begin(), points[a].end(), [&](const auto& p) {
        return std::any_of(points[b].begin(), points[b].end(), [&](const auto& q) {
          return std::abs(p.first - q.first) <= same_x && std::abs(p.second - q.second) <= near_y;
        });
      });
      if (meet) parent[root(b)] = root(a);
    }
  std::sort(all_xs.begin(), all_xs.end());
  double smallest_gap = x_span;
  for (std::size_t i = 1; i < all_xs.size(); ++i)
    if (all_xs[i] - all_xs[i - 1] > same_x)
      smallest_gap = std::min(smallest_gap, all_xs[i] - all_xs[i - 1]);
  const double spread = std::min(kMaxSpreadOfSpan * x_span, kMaxSpreadOfGap * smallest_gap);
  std::vector<std::vector<std::size_t>> groups(n);
  for (std::size_t s = 0; s < n; ++s) groups[root(s)].push_back(s);
  for (const std::vector<std::size_t>& group : groups) {
    if (group.size() < 2) continue;
    const double step =
        std::min(kMaxStepOfSpan * x_span, spread / static_cast<double>(group.size() - 1));
    const double middle = static_cast<double>(group.size() - 1) / 2;
    for (std::size_t j = 0; j < group.size(); ++j)
      offsets[group[j]] = (static_cast<double>(j) - middle) * step;
  }
  return offsets;
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
  for (std::size_t s = 0; s < plot.series.size(); ++s) {
    const PlotSeries& series = plot.series[s];
    const std::string where = plot_name(plot) + ", series '" + series.name + "'";
    if (series.xs.size() != series.ys.size())
      return invalid_argument(where + ": " + std::to_string(series.xs.size()) + " x values and " +
                              std::to_string(series.ys.size()) + " y values");
    if (!series.y_errors.empty() && series.y_errors.size() != series.ys.size())
      return invalid_argument(where + ": " + std::to_string(series.y_errors.size()) +
                              " error bars for " + std::to_string(series.ys.size()) + " points");
    if (series.reference_for) {
      const std::size_t of = *series.reference_for;
      if (of >= plot.series.size() || plot.series[of].reference_for)
        return invalid_argument(where + ": reference_for " + std::to_string(of) +
                                " names no plain series (the plot has " +
                                std::to_string(plot.series.size()) + ")");
    }
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
      double low = kNaN, high = kNaN;
      const double error = series.y_errors.empty() ? kNaN : series.y_errors[i];
      if (std::isfinite(error) && error >= 0) {
        low = y - error;
        high = y + error;
      }
      if (plot.log_x) x = std::log10(x);
      if (plot.log_y) {
        y = std::log10(y);
        high = std::log10(high);  // NaN stays NaN
        low = low > 0 ? std::log10(low) : (std::isnan(low) ? kNaN : -kInf);
      }
      run.xs.push_back(x);
      run.ys.push_back(y);
      run.y_low.push_back(low);
      run.y_high.push_back(high);
      x_extent.add(x);
      y_extent.add(y);
      if (std::isfinite(low)) y_extent.add(low);
      if (std::isfinite(high)) y_extent.add(high);
    }
    end_run();
  }
  if (x_extent.min > x_extent.max)
    return invalid_argument(plot_name(plot) +
                            ": no series has a point with finite x and y to draw");
  for (const ReferenceLine& line : plot.reference_lines) {
    if (!std::isfinite(line.y) || (plot.log_y && line.y <= 0))
      return invalid_argument(plot_name(plot) + ", reference line '" + line.name +
                              "': y = " + shortest_decimal(line.y) + " cannot be drawn");
    const double y = plot.log_y ? std::log10(line.y) : line.y;
    layout.reference_ys.push_back(y);
    y_extent.add(y);
  }
  layout.y = padded_range(y_extent.min, y_extent.max, plot.log_y);
  // Bars reaching 0 on a log axis end at the bottom of the range.
  for (auto& runs : layout.runs)
    for (PointRun& run : runs)
      for (double& low : run.y_low)
        if (low == -kInf) low = layout.y.min;

  layout.x_offsets =
      dodge_offsets(layout.runs, padded_range(x_extent.min, x_extent.max, plot.log_x), layout.y);
  Extent dodged;
  for (std::size_t s = 0; s < layout.runs.size(); ++s)
    for (PointRun& run : layout.runs[s])
      for (double& x : run.xs) {
        x += layout.x_offsets[s];
        dodged.add(x);
      }
  layout.x = padded_range(dodged.min, dodged.max, plot.log_x);
  return layout;
}

}  // namespace tessera::sweep
