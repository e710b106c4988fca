// The plots `tessera sweep` draws from its results, as LinePlot specs before
// PLplot sees them: one per metric, the y axis its label and unit (one table,
// metric -> label, unit), the x axis the last numeric grid axis with its
// unit, a title saying what was measured and a subtitle on what (model, text,
// tokens, trials), error bars where the metric is a mean over trials (its
// <metric>_std column), and the metric's reference (recall's control, plain
// decoding's speed) on the same plot.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "apps/tessera/sweep/line_plot.h"
#include "apps/tessera/sweep/sweep_spec.h"
#include "apps/tessera/sweep/sweep_tasks.h"

namespace tessera::sweep {

struct MetricInfo {
  std::string_view name;   // the CSV column
  std::string_view label;  // short, for the y axis: "Recall"
  std::string_view unit;   // "nats/token"; empty for a pure number
  std::string_view task;   // the task that measures it; empty: every point (bits_per_vector)
  std::string_view title;  // what the plot shows: "Recall of a repeated passage"
  // Another metric drawn on this one's plot as its reference, a series per
  // series named "<series>: <reference_name>" (recall's control).
  std::string_view reference = {};
  std::string_view reference_name = {};
  // A constant reference line, named reference_name (speed-up 1).
  std::optional<double> reference_value = {};
};

// Every metric a sweep writes but the per-layer ones (k_rel_mse_layer0 ...)
// and the spreads (<metric>_std).
std::span<const MetricInfo> metric_table();
const MetricInfo* find_metric(std::string_view name);  // null if not in the table

// The column of a metric's spread over trials: its sample standard deviation.
inline constexpr std::string_view kSpreadSuffix = "_std";

// "Live KV cache (bytes)", "Perplexity"; a metric not in the table (or a
// per-layer one) is its name. `unit` replaces the table's (a plot of bytes
// drawn in KiB).
std::string metric_axis_label(std::string_view metric,
                              std::optional<std::string_view> unit = std::nullopt);

// A grid axis's key with its unit where the key is known: "cache.window
// (tokens)", "backend.threads (threads)"; another key as it is.
std::string key_axis_label(std::string_view key);

struct SweepPlot {
  std::string metric;  // drawn to <metric>.png
  LinePlot plot;
};

// The plots of a sweep's results. rows[i] holds the metrics of point i
// (spec.choice(i)); `metrics` every metric met, in table order. One plot per
// metric but the per-layer ones, the spreads, and those no row has: x = the
// last numeric axis (or the last axis, its values numbered 1, 2 ... and
// listed in the x label), one series per combination of the other axes (the
// metric's name when there are none), in grid order, each followed by its
// reference series where the metric has one (without error bars: a line to
// compare against); an axis on a log scale when its values are positive and
// span a decade (x) or two (y). Bytes of 10^5 and more are drawn in KiB, of
// 10^8 and more in MiB (the CSV keeps bytes).
std::vector<SweepPlot> sweep_plots(const SweepSpec& spec, const std::vector<Metrics>& rows,
                                   const std::vector<std::string>& metrics);

}  // namespace tessera::sweep
