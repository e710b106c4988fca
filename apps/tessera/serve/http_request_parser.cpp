#include "apps/tessera/serve/http_request_parser.h"

#include <charconv>

namespace tessera::serve {
namespace {

// RFC 9110 5.6.2 tchar.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!is_token_char(c)) return false;
  return true;
}

// A header value may hold visible characters, spaces, tabs and obs-text;
// never CR, LF or NUL.
bool is_field_value(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '\r' || u == '\n' || u == 0 || (u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

HeadParse invalid(int status, std::string error) {
  HeadParse parse;
  parse.state = HeadParse::State::kInvalid;
  parse.error_status = status;
  parse.error = std::move(error);
  return parse;
}

// The next line of `text` from `pos` (without its CRLF or LF), advancing
// pos past it; false when no line end has arrived.
bool next_line(std::string_view text, std::size_t& pos, std::string_view& line) {
  const std::size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) return false;
  std::size_t stop = end;
  if (stop > pos && text[stop - 1] == '\r') --stop;
  line = text.substr(pos, stop - pos);
  pos = end + 1;
  return true;
}

HeadParse parse_request_line(std::string_view line, HttpRequest& request) {
  const std::size_t first = line.find(' ');
  const std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last)
    return invalid(400, "the request line is not 'METHOD /path HTTP/1.1'");
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, last - first - 1);
  const std::string_view version = line.substr(last + 1);
  if (!is_token(method)) return invalid(400, "the request method is not a token");
  if (target.empty() || target.front() != '/' || target.find(' ') != std::string_view::npos)
    return invalid(400, "the request target must be a path starting with '/'");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return invalid(400, "the request target holds a control character");
  if (version == "HTTP/1.1")
    request.minor_version = 1;
  else if (version == "HTTP/1.0")
    request.minor_version = 0;
  else if (version.substr(0, 5) == "HTTP/")
    return invalid(505, "only HTTP/1.0 and HTTP/1.1 are served");
  else
    return invalid(400, "the request line does not end in an HTTP version");
  request.method = std::string(method);
  const std::size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  request.query =
      question == std::string_view::npos ? "" : std::string(target.substr(question + 1));
  HeadParse ok;
  ok.state = HeadParse::State::kComplete;
  return ok;
}

}  // namespace

HeadParse parse_request_head(std::string_view buffer, const HeadLimits& limits,
                             HttpRequest& request) {
  std::size_t pos = 0;
  // Empty lines before a request line (a client's stray CRLF after a body).
  while (pos < buffer.size() && (buffer[pos] == '\r' || buffer[pos] == '\n')) ++pos;
  const std::string_view view =
      buffer.substr(0, std::min(buffer.size(), pos + limits.max_head_bytes));
  std::string_view line;
  std::size_t at = pos;
  if (!next_line(view, at, line)) {
    if (buffer.size() - pos >= limits.max_head_bytes)
      return invalid(431, "the request line is longer than " +
                              std::to_string(limits.max_head_bytes) + " bytes");
    return {};
  }
  // Parse only once the whole head is here: the blank line ends it.
  std::size_t scan = at;
  std::string_view header_line;
  bool complete = false;
  std::size_t header_count = 0;
  while (next_line(view, scan, header_line)) {
    if (header_line.empty()) {
      complete = true;
      break;
    }
    if (++header_count > limits.max_headers)
      return invalid(431, "more than " + std::to_string(limits.max_headers) + " header fields");
  }
  if (!complete) {
    if (buffer.size() - pos >= limits.max_head_bytes)
      return invalid(431, "the request head is longer than " +
                              std::to_string(limits.max_head_bytes) + " bytes");
    return {};
  }
  request = HttpRequest{};
  HeadParse parsed = parse_request_line(line, request);
  if (parsed.state != HeadParse::State::kComplete) return parsed;
  while (next_line(view, at, header_line) && !header_line.empty()) {
    if (header_line.front() == ' ' || header_line.front() == '\t')
      return invalid(400, "obsolete header line folding is not accepted");
    const std::size_t colon = header_line.find(':');
    if (colon == std::string_view::npos) return invalid(400, "a header line has no ':'");
    const std::string_view name = header_line.substr(0, colon);
    if (!is_token(name)) return invalid(400, "a header name is not a token (no spaces before ':')");
    const std::string_view value = trim_ows(header_line.substr(colon + 1));
    if (!is_field_value(value)) return invalid(400, "a header value holds a control character");
    request.headers.emplace_back(ascii_lower(name), std::string(value));
  }
  if (request.minor_version == 1 && !request.has_header("host"))
    return invalid(400, "an HTTP/1.1 request needs a Host header");
  parsed.consumed = at;
  return parsed;
}

BodyFraming body_framing(const HttpRequest& request) {
  BodyFraming framing;
  auto refuse = [&](int status, std::string error) {
    framing.error_status = status;
    framing.error = std::move(error);
    return framing;
  };
  bool has_length = false, has_transfer = false;
  uint64_t length = 0;
  for (const auto& [name, value] : request.headers) {
    if (name == "content-length") {
      uint64_t parsed = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        return refuse(400, "Content-Length is not a decimal number of bytes");
      if (has_length && parsed != length) return refuse(400, "two different Content-Lengths");
      has_length = true;
      length = parsed;
    } else if (name == "transfer-encoding") {
      if (has_transfer || !ascii_iequals(value, "chunked"))
        return refuse(501, "the only Transfer-Encoding served is 'chunked'");
      has_transfer = true;
    } else if (name == "content-encoding") {
      if (ascii_iequals(value, "gzip") || ascii_iequals(value, "x-gzip"))
        framing.coding = ContentCoding::kGzip;
      else if (ascii_iequals(value, "deflate"))
        framing.coding = ContentCoding::kDeflate;
      else if (!ascii_iequals(value, "identity"))
        return refuse(415, "Content-Encoding '" + value.substr(0, 32) +
                               "' is not served (gzip, deflate or identity)");
    }
  }
  if (has_length && has_transfer)
    return refuse(400, "a request may not carry both Content-Length and Transfer-Encoding");
  if (has_transfer) {
    framing.kind = BodyFraming::Kind::kChunked;
  } else if (has_length && length > 0) {
    framing.kind = BodyFraming::Kind::kLength;
    framing.length = length;
  }
  return framing;
}

}  // namespace tessera::serve
