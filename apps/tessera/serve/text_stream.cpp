#include "apps/tessera/serve/text_stream.h"

#include <algorithm>

namespace tessera::serve {
namespace {

// Bytes at the end of `text` that begin a UTF-8 character not yet complete.
std::size_t incomplete_tail(const std::string& text) {
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= std::min<std::size_t>(3, n); ++back) {
    const auto byte = static_cast<unsigned char>(text[n - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

}  // namespace

TextStream::TextStream(const Tokenizer& tokenizer, int32_t previous, std::vector<std::string> stop)
    : tokenizer_(tokenizer), previous_(previous), stop_(std::move(stop)) {
  stop_.erase(std::remove(stop_.begin(), stop_.end(), std::string()), stop_.end());
}

std::size_t TextStream::releasable() const {
  std::size_t keep = incomplete_tail(held_);
  // Hold back the longest tail that begins some stop string.
  for (const std::string& stop : stop_)
    for (std::size_t len = std::min(stop.size() - 1, held_.size()); len > keep; --len)
      if (held_.compare(held_.size() - len, len, stop, 0, len) == 0) {
        keep = len;
        break;
      }
  return held_.size() - keep;
}

std::string TextStream::push(int32_t token) {
  if (stopped_) return {};
  held_ += tokenizer_.decode_token(previous_, token);
  previous_ = token;
  std::size_t cut = std::string::npos;
  for (const std::string& stop : stop_) cut = std::min(cut, held_.find(stop));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  const std::size_t ready = releasable();
  std::string out = held_.substr(0, ready);
  held_.erase(0, ready);
  return out;
}

std::string TextStream::finish() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tessera::serve
