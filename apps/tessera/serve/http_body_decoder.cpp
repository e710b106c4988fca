#include "apps/tessera/serve/http_body_decoder.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace tessera::serve {

// zlib's streaming inflate, with gzip (RFC 1952) or zlib-wrapped deflate
// (RFC 1950, what "deflate" means in HTTP).
class BodyDecoder::Inflater {
 public:
  explicit Inflater(ContentCoding coding) {
    std::memset(&stream_, 0, sizeof stream_);
    ok_ =
        inflateInit2(&stream_, coding == ContentCoding::kGzip ? 16 + MAX_WBITS : MAX_WBITS) == Z_OK;
  }
  ~Inflater() {
    if (ok_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  static constexpr int kOverLimit = 1000;  // not a zlib code
  // Inflates `in` onto `out`, stopping as soon as out would pass `limit`.
  // Returns Z_OK (more may follow), Z_STREAM_END, kOverLimit, or a zlib error.
  int inflate_into(std::string_view in, std::string& out, std::size_t limit) {
    if (!ok_) return Z_MEM_ERROR;
    if (ended_) return in.empty() ? Z_STREAM_END : Z_DATA_ERROR;  // bytes after the end
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    stream_.avail_in = static_cast<uInt>(in.size());
    unsigned char buffer[16 << 10];
    while (true) {
      stream_.next_out = buffer;
      stream_.avail_out = sizeof buffer;
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      const std::size_t produced = sizeof buffer - stream_.avail_out;
      if (out.size() + produced > limit) return kOverLimit;
      out.append(reinterpret_cast<const char*>(buffer), produced);
      if (rc == Z_STREAM_END) {
        ended_ = true;
        return stream_.avail_in == 0 ? Z_STREAM_END : Z_DATA_ERROR;
      }
      if (rc == Z_BUF_ERROR && stream_.avail_in == 0) return Z_OK;  // needs more input
      if (rc != Z_OK) return rc;
      if (stream_.avail_in == 0 && stream_.avail_out != 0) return Z_OK;
    }
  }
  bool ended() const { return ended_; }

 private:
  z_stream stream_;
  bool ok_ = false;
  bool ended_ = false;
};

BodyDecoder::BodyDecoder(const BodyFraming& framing, std::size_t max_bytes)
    : framing_(framing), max_bytes_(max_bytes) {
  if (framing_.coding != ContentCoding::kIdentity)
    inflater_ = std::make_unique<Inflater>(framing_.coding);
  switch (framing_.kind) {
    case BodyFraming::Kind::kNone:
      state_ = State::kDone;
      break;
    case BodyFraming::Kind::kLength:
      if (framing_.length > max_bytes_)
        fail(State::kTooLarge, "the body is " + std::to_string(framing_.length) +
                                   " bytes; this server takes at most " +
                                   std::to_string(max_bytes_) + " (server.max_body_bytes)");
      wire_left_ = framing_.length;
      break;
    case BodyFraming::Kind::kChunked:
      break;
  }
  if (state_ == State::kDone && inflater_) fail(State::kInvalid, "an encoded body is empty");
}

BodyDecoder::~BodyDecoder() = default;

void BodyDecoder::fail(State state, std::string error) {
  state_ = state;
  error_ = std::move(error);
}

void BodyDecoder::take(std::string_view data) {
  if (state_ != State::kNeedMore && state_ != State::kDone) return;
  if (!inflater_) {
    if (body_.size() + data.size() > max_bytes_)
      return fail(State::kTooLarge, "the body is longer than this server takes (" +
                                        std::to_string(max_bytes_) +
                                        " bytes, server.max_body_bytes)");
    body_.append(data);
    return;
  }
  const int rc = inflater_->inflate_into(data, body_, max_bytes_);
  if (rc == Inflater::kOverLimit) {
    body_.clear();
    body_.shrink_to_fit();
    return fail(State::kTooLarge, "the body inflates past " + std::to_string(max_bytes_) +
                                      " bytes (server.max_body_bytes); it was not read further");
  }
  if (rc != Z_OK && rc != Z_STREAM_END)
    fail(State::kInvalid,
         "the body is not valid " +
             std::string(framing_.coding == ContentCoding::kGzip ? "gzip" : "deflate") + " data");
}

std::size_t BodyDecoder::feed(std::string_view bytes) {
  if (state_ != State::kNeedMore) return 0;
  std::size_t used = 0;
  if (framing_.kind == BodyFraming::Kind::kLength) {
    used = static_cast<std::size_t>(std::min<uint64_t>(wire_left_, bytes.size()));
    wire_left_ -= used;
    take(bytes.substr(0, used));
    if (state_ == State::kNeedMore && wire_left_ == 0) state_ = State::kDone;
  } else {
    used = feed_chunked(bytes);
  }
  if (state_ == State::kDone && inflater_ && !inflater_->ended())
    fail(State::kInvalid, "the encoded body ends before its compressed stream does");
  return used;
}

std::size_t BodyDecoder::feed_chunked(std::string_view bytes) {
  std::size_t pos = 0;
  // Chunk framing counts against the limit too: a body of empty chunk
  // extensions must not grow without bound.
  const auto over_wire = [&] { return wire_read_ > max_bytes_ + (64 << 10); };
  while (pos < bytes.size() && state_ == State::kNeedMore) {
    if (chunk_state_ == Chunk::kData) {
      const auto n = static_cast<std::size_t>(std::min<uint64_t>(chunk_left_, bytes.size() - pos));
      take(bytes.substr(pos, n));
      pos += n;
      wire_read_ += n;
      chunk_left_ -= n;
      if (chunk_left_ == 0) chunk_state_ = Chunk::kDataEnd;
      continue;
    }
    // A line: the chunk size, the CRLF after data, or a trailer.
    const char c = bytes[pos++];
    ++wire_read_;
    if (over_wire()) {
      fail(State::kTooLarge, "the chunked body is longer than this server takes");
      break;
    }
    if (c != '\n') {
      if (line_.size() > 1024) {
        fail(State::kInvalid, "a chunk-size or trailer line is too long");
        break;
      }
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    std::string line = std::move(line_);
    line_.clear();
    if (chunk_state_ == Chunk::kDataEnd) {
      if (!line.empty()) {
        fail(State::kInvalid, "a chunk's data is longer than its size says");
        break;
      }
      chunk_state_ = Chunk::kSize;
    } else if (chunk_state_ == Chunk::kSize) {
      const std::string size = line.substr(0, line.find(';'));  // extensions ignored
      uint64_t value = 0;
      std::size_t digits = 0;
      for (char h : size) {
        int d = -1;
        if (h >= '0' && h <= '9') d = h - '0';
        if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
        if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
        if (d < 0 || ++digits > 15) {
          d = -1;
          value = UINT64_MAX;
          break;
        }
        value = value * 16 + static_cast<uint64_t>(d);
      }
      if (digits == 0 || value == UINT64_MAX) {
        fail(State::kInvalid, "a chunk size is not a hexadecimal number");
        break;
      }
      if (value > max_bytes_) {
        fail(State::kTooLarge, "a chunk is larger than this server takes (" +
                                   std::to_string(max_bytes_) + " bytes, server.max_body_bytes)");
        break;
      }
      chunk_left_ = value;
      chunk_state_ = value == 0 ? Chunk::kTrailer : Chunk::kData;
    } else if (line.empty()) {  // the blank line after the trailers
      state_ = State::kDone;
    }
  }
  return pos;
}

}  // namespace tessera::serve
