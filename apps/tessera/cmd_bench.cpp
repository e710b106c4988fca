// tessera bench: prompt processing and generation speed, as llama-bench
// reports them, so the two can be read side by side.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "apps/tessera/bench_report.h"
#include "apps/tessera/bench_runs.h"
#include "apps/tessera/cli_common.h"
#include "apps/tessera/cmd_bench_serve.h"
#include "apps/tessera/cmd_bench_spec.h"
#include "apps/tessera/sweep/median.h"
#include "core/engine/engine.h"
#include "core/io/file_lookup.h"
#include "core/io/text_file.h"
#include "core/util/strings.h"

namespace tessera::cli {
namespace {

struct ModelFacts {
  std::string name;   // file name
  double size = 0;    // bytes of weights
  double params = 0;  // elements of weights
  std::string dtype;  // the type holding most weight bytes
};

ModelFacts facts_of(const LoadedModel& model) {
  ModelFacts f;
  f.name = model.path.substr(model.path.find_last_of('/') + 1);
  std::map<std::string, double> bytes_per_type;
  for (const TensorInfo& t : model.tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const auto bytes = static_cast<double>(dtype_row_bytes(t.dtype, n));
    f.size += bytes;
    f.params += static_cast<double>(n);
    bytes_per_type[std::string(dtype_name(t.dtype))] += bytes;
  }
  double most = -1;
  for (const auto& [type, bytes] : bytes_per_type)
    if (bytes > most) most = bytes, f.dtype = type;
  return f;
}

std::string human(double value, const char* const units[], int count, double step) {
  int u = 0;
  while (value >= step && u + 1 < count) value /= step, ++u;
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", value, units[u]);
  return text;
}

struct Row {
  int threads = 0;
  std::string test;
  double median = 0, low = 0, high = 0;
  double submissions_per_token = -1;  // BenchResult's
};

// A comma-separated list of counts in [low, high], e.g. "1,2" (what names
// the option and the kind of count, for the errors).
Result<std::vector<int64_t>> parse_counts(const std::string& text, const char* option,
                                          const char* kind, int64_t low, int64_t high) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < low || v > high) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return invalid_argument(std::string(option) + ": '" + item + "' is not " + kind + " (" +
                              std::to_string(low) + " to " + std::to_string(high) + ")");
    }
  }
  if (out.empty()) return invalid_argument(std::string(option) + ": give at least one, e.g. 1,2");
  return out;
}

// What the plain bench (no --spec, no --serve) measures.
struct BenchPlan {
  std::vector<int64_t> threads, depths;
  int64_t prompt = 0, gen = 0;
  int repeat = 1;
  std::string text;  // located; only with a depth
  std::vector<std::string> overrides;
};

Result<BenchPlan> plan_of(const po::variables_map& values) {
  BenchPlan plan;
  ASSIGN_OR_RETURN(plan.threads, parse_counts(values["threads"].as<std::string>(), "--threads",
                                              "a thread count", 1, 1024));
  ASSIGN_OR_RETURN(plan.depths, parse_counts(values["depth"].as<std::string>(), "--depth",
                                             "a depth in tokens", 0, int64_t{1} << 24));
  plan.prompt = values["prompt-tokens"].as<int64_t>();
  plan.gen = values["gen-tokens"].as<int64_t>();
  plan.repeat = values["repeat"].as<int>();
  if (*std::max_element(plan.depths.begin(), plan.depths.end()) > 0) {
    ASSIGN_OR_RETURN(plan.text, locate_data_file(values["text"].as<std::string>(), "."));
  }
  plan.overrides = set_overrides(values);
  if (values.count("model"))
    plan.overrides.push_back("model.path=" + values["model"].as<std::string>());
  // Room for the deepest test (each test's sequence is the only one).
  const int64_t deepest = *std::max_element(plan.depths.begin(), plan.depths.end());
  plan.overrides.push_back("cache.max_tokens=" +
                           std::to_string(deepest + std::max(plan.prompt, plan.gen)));
  return plan;
}

// Every test of the plan at `threads` threads, on an engine of its own.
Status measure_at(const po::variables_map& values, const BenchPlan& plan, int64_t threads,
                  std::vector<Row>& rows, ModelFacts& facts) {
  auto with_threads = plan.overrides;
  with_threads.push_back("backend.threads=" + std::to_string(threads));
  ASSIGN_OR_RETURN(const Config config,
                   load_config(values["config"].as<std::string>(), with_threads));
  auto registry = make_registry(&config);
  ASSIGN_OR_RETURN(auto engine, Engine::create(config, *registry));
  facts = facts_of(engine->model());
  std::vector<int32_t> context;
  if (!plan.text.empty()) {
    ASSIGN_OR_RETURN(const std::string text, read_text_file(plan.text, "text file", 64ull << 20));
    ASSIGN_OR_RETURN(
        context,
        depth_tokens(*engine, text, *std::max_element(plan.depths.begin(), plan.depths.end())));
  }
  for (const int64_t depth : plan.depths)
    for (const bool is_prompt : {true, false}) {
      const BenchTest test{is_prompt, is_prompt ? plan.prompt : plan.gen, depth};
      if (test.tokens == 0) continue;
      ASSIGN_OR_RETURN(const BenchResult result,
                       run_bench_test(*engine, test, context, plan.repeat));
      const auto [low, high] =
          std::minmax_element(result.tokens_per_s.begin(), result.tokens_per_s.end());
      rows.push_back({static_cast<int>(threads), test.name(), sweep::median(result.tokens_per_s),
                      *low, *high, result.submissions_per_token});
      std::fprintf(stderr, "bench: %s at %lld thread%s done\n", rows.back().test.c_str(),
                   static_cast<long long>(threads), threads == 1 ? "" : "s");
    }
  return ok_status();
}

// The rows as llama-bench's markdown table, or as CSV.
void print_rows(const std::vector<Row>& rows, const ModelFacts& facts, bool csv) {
  static const char* const kBytes[] = {"B", "KiB", "MiB", "GiB"};
  static const char* const kCount[] = {"", "K", "M", "B"};
  const std::string size = human(facts.size, kBytes, 4, 1024);
  const std::string params = human(facts.params, kCount, 4, 1000);
  // A device backend's submissions per token: a column only where counted.
  const bool counted = std::any_of(rows.begin(), rows.end(),
                                   [](const Row& r) { return r.submissions_per_token >= 0; });
  std::vector<TableRow> cells;
  for (const Row& r : rows) {
    if (csv)
      cells.push_back({facts.name, format("%.0f", facts.size), format("%.0f", facts.params),
                       facts.dtype, std::to_string(r.threads), r.test, format("%.3f", r.median),
                       format("%.3f", r.low), format("%.3f", r.high)});
    else
      cells.push_back({facts.name, size, params, facts.dtype, std::to_string(r.threads), r.test,
                       format("%.2f (%.2f-%.2f)", r.median, r.low, r.high)});
    if (counted) cells.back().push_back(format("%.3f", r.submissions_per_token));
  }
  if (csv) {
    TableRow header = {"model", "size_bytes",   "params", "dtype", "threads",
                       "test",  "tokens_per_s", "min",    "max"};
    if (counted) header.push_back("submissions_per_token");
    write_stdout(csv_lines(header, cells));
    return;
  }
  TableRow header = {
      "model", "size", "params", "dtype", "threads", "test", "t/s (median, min-max)"};
  std::vector<bool> right = {false, true, true, false, true, false, true};
  if (counted) header.push_back("submissions/token"), right.push_back(true);
  write_stdout(markdown_table(header, right, cells));
}

}  // namespace

int run_bench(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file")(
      "model,m", po::value<std::string>(), "model file (overrides model.path)")(
      "prompt-tokens,p", po::value<int64_t>()->default_value(128),
      "prompt length (pp test; 0: none)")("gen-tokens,n", po::value<int64_t>()->default_value(64),
                                          "tokens generated (tg test; 0: none)")(
      "repeat,r", po::value<int>()->default_value(5), "runs per test (median and range reported)")(
      "threads,t", po::value<std::string>()->default_value("1"), "thread counts, e.g. 1,2")(
      "depth,d", po::value<std::string>()->default_value("0"),
      "tokens already in the cache when each test starts, e.g. 0,4096 (prefilled from --text, "
      "not timed)")("csv", "print CSV instead of a table")(
      "set,s", po::value<std::vector<std::string>>()->composing(),
      "override a config key (repeatable)")(
      "spec", "speculative decoding: each proposer against plain decoding (see below)")(
      "proposers", po::value<std::string>(),
      "with --spec: the proposers, e.g. ngram,self_draft,ar_draft,tree (default: all that the "
      "config allows)")(
      "text", po::value<std::string>()->default_value("tinystories_train_head.txt"),
      "with --spec: the text the prompts are taken from; with --depth: the depth's "
      "tokens (repeated where shorter); with --serve: the long history's "
      "(looked up like models; ../shared/data too)")(
      "serve", "tessera serve under concurrent sessions, against llama-server (see below)")(
      "sessions", po::value<std::string>()->default_value("1,4,16,64"),
      "with --serve: concurrent sessions per level")(
      "llama-server", po::value<std::string>(),
      "with --serve: llama-server to put under the same load")(
      "history", po::value<int64_t>()->default_value(2000),
      "with --serve: tokens of history for the time-to-first-token test (0: skip)");
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {},
                       "usage: tessera bench --config FILE [--model FILE] [--prompt-tokens 128] "
                       "[--gen-tokens 64] [--depth 0,4096] [--repeat 5] [--threads 1,2] [--csv]\n"
                       "       tessera bench --spec --config FILE [--model FILE] [--proposers "
                       "LIST] [-p 64] [-n 128] [--repeat 5] [--csv]\n"
                       "       tessera bench --serve --config FILE [--model FILE] [--sessions "
                       "1,4,16,64] [-n 64] [-r 1] [--threads 2] [--llama-server PATH] "
                       "[--history 2000]",
                       std::string(R"(examples:
  tessera bench --config configs/stories260k.toml --threads 1,2
  tessera bench --config configs/stories260k.toml --model /tmp/110m-q8_0.gguf -p 128 -n 64 -r 5 --csv

  tessera bench --config configs/stories260k.toml -p 64 -n 16 -d 0,256

pp<N>: one forward over an N-token prompt; tg<N>: N tokens generated one at a
time (llama-bench's tests), from an empty cache, or with --depth D from a cache
that already holds D tokens of --text (llama-bench's -d; the test is named
pp<N>@d<D>; the depth is prefilled once, not timed, and the cache cut back to
it between runs). Tokens per second, the median of --repeat runs after one
warm-up run, with the range. Whole-process comparisons with llama.cpp belong to
interleaved runs (docs/performance.md).
)") + kSpecBenchHelp + kServeBenchHelp,
                       values, exit_code))
    return exit_code;
  if (values.count("spec") && values.count("serve")) {
    std::fprintf(stderr, "tessera bench: --spec and --serve are two benchmarks: pick one\n");
    return kExitUsage;
  }
  if (!values["depth"].defaulted() && (values.count("spec") || values.count("serve"))) {
    std::fprintf(stderr,
                 "tessera bench: --depth goes with the pp and tg tests, not --spec or "
                 "--serve\n");
    return kExitUsage;
  }
  if (values.count("spec")) return run_bench_spec(values);
  if (values.count("serve")) return run_bench_serve(values);
  if (values.count("proposers") || (!values["text"].defaulted() && values["depth"].defaulted())) {
    std::fprintf(stderr,
                 "tessera bench: --proposers goes with --spec, --text with --depth, --spec or "
                 "--serve\n");
    return kExitUsage;
  }
  if (values.count("llama-server") || !values["sessions"].defaulted() ||
      !values["history"].defaulted()) {
    std::fprintf(stderr,
                 "tessera bench: --sessions, --llama-server and --history go with "
                 "--serve\n");
    return kExitUsage;
  }

  if (const int64_t prompt = values["prompt-tokens"].as<int64_t>(),
      gen = values["gen-tokens"].as<int64_t>();
      prompt < 0 || gen < 0 || (prompt == 0 && gen == 0) || values["repeat"].as<int>() < 1) {
    std::fprintf(stderr,
                 "tessera bench: --prompt-tokens and --gen-tokens must be >= 0 (not both "
                 "0), --repeat >= 1\n");
    return kExitUsage;
  }
  auto plan = plan_of(values);
  if (!plan.ok()) return report("bench", plan.status());
  std::vector<Row> rows;
  ModelFacts facts;
  for (const int64_t t : plan->threads)
    if (Status s = measure_at(values, *plan, t, rows, facts); !s.ok()) return report("bench", s);
  print_rows(rows, facts, values.count("csv") > 0);
  return 0;
}

}  // namespace tessera::cli
