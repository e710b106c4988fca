// UTF-8 <-> code points, with the two treatments of invalid bytes that tokenizers meet.
//
// kLlamaCpp (the default: GGUF tokenization must equal llama.cpp's unicode_cpts_from_utf8)
// checks only the shape of a sequence: a lead byte 0xC0-0xF7 followed by the right number
// of continuation bytes (10xxxxxx) decodes to its value, even when it is overlong
// (C0 80 -> U+0000), a surrogate (ED A0 80 -> U+D800) or above U+10FFFF (F4 90 80 80 ->
// U+110000, up to U+1FFFFF from F7). Any other byte - a stray continuation byte,
// 0xF8-0xFF, a lead byte whose sequence is cut short - becomes one U+FFFD and decoding
// resumes at the next byte, so "E2 82" gives two U+FFFD.
//
// kWhatwg is the WHATWG Encoding Standard's decoder (TextDecoder with fatal=false, and so
// the JS strings transformers.js tokenizes): only shortest-form, in-range, non-surrogate
// sequences decode; a maximal subpart of a valid sequence ("E2 82" cut short) becomes ONE
// U+FFFD, every other bad byte its own U+FFFD. The two agree on valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::unicode {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

enum class Utf8Errors { kLlamaCpp, kWhatwg };

// Replaces `out` with the code points of `text`. `offsets` (optional) gets the byte offset
// of each code point plus a final entry = text.size().
void decode_utf8(std::string_view text, std::vector<char32_t>& out,
                 std::vector<uint32_t>* offsets = nullptr,
                 Utf8Errors errors = Utf8Errors::kLlamaCpp);

// Appends the UTF-8 form of `cp`. Surrogates and values up to U+1FFFFF get the 3- and
// 4-byte forms the kLlamaCpp decoder reads them from (so decoding then encoding keeps
// those bytes); anything larger becomes U+FFFD.
void append_utf8(char32_t cp, std::string& out);

// The UTF-8 text of a run of code points.
std::string to_utf8(const char32_t* cps, size_t count);

}  // namespace tessera::unicode
