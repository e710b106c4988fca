// The OpenAI-compatible HTTP face of the session runtime (cpp-httplib):
// /v1/completions and /v1/chat/completions (whole or streamed as
// server-sent events), /v1/models, /health and /metrics (Prometheus text).
// Each completion is a session of its own, closed when it ends; a client
// that disconnects mid-stream cancels its turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/tessera/chat_prompt.h"
#include "core/session/session_runtime.h"

namespace httplib {
class Server;
}

namespace tessera::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port (port() says which)
  std::vector<std::string> api_keys;  // empty: no key asked
  int64_t default_max_tokens = 256;   // when a request gives none
  std::string model_name;             // what /v1/models lists
  int threads = 128;                  // connections served at once
};

class HttpServer {
 public:
  HttpServer(Engine& engine, SessionRuntime& runtime, cli::ChatSetup chat, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; an error says which and why (in use, not an address).
  Status bind();
  int port() const { return port_; }
  // Serves until stop(); call after bind().
  void serve();
  // Waits (up to `seconds`) until no completion is in flight: after the
  // runtime's shutdown ended every turn, their last chunks get written
  // before stop() closes the server (it stops writing streams at once).
  void drain(double seconds);
  void stop();

 private:
  class Handlers;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<Handlers> handlers_;  // holds the in-flight count
  HttpOptions options_;
  int port_ = 0;
  int listen_socket_ = -1;  // what cpp-httplib listens on, once bound
};

}  // namespace tessera::serve
