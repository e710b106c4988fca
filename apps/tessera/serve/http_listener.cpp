#include "apps/tessera/serve/http_listener.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "apps/tessera/serve/http_body_decoder.h"
#include "apps/tessera/serve/openai_api.h"

namespace tessera::serve {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string peer_address(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof text);
  else if (addr.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text,
                sizeof text);
  return text;
}

// Without blocking the loop: a small response fits an empty send buffer.
// False when it did not all go (a client that stopped reading).
bool send_now(int fd, const std::string& bytes) {
  const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n == static_cast<ssize_t>(bytes.size());
}

// What the loop answers itself (the OpenAI error object); it closes the
// connection unless told otherwise.
HttpResponse error_response(int status, const std::string& message) {
  HttpResponse response =
      json_response(status, error_json(message, "invalid_request_error", std::nullopt));
  response.close = true;
  return response;
}

}  // namespace

struct HttpListener::Connection {
  int fd = -1;
  std::string peer;
  std::string in;  // received, not yet consumed
  enum class Phase { kIdle, kHead, kBody, kWorking, kLingering } phase = Phase::kIdle;
  Clock::time_point deadline;
  HttpRequest request;
  std::unique_ptr<BodyDecoder> body;
  bool watched = false;       // in the epoll set
  std::size_t discarded = 0;  // bytes thrown away while lingering
  // Lingering reads no more than this: what the refused request still has
  // on its way (a client sends its whole body before it reads the answer),
  // between 4 and 64 MiB.
  std::size_t linger_limit = 4 << 20;
  uint64_t body_unread = 0;  // a Content-Length body's bytes not yet consumed
};

HttpListener::HttpListener(ListenerLimits limits, HeadCheck check, RequestHandler handler)
    : limits_(limits), check_(std::move(check)), handler_(std::move(handler)) {}

HttpListener::~HttpListener() {
  stop();
  for (auto& [fd, connection] : connections_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status HttpListener::bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0 ||
      found == nullptr)
    return unavailable("cannot listen on " + host + ":" + service +
                       " (not an address of this machine); choose another with --http HOST:PORT");
  std::string why = "not an address of this machine";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    // SO_REUSEADDR only (restart while old connections linger); never
    // SO_REUSEPORT, which would let a second server share the port.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = errno == EADDRINUSE ? "in use" : std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0)
    return unavailable("cannot listen on " + host + ":" + service + " (" + why +
                       "); choose another with --http HOST:PORT");
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(addr).sin6_port
                                           : reinterpret_cast<sockaddr_in&>(addr).sin_port);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return internal_error("cannot create the HTTP event loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return ok_status();
}

void HttpListener::serve() {
  if (listen_fd_ < 0) return;
  for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { worker(); });
  loop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_ready_.notify_all();
  }
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  // Requests still queued when stopping get no answer; close them all.
  queued_.clear();
  returned_.clear();
  for (auto& [fd, connection] : connections_) ::close(fd);
  connections_.clear();
  per_address_.clear();
  open_ = 0;
}

void HttpListener::stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  work_ready_.notify_all();
}

void HttpListener::loop() {
  epoll_event events[256];
  auto last_expiry = Clock::now();
  while (!stopping_) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, 100);
    for (int i = 0; i < n && !stopping_; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        accept_all();
      } else if (fd == wake_fd_) {
        uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof count);
        take_returned();
      } else if (auto it = connections_.find(fd); it != connections_.end()) {
        on_readable(*it->second);
      }
    }
    // Deadlines are checked a few times a second, not after every event.
    if (const auto now = Clock::now(); now - last_expiry >= std::chrono::milliseconds(50)) {
      expire(now);
      last_expiry = now;
    }
  }
}

void HttpListener::watch(Connection& connection) {
  if (connection.watched) return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = connection.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection.fd, &ev);
  connection.watched = true;
}

void HttpListener::accept_all() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop polling the listener for a moment rather
        // than spin on a queue that cannot be taken.
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_ = true;
        accept_paused_until_ = after(0.1);
      }
      return;
    }
    const std::string peer = peer_address(addr);
    const bool too_many = static_cast<int>(connections_.size()) >= limits_.max_connections;
    const bool too_many_here = limits_.max_connections_per_address > 0 &&
                               per_address_[peer] >= limits_.max_connections_per_address;
    if (too_many || too_many_here) {
      HttpResponse busy = error_response(
          503, too_many ? "the server has as many connections open as it takes; retry later"
                        : "this address has as many connections open as the server takes from "
                          "one address (server.max_connections_per_address)");
      busy.headers.emplace_back("Retry-After", "1");
      send_now(fd, http_response_bytes(busy, false, 1));
      ::close(fd);
      continue;
    }
    // Responses go out as written: without this, Nagle's algorithm holds a
    // kept-alive connection's next small response until the client's
    // delayed ACK (about 40 ms).
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    connection->peer = peer;
    connection->deadline = after(limits_.head_timeout_s);
    connection->phase = Connection::Phase::kHead;
    ++per_address_[peer];
    ++open_;
    Connection& c = *connection;
    connections_.emplace(fd, std::move(connection));
    watch(c);
  }
}

void HttpListener::on_readable(Connection& connection) {
  char buffer[64 << 10];
  while (true) {
    const ssize_t n = ::recv(connection.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      if (connection.phase == Connection::Phase::kLingering) {
        // Discarded; a client that keeps sending at full speed is cut off
        // rather than read for the whole lingering time.
        connection.discarded += static_cast<std::size_t>(n);
        if (connection.discarded > connection.linger_limit) return close_connection(connection.fd);
        continue;
      }
      connection.in.append(buffer, static_cast<std::size_t>(n));
      // Stop reading once a head alone is over its limit, or a body's part
      // has arrived: advance() decodes it before more is read.
      if (connection.in.size() >= (64 << 10)) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_connection(connection.fd);  // the client closed (or reset) it
    return;
  }
  advance(connection);
}

void HttpListener::advance(Connection& connection) {
  using Phase = Connection::Phase;
  while (true) {
    if (connection.phase == Phase::kIdle || connection.phase == Phase::kHead) {
      if (connection.in.empty()) return;
      if (connection.phase == Phase::kIdle) {
        connection.phase = Phase::kHead;
        connection.deadline = after(limits_.head_timeout_s);
      }
      HttpRequest request;
      const HeadParse parsed = parse_request_head(connection.in, limits_.head, request);
      if (parsed.state == HeadParse::State::kIncomplete) return;
      if (parsed.state == HeadParse::State::kInvalid) {
        if (answer_early(connection, error_response(parsed.error_status, parsed.error))) continue;
        return;
      }
      connection.in.erase(0, parsed.consumed);
      request.peer = connection.peer;
      const BodyFraming framing = body_framing(request);
      if (framing.error_status != 0) {
        if (answer_early(connection, error_response(framing.error_status, framing.error))) continue;
        return;
      }
      connection.body_unread = framing.kind == BodyFraming::Kind::kLength ? framing.length : 0;
      connection.request = std::move(request);
      if (auto early = check_(connection.request)) {
        // The body was not read: the connection cannot carry another request.
        if (framing.kind != BodyFraming::Kind::kNone) early->close = true;
        if (answer_early(connection, *early)) continue;
        return;
      }
      connection.body = std::make_unique<BodyDecoder>(framing, limits_.max_body_bytes);
      if (connection.body->state() == BodyDecoder::State::kNeedMore && connection.in.empty() &&
          ascii_iequals(connection.request.header("expect"), "100-continue"))
        send_now(connection.fd, "HTTP/1.1 100 Continue\r\n\r\n");
      connection.phase = Phase::kBody;
      connection.deadline = after(limits_.body_timeout_s);
    }
    if (connection.phase != Phase::kBody) return;
    BodyDecoder& body = *connection.body;
    const std::size_t fed = body.feed(connection.in);
    connection.body_unread -= std::min<uint64_t>(fed, connection.body_unread);
    connection.in.erase(0, fed);
    switch (body.state()) {
      case BodyDecoder::State::kNeedMore:
        return;
      case BodyDecoder::State::kTooLarge:
        answer_early(connection, error_response(413, body.error()));
        return;
      case BodyDecoder::State::kInvalid:
        answer_early(connection, error_response(400, body.error()));
        return;
      case BodyDecoder::State::kDone:
        connection.request.body = std::move(body.body());
        connection.body.reset();
        if (dispatch(connection)) return;  // with a worker, or closing
        continue;                          // answered 503 at once: the next request
    }
  }
}

bool HttpListener::answer_early(Connection& connection, const HttpResponse& response) {
  bool keep = !response.close && connection.request.keep_alive();
  // A client that does not read its answers (a pipelined flood of refused
  // requests) is closed rather than answered in part.
  const bool sent = send_now(connection.fd, http_response_bytes(response, keep, 1));
  keep = keep && sent;
  connection.body.reset();
  connection.request = HttpRequest{};
  if (keep) {
    connection.phase = Connection::Phase::kIdle;
    connection.deadline = after(limits_.idle_timeout_s);
    return true;
  }
  // Lingering close: closing with unread bytes in the socket would send a
  // reset that can destroy the response before the client reads it. Stop
  // sending, discard what still arrives for a moment, then close.
  ::shutdown(connection.fd, SHUT_WR);
  const uint64_t on_its_way =
      connection.body_unread - std::min<uint64_t>(connection.in.size(), connection.body_unread);
  connection.linger_limit =
      static_cast<std::size_t>(std::clamp<uint64_t>(on_its_way, 4 << 20, 64 << 20));
  connection.body_unread = 0;
  connection.in.clear();
  connection.in.shrink_to_fit();
  connection.phase = Connection::Phase::kLingering;
  connection.deadline = after(2);
  return false;
}

bool HttpListener::dispatch(Connection& connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_.size() < limits_.max_queued) {
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.fd, nullptr);
      connection.watched = false;
      connection.phase = Connection::Phase::kWorking;
      queued_.push_back(&connection);
      work_ready_.notify_one();
      return true;
    }
  }
  HttpResponse busy = error_response(503, "the server has too many requests waiting; retry later");
  busy.headers.emplace_back("Retry-After", "1");
  busy.close = false;
  return !answer_early(connection, busy);  // kept alive: read the next request
}

void HttpListener::worker() {
  while (true) {
    Connection* connection = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (queued_.empty()) return;
      connection = queued_.front();
      queued_.pop_front();
    }
    HttpRequest& request = connection->request;
    HttpResponder responder(connection->fd, request.minor_version,
                            request.keep_alive() && !stopping_, limits_.write_timeout_s);
    const std::size_t body_bytes = request.body.size();
    try {
      handler_(request, responder);
    } catch (const std::exception& e) {  // out of memory, a bug: this request fails, not the server
      std::fprintf(stderr, "tessera serve: a request failed: %s\n", e.what());
      if (!responder.started())
        responder.send(error_response(500, "the server failed on this request; see its log"));
    }
    if (!responder.started())
      responder.send(error_response(500, "the server wrote no response; see its log"));
    const bool keep = responder.keep_alive() && !stopping_;
    request = HttpRequest{};
    // A large body's buffers (and the JSON parsed from it) go back to the
    // system, not into the allocator's free lists for good.
    if (body_bytes >= (1 << 20)) ::malloc_trim(0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      returned_.emplace_back(connection, keep);
    }
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

void HttpListener::take_returned() {
  std::vector<std::pair<Connection*, bool>> returned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    returned.swap(returned_);
  }
  for (auto [connection, keep] : returned) {
    if (!keep) {
      close_connection(connection->fd);
      continue;
    }
    connection->phase = Connection::Phase::kIdle;
    connection->deadline = after(limits_.idle_timeout_s);
    // An idle connection keeps no buffer a large request grew.
    if (connection->in.empty()) std::string().swap(connection->in);
    watch(*connection);
    advance(*connection);  // a pipelined request may already be here
  }
}

void HttpListener::expire(Clock::time_point now) {
  if (accept_paused_ && now >= accept_paused_until_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
    accept_paused_ = false;
  }
  std::vector<int> late;
  for (auto& [fd, connection] : connections_)
    if (connection->phase != Connection::Phase::kWorking && now >= connection->deadline)
      late.push_back(fd);
  for (const int fd : late) {
    Connection& connection = *connections_.at(fd);
    if (connection.phase == Connection::Phase::kHead ||
        connection.phase == Connection::Phase::kBody) {
      HttpResponse timeout =
          error_response(408, connection.phase == Connection::Phase::kHead
                                  ? "the request head did not arrive within the server's deadline"
                                  : "the request body did not arrive within the server's deadline");
      send_now(fd, http_response_bytes(timeout, false, 1));
    }
    close_connection(fd);
  }
}

void HttpListener::close_connection(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (it->second->watched) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  if (auto count = per_address_.find(it->second->peer); count != per_address_.end())
    if (--count->second <= 0) per_address_.erase(count);
  ::close(fd);
  connections_.erase(it);
  --open_;
}

}  // namespace tessera::serve
