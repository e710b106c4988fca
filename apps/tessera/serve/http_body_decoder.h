// Decodes a request body as its bytes arrive: de-chunks it and inflates
// gzip or deflate, with the size limit applied to what it decodes as it
// decodes (a 1 MB gzip bomb stops at the limit, never inflated whole).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "apps/tessera/serve/http_request_parser.h"

namespace tessera::serve {

class BodyDecoder {
 public:
  enum class State { kNeedMore, kDone, kInvalid, kTooLarge };

  // `max_bytes` bounds the decoded body and the bytes read off the wire.
  BodyDecoder(const BodyFraming& framing, std::size_t max_bytes);
  ~BodyDecoder();
  BodyDecoder(const BodyDecoder&) = delete;
  BodyDecoder& operator=(const BodyDecoder&) = delete;

  // Takes bytes of the connection; returns how many belong to this body
  // (the rest is the next request's). The body grows in body().
  std::size_t feed(std::string_view bytes);
  State state() const { return state_; }
  const std::string& error() const { return error_; }
  std::string& body() { return body_; }

 private:
  class Inflater;
  void take(std::string_view data);  // decoded-by-framing bytes
  void fail(State state, std::string error);
  std::size_t feed_chunked(std::string_view bytes);

  BodyFraming framing_;
  std::size_t max_bytes_;
  State state_ = State::kNeedMore;
  std::string error_;
  std::string body_;
  uint64_t wire_left_ = 0;  // kLength: bytes still to come
  uint64_t wire_read_ = 0;  // every body byte read (chunk framing included)
  // Chunked framing.
  enum class Chunk { kSize, kData, kDataEnd, kTrailer } chunk_state_ = Chunk::kSize;
  uint64_t chunk_left_ = 0;
  std::string line_;  // a chunk-size or trailer line being read
  std::unique_ptr<Inflater> inflater_;
};

}  // namespace tessera::serve
