// The OpenAI-compatible HTTP face of the session runtime:
// /v1/completions and /v1/chat/completions (whole or streamed as
// server-sent events), /v1/models and /v1/models/{id}, /health and
// /metrics (Prometheus text). The connections are HttpListener's (one
// event loop for every socket still sending its request, workers only for
// complete ones); the routes and the key check are decided from a
// request's head, before its body is read.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/tessera/chat_prompt.h"
#include "apps/tessera/serve/http_listener.h"
#include "core/session/session_runtime.h"

namespace tessera::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port (port() says which)
  std::vector<std::string> api_keys;  // empty: no key asked
  int64_t default_max_tokens = 256;   // when a request gives none
  std::string model_name;             // what /v1/models lists
  bool metrics_need_key = false;      // /metrics behind the keys too
  double queue_timeout_s = 30;        // a completion waiting for a free session
  ListenerLimits limits;              // connections, deadlines, body size
};

class HttpServer {
 public:
  HttpServer(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; an error says which and why (in use, not an address).
  Status bind();
  int port() const { return listener_->port(); }
  // Serves until stop(); call after bind().
  void serve();
  // Waits (up to `seconds`) until no completion is in flight: after the
  // runtime's shutdown ended every turn, their last chunks get written
  // before stop() closes the server.
  void drain(double seconds);
  void stop();
  // Connections open now (tests, metrics).
  int open_connections() const { return listener_->open_connections(); }

 private:
  class Routes;
  std::unique_ptr<Routes> routes_;
  std::unique_ptr<HttpListener> listener_;
  HttpOptions options_;
};

}  // namespace tessera::serve
