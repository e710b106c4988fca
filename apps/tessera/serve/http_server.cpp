#include "apps/tessera/serve/http_server.h"

#include <chrono>
#include <thread>
#include <utility>

#include "apps/tessera/serve/api_keys.h"
#include "apps/tessera/serve/completion_handler.h"
#include "apps/tessera/serve/openai_api.h"
#include "core/engine/engine.h"
#include "core/session/session_metrics.h"

namespace tessera::serve {
namespace {

constexpr char kRoutes[] =
    "routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, "
    "GET /v1/models/{id}, GET /health, GET /metrics";
constexpr char kModelsPrefix[] = "/v1/models/";

enum class Route { kNone, kHealth, kMetrics, kModels, kModel, kCompletions, kChat };

struct RouteMatch {
  Route route = Route::kNone;
  bool method_ok = false;
  const char* allow = "";
};

RouteMatch match(const HttpRequest& request) {
  const std::string& path = request.path;
  RouteMatch m;
  if (path == "/health")
    m = {Route::kHealth, false, "GET"};
  else if (path == "/metrics")
    m = {Route::kMetrics, false, "GET"};
  else if (path == "/v1/models")
    m = {Route::kModels, false, "GET"};
  else if (path.rfind(kModelsPrefix, 0) == 0 && path.size() > sizeof kModelsPrefix - 1)
    m = {Route::kModel, false, "GET"};
  else if (path == "/v1/completions")
    m = {Route::kCompletions, false, "POST"};
  else if (path == "/v1/chat/completions")
    m = {Route::kChat, false, "POST"};
  m.method_ok = m.route != Route::kNone && request.method == m.allow;
  return m;
}

}  // namespace

class HttpServer::Routes {
 public:
  Routes(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat, const HttpOptions& options)
      : runtime_(runtime),
        options_(options),
        completions_(engine, runtime, std::move(chat),
                     CompletionSettings{options.default_max_tokens, options.model_name,
                                        options.queue_timeout_s}) {}

  // What the head alone decides: the route, the method, the key. Nothing of
  // a body is read for a request answered here.
  std::optional<HttpResponse> check(const HttpRequest& request) const {
    const RouteMatch m = match(request);
    if (m.route == Route::kNone)
      return json_response(404, error_json("no route " + request.method.substr(0, 16) + " " +
                                               request.path.substr(0, 128) + " (" + kRoutes + ")",
                                           "invalid_request_error", "not_found"));
    if (!m.method_ok) {
      HttpResponse wrong = json_response(
          405,
          error_json(request.path + " takes " + m.allow + ", not " + request.method.substr(0, 16),
                     "invalid_request_error", "method_not_allowed"));
      wrong.headers.emplace_back("Allow", m.allow);
      return wrong;
    }
    const bool keyed =
        m.route != Route::kHealth && (m.route != Route::kMetrics || options_.metrics_need_key);
    if (keyed && !options_.api_keys.empty() &&
        !bearer_key_allowed(request.header("authorization"), options_.api_keys))
      return json_response(
          401, error_json("missing or unknown API key: send 'Authorization: Bearer <key>'",
                          "invalid_request_error", "invalid_api_key"));
    return std::nullopt;
  }

  void handle(HttpRequest& request, HttpResponder& out) {
    switch (match(request).route) {
      case Route::kHealth:
        out.send(json_response(200, "{\"status\":\"ok\"}"));
        return;
      case Route::kMetrics: {
        HttpResponse metrics = json_response(200, prometheus_text(runtime_.metrics()));
        metrics.content_type = "text/plain; version=0.0.4";
        out.send(metrics);
        return;
      }
      case Route::kModels:
        out.send(json_response(200, models_json(options_.model_name, started_)));
        return;
      case Route::kModel: {
        const std::string id = request.path.substr(sizeof kModelsPrefix - 1);
        if (id == options_.model_name)
          out.send(json_response(200, model_json(options_.model_name, started_)));
        else
          out.send(
              json_response(404, error_json("The model '" + id.substr(0, 128) +
                                                "' does not exist; this server "
                                                "serves '" +
                                                options_.model_name + "'",
                                            "invalid_request_error", "model_not_found", "model")));
        return;
      }
      case Route::kCompletions:
      case Route::kChat:
        completions_.handle(request.body, presented_key(request),
                            match(request).route == Route::kChat, out);
        return;
      case Route::kNone:
        return;
    }
  }

  int in_flight() const { return completions_.in_flight(); }

 private:
  // The caller's key ("" without keys): sessions are owned by it.
  std::string presented_key(const HttpRequest& request) const {
    if (options_.api_keys.empty()) return "";
    return std::string(bearer_token(request.header("authorization")).value_or(""));
  }

  SessionRuntime& runtime_;
  const HttpOptions& options_;
  CompletionHandler completions_;
  int64_t started_ = unix_seconds();
};

HttpServer::HttpServer(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat,
                       HttpOptions options)
    : options_(std::move(options)) {
  routes_ = std::make_unique<Routes>(engine, runtime, std::move(chat), options_);
  Routes& routes = *routes_;
  listener_ = std::make_unique<HttpListener>(
      options_.limits, [&routes](const HttpRequest& request) { return routes.check(request); },
      [&routes](HttpRequest& request, HttpResponder& out) { routes.handle(request, out); });
}

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::bind() {
  return listener_->bind(options_.host, options_.port);
}

void HttpServer::serve() {
  listener_->serve();
}

void HttpServer::drain(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (routes_->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void HttpServer::stop() {
  if (listener_) listener_->stop();
}

}  // namespace tessera::serve
