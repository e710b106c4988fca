#include "apps/tessera/serve/http_responder.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

namespace tessera::serve {

bool HttpResponder::write_all(std::string_view data) {
  if (failed_) return false;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(write_timeout_s_));
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd pfd{fd_, POLLOUT, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
      continue;
    }
    break;  // the client closed or reset the connection
  }
  if (!data.empty()) failed_ = true;
  return !failed_;
}

bool HttpResponder::send(const HttpResponse& response) {
  started_ = true;
  if (response.close) keep_alive_ = false;
  return write_all(http_response_bytes(response, keep_alive_, minor_version_));
}

bool HttpResponder::start_stream(int status, std::string_view content_type,
                                 const std::vector<std::pair<std::string, std::string>>& headers) {
  started_ = streaming_ = true;
  if (minor_version_ == 0) keep_alive_ = false;  // the body ends with the connection
  return write_all(
      http_response_head(status, content_type, headers, -1, keep_alive_, minor_version_));
}

bool HttpResponder::write(std::string_view data) {
  if (data.empty()) return !failed_;
  if (minor_version_ == 0) return write_all(data);
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk(size, static_cast<std::size_t>(n));
  chunk += data;
  chunk += "\r\n";
  return write_all(chunk);
}

bool HttpResponder::finish() {
  finished_ = true;
  if (minor_version_ == 0) return !failed_;
  return write_all("0\r\n\r\n");
}

}  // namespace tessera::serve
