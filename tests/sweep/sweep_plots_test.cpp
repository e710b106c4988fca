// What each sweep plot shows, before PLplot draws it: the metric's label and
// unit on the y axis, the grid axis with its unit on x, a title saying what
// was measured and a subtitle on what, error bars from the <metric>_std
// columns, the metric's reference (recall's control, speed-up 1) on the
// same plot, bytes in KiB, and no plots of their own for spreads and
// per-layer columns.
#include "apps/tessera/sweep/sweep_plots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>

namespace tessera::sweep {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pointwise;
using Values = std::vector<double>;

const std::string kText = TESSERA_SHARED_DIR "/data/tinystories_train_head.txt";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

SweepSpec spec_of(const std::string& axes, const std::string& sweep = "") {
  auto config = Config::parse(
      "[model]\npath = \"stories260K.gguf\"\n[backend]\nthreads = 2\n"
      "[sweep]\ntasks = [\"recall\", \"memory\"]\ntext = \"" +
          kText + "\"\nmax_tokens = 64\n" + sweep + "[sweep.axes]\n" + axes,
      "sweep.toml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  auto spec = read_sweep_spec(*config);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

// Window x codec, as sweeps/codec-window.toml: x is the window, one series
// per codec.
SweepSpec window_by_codec() {
  return spec_of(
      "\"cache.window\" = [8, 64, 512]\n"
      "\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"int8\" }]\n",
      "recall_length = 16\nrecall_filler = 32\nrecall_trials = 4\n");
}

// Metrics per point in grid order (window 8 identity, 8 int8, 64 identity ...).
std::vector<Metrics> window_by_codec_rows() {
  std::vector<Metrics> rows;
  for (int point = 0; point < 6; ++point) {
    const double p = point;
    rows.push_back({{"bits_per_vector", point % 2 ? 80.0 : 256.0},
                    {"recall", 0.4 + 0.01 * p},
                    {"recall_std", 0.05 + 0.001 * p},
                    {"recall_control", 0.2 + 0.01 * p},
                    {"recall_control_std", 0.04},
                    {"kv_bytes_live", 1000.0 * (point + 1) * 100},
                    {"k_rel_mse", 0.01},
                    {"k_rel_mse_layer0", 0.01}});
  }
  return rows;
}

const std::vector<std::string> kColumns = {
    "bits_per_vector",    "recall",        "recall_std", "recall_control",
    "recall_control_std", "kv_bytes_live", "k_rel_mse",  "k_rel_mse_layer0"};

const SweepPlot& plot_of(const std::vector<SweepPlot>& plots, const std::string& metric) {
  const auto at = std::find_if(plots.begin(), plots.end(),
                               [&](const SweepPlot& p) { return p.metric == metric; });
  EXPECT_NE(at, plots.end()) << "no plot of " << metric;
  return *at;
}

std::vector<std::string> names(const LinePlot& plot) {
  std::vector<std::string> out;
  for (const PlotSeries& s : plot.series) out.push_back(s.name);
  return out;
}

TEST(MetricTable, EveryMetricASweepWritesHasALabelAndEveryUnitIsSaid) {
  // The columns sweep_tasks.h describes, task by task.
  const std::vector<std::string> written = {"bits_per_vector",
                                            "nll",
                                            "ppl",
                                            "kl",
                                            "top1",
                                            "kl_past_window",
                                            "top1_past_window",
                                            "nll_past_window",
                                            "full_nll_past_window",
                                            "k_rel_mse",
                                            "v_rel_mse",
                                            "recall",
                                            "recall_control",
                                            "recall_gain",
                                            "kv_bytes_live",
                                            "kv_bytes_most_live",
                                            "kv_bytes_reserved",
                                            "kv_bytes_per_token",
                                            "prefill_tokens_per_s",
                                            "decode_tokens_per_s",
                                            "acceptance",
                                            "accepted_per_step",
                                            "tokens_per_step",
                                            "draft_forwards_per_step",
                                            "spec_tokens_per_s",
                                            "plain_tokens_per_s",
                                            "speedup",
                                            "identical"};
  std::set<std::string> in_table;
  for (const MetricInfo& info : metric_table()) {
    EXPECT_TRUE(in_table.insert(std::string(info.name)).second) << info.name << " twice";
    EXPECT_FALSE(info.label.empty()) << info.name;
    EXPECT_FALSE(info.title.empty()) << info.name;
    if (!info.reference.empty()) {
      EXPECT_NE(find_metric(info.reference), nullptr) << info.name;
      EXPECT_FALSE(info.reference_name.empty()) << info.name;
    }
  }
  for (const std::string& metric : written) EXPECT_TRUE(in_table.count(metric)) << metric;
  EXPECT_EQ(in_table.size(), written.size());

  EXPECT_EQ(metric_axis_label("kv_bytes_live"), "Live KV cache (bytes)");
  EXPECT_EQ(metric_axis_label("kv_bytes_per_token"), "Live KV cache (bytes/token)");
  EXPECT_EQ(metric_axis_label("nll"), "Mean NLL (nats/token)");
  EXPECT_EQ(metric_axis_label("decode_tokens_per_s"), "Decode (tokens/s)");
  EXPECT_EQ(metric_axis_label("ppl"), "Perplexity");  // a pure number
  EXPECT_EQ(metric_axis_label("k_rel_mse_layer3"), "k_rel_mse_layer3");
  EXPECT_EQ(metric_axis_label("kv_bytes_live", "KiB"), "Live KV cache (KiB)");
}

TEST(KeyAxisLabel, KnownKeysSayTheirUnit) {
  EXPECT_EQ(key_axis_label("cache.window"), "cache.window (tokens)");
  EXPECT_EQ(key_axis_label("cache.max_tokens"), "cache.max_tokens (tokens)");
  EXPECT_EQ(key_axis_label("decode.draft_tokens"), "decode.draft_tokens (tokens per step)");
  EXPECT_EQ(key_axis_label("backend.threads"), "backend.threads (threads)");
  EXPECT_EQ(key_axis_label("sweep.recall_filler"),
            "sweep.recall_filler (tokens between the copies)");
  EXPECT_EQ(key_axis_label("sampling.temperature"), "sampling.temperature");
  EXPECT_EQ(key_axis_label("cache.codec"), "cache.codec");
}

TEST(SweepPlots, RecallHasErrorBarsAndItsControlOnTheSamePlot) {
  const std::vector<SweepPlot> plots =
      sweep_plots(window_by_codec(), window_by_codec_rows(), kColumns);
  const LinePlot& recall = plot_of(plots, "recall").plot;
  EXPECT_EQ(recall.title, "Recall of a repeated passage");
  EXPECT_EQ(recall.subtitle,
            "stories260K.gguf on tinystories_train_head.txt: 16-token passages repeated after 32 "
            "tokens; mean \u00B1 s.d. of 4 trials");
  EXPECT_EQ(recall.x_label, "cache.window (tokens)");
  EXPECT_EQ(recall.y_label, "Recall (fraction of tokens)");
  EXPECT_TRUE(recall.log_x);  // 8 to 512
  EXPECT_FALSE(recall.log_y);
  EXPECT_THAT(names(recall), ElementsAre("identity", "identity: control", "int8", "int8: control"));
  EXPECT_EQ(recall.references_legend, "control (dashed, same colour)");
  const PlotSeries& identity = recall.series[0];
  EXPECT_FALSE(identity.reference_for.has_value());
  EXPECT_THAT(identity.xs, ElementsAre(8, 64, 512));
  EXPECT_THAT(identity.ys, Pointwise(DoubleEq(), Values{0.4, 0.42, 0.44}));
  EXPECT_THAT(identity.y_errors, Pointwise(DoubleEq(), Values{0.05, 0.052, 0.054}));
  const PlotSeries& control = recall.series[1];
  EXPECT_EQ(control.reference_for, 0u);
  EXPECT_THAT(control.ys, Pointwise(DoubleEq(), Values{0.2, 0.22, 0.24}));
  EXPECT_THAT(control.y_errors, IsEmpty());  // a line to compare against
  EXPECT_EQ(recall.series[3].reference_for, 2u);
  EXPECT_THAT(recall.series[2].y_errors, Pointwise(DoubleEq(), Values{0.051, 0.053, 0.055}));
}

TEST(SweepPlots, SpreadsAndPerLayerColumnsGetNoPlotOfTheirOwn) {
  const std::vector<SweepPlot> plots =
      sweep_plots(window_by_codec(), window_by_codec_rows(), kColumns);
  std::vector<std::string> metrics;
  for (const SweepPlot& plot : plots) metrics.push_back(plot.metric);
  EXPECT_THAT(metrics, ElementsAre("bits_per_vector", "recall", "recall_control", "kv_bytes_live",
                                   "k_rel_mse"));
  // The control's own plot has its own error bars and no reference.
  const LinePlot& control = plot_of(plots, "recall_control").plot;
  EXPECT_THAT(names(control), ElementsAre("identity", "int8"));
  EXPECT_THAT(control.series[0].y_errors, ElementsAre(0.04, 0.04, 0.04));
  // A metric without a spread has no error bars.
  EXPECT_THAT(plot_of(plots, "bits_per_vector").plot.series[0].y_errors, IsEmpty());
}

TEST(SweepPlots, TitlesSayWhatWasMeasuredOnWhat) {
  const std::vector<SweepPlot> plots =
      sweep_plots(window_by_codec(), window_by_codec_rows(), kColumns);
  const LinePlot& bits = plot_of(plots, "bits_per_vector").plot;
  EXPECT_EQ(bits.title, "KV codec size");
  EXPECT_EQ(bits.subtitle, "stories260K.gguf");
  EXPECT_EQ(bits.y_label, "Codec size (bits per head vector)");
  const LinePlot& memory = plot_of(plots, "kv_bytes_live").plot;
  EXPECT_EQ(memory.title, "Live KV cache after the text");
  EXPECT_EQ(memory.subtitle,
            "stories260K.gguf on the first 64 tokens of tinystories_train_head.txt");
}

TEST(SweepPlots, BytesOfTenToTheFiveAndMoreAreDrawnInKiB) {
  const std::vector<SweepPlot> plots =
      sweep_plots(window_by_codec(), window_by_codec_rows(), kColumns);
  const LinePlot& memory = plot_of(plots, "kv_bytes_live").plot;
  EXPECT_EQ(memory.y_label, "Live KV cache (KiB)");
  EXPECT_THAT(memory.series[0].ys,
              Pointwise(DoubleEq(), Values{100000 / 1024.0, 300000 / 1024.0, 500000 / 1024.0}));
}

TEST(SweepPlots, SpeedUpGetsALineAtOneAndSpeedItsBaseline) {
  const SweepSpec spec = spec_of("\"decode.draft_tokens\" = [1, 2, 4]\n");
  std::vector<Metrics> rows;
  for (int point = 0; point < 3; ++point)
    rows.push_back({{"speedup", 0.8 + 0.1 * point},
                    {"spec_tokens_per_s", 900.0 + point},
                    {"plain_tokens_per_s", 1000.0}});
  const std::vector<SweepPlot> plots =
      sweep_plots(spec, rows, {"speedup", "spec_tokens_per_s", "plain_tokens_per_s"});
  const LinePlot& speedup = plot_of(plots, "speedup").plot;
  EXPECT_EQ(speedup.y_label, "Speed-up (\u00D7)");
  EXPECT_EQ(speedup.x_label, "decode.draft_tokens (tokens per step)");
  ASSERT_EQ(speedup.reference_lines.size(), 1u);
  EXPECT_EQ(speedup.reference_lines[0].y, 1.0);
  EXPECT_EQ(speedup.reference_lines[0].name, "plain decoding (1\u00D7)");
  EXPECT_THAT(speedup.subtitle, HasSubstr("median of 3 runs"));
  // One axis: the series is named by the metric, its baseline by the reference.
  const LinePlot& speed = plot_of(plots, "spec_tokens_per_s").plot;
  EXPECT_THAT(names(speed), ElementsAre("spec_tokens_per_s", "plain decoding"));
  EXPECT_EQ(speed.series[1].reference_for, 0u);
}

TEST(SweepPlots, ASettingAnAxisVariesIsLeftOutOfTheSubtitle) {
  const SweepSpec spec = spec_of(
      "\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"int8\" }]\n"
      "\"sweep.recall_filler\" = [0, 16, 64]\n",
      "recall_length = 32\nrecall_trials = 1\n");
  std::vector<Metrics> rows(6, Metrics{{"recall_gain", 0.1}, {"recall_gain_std", kNaN}});
  const std::vector<SweepPlot> plots = sweep_plots(spec, rows, {"recall_gain", "recall_gain_std"});
  ASSERT_EQ(plots.size(), 1u);
  const LinePlot& gain = plots[0].plot;
  EXPECT_EQ(gain.x_label, "sweep.recall_filler (tokens between the copies)");
  EXPECT_EQ(gain.subtitle,
            "stories260K.gguf on tinystories_train_head.txt: 32-token passages; mean \u00B1 "
            "s.d. of 1 trial");
  EXPECT_THAT(gain.subtitle, Not(HasSubstr("repeated after")));
}

TEST(SweepPlots, ANonNumericLastAxisIsNumberedAndListed) {
  const SweepSpec spec =
      spec_of("\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"int8\" }]\n");
  const std::vector<Metrics> rows = {{{"perplexity_like", 3.0}}, {{"perplexity_like", 4.0}}};
  const std::vector<SweepPlot> plots = sweep_plots(spec, rows, {"perplexity_like"});
  ASSERT_EQ(plots.size(), 1u);
  const LinePlot& plot = plots[0].plot;
  EXPECT_EQ(plot.x_label, "cache.codec (1: identity, 2: int8)");
  EXPECT_EQ(plot.y_label, "perplexity_like");  // not in the table: its name
  EXPECT_EQ(plot.title, "perplexity_like");
  EXPECT_THAT(names(plot), ElementsAre("perplexity_like"));
  EXPECT_THAT(plot.series[0].xs, ElementsAre(1, 2));
}

}  // namespace
}  // namespace tessera::sweep
