#include "apps/tessera/sweep/sweep_plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace tessera::sweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Bytes drawn in KiB from this many, in MiB from this many.
constexpr double kBytesInKiB = 1e5;
constexpr double kBytesInMiB = 1e8;

// Every metric a sweep writes (sweep_tasks.h says how each is measured).
constexpr MetricInfo kMetrics[] = {
    {"bits_per_vector", "Codec size", "bits per head vector", "", "KV codec size"},
    {"nll", "Mean NLL", "nats/token", "perplexity", "Mean negative log-likelihood of the text"},
    {"ppl", "Perplexity", "", "perplexity", "Perplexity of the text"},
    {"kl", "KL divergence", "nats/token", "fidelity",
     "KL divergence from the full cache's next-token distributions"},
    {"top1", "Top-1 agreement", "fraction of positions", "fidelity",
     "Top-1 agreement with the full cache"},
    {"kl_past_window", "KL divergence", "nats/token", "fidelity",
     "KL divergence from the full cache past the window"},
    {"top1_past_window", "Top-1 agreement", "fraction of positions", "fidelity",
     "Top-1 agreement with the full cache past the window"},
    {"nll_past_window", "Mean NLL", "nats/token", "fidelity",
     "Mean negative log-likelihood past the window", "full_nll_past_window", "full cache"},
    {"full_nll_past_window", "Mean NLL", "nats/token", "fidelity",
     "Mean negative log-likelihood past the window, full cache"},
    {"k_rel_mse", "K relative MSE", "", "fidelity", "Codec error on K: |x - x'|\u00B2 / |x|\u00B2"},
    {"v_rel_mse", "V relative MSE", "", "fidelity", "Codec error on V: |x - x'|\u00B2 / |x|\u00B2"},
    {"recall", "Recall", "fraction of tokens", "recall", "Recall of a repeated passage",
     "recall_control", "control"},
    {"recall_control", "Recall control", "fraction of tokens", "recall",
     "Recall control: other tokens in place of the first copy"},
    {"recall_gain", "Recall gain", "fraction of tokens", "recall",
     "Recall gain: recall minus its control"},
    {"kv_bytes_live", "Live KV cache", "bytes", "memory", "Live KV cache after the text"},
    {"kv_bytes_most_live", "Most live KV cache", "bytes", "memory",
     "Most live KV cache while the text was fed"},
    {"kv_bytes_reserved", "Reserved KV cache", "bytes", "memory",
     "Reserved KV cache after the text"},
    {"kv_bytes_per_token", "Live KV cache", "bytes/token", "memory",
     "Live KV cache per token of the text"},
    {"prefill_tokens_per_s", "Prefill", "tokens/s", "speed", "Prefill throughput"},
    {"decode_tokens_per_s", "Decode", "tokens/s", "speed", "Decode throughput"},
    {"acceptance", "Acceptance", "accepted/drafted tokens", "speculative", "Draft acceptance"},
    {"accepted_per_step", "Accepted", "tokens/step", "speculative",
     "Accepted draft tokens per verification step"},
    {"tokens_per_step", "Emitted", "tokens/step", "speculative", "Tokens per verification step"},
    {"draft_forwards_per_step", "Draft forwards", "forwards/step", "speculative",
     "Draft forwards per verification step"},
    {"spec_tokens_per_s", "Decode", "tokens/s", "speculative", "Speculative decode throughput",
     "plain_tokens_per_s", "plain decoding"},
    {"plain_tokens_per_s", "Decode", "tokens/s", "speculative", "Plain decode throughput"},
    {"speedup", "Speed-up", "\u00D7", "speculative", "Speed-up over plain decoding", "",
     "plain decoding (1\u00D7)", 1.0},
    {"identical", "Identical", "1 = yes, 0 = no", "speculative",
     "Tokens identical to plain decoding"},
};

// Units of the config and sweep keys a grid axis is likely to be.
struct KeyUnit {
  std::string_view key;
  std::string_view unit;
};
constexpr KeyUnit kKeyUnits[] = {
    {"cache.max_tokens", "tokens"},
    {"cache.window", "tokens"},
    {"cache.sink", "tokens"},
    {"cache.max_memory_mib", "MiB"},
    {"cache.codec_skip_layers", "layers at each end"},
    {"cache.codec.group_size", "values per scale"},
    {"backend.threads", "threads"},
    {"decode.draft_tokens", "tokens per step"},
    {"decode.draft_layers", "layers"},
    {"decode.tree_tokens", "tokens per step"},
    {"decode.tree_depth", "tokens"},
    {"decode.block_size", "tokens"},
    {"decode.denoise_steps", "steps"},
    {"decode.prefill_chunk", "tokens"},
    {"scheduler.max_batch", "sequences"},
    {"sampling.temperature", ""},
    {"sweep.max_tokens", "tokens"},
    {"sweep.recall_length", "tokens"},
    {"sweep.recall_filler", "tokens between the copies"},
    {"sweep.recall_trials", "trials"},
    {"sweep.speed_tokens", "tokens"},
};

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A column with a plot of its own: not per layer, not the spread of another.
bool plotted(const std::string& metric, const std::vector<std::string>& metrics) {
  if (metric.find("_layer") != std::string::npos) return false;
  if (!ends_with(metric, kSpreadSuffix)) return true;
  const std::string of = metric.substr(0, metric.size() - kSpreadSuffix.size());
  return std::find(metrics.begin(), metrics.end(), of) == metrics.end();
}

std::optional<double> find_value(const Metrics& row, std::string_view name) {
  for (const auto& [metric, value] : row)
    if (metric == name) return value;
  return std::nullopt;
}

// Values all positive and spanning `ratio` or more read best on a log axis.
bool wide_positive_range(const std::vector<PlotSeries>& series,
                         std::vector<double> PlotSeries::*values, double ratio) {
  double low = INFINITY, high = 0;
  for (const PlotSeries& s : series)
    for (const double v : s.*values) {
      if (!std::isfinite(v)) continue;
      if (v <= 0) return false;
      low = std::min(low, v);
      high = std::max(high, v);
    }
  return high > 0 && high >= ratio * low;
}

// Whether an axis sets `key` (a key axis, or a section axis setting it).
bool axis_sets(const SweepSpec& spec, std::string_view key) {
  for (const Axis& axis : spec.axes)
    for (const AxisValue& value : axis.values)
      for (const auto& [set, text] : value.sets)
        if (set == key) return true;
  return false;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// On what the metric was measured: the model, the text and what the task
// read of it, the trials or runs it summarises. A setting a grid axis varies
// is left out (the x axis or the legend says it).
std::string subtitle(const SweepSpec& spec, const MetricInfo* info) {
  const SweepSettings& s = spec.settings;
  const auto varies = [&](std::string_view setting) {
    return axis_sets(spec, "sweep." + std::string(setting));
  };
  std::string model;
  if (!axis_sets(spec, "model.path") && spec.base.validate_core().ok())
    model = file_name(spec.base.get_string("model.path"));
  const std::string task = info ? std::string(info->task) : "";
  if (task.empty()) return model;
  std::string on = varies("text") ? "" : file_name(s.text);
  std::string what;
  if (task == "perplexity" || task == "fidelity" || task == "memory") {
    if (!varies("max_tokens") && !on.empty())
      on = "the first " + plural(s.max_tokens, "token", "tokens") + " of " + on;
  } else if (task == "recall") {
    what = (varies("recall_length") ? "" : std::to_string(s.recall_length) + "-token ") +
           (s.recall_source == "random" ? "random passages" : "passages");
    if (!varies("recall_filler"))
      what += " repeated after " + plural(s.recall_filler, "token", "tokens");
    what += "; mean \u00B1 s.d. " + (varies("recall_trials")
                                         ? std::string("over the trials")
                                         : "of " + plural(s.recall_trials, "trial", "trials"));
  } else if (task == "speed") {
    what = "64-token prompt, " +
           (varies("speed_tokens") ? std::string("greedy tokens")
                                   : plural(s.speed_tokens, "greedy token", "greedy tokens")) +
           " timed";
    if (!axis_sets(spec, "backend.threads") && spec.base.validate_core().ok())
      what += ", " + plural(spec.base.get_int("backend.threads"), "thread", "threads");
  } else if (task == "speculative") {
    what = (varies("speed_tokens") ? std::string("greedy tokens")
                                   : plural(s.speed_tokens, "greedy token", "greedy tokens")) +
           " after a 64-token prompt; median of 3 runs";
  }
  std::string out = model;
  if (!on.empty()) out += (out.empty() ? "" : " on ") + on;
  if (!what.empty()) out += (out.empty() ? "" : ": ") + what;
  return out;
}

}  // namespace

std::span<const MetricInfo> metric_table() {
  return kMetrics;
}

const MetricInfo* find_metric(std::string_view name) {
  for (const MetricInfo& info : kMetrics)
    if (info.name == name) return &info;
  return nullptr;
}

std::string metric_axis_label(std::string_view metric, std::optional<std::string_view> unit) {
  const MetricInfo* info = find_metric(metric);
  if (!info) return std::string(metric);
  std::string label(info->label);
  const std::string_view shown = unit.value_or(info->unit);
  if (!shown.empty()) label += " (" + std::string(shown) + ")";
  return label;
}

std::string key_axis_label(std::string_view key) {
  for (const KeyUnit& known : kKeyUnits)
    if (known.key == key && !known.unit.empty())
      return std::string(key) + " (" + std::string(known.unit) + ")";
  return std::string(key);
}

std::vector<SweepPlot> sweep_plots(const SweepSpec& spec, const std::vector<Metrics>& rows,
                                   const std::vector<std::string>& metrics) {
  std::vector<SweepPlot> plots;
  if (spec.axes.empty()) return plots;
  std::size_t x_axis = spec.axes.size() - 1;
  for (std::size_t a = spec.axes.size(); a-- > 0;)
    if (spec.axes[a].numeric()) {
      x_axis = a;
      break;
    }
  const Axis& xa = spec.axes[x_axis];
  std::string x_label = key_axis_label(xa.key);
  if (!xa.numeric()) {
    x_label += " (";
    for (std::size_t v = 0; v < xa.values.size(); ++v)
      x_label += (v ? ", " : "") + std::to_string(v + 1) + ": " + xa.values[v].label;
    x_label += ")";
  }

  // The series of `metric`: one per combination of the other axes, in grid
  // order, with its error bars where the rows have the spread.
  const auto series_of = [&](const std::string& metric, const std::string& unnamed) {
    std::vector<PlotSeries> series;
    std::vector<std::string> keys;  // the combination each series is
    const std::string spread = metric + std::string(kSpreadSuffix);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::optional<double> value = find_value(rows[r], metric);
      if (!value) continue;
      const std::vector<std::size_t> choice = spec.choice(static_cast<int64_t>(r));
      std::string name;
      for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (a != x_axis) name += (name.empty() ? "" : ", ") + spec.axes[a].values[choice[a]].label;
      const auto at = std::find(keys.begin(), keys.end(), name);
      const std::size_t index = static_cast<std::size_t>(at - keys.begin());
      if (at == keys.end()) {
        keys.push_back(name);
        series.push_back({name.empty() ? unnamed : name, {}, {}});
      }
      PlotSeries& s = series[index];
      const AxisValue& xv = xa.values[choice[x_axis]];
      s.xs.push_back(xv.number ? *xv.number : static_cast<double>(choice[x_axis] + 1));
      s.ys.push_back(*value);
      const std::optional<double> error = find_value(rows[r], spread);
      if (error) s.y_errors.resize(s.ys.size() - 1, kNaN);
      if (error || !s.y_errors.empty()) s.y_errors.push_back(error.value_or(kNaN));
    }
    return std::pair(series, keys);
  };

  for (const std::string& metric : metrics) {
    if (!plotted(metric, metrics)) continue;
    const MetricInfo* info = find_metric(metric);
    auto [series, keys] = series_of(metric, metric);
    if (series.empty()) continue;
    SweepPlot out{metric, {}};
    LinePlot& plot = out.plot;
    if (info && !info->reference.empty()) {
      const std::string reference_name(info->reference_name);
      auto [references, reference_keys] = series_of(std::string(info->reference), reference_name);
      for (std::size_t i = 0; i < series.size(); ++i) {
        plot.series.push_back(std::move(series[i]));
        const auto at = std::find(reference_keys.begin(), reference_keys.end(), keys[i]);
        if (at == reference_keys.end()) continue;
        PlotSeries reference =
            std::move(references[static_cast<std::size_t>(at - reference_keys.begin())]);
        if (!keys[i].empty()) reference.name = keys[i] + ": " + reference_name;
        reference.y_errors.clear();
        reference.reference_for = plot.series.size() - 1;
        plot.series.push_back(std::move(reference));
      }
      plot.references_legend = reference_name + " (dashed, same colour)";
    } else {
      plot.series = std::move(series);
    }
    if (info && info->reference_value)
      plot.reference_lines.push_back({*info->reference_value, std::string(info->reference_name)});
    plot.title = info ? std::string(info->title) : metric;
    plot.subtitle = subtitle(spec, info);
    plot.x_label = x_label;
    plot.y_label = metric_axis_label(metric);
    if (info && (info->unit == "bytes" || info->unit == "bytes/token")) {
      double most = 0;
      for (const PlotSeries& drawn : plot.series)
        for (const double y : drawn.ys)
          if (std::isfinite(y)) most = std::max(most, std::abs(y));
      if (most >= kBytesInKiB) {
        const bool mib = most >= kBytesInMiB;
        const double scale = mib ? 1.0 / (1 << 20) : 1.0 / (1 << 10);
        for (PlotSeries& drawn : plot.series) {
          for (double& y : drawn.ys) y *= scale;
          for (double& e : drawn.y_errors) e *= scale;
        }
        const std::string unit =
            std::string(mib ? "MiB" : "KiB") + (info->unit == "bytes" ? "" : "/token");
        plot.y_label = metric_axis_label(metric, unit);
      }
    }
    plot.log_x = wide_positive_range(plot.series, &PlotSeries::xs, 10);
    plot.log_y = wide_positive_range(plot.series, &PlotSeries::ys, 100);
    // A reference line at 0 or below cannot be drawn on a log axis.
    for (const ReferenceLine& line : plot.reference_lines)
      if (line.y <= 0) plot.log_y = false;
    plots.push_back(std::move(out));
  }
  return plots;
}

}  // namespace tessera::sweep
