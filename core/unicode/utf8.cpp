#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

bool is_continuation(uint8_t byte) {
  return (byte & 0xC0) == 0x80;
}

// Decodes one code point at `pos` the way llama.cpp does (shape only); returns the
// number of bytes used, 1 with U+FFFD for a byte that starts no complete sequence.
size_t decode_llamacpp(std::string_view text, size_t pos, char32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  size_t length = 0;
  char32_t value = 0;
  if (lead < 0x80) {
    cp = lead;
    return 1;
  } else if (lead < 0xC0) {
    length = 0;
  } else if (lead < 0xE0) {
    length = 2, value = lead & 0x1F;
  } else if (lead < 0xF0) {
    length = 3, value = lead & 0x0F;
  } else if (lead < 0xF8) {
    length = 4, value = lead & 0x07;
  }
  if (length == 0 || pos + length > text.size()) {
    cp = kReplacementCharacter;
    return 1;
  }
  for (size_t i = 1; i < length; ++i) {
    if (!is_continuation(byte(i))) {
      cp = kReplacementCharacter;
      return 1;
    }
    value = (value << 6) | (byte(i) & 0x3F);
  }
  cp = value;
  return length;
}

// WHATWG "UTF-8 decoder": the allowed range of the second byte depends on the lead
// (no overlongs, no surrogates, nothing above U+10FFFF); a maximal subpart of a valid
// sequence is one U+FFFD, and the byte that broke it is read again as a new start.
size_t decode_whatwg(std::string_view text, size_t pos, char32_t& cp) {
  const uint8_t lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  size_t length = 0;
  uint8_t lower = 0x80, upper = 0xBF;
  char32_t value = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F;
    if (lead == 0xE0) lower = 0xA0;
    if (lead == 0xED) upper = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07;
    if (lead == 0xF0) lower = 0x90;
    if (lead == 0xF4) upper = 0x8F;
  } else {
    cp = kReplacementCharacter;
    return 1;
  }
  for (size_t i = 1; i < length; ++i) {
    if (pos + i >= text.size()) {
      cp = kReplacementCharacter;
      return i;
    }
    const uint8_t byte = static_cast<uint8_t>(text[pos + i]);
    if (byte < lower || byte > upper) {
      cp = kReplacementCharacter;
      return i;
    }
    lower = 0x80, upper = 0xBF;
    value = (value << 6) | (byte & 0x3F);
  }
  cp = value;
  return length;
}

}  // namespace

void decode_utf8(std::string_view text, std::vector<char32_t>& out, std::vector<uint32_t>* offsets,
                 Utf8Errors errors) {
  out.clear();
  out.reserve(text.size());
  if (offsets) {
    offsets->clear();
    offsets->reserve(text.size() + 1);
  }
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const size_t used = errors == Utf8Errors::kLlamaCpp ? decode_llamacpp(text, pos, cp)
                                                        : decode_whatwg(text, pos, cp);
    out.push_back(cp);
    if (offsets) offsets->push_back(static_cast<uint32_t>(pos));
    pos += used;
  }
  if (offsets) offsets->push_back(static_cast<uint32_t>(text.size()));
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x200000) {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    append_utf8(kReplacementCharacter, out);
  }
}

std::string to_utf8(const char32_t* cps, size_t count) {
  std::string out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) append_utf8(cps[i], out);
  return out;
}

}  // namespace tessera::unicode
