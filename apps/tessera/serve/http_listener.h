// The connections of tessera serve's HTTP API. One thread owns every
// socket that has not yet sent a whole request (an epoll loop): it reads
// heads and bodies as they trickle in, each under a deadline, and answers
// what can be answered from the head alone (a missing key, an unknown
// route, a body over the limit) without reading the body. Only complete
// requests reach the workers, so clients that send slowly, or not at all,
// never hold a worker. After a response the connection returns to the loop
// with the bytes it already holds: pipelined requests are answered in
// order.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/tessera/serve/http_message.h"
#include "apps/tessera/serve/http_request_parser.h"
#include "apps/tessera/serve/http_responder.h"
#include "core/status/status.h"

namespace tessera::serve {

struct ListenerLimits {
  HeadLimits head;
  std::size_t max_body_bytes = 4 << 20;  // decoded (inflated) bytes
  double head_timeout_s = 10;            // a request's first byte to its head's end
  double body_timeout_s = 60;            // the head's end to the body's last byte
  double idle_timeout_s = 60;            // a kept-alive connection between requests
  double write_timeout_s = 60;           // each response write a client does not read
  int max_connections = 4096;
  int max_connections_per_address = 256;
  int workers = 128;              // requests handled at once
  std::size_t max_queued = 1024;  // complete requests waiting for a worker
};

// Decides from a parsed head (no body read yet) whether to answer at once;
// such a response closes the connection when a body was announced.
using HeadCheck = std::function<std::optional<HttpResponse>(const HttpRequest&)>;
// Answers a complete request (on a worker thread).
using RequestHandler = std::function<void(HttpRequest&, HttpResponder&)>;

class HttpListener {
 public:
  HttpListener(ListenerLimits limits, HeadCheck check, RequestHandler handler);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Listens on host:port (0: any free port); says why when it cannot.
  Status bind(const std::string& host, int port);
  int port() const { return port_; }
  // Runs the connection loop on this thread, the workers on their own,
  // until stop(); returns once every worker has finished its request.
  void serve();
  void stop();

  // Connections open now, and of them those waiting for a whole request.
  int open_connections() const { return open_.load(); }

 private:
  struct Connection;
  void loop();
  void accept_all();
  void on_readable(Connection& connection);
  void advance(Connection& connection);
  // Both: true when the connection may go on to its next request now.
  bool answer_early(Connection& connection, const HttpResponse& response);
  // True when the connection went to a worker or is closing.
  bool dispatch(Connection& connection);
  void close_connection(int fd);
  void take_returned();
  void expire(std::chrono::steady_clock::time_point now);
  void worker();
  void watch(Connection& connection);

  ListenerLimits limits_;
  HeadCheck check_;
  RequestHandler handler_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  // Loop thread only.
  std::map<int, std::unique_ptr<Connection>> connections_;
  std::map<std::string, int> per_address_;
  std::chrono::steady_clock::time_point accept_paused_until_{};
  bool accept_paused_ = false;
  // Loop -> workers: complete requests; workers -> loop: connections done.
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Connection*> queued_;
  std::vector<std::pair<Connection*, bool>> returned_;  // keep alive?
  std::vector<std::thread> workers_;
};

}  // namespace tessera::serve
