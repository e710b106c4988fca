// An HTTP server on a free loopback port, serving on a thread of its own,
// for the in-process HTTP tests; and a raw socket to talk to it byte by byte.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/tessera/serve/http_server.h"
#include "core/engine/engine.h"
#include "tests/model/engine_test_util.h"
#include "tests/serve/serve_configs.h"

namespace tessera::serve::testing_served {

struct ServedOptions {
  std::vector<std::string> keys;
  std::string sampling;  // extra config text, e.g. "[sampling]\ntemperature = 0.8\n"
  const char* config = testing_configs::kConfig;
  SessionLimits limits;
  HttpOptions http;                    // port, keys, model name and default max tokens set here
  std::size_t prefix_cache_bytes = 0;  // server.prefix_cache_mib, in bytes; 0: off
};

class Served {
 public:
  explicit Served(std::vector<std::string> keys = {}, std::string sampling = "",
                  const char* config = testing_configs::kConfig)
      : Served(ServedOptions{std::move(keys), std::move(sampling), config, {}, {}}) {}
  explicit Served(ServedOptions options) {
    // cpp-httplib 0.11 sends without MSG_NOSIGNAL: a client still sending a
    // body the server refused early (413, lingering close) would die of
    // SIGPIPE instead of seeing EPIPE, as tessera itself ignores it (main.cpp).
    std::signal(SIGPIPE, SIG_IGN);
    engine_ = testing::make_engine("stories260K.gguf", options.config + options.sampling);
    if (engine_ == nullptr) return;
    const Status prefix = engine_->enable_prefix_cache(options.prefix_cache_bytes);
    EXPECT_TRUE(prefix.ok()) << prefix.to_string();
    runtime_ = std::make_unique<SessionRuntime>(*engine_, options.limits);
    std::vector<std::string> warnings;
    auto chat = cli::chat_setup(*engine_, "chatml", "server.chat_template", "", warnings);
    EXPECT_TRUE(chat.ok()) << chat.status().to_string();
    HttpOptions http = options.http;
    http.port = 0;
    http.api_keys = std::move(options.keys);
    http.model_name = "stories260K.gguf";
    http.default_max_tokens = 24;
    http.limits.workers = std::min(http.limits.workers, 32);
    server_ = std::make_unique<HttpServer>(*engine_, *runtime_, std::move(*chat), http);
    const Status bound = server_->bind();
    EXPECT_TRUE(bound.ok()) << bound.to_string();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Served() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    if (runtime_) runtime_->shutdown();
  }
  bool ok() const { return engine_ != nullptr && server_ != nullptr; }
  Engine& engine() { return *engine_; }
  SessionRuntime& runtime() { return *runtime_; }
  HttpServer& server() { return *server_; }
  int port() const { return server_->port(); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    return c;
  }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<SessionRuntime> runtime_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// A TCP connection to the server, written and read as raw bytes.
class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    std::size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<std::size_t>(n);
    }
    return true;
  }
  // What arrives within `seconds`, stopping early once `until` appears
  // (empty: until the peer closes). closed() says whether it did.
  std::string read(double seconds, const std::string& until = "") {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (true) {
      if (!until.empty() && received_.find(until) != std::string::npos) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[65536];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      received_.append(buffer, static_cast<std::size_t>(n));
    }
    return received_;
  }
  // Takes what was read so far.
  std::string take() { return std::exchange(received_, std::string()); }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

// How many times `needle` occurs in `text`.
inline int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

}  // namespace tessera::serve::testing_served
