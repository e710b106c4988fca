// Unicode canonical normalization (UAX #15): NFD is the full canonical decomposition in
// canonical order (combining marks stably sorted by combining class); NFC then composes
// primary composites (composition exclusions respected) and Hangul syllables. Invalid
// UTF-8 is first decoded with the WHATWG rules (Utf8Errors::kWhatwg), as a JS string or a
// Rust String would hold it, so it comes out as U+FFFD.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::unicode {

std::string nfc(std::string_view utf8);
std::string nfd(std::string_view utf8);

// The same on code points (the result replaces `out`).
void nfd(const std::vector<char32_t>& cps, std::vector<char32_t>& out);
void nfc(const std::vector<char32_t>& cps, std::vector<char32_t>& out);

}  // namespace tessera::unicode
