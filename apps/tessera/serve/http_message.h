// The HTTP/1.1 messages tessera serve reads and writes: a request as its
// head was parsed (header names lower-cased) plus its decoded body, and a
// whole response. No I/O here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::serve {

struct HttpRequest {
  std::string method;                                        // as sent ("GET", "POST", ...)
  std::string path;                                          // the target without its query
  std::string query;                                         // after '?', undecoded
  int minor_version = 1;                                     // HTTP/1.0 or HTTP/1.1
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;                                          // decoded (de-chunked, inflated)
  std::string peer;  // the client's address, for logs and per-address limits

  // The first value of a header ("" when absent); `name` lower-case.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // Whether the client asked to keep the connection (HTTP/1.1 unless
  // "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
  bool keep_alive() const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
  bool close = false;  // end the connection after it (the body was not read)
};

// "OK", "Not Found", ... ("Unknown" for codes this server never sends).
std::string_view http_reason(int status);
// A response head: the status line and headers, ending in the blank line.
// `content_length` < 0: chunked (HTTP/1.1) or until close (HTTP/1.0).
std::string http_response_head(int status, std::string_view content_type,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               int64_t content_length, bool keep_alive, int minor_version);

// A whole response as it goes on the wire: the head, then the body.
std::string http_response_bytes(const HttpResponse& response, bool keep_alive, int minor_version);
// A JSON response (the content type HttpResponse defaults to).
HttpResponse json_response(int status, std::string body);

// ASCII lower case, for header names and tokens.
std::string ascii_lower(std::string_view text);
// Case-insensitive ASCII equality.
bool ascii_iequals(std::string_view a, std::string_view b);

}  // namespace tessera::serve
