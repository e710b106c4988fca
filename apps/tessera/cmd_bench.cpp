// tessera bench: prompt processing and generation speed, as llama-bench
// reports them, so the two can be read side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "apps/tessera/bench_report.h"
#include "apps/tessera/cli_common.h"
#include "apps/tessera/cmd_bench_serve.h"
#include "apps/tessera/cmd_bench_spec.h"
#include "apps/tessera/sweep/median.h"
#include "core/engine/engine.h"
#include "core/util/strings.h"

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

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

// Tokens per second of one run: a prompt of `n` tokens in one forward (pp),
// or `n` tokens generated one at a time from an empty cache (tg), as
// llama-bench measures them.
Result<double> run_once(Engine& engine, bool prompt, int64_t n) {
  std::vector<int32_t> tokens(static_cast<std::size_t>(n));
  const int32_t vocab = engine.model().config.vocab_size;
  for (int64_t i = 0; i < n; ++i)
    tokens[static_cast<std::size_t>(i)] = static_cast<int32_t>(3 + (i * 7919) % (vocab - 3));
  SequenceState seq;
  RETURN_IF_ERROR(engine.begin_sequence(seq));
  const auto start = Clock::now();
  Status status = ok_status();
  if (prompt) {
    std::vector<int32_t> positions(tokens.size());
    std::iota(positions.begin(), positions.end(), 0);
    status = engine.transformer().forward(engine.cache(), seq.id, tokens, positions).status();
  } else {
    for (int64_t i = 0; i < n && status.ok(); ++i) {
      const auto position = static_cast<int32_t>(i);
      status = engine.transformer()
                   .forward(engine.cache(), seq.id, {&tokens[static_cast<std::size_t>(i)], 1},
                            {&position, 1})
                   .status();
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RETURN_IF_ERROR(engine.end_sequence(seq));
  RETURN_IF_ERROR(status);
  return static_cast<double>(n) / seconds;
}

struct Row {
  int threads = 0;
  std::string test;
  double median = 0, low = 0, high = 0;
  // Device submissions per token over the timed runs; < 0 where the backend
  // does not count them (the CPU).
  double submissions_per_token = -1;
};

Result<std::vector<int>> parse_threads(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int t = std::stoi(item, &used);
      if (used != item.size() || t < 1 || t > 1024) throw std::invalid_argument(item);
      out.push_back(t);
    } catch (const std::exception&) {
      return invalid_argument("--threads: '" + item + "' is not a thread count (e.g. 1,2)");
    }
  }
  if (out.empty()) return invalid_argument("--threads: give at least one count (e.g. 1,2)");
  return out;
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
      "csv", "print CSV instead of a table")("set,s",
                                             po::value<std::vector<std::string>>()->composing(),
                                             "override a config key (repeatable)")(
      "spec", "speculative decoding: each proposer against plain decoding (see below)")(
      "proposers", po::value<std::string>(),
      "with --spec: the proposers, e.g. ngram,self_draft,ar_draft,tree (default: all that the "
      "config allows)")("text",
                        po::value<std::string>()->default_value("tinystories_train_head.txt"),
                        "with --spec: the text the prompts are taken from; with --serve: the "
                        "long history's (looked up like models; ../shared/data too)")(
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
                       "[--gen-tokens 64] [--repeat 5] [--threads 1,2] [--csv]\n"
                       "       tessera bench --spec --config FILE [--model FILE] [--proposers "
                       "LIST] [-p 64] [-n 128] [--repeat 5] [--csv]\n"
                       "       tessera bench --serve --config FILE [--model FILE] [--sessions "
                       "1,4,16,64] [-n 64] [-r 1] [--threads 2] [--llama-server PATH] "
                       "[--history 2000]",
                       std::string(R"(examples:
  tessera bench --config configs/stories260k.toml --threads 1,2
  tessera bench --config configs/stories260k.toml --model /tmp/110m-q8_0.gguf -p 128 -n 64 -r 5 --csv

pp<N>: one forward over an N-token prompt; tg<N>: N tokens generated one at a
time from an empty cache (llama-bench's tests). Tokens per second, the median
of --repeat runs after one warm-up run, with the range. Whole-process
comparisons with llama.cpp belong to interleaved runs (docs/performance.md).
)") + kSpecBenchHelp + kServeBenchHelp,
                       values, exit_code))
    return exit_code;
  if (values.count("spec") && values.count("serve")) {
    std::fprintf(stderr, "tessera bench: --spec and --serve are two benchmarks: pick one\n");
    return kExitUsage;
  }
  if (values.count("spec")) return run_bench_spec(values);
  if (values.count("serve")) return run_bench_serve(values);
  if (values.count("proposers") || !values["text"].defaulted()) {
    std::fprintf(stderr,
                 "tessera bench: --proposers goes with --spec, --text with --spec or "
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

  auto threads = parse_threads(values["threads"].as<std::string>());
  if (!threads.ok()) return report("bench", threads.status());
  const int64_t prompt = values["prompt-tokens"].as<int64_t>();
  const int64_t gen = values["gen-tokens"].as<int64_t>();
  const int repeat = values["repeat"].as<int>();
  if (prompt < 0 || gen < 0 || (prompt == 0 && gen == 0) || repeat < 1) {
    std::fprintf(stderr,
                 "tessera bench: --prompt-tokens and --gen-tokens must be >= 0 (not both "
                 "0), --repeat >= 1\n");
    return kExitUsage;
  }
  auto overrides = set_overrides(values);
  if (values.count("model")) overrides.push_back("model.path=" + values["model"].as<std::string>());
  overrides.push_back("cache.max_tokens=" + std::to_string(std::max<int64_t>(prompt, gen)));

  std::vector<Row> rows;
  ModelFacts facts;
  for (const int t : *threads) {
    auto with_threads = overrides;
    with_threads.push_back("backend.threads=" + std::to_string(t));
    auto config = load_config(values["config"].as<std::string>(), with_threads);
    if (!config.ok()) return report("bench", config.status());
    auto registry = make_registry(&*config);
    auto engine = Engine::create(*config, *registry);
    if (!engine.ok()) return report("bench", engine.status());
    facts = facts_of((*engine)->model());
    for (const bool is_prompt : {true, false}) {
      const int64_t n = is_prompt ? prompt : gen;
      if (n == 0) continue;
      std::vector<double> speeds;
      uint64_t submitted_before = 0;
      for (int r = 0; r <= repeat; ++r) {  // run 0 warms caches and pages up
        auto speed = run_once(**engine, is_prompt, n);
        if (!speed.ok()) return report("bench", speed.status());
        if (r > 0) speeds.push_back(*speed);
        if (r == 0) submitted_before = (*engine)->backend().counters().submissions;
      }
      const auto [low, high] = std::minmax_element(speeds.begin(), speeds.end());
      rows.push_back(
          {t, (is_prompt ? "pp" : "tg") + std::to_string(n), sweep::median(speeds), *low, *high});
      if (const uint64_t submitted = (*engine)->backend().counters().submissions; submitted > 0)
        rows.back().submissions_per_token =
            static_cast<double>(submitted - submitted_before) / static_cast<double>(repeat * n);
      std::fprintf(stderr, "bench: %s at %d thread%s done\n", rows.back().test.c_str(), t,
                   t == 1 ? "" : "s");
    }
  }

  static const char* const kBytes[] = {"B", "KiB", "MiB", "GiB"};
  static const char* const kCount[] = {"", "K", "M", "B"};
  const std::string size = human(facts.size, kBytes, 4, 1024);
  const std::string params = human(facts.params, kCount, 4, 1000);
  // A device backend's submissions per token: a column only where counted.
  const bool counted = std::any_of(rows.begin(), rows.end(),
                                   [](const Row& r) { return r.submissions_per_token >= 0; });
  std::vector<TableRow> cells;
  for (const Row& r : rows) {
    if (values.count("csv"))
      cells.push_back({facts.name, format("%.0f", facts.size), format("%.0f", facts.params),
                       facts.dtype, std::to_string(r.threads), r.test, format("%.3f", r.median),
                       format("%.3f", r.low), format("%.3f", r.high)});
    else
      cells.push_back({facts.name, size, params, facts.dtype, std::to_string(r.threads), r.test,
                       format("%.2f (%.2f-%.2f)", r.median, r.low, r.high)});
    if (counted) cells.back().push_back(format("%.3f", r.submissions_per_token));
  }
  if (values.count("csv")) {
    TableRow header = {"model", "size_bytes",   "params", "dtype", "threads",
                       "test",  "tokens_per_s", "min",    "max"};
    if (counted) header.push_back("submissions_per_token");
    write_stdout(csv_lines(header, cells));
    return 0;
  }
  TableRow header = {
      "model", "size", "params", "dtype", "threads", "test", "t/s (median, min-max)"};
  std::vector<bool> right = {false, true, true, false, true, false, true};
  if (counted) header.push_back("submissions/token"), right.push_back(true);
  write_stdout(markdown_table(header, right, cells));
  return 0;
}

}  // namespace tessera::cli
