// Parses an HTTP/1.x request head (RFC 9112) from the bytes a connection
// has received so far, and decides how its body is framed. Strict where
// leniency lets two parsers disagree on where a request ends (request
// smuggling): both Content-Length and Transfer-Encoding, differing
// Content-Lengths, an obsolete line fold, a space before a header's colon
// are all refused. No I/O (fuzzed by fuzz/fuzz_http_request.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "apps/tessera/serve/http_message.h"

namespace tessera::serve {

struct HeadLimits {
  std::size_t max_head_bytes = 16 << 10;  // request line and headers together
  std::size_t max_headers = 100;
};

struct HeadParse {
  enum class State { kIncomplete, kComplete, kInvalid };
  State state = State::kIncomplete;
  std::size_t consumed = 0;  // kComplete: bytes of the head, its blank line included
  int error_status = 0;      // kInvalid: 400, 431, 501 or 505
  std::string error;         // kInvalid: what is wrong, for the client
};

// Parses the head at the start of `buffer` into `request` (method, path,
// query, version, headers). kIncomplete while no blank line has arrived and
// the head is still within the limit; empty lines before the request line
// are skipped (RFC 9112 2.2).
HeadParse parse_request_head(std::string_view buffer, const HeadLimits& limits,
                             HttpRequest& request);

enum class ContentCoding { kIdentity, kGzip, kDeflate };

struct BodyFraming {
  enum class Kind { kNone, kLength, kChunked };
  Kind kind = Kind::kNone;
  uint64_t length = 0;  // kLength: the bytes on the wire
  ContentCoding coding = ContentCoding::kIdentity;
  int error_status = 0;  // non-zero: refuse the request (400, 411, 415, 501)
  std::string error;
};

// How the body of a parsed head is framed and encoded.
BodyFraming body_framing(const HttpRequest& request);

}  // namespace tessera::serve
