// tessera sweep: runs a grid of configurations over the same text and writes
// one CSV row per grid point and one PNG plot per metric.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "apps/tessera/cli_common.h"
#include "apps/tessera/progress.h"
#include "apps/tessera/sweep/csv_table.h"
#include "apps/tessera/sweep/line_plot.h"
#include "apps/tessera/sweep/plugin_options.h"
#include "apps/tessera/sweep/sweep_plots.h"
#include "apps/tessera/sweep/sweep_spec.h"
#include "apps/tessera/sweep/sweep_tasks.h"
#include "core/config/config_schema.h"
#include "core/io/output_file.h"
#include "core/io/text_file.h"
#include "core/plugin/plugin_kinds.h"
#include "core/util/strings.h"

namespace tessera::cli {
namespace {

using sweep::Metrics;

constexpr uint64_t kMaxTextBytes = 64ull << 20;

// Why `key` does nothing at this point ("" when it applies): it is neither a
// core key nor an option a plugin of the point reads in its section (the
// chosen ones and those they name, as a tree its drafter).
std::string inapplicable(const Config& config, const PluginRegistry& registry,
                         const std::string& key) {
  const auto dot = key.rfind('.');
  const std::string section = key.substr(0, dot);
  const std::string name = key.substr(dot + 1);
  if (find_core_key(section, name)) return "";
  auto read = sweep::options_read(config, registry, section);
  if (!read.ok()) return "";  // the engine will say so
  if (std::find(read->begin(), read->end(), name) != read->end()) return "";
  std::string owners;
  for (const PluginKind& kind : kPluginKinds) {
    if (kind.section != section) continue;
    owners += (owners.empty() ? "" : " or ") + std::string(kind.name) + " plugin '" +
              config.get_string(kind.name_key) + "'";
  }
  if (owners.empty()) return "";
  return key + " is not an option of " + owners;
}

// A point whose axes pick a plugin keeps, of the base config's options in
// that plugin's section, those its plugins read: the base may hold the
// options of every plugin the axis picks.
Result<Config> without_unpicked_options(Config config, const PluginRegistry& registry,
                                        const sweep::PointSetup& setup) {
  for (const PluginKind& kind : kPluginKinds) {
    const bool picked = std::any_of(setup.sets.begin(), setup.sets.end(),
                                    [&](const auto& set) { return set.first == kind.name_key; });
    if (!picked) continue;
    ASSIGN_OR_RETURN(config, sweep::without_other_plugins_options(config, registry, kind.section));
  }
  return config;
}

struct Row {
  std::vector<std::string> labels;  // per axis
  std::string status;
  Metrics metrics;
};

// The speculative task against the point's config without its proposer.
Status measure_speculative(Engine& engine, const Config& config, const PluginRegistry& registry,
                           std::span<const int32_t> tokens, const sweep::SweepSettings& s,
                           sweep::Metrics& metrics) {
  ASSIGN_OR_RETURN(const Config plain_config, sweep::speculative_baseline_config(config, registry));
  ASSIGN_OR_RETURN(auto plain, Engine::create(plain_config, registry));
  return sweep::measure_speculative(engine, *plain, tokens, s.speed_tokens, metrics);
}

Status run_point(const sweep::SweepSpec& spec, const std::vector<std::size_t>& choice,
                 const PluginRegistry& registry, const std::string& text, Row& row) {
  ASSIGN_OR_RETURN(const sweep::PointSetup setup, sweep::point_setup(spec, choice));
  row.labels = setup.labels;
  Config config = spec.base;
  for (const auto& [key, value] : setup.sets) {
    // An axis value is the sweep file's: a file it names is relative to it.
    RETURN_IF_ERROR(config.apply_override(key + "=" + value, Config::SetFrom::kConfigFile));
  }
  RETURN_IF_ERROR(config.validate_core());
  for (const auto& [key, value] : setup.sets) {
    if (std::string why = inapplicable(config, registry, key); !why.empty()) {
      row.status = "skipped: " + why;
      return ok_status();
    }
  }
  ASSIGN_OR_RETURN(config, without_unpicked_options(std::move(config), registry, setup));
  ASSIGN_OR_RETURN(auto engine, Engine::create(config, registry));
  const sweep::SweepSettings& s = setup.settings;
  ASSIGN_OR_RETURN(const std::vector<int32_t> all_tokens, engine->tokenizer().encode(text, true));
  std::span<const int32_t> tokens = all_tokens;
  if (static_cast<int64_t>(tokens.size()) > s.max_tokens + 1)
    tokens = tokens.first(static_cast<std::size_t>(s.max_tokens) + 1);
  if (tokens.size() < 2) return invalid_argument(s.text + " gives fewer than two tokens");
  std::optional<RestorationSettings> restoration;
  if (engine->description().verifier == "restored") {
    ASSIGN_OR_RETURN(restoration, restoration_settings(config, registry));
  }
  const RestorationSettings* restored = restoration ? &*restoration : nullptr;
  row.metrics.emplace_back("bits_per_vector", engine->codec_bits_per_head_vector());
  std::string notes;
  const auto task_done = [&](const std::string& task, const Status& status) {
    if (!status.ok()) notes += (notes.empty() ? "" : "; ") + task + ": " + status.message();
  };
  for (const std::string& task : s.tasks) {
    if (task == "perplexity") {
      task_done(task, sweep::measure_perplexity(*engine, tokens, row.metrics, restored));
    } else if (task == "fidelity") {
      auto reference_config = sweep::reference_config(config, static_cast<int64_t>(tokens.size()));
      if (!reference_config.ok()) {
        task_done(task, reference_config.status());
        continue;
      }
      auto reference = Engine::create(*reference_config, registry);
      if (!reference.ok()) {
        task_done(task, reference.status());
        continue;
      }
      task_done(task, sweep::measure_fidelity(*engine, **reference, tokens, row.metrics, restored));
    } else if (task == "recall") {
      task_done(task, sweep::measure_recall(*engine, all_tokens, s, row.metrics, restored));
    } else if (task == "memory") {
      task_done(task, sweep::measure_memory(*engine, tokens, row.metrics));
    } else if (task == "speed") {
      task_done(task, sweep::measure_speed(*engine, tokens, s.speed_tokens, row.metrics));
    } else if (task == "speculative") {
      task_done(task, measure_speculative(*engine, config, registry, tokens, s, row.metrics));
    }
  }
  row.status = notes.empty() ? "ok" : "partly: " + notes;
  return ok_status();
}

// One PNG per metric (sweep_plots.h says what each shows).
Status write_plots(const sweep::SweepSpec& spec, const std::vector<Row>& rows,
                   const std::vector<std::string>& metrics, const std::filesystem::path& out,
                   std::vector<std::string>& written) {
  std::vector<Metrics> row_metrics;
  for (const Row& row : rows) row_metrics.push_back(row.metrics);
  for (const sweep::SweepPlot& plot : sweep::sweep_plots(spec, row_metrics, metrics)) {
    const std::string path = (out / (plot.metric + ".png")).string();
    RETURN_IF_ERROR(sweep::write_line_plot(plot.plot, path));
    written.push_back(path);
  }
  return ok_status();
}

}  // namespace

int run_sweep(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "sweep file: a config plus [sweep]")(
      "out,o", po::value<std::string>(),
      "directory for results.csv and the plots "
      "(default: sweep-<sweep file name>)")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a key of the sweep file's config for every point, a [sweep] key "
      "(sweep.max_tokens=128) or an axis's values (sweep.axes.cache.window=64,128) "
      "(repeatable)");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {},
                       "usage: tessera sweep --config SWEEP.toml [--out DIR]",
                       R"(examples:
  tessera sweep --config sweeps/codec-window.toml --out /tmp/codec-window
  tessera sweep --config sweeps/codec-window.toml --set sweep.max_tokens=128 --out /tmp/codec-window-128
  tessera sweep --config sweeps/speculative.toml --out /tmp/speculative

A sweep file is a config plus:
  [sweep]
  tasks = ["perplexity", "fidelity", "recall", "memory", "speed", "speculative"]
  text = "tinystories_train_head.txt"   # looked up like models; ../shared/data too
  max_tokens = 512                      # tokens of the text each task reads
  [sweep.axes]
  "cache.window" = [16, 64]             # any key: one value per point
  "cache.codec" = [{ plugin = "identity" }, { plugin = "int8" }]   # a section: settings per point

A file the sweep file names (model.path, text, decode.projection_file, in the
base config or an axis) is looked for first beside the sweep file, then in
TESSERA_MODEL_PATH, models/ and ../shared/models/ (a text also in data/ and
../shared/data/) next to the repository root; one a --set names, first in the
current directory.

Every combination of the axes is one point (the last axis varies fastest); a
point where a key does not apply (cache.window with the static store) is
skipped and said so. Where an axis picks a plugin ("decode.proposer" =
["ngram", "ar_draft"]), the base config may hold the options of every plugin
it picks: each point keeps those its plugins read. Tasks: perplexity (nll, ppl); fidelity (KL divergence and
top-1 agreement of every position's next-token distribution against the full,
uncompressed cache, and K/V relative MSE per layer); recall (recall_length
tokens to remember, recall_source = "text" a passage of the text or "random"
random tokens; recall_filler tokens of text; the same tokens again: the
fraction of the second copy predicted, and as the control the same with other
tokens in place of the first copy; means over recall_trials draws, each
with its standard deviation over them, recall_std ...); memory
(KV bytes live, per token, most live and reserved); speed (prefill and decode
tokens/s, reported, never judged); speculative (speed_tokens greedy tokens
after the text's first 64, with the point's proposer and with
decode.proposer = "none" as the baseline, alternating three times, decoding
alone timed (medians): acceptance
per drafted token, accepted_per_step, tokens_per_step and
draft_forwards_per_step per verification step, speedup over the baseline, and
identical = 1 when the tokens equal the baseline's). Writes DIR/results.csv
(one row per point) and DIR/<metric>.png (one line per configuration; the
metric's label and unit, error bars of one standard deviation where it is a
mean over trials, recall's control beside it; docs/kv-cache.md).
)",
                       values, exit_code))
    return exit_code;

  const std::string path = values["config"].as<std::string>();
  auto file = Config::load_file(path);
  if (!file.ok()) return report("sweep", file.status());
  for (const auto& assignment : config_overrides(values)) {
    // sweep.* keys are the sweep's own; the rest go to the base config below.
    if (assignment.rfind("sweep.", 0) == 0) continue;
    if (Status st = file->apply_override(assignment); !st.ok()) return report("sweep", st);
  }
  auto spec = sweep::read_sweep_spec(*file);
  if (!spec.ok()) return report("sweep", spec.status());
  for (const auto& assignment : set_overrides(values)) {
    if (assignment.rfind("sweep.", 0) != 0) continue;
    if (Status st = sweep::apply_sweep_override(*spec, assignment); !st.ok())
      return report("sweep", st);
  }
  if (Status st = spec->base.validate_core(); !st.ok()) return report("sweep", st);
  auto text = read_text_file(spec->settings.text, "text file", kMaxTextBytes);
  if (!text.ok()) return report("sweep", text.status());
  auto registry = make_registry(&spec->base);

  const std::string out_arg = values.count("out")
                                  ? values["out"].as<std::string>()
                                  : "sweep-" + std::filesystem::path(path).stem().string();
  // Checked before the first point: a sweep must not run for an hour and then
  // find it cannot write its table.
  auto out_dir = prepare_output_directory(out_arg, "sweep output directory");
  if (!out_dir.ok()) return report("sweep", out_dir.status());
  const std::filesystem::path out = out_arg;
  if (auto csv_target = resolve_output_path((out / "results.csv").string(), "CSV file");
      !csv_target.ok())
    return report("sweep", csv_target.status());

  const int64_t points = spec->points();
  std::fprintf(stderr, "tessera sweep: %lld point%s, tasks %s, %lld tokens of %s\n",
               static_cast<long long>(points), points == 1 ? "" : "s",
               join(spec->settings.tasks).c_str(),
               static_cast<long long>(spec->settings.max_tokens), spec->settings.text.c_str());
  std::vector<Row> rows(static_cast<std::size_t>(points));
  Progress progress("sweep", "points", points);
  for (int64_t i = 0; i < points; ++i) {
    Row& row = rows[static_cast<std::size_t>(i)];
    const Status st = run_point(*spec, spec->choice(i), *registry, *text, row);
    if (!st.ok()) row.status = "error: " + st.message();
    if (row.status != "ok") {
      std::string where;
      for (std::size_t a = 0; a < row.labels.size(); ++a)
        where += (a ? ", " : "") + spec->axes[a].key + " = " + row.labels[a];
      std::fprintf(stderr, "\rpoint %lld (%s): %s\n", static_cast<long long>(i + 1), where.c_str(),
                   row.status.c_str());
    }
    progress.update(i + 1);
  }
  progress.finish();

  // The table: point, one column per axis, the status, then every metric met.
  std::vector<std::string> metrics;
  for (const Row& row : rows)
    for (const auto& [name, value] : row.metrics)
      if (std::find(metrics.begin(), metrics.end(), name) == metrics.end()) metrics.push_back(name);
  std::vector<std::string> columns = {"point"};
  for (const sweep::Axis& axis : spec->axes) columns.push_back(axis.key);
  columns.push_back("status");
  columns.insert(columns.end(), metrics.begin(), metrics.end());
  auto table = sweep::CsvTable::create(columns);
  if (!table.ok()) return report("sweep", table.status());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::pair<std::string, sweep::CsvCell>> cells = {
        {"point", static_cast<double>(r + 1)}, {"status", rows[r].status}};
    const std::vector<std::size_t> choice = spec->choice(static_cast<int64_t>(r));
    for (std::size_t a = 0; a < spec->axes.size(); ++a)
      cells.emplace_back(spec->axes[a].key, spec->axes[a].values[choice[a]].label);
    for (const auto& [name, value] : rows[r].metrics) cells.emplace_back(name, value);
    if (Status st = table->add_named_row(cells); !st.ok()) return report("sweep", st);
  }
  const std::string csv = (out / "results.csv").string();
  if (Status st = table->write(csv); !st.ok()) return report("sweep", st);
  std::vector<std::string> plots;
  if (Status st = write_plots(*spec, rows, metrics, out, plots); !st.ok())
    return report("sweep", st);
  std::printf("%s\n", csv.c_str());
  for (const std::string& plot : plots) std::printf("%s\n", plot.c_str());
  return 0;
}

}  // namespace tessera::cli
