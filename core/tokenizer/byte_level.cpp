// Bytes that are printable Latin-1 characters ('!'..'~', '¡'..'¬', '®'..'ÿ')
// stand for themselves; the other 68 take the code points from U+0100 on, in
// byte order. That is the mapping every GPT-2-style vocabulary was built with.
#include "core/tokenizer/byte_level.h"

#include <array>

namespace tessera {
namespace {

bool printable_latin1(int b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

std::string utf8_of(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

struct Alphabet {
  std::array<std::string, 256> spelling;
  std::array<int16_t, 512> byte_of{};  // code points below 0x200 cover the alphabet
  Alphabet() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable_latin1(b) ? static_cast<uint32_t>(b) : next++;
      spelling[static_cast<std::size_t>(b)] = utf8_of(cp);
      byte_of[cp] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::string& byte_level_char(uint8_t b) {
  return alphabet().spelling[b];
}

void append_byte_level(std::string_view bytes, std::string& out) {
  const Alphabet& a = alphabet();
  for (char c : bytes) out += a.spelling[static_cast<unsigned char>(c)];
}

int byte_of_byte_level_char(uint32_t code_point) {
  return code_point < 512 ? alphabet().byte_of[code_point] : -1;
}

std::string bytes_of_byte_level(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (std::size_t pos = 0; pos < piece.size();) {
    const auto lead = static_cast<unsigned char>(piece[pos]);
    // The alphabet lies below U+0200: one or two UTF-8 bytes.
    if (lead >= 0xC0 && lead < 0xE0 && pos + 1 < piece.size()) {
      const uint32_t cp =
          ((lead & 0x1Fu) << 6) | (static_cast<unsigned char>(piece[pos + 1]) & 0x3Fu);
      const int b = byte_of_byte_level_char(cp);
      if (b >= 0) {
        out += static_cast<char>(b);
        pos += 2;
        continue;
      }
    } else if (lead < 0x80) {
      const int b = byte_of_byte_level_char(lead);
      if (b >= 0) {
        out += static_cast<char>(b);
        ++pos;
        continue;
      }
    }
    out += piece[pos++];  // outside the alphabet: kept
  }
  return out;
}

}  // namespace tessera
