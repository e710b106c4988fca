// The GPT-2 byte alphabet: each of the 256 byte values as one printable code
// point, so byte-level BPE vocabularies are text ("Ġ" is the space byte).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// The UTF-8 text of byte `b`'s code point in the alphabet.
const std::string& byte_level_char(uint8_t b);

// Appends the alphabet spelling of every byte of `bytes`.
void append_byte_level(std::string_view bytes, std::string& out);

// The byte a code point of the alphabet stands for, or -1.
int byte_of_byte_level_char(uint32_t code_point);

// The bytes a byte-level piece spells; characters outside the alphabet are
// kept as they are (an added token's text, say).
std::string bytes_of_byte_level(std::string_view piece);

}  // namespace tessera
