// tessera serve: the session runtime behind an OpenAI-compatible HTTP API and
// the gRPC session API (apps/tessera/serve). One engine, one decode loop; every request a
// session of the loop, batched with the others by the configured scheduler.
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "apps/tessera/chat_prompt.h"
#include "apps/tessera/cli_common.h"
#include "apps/tessera/serve/grpc_service.h"
#include "apps/tessera/serve/http_server.h"
#include "core/session/session_runtime.h"

namespace tessera::cli {
namespace {

// HOST:PORT, the port in [0, 65535].
Result<std::pair<std::string, int>> parse_address(const std::string& text, const char* what) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return invalid_argument(std::string(what) + " '" + text +
                            "' is not HOST:PORT (e.g. 127.0.0.1:8080)");
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return invalid_argument(std::string(what) + " '" + text + "': the port must be 0 to 65535");
  return std::pair<std::string, int>(text.substr(0, colon), port);
}

// server.prefix_cache_mib: on where the engine can share blocks; an
// explicit setting it cannot honour is an error, the default only a warning.
Status start_prefix_cache(const Config& config, Engine& engine,
                          std::vector<std::string>& warnings) {
  const auto mib = static_cast<std::size_t>(config.get_int("server.prefix_cache_mib"));
  const Status st = engine.enable_prefix_cache(mib << 20);
  if (st.ok() || config.has("server.prefix_cache_mib")) return st;
  warnings.push_back("the prefix cache is off: " + st.message());
  return ok_status();
}

std::string prefix_cache_text(const Engine& engine) {
  const auto stats = engine.prefix_cache_stats();
  if (!stats) return "no prefix cache";
  return "prefix cache " + std::to_string(stats->budget_bytes >> 20) + " MiB (blocks of " +
         std::to_string(stats->block_size) + " tokens)";
}

}  // namespace

int run_serve(int argc, char** argv) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->required(), "TOML config file (see docs/config.md)")(
      "http", po::value<std::string>(),
      "HOST:PORT for the HTTP API (default: server.http, 127.0.0.1:8080; port 0 picks a free one)")(
      "grpc", po::value<std::string>(),
      "HOST:PORT for the gRPC session API tessera.v1.Runtime (default: server.grpc; off when "
      "empty)")("set,s", po::value<std::vector<std::string>>()->composing(),
                "override a config key, e.g. --set server.max_sessions=16 (repeatable)");
  add_threads_option(options);
  po::variables_map values;
  int exit_code = 0;
  if (!parse_arguments(argc, argv, options, {}, "usage: tessera serve --config FILE [options]",
                       R"(examples:
  tessera serve --config configs/serve-stories260k.toml
  tessera serve --config configs/stories260k.toml --http 127.0.0.1:8081 --set scheduler.plugin=continuous
  tessera serve --config configs/serve-stories260k.toml --grpc 127.0.0.1:50051
  curl -s localhost:8080/v1/completions -d '{"prompt": "Once upon a time", "max_tokens": 32}'
  curl -sN localhost:8080/v1/chat/completions -d '{"messages": [{"role": "user", "content": "Hi"}], "stream": true}'

Routes: POST /v1/completions, POST /v1/chat/completions (OpenAI's API; "stream":
true streams server-sent events), GET /v1/models, GET /v1/models/{id}, /health,
/metrics (Prometheus).
With --grpc, tessera.v1.Runtime (proto/tessera/v1/runtime.proto): sessions that
keep their K/V across calls (CreateSession, AppendTokens, Generate, ForkSession,
GetSessionInfo, CloseSession, Tokenize, Detokenize).
Every request is a session of one decode loop; scheduler.plugin = "continuous"
batches them into one forward per step (docs/serving.md). The [server] section
sets the limits: max_sessions, max_sessions_per_key, session_idle_ttl_s,
prefix_cache_mib (K/V of earlier prompts kept for prompts that begin alike: a chat
that resends its conversation computes only the new turn), queue_timeout_s, api_keys, metrics_need_key, chat_template, and for HTTP clients
max_body_bytes, header_timeout_s, max_connections_per_address
(docs/config.md lists them all).
SIGINT or SIGTERM stops it: running generations end with a status (HTTP: an
error, never a finish_reason), nothing is left half-written.
)",
                       values, exit_code))
    return exit_code;
  auto config = load_config(values["config"].as<std::string>(), config_overrides(values));
  if (!config.ok()) return report("serve", config.status());
  auto address = parse_address(
      values.count("http") ? values["http"].as<std::string>() : config->get_string("server.http"),
      values.count("http") ? "--http" : "server.http");
  if (!address.ok()) return report("serve", address.status());
  const std::string grpc_address =
      values.count("grpc") ? values["grpc"].as<std::string>() : config->get_string("server.grpc");
  if (!grpc_address.empty()) {
    auto checked = parse_address(grpc_address, values.count("grpc") ? "--grpc" : "server.grpc");
    if (!checked.ok()) return report("serve", checked.status());
  }

  // Signals go to the thread that waits for them, not to whichever thread
  // happens to run: block them before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto registry = make_registry(&*config);
  auto engine = Engine::create(*config, *registry);
  if (!engine.ok()) return report("serve", engine.status());
  Engine& e = **engine;
  std::vector<std::string> warnings = e.warnings();
  SessionLimits limits;
  limits.max_sessions = config->get_int("server.max_sessions");
  limits.idle_ttl_seconds = config->get_float("server.session_idle_ttl_s");
  limits.max_sessions_per_key = config->get_int("server.max_sessions_per_key");
  // A seed the config gives makes the server reproducible; without one each
  // unseeded request draws its own (and reports it).
  if (config->has("sampling.seed"))
    limits.default_seed = static_cast<uint64_t>(config->get_int("sampling.seed"));
  if (Status st = start_prefix_cache(*config, e, warnings); !st.ok()) return report("serve", st);
  const auto prefix_bytes = e.prefix_cache_stats() ? e.prefix_cache_stats()->budget_bytes : 0;
  if (Status st = e.check_memory_for(limits.max_sessions, prefix_bytes); !st.ok())
    return report("serve", st);
  auto chat = chat_setup(e, config->get_string("server.chat_template"), "server.chat_template", "",
                         warnings);
  if (!chat.ok()) return report("serve", chat.status());
  if (e.description().scheduler == "single")
    warnings.push_back(
        "scheduler.plugin = \"single\" runs one request at a time; set it to \"continuous\" to "
        "batch concurrent requests");
  print_warnings("serve", warnings);

  SessionRuntime runtime(e, limits);
  serve::HttpOptions http;
  http.host = address->first;
  http.port = address->second;
  http.api_keys = config->get_list("server.api_keys");
  http.default_max_tokens = e.default_new_tokens();
  http.model_name = std::filesystem::path(e.description().model_path).filename().string();
  http.metrics_need_key = config->get_bool("server.metrics_need_key");
  http.queue_timeout_s = config->get_float("server.queue_timeout_s");
  http.limits.max_body_bytes = static_cast<std::size_t>(config->get_int("server.max_body_bytes"));
  http.limits.head_timeout_s = config->get_float("server.header_timeout_s");
  http.limits.max_connections_per_address =
      static_cast<int>(config->get_int("server.max_connections_per_address"));
  serve::HttpServer server(e, runtime, std::move(*chat), http);
  if (Status st = server.bind(); !st.ok()) return report("serve", st);
  std::unique_ptr<serve::GrpcServer> grpc;
  if (!grpc_address.empty()) {
    grpc = std::make_unique<serve::GrpcServer>(e, runtime,
                                               serve::GrpcOptions{grpc_address, http.api_keys});
    if (Status st = grpc->start(); !st.ok()) return report("serve", st);
  }
  std::fprintf(stderr,
               "tessera serve: %s on %s, scheduler %s, up to %lld sessions, %s; HTTP on "
               "http://%s:%d (OpenAI API at /v1, /health, /metrics)",
               http.model_name.c_str(), e.description().device.name.c_str(),
               e.description().scheduler.c_str(), static_cast<long long>(limits.max_sessions),
               prefix_cache_text(e).c_str(), http.host.c_str(), server.port());
  if (grpc)
    std::fprintf(stderr, "; gRPC on %s:%d (tessera.v1.Runtime)",
                 grpc_address.substr(0, grpc_address.rfind(':')).c_str(), grpc->port());
  std::fputc('\n', stderr);
  std::atomic<bool> signalled{false};
  std::thread signals([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    signalled = true;
    std::fprintf(stderr, "tessera serve: %s: stopping\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
    runtime.shutdown();  // running turns end with "shutdown", streamed to their clients
    server.drain(10);    // their last chunks written
    if (grpc) grpc->stop();
    server.stop();
  });
  server.serve();
  // serve() also returns when listening fails: wake the signal thread then.
  if (!signalled) pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  std::fprintf(stderr, "tessera serve: stopped\n");
  return 0;
}

}  // namespace tessera::cli
