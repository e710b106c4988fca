// Writes one response on a connection: whole, or streamed in chunks (the
// server-sent events of a streamed completion). Every write has a
// deadline, so a client that stops reading frees its worker.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/tessera/serve/http_message.h"

namespace tessera::serve {

class HttpResponder {
 public:
  HttpResponder(int fd, int minor_version, bool keep_alive, double write_timeout_s)
      : fd_(fd),
        minor_version_(minor_version),
        keep_alive_(keep_alive),
        write_timeout_s_(write_timeout_s) {}

  // The whole response; false when the client could not be written to.
  bool send(const HttpResponse& response);
  // A response whose body follows in write() calls (chunked on HTTP/1.1).
  bool start_stream(int status, std::string_view content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers);
  bool write(std::string_view data);
  // The stream's end (the last chunk).
  bool finish();

  bool started() const { return started_; }
  bool failed() const { return failed_; }
  // Whether the connection may carry another request after this response.
  bool keep_alive() const { return keep_alive_ && !failed_ && (!streaming_ || finished_); }

 private:
  bool write_all(std::string_view data);

  int fd_;
  int minor_version_;
  bool keep_alive_;
  double write_timeout_s_;
  bool started_ = false, streaming_ = false, finished_ = false, failed_ = false;
};

}  // namespace tessera::serve
