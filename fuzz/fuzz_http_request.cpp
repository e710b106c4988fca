// tessera serve's HTTP/1.1 reader (apps/tessera/serve/http_request_parser,
// http_body_decoder): arbitrary bytes read as a connection's stream of
// pipelined requests, heads then bodies, fed in pieces whose sizes the
// input's first byte picks (a request may arrive split anywhere).
//
// Oracles: no crash; a parsed head consumes bytes it was given; a body
// never grows past its limit (inflated gzip included); feeding in pieces
// reads the same requests as feeding all at once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/tessera/serve/http_body_decoder.h"
#include "apps/tessera/serve/http_request_parser.h"

namespace {

using namespace tessera::serve;

void check(bool condition) {
  if (!condition) std::abort();
}

constexpr std::size_t kBodyLimit = 64 << 10;

// Reads requests off `stream` in pieces of `piece` bytes; returns each
// request's path and body (and how the stream ended).
std::vector<std::string> read_requests(std::string_view stream, std::size_t piece) {
  std::vector<std::string> out;
  std::string buffer;
  std::size_t fed = 0;
  const auto more = [&] {
    if (fed >= stream.size()) return false;
    const std::size_t n = std::min(piece, stream.size() - fed);
    buffer.append(stream.substr(fed, n));
    fed += n;
    return true;
  };
  HeadLimits limits;
  limits.max_head_bytes = 4096;
  while (true) {
    HttpRequest request;
    HeadParse head = parse_request_head(buffer, limits, request);
    while (head.state == HeadParse::State::kIncomplete && more())
      head = parse_request_head(buffer, limits, request);
    if (head.state == HeadParse::State::kIncomplete) {
      out.push_back("incomplete head");
      return out;
    }
    if (head.state == HeadParse::State::kInvalid) {
      check(head.error_status >= 400 && !head.error.empty());
      out.push_back("invalid head " + std::to_string(head.error_status));
      return out;
    }
    check(head.consumed > 0 && head.consumed <= buffer.size());
    buffer.erase(0, head.consumed);
    const BodyFraming framing = body_framing(request);
    if (framing.error_status != 0) {
      out.push_back("refused framing " + std::to_string(framing.error_status));
      return out;
    }
    BodyDecoder body(framing, kBodyLimit);
    while (true) {
      buffer.erase(0, body.feed(buffer));
      check(body.body().size() <= kBodyLimit);
      if (body.state() != BodyDecoder::State::kNeedMore || !more()) break;
    }
    if (body.state() != BodyDecoder::State::kDone) {
      out.push_back("body ended " + std::to_string(static_cast<int>(body.state())));
      return out;
    }
    out.push_back(request.method + " " + request.path + " " + body.body());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto whole = read_requests(stream, stream.size() + 1);
  const auto pieces = read_requests(stream, piece);
  check(whole == pieces);
  return 0;
}
