// tessera bench --serve: tessera serve under concurrent streaming clients on
// loopback, beside llama-server -np N on the same GGUF in the same run, and
// the time to first token of a turn on a long history, session kept.
#include "apps/tessera/cmd_bench_serve.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "apps/tessera/bench_report.h"
#include "apps/tessera/serve_bench/history_ttft.h"
#include "apps/tessera/serve_bench/openai_load.h"
#include "apps/tessera/serve_bench/server_process.h"
#include "core/io/file_lookup.h"

namespace tessera::cli {
namespace {

using serve_bench::LoadFigures;
using serve_bench::ServerProcess;
using serve_bench::TtftFigures;

const std::vector<std::string> kPrompts = {
    "Once upon a time", "The little dog",  "A girl named Lily", "Tom had a ball",
    "One day, a bird",  "The sun was hot", "Sam and his mom",   "In a big forest"};
// The later turns of the history test: a user's line each.
const std::vector<std::string> kLines = {" Then the girl said hello.", " The dog ran home.",
                                         " It was a happy day.", " They played all day long."};
constexpr int64_t kReplyTokens = 16;

struct ServeBenchSpec {
  std::string config;
  std::vector<std::string> overrides;  // --set
  std::string model;                   // absolute
  std::string llama_server;            // empty: tessera alone
  std::vector<int> sessions;
  int64_t tokens = 64;
  int rounds = 1;
  int threads = 1;
  int64_t history = 2000;
  std::string text;  // the history's source
  std::string work;  // server logs
  bool csv = false;
};

Result<std::vector<int>> parse_counts(const std::string& text, const char* option) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
    }
    if (used != item.size() || n < 1 || n > 4096)
      return invalid_argument(std::string(option) + ": '" + item + "' is not a count 1-4096");
    out.push_back(n);
  }
  if (out.empty()) return invalid_argument(std::string(option) + ": give at least one count");
  return out;
}

Result<ServeBenchSpec> spec_of(const po::variables_map& values) {
  ServeBenchSpec s;
  s.config = values["config"].as<std::string>();
  s.overrides = set_overrides(values);
  if (values.count("model"))
    s.overrides.push_back("model.path=" + values["model"].as<std::string>());
  ASSIGN_OR_RETURN(const Config config, load_config(s.config, s.overrides));
  ASSIGN_OR_RETURN(s.model, locate_model_file(config.get_string("model.path"),
                                              config.base_directory("model.path")));
  s.model = std::filesystem::absolute(s.model).string();
  if (values.count("llama-server")) {
    s.llama_server = values["llama-server"].as<std::string>();
    if (::access(s.llama_server.c_str(), X_OK) != 0)
      return invalid_argument("--llama-server " + s.llama_server +
                              " is not an executable (build it: SERVER=1 "
                              "../shared/tools/peers-setup.sh)");
  }
  ASSIGN_OR_RETURN(s.sessions, parse_counts(values["sessions"].as<std::string>(), "--sessions"));
  ASSIGN_OR_RETURN(const auto threads,
                   parse_counts(values["threads"].as<std::string>(), "--threads"));
  s.threads = threads.front();
  s.tokens = values["gen-tokens"].as<int64_t>();
  s.rounds = values["repeat"].as<int>();
  s.history = values["history"].as<int64_t>();
  if (s.tokens < 1 || s.rounds < 1 || s.history < 0)
    return invalid_argument("--serve needs --gen-tokens >= 1, --repeat >= 1, --history >= 0");
  if (s.history > 0) {
    ASSIGN_OR_RETURN(s.text, locate_data_file(values["text"].as<std::string>(), "."));
  }
  s.csv = values.count("csv") > 0;
  // The temporary directory the user chose (TMPDIR), else /tmp.
  std::error_code error;
  const std::filesystem::path temp = std::filesystem::temp_directory_path(error);
  std::string pattern =
      ((error ? std::filesystem::path("/tmp") : temp) / "tessera-bench-serve-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return internal_error("cannot make a work directory " + pattern +
                          "; set TMPDIR to a writable directory");
  s.work = pattern;
  return s;
}

// tessera serve from this very binary, one slot per session.
Result<std::unique_ptr<ServerProcess>> start_tessera(const ServeBenchSpec& s, int sessions,
                                                     int64_t context, int grpc_port,
                                                     const std::vector<std::string>& extra = {}) {
  ASSIGN_OR_RETURN(const int port, serve_bench::free_loopback_port());
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(),
                                   "serve",
                                   "--config",
                                   s.config,
                                   "--http",
                                   "127.0.0.1:" + std::to_string(port)};
  if (grpc_port > 0) argv.insert(argv.end(), {"--grpc", "127.0.0.1:" + std::to_string(grpc_port)});
  auto overrides = s.overrides;
  overrides.insert(overrides.end(),
                   {"model.path=" + s.model, "backend.threads=" + std::to_string(s.threads),
                    "server.max_sessions=" + std::to_string(sessions),
                    "cache.max_tokens=" + std::to_string(context)});
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
  return ServerProcess::start(argv, port, s.work + "/tessera-" + std::to_string(sessions) + ".log",
                              300);
}

// llama-server -np N, each slot `context` tokens.
Result<std::unique_ptr<ServerProcess>> start_llama_server(const ServeBenchSpec& s, int sessions,
                                                          int64_t context) {
  ASSIGN_OR_RETURN(const int port, serve_bench::free_loopback_port());
  const std::string threads = std::to_string(s.threads);
  return ServerProcess::start({s.llama_server, "-m", s.model, "--host", "127.0.0.1", "--port",
                               std::to_string(port), "-np", std::to_string(sessions), "-c",
                               std::to_string(context * sessions), "-t", threads, "-tb", threads},
                              port, s.work + "/llama-server-" + std::to_string(sessions) + ".log",
                              300);
}

// A short request first: pages the weights in and starts the threads.
Result<LoadFigures> measure(ServerProcess& server, const ServeBenchSpec& s, int sessions) {
  const auto warm = serve_bench::run_load("127.0.0.1", server.port(), 1, 4, 1, kPrompts);
  if (warm.failed > 0)
    return failed_precondition("the warm-up request failed: " + warm.first_error);
  auto figures =
      serve_bench::run_load("127.0.0.1", server.port(), sessions, s.tokens, s.rounds, kPrompts);
  if (figures.failed > 0)
    return failed_precondition(std::to_string(figures.failed) +
                               " requests failed, the first: " + figures.first_error);
  return figures;
}

Result<std::vector<std::vector<int32_t>>> history_and_lines(const ServeBenchSpec& s,
                                                            const std::string& grpc) {
  std::ifstream in(s.text);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::vector<int32_t>> out;
  ASSIGN_OR_RETURN(auto history, serve_bench::tokenize_over_grpc(grpc, text.str(), true));
  if (static_cast<int64_t>(history.size()) < s.history)
    return invalid_argument(s.text + " gives " + std::to_string(history.size()) +
                            " tokens, fewer than --history " + std::to_string(s.history));
  history.resize(static_cast<std::size_t>(s.history));
  out.push_back(std::move(history));
  for (const std::string& line : kLines) {
    ASSIGN_OR_RETURN(auto tokens, serve_bench::tokenize_over_grpc(grpc, line, false));
    out.push_back(std::move(tokens));
  }
  return out;
}

struct Report {
  std::vector<TableRow> load;
  std::vector<TableRow> ttft;
};

TableRow load_row(const char* server, const LoadFigures& f, const std::string& ratio) {
  return {std::to_string(f.sessions),
          server,
          format("%.1f", f.tokens_per_s),
          format("%.2f", f.p50_ms),
          format("%.2f", f.p99_ms),
          format("%.1f", f.first_token_ms),
          ratio};
}

TableRow ttft_row(const char* server, const TtftFigures& f) {
  return {server, std::to_string(f.history), format("%.1f", f.first_ms), format("%.1f", f.kept_ms),
          std::to_string(f.later_turns)};
}

Status run_levels(const ServeBenchSpec& s, Report& report) {
  const int64_t context = 32 + s.tokens + 32;
  for (const int n : s.sessions) {
    LoadFigures ours;
    {
      ASSIGN_OR_RETURN(auto server, start_tessera(s, n, context, 0));
      ASSIGN_OR_RETURN(ours, measure(*server, s, n));
    }
    std::fprintf(stderr, "bench --serve: tessera, %d session%s: %.1f tokens/s\n", n,
                 n == 1 ? "" : "s", ours.tokens_per_s);
    if (s.llama_server.empty()) {
      report.load.push_back(load_row("tessera", ours, "-"));
      continue;
    }
    LoadFigures theirs;
    {
      ASSIGN_OR_RETURN(auto server, start_llama_server(s, n, context));
      ASSIGN_OR_RETURN(theirs, measure(*server, s, n));
    }
    std::fprintf(stderr, "bench --serve: llama-server -np %d: %.1f tokens/s\n", n,
                 theirs.tokens_per_s);
    report.load.push_back(
        load_row("tessera", ours, format("%.2fx", ours.tokens_per_s / theirs.tokens_per_s)));
    report.load.push_back(load_row("llama-server", theirs, ""));
  }
  return ok_status();
}

Status run_history(const ServeBenchSpec& s, Report& report) {
  const auto later = static_cast<int64_t>(kLines.size());
  const int64_t context = s.history + (later + 1) * (kReplyTokens + 16) + 64;
  std::vector<std::vector<int32_t>> tokens;
  {
    ASSIGN_OR_RETURN(const int grpc_port, serve_bench::free_loopback_port());
    const std::string grpc = "127.0.0.1:" + std::to_string(grpc_port);
    ASSIGN_OR_RETURN(auto server, start_tessera(s, 1, context, grpc_port));
    ASSIGN_OR_RETURN(tokens, history_and_lines(s, grpc));
    const std::vector<std::vector<int32_t>> lines(tokens.begin() + 1, tokens.end());
    ASSIGN_OR_RETURN(const TtftFigures ours,
                     serve_bench::tessera_session_ttft(grpc, tokens[0], lines, kReplyTokens));
    report.ttft.push_back(ttft_row("tessera (gRPC session)", ours));
  }
  const std::vector<std::vector<int32_t>> lines(tokens.begin() + 1, tokens.end());
  // A fresh server each: nothing cached from the run before.
  for (const bool cached : {true, false}) {
    ASSIGN_OR_RETURN(auto server,
                     start_tessera(s, 1, context, 0,
                                   cached ? std::vector<std::string>{}
                                          : std::vector<std::string>{"server.prefix_cache_mib=0"}));
    ASSIGN_OR_RETURN(const TtftFigures resent,
                     serve_bench::resent_conversation_ttft("tessera serve", server->port(),
                                                           tokens[0], lines, kReplyTokens));
    report.ttft.push_back(ttft_row(
        cached ? "tessera (HTTP, resent; prefix cache)" : "tessera (HTTP, resent; no cache)",
        resent));
  }
  std::fprintf(stderr, "bench --serve: tessera, %lld-token history done\n",
               static_cast<long long>(s.history));
  if (s.llama_server.empty()) return ok_status();
  ASSIGN_OR_RETURN(auto server, start_llama_server(s, 1, context));
  ASSIGN_OR_RETURN(const TtftFigures theirs,
                   serve_bench::resent_conversation_ttft("llama-server", server->port(), tokens[0],
                                                         lines, kReplyTokens));
  report.ttft.push_back(ttft_row("llama-server (HTTP, resent; prompt cache)", theirs));
  return ok_status();
}

void print(const ServeBenchSpec& s, const Report& report) {
  const TableRow load_header = {"sessions",       "server",       "tokens/s",
                                "ms/token p50",   "ms/token p99", "first token p50 ms",
                                "vs llama-server"};
  const TableRow ttft_header = {"server", "history tokens", "first turn: TTFT ms",
                                "later turns: TTFT ms (median)", "later turns"};
  if (s.csv) {
    write_stdout(csv_lines(load_header, report.load));
    if (!report.ttft.empty()) write_stdout("\n" + csv_lines(ttft_header, report.ttft));
    return;
  }
  write_stdout(format("%s, %d thread%s, %lld tokens a request, %d round%s a level\n\n",
                      std::filesystem::path(s.model).filename().c_str(), s.threads,
                      s.threads == 1 ? "" : "s", static_cast<long long>(s.tokens), s.rounds,
                      s.rounds == 1 ? "" : "s"));
  write_stdout(
      markdown_table(load_header, {true, false, true, true, true, true, true}, report.load));
  if (report.ttft.empty()) return;
  write_stdout("\n" + markdown_table(ttft_header, {false, true, true, true, true}, report.ttft));
}

}  // namespace

const char* const kServeBenchHelp = R"(
--serve: tessera serve under load (docs/serving.md). For each --sessions
count N, a fresh `tessera serve` (this binary; --config, --set and --model
apply; server.max_sessions = N) takes N clients at once, each streaming
/v1/completions of --gen-tokens greedy tokens to the end (ignore_eos), for
--repeat rounds: aggregate tokens/s, time per output token between streamed
tokens (p50, p99) and time to first token under that load. With
--llama-server PATH the same load goes to `llama-server -np N` on the same
GGUF (-t and -tb = --threads) right after, and a column gives tessera's
tokens/s over llama-server's. Then, with --history H (0: skip), the time to
first token of a turn on an H-token history taken from --text: the first
turn feeds it all; each of 4 later turns appends a short line to a gRPC
session that kept its K/V (tessera), or resends the whole conversation over
HTTP as an OpenAI client does: to tessera serve with its prefix cache, to
tessera serve without it (server.prefix_cache_mib = 0, the baseline), and to
llama-server, whose slot reuses its prompt cache. When a server fails, its
log stays in /tmp/tessera-bench-serve-*.

  tessera bench --serve --config configs/serve-stories260k.toml --sessions 1,4 -n 32
  tessera bench --serve --config configs/serve-stories260k.toml --model /tmp/qwen3-0.6b-q8_0.gguf \
      --threads 2 --sessions 1,4,16,64 -n 64 -r 2 --llama-server ../peers/llama.cpp/build/bin/llama-server
)";

int run_bench_serve(const po::variables_map& values) {
  auto spec = spec_of(values);
  if (!spec.ok()) return report("bench", spec.status());
  Report rows;
  Status status = run_levels(*spec, rows);
  if (status.ok() && spec->history > 0) status = run_history(*spec, rows);
  if (!status.ok()) {
    print(*spec, rows);
    return report("bench", status);
  }
  print(*spec, rows);
  std::error_code ignored;
  std::filesystem::remove_all(spec->work, ignored);
  return finish_output(0);
}

}  // namespace tessera::cli
