#include "apps/tessera/serve/http_message.h"

#include <algorithm>

namespace tessera::serve {

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return value;
  return {};
}

bool HttpRequest::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return h.first == name; });
}

bool HttpRequest::keep_alive() const {
  // Connection is a list of tokens ("keep-alive, Upgrade").
  bool close = false, keep = false;
  for (const auto& [key, value] : headers) {
    if (key != "connection") continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view token = rest.substr(0, comma);
      while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
        token.remove_prefix(1);
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
        token.remove_suffix(1);
      if (ascii_iequals(token, "close")) close = true;
      if (ascii_iequals(token, "keep-alive")) keep = true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (close) return false;
  return minor_version >= 1 || keep;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string http_response_head(int status, std::string_view content_type,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               int64_t content_length, bool keep_alive, int minor_version) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += http_reason(status);
  head += "\r\n";
  if (!content_type.empty()) {
    head += "Content-Type: ";
    head += content_type;
    head += "\r\n";
  }
  if (content_length >= 0)
    head += "Content-Length: " + std::to_string(content_length) + "\r\n";
  else if (minor_version >= 1)
    head += "Transfer-Encoding: chunked\r\n";
  for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
  // A body of unknown length to an HTTP/1.0 client ends with the connection.
  const bool keep = keep_alive && (content_length >= 0 || minor_version >= 1);
  head += keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  head += "\r\n";
  return head;
}

std::string http_response_bytes(const HttpResponse& response, bool keep_alive, int minor_version) {
  return http_response_head(response.status, response.content_type, response.headers,
                            static_cast<int64_t>(response.body.size()), keep_alive, minor_version) +
         response.body;
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace tessera::serve
