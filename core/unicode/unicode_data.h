// Unicode character properties (general category, White_Space, simple case mappings and
// folding, canonical combining class) from the generated tables of the Unicode Character
// Database 15.0.0 (scripts/gen-unicode-tables.py). Every lookup is two array reads.
#pragma once

#include <cstdint>

namespace tessera::unicode {

// Bits of flags_of(): the major category of the code point, White_Space, and three
// subcategories the tokenizer patterns ask about.
enum CategoryFlag : uint16_t {
  kLetter = 1u << 0,       // L*
  kNumber = 1u << 1,       // N*
  kPunctuation = 1u << 2,  // P*
  kSymbol = 1u << 3,       // S*
  kMark = 1u << 4,         // M*
  kSeparator = 1u << 5,    // Z*
  kOther = 1u << 6,        // C* (including unassigned Cn and anything past U+10FFFF)
  kWhitespace = 1u << 7,   // the White_Space property (= Oniguruma's \s)
  kUppercase = 1u << 8,    // Lu
  kLowercase = 1u << 9,    // Ll
  kDigit = 1u << 10,       // Nd
};

// The 30 general categories, in the order of the generated tables.
enum class GeneralCategory : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
};
inline constexpr int kGeneralCategoryCount = 30;

uint16_t flags_of(char32_t cp);
GeneralCategory category_of(char32_t cp);
const char* general_category(char32_t cp);  // "Lu", "Nd", ...
const char* general_category_name(GeneralCategory category);
bool is_white_space(char32_t cp);
uint8_t combining_class(char32_t cp);

// Simple (one code point to one) mappings of UnicodeData.txt; unmapped code points map
// to themselves.
char32_t simple_lowercase(char32_t cp);
char32_t simple_uppercase(char32_t cp);
// Simple case folding (CaseFolding.txt statuses C and S), what case-insensitive regex
// matching compares.
char32_t simple_casefold(char32_t cp);

const char* unicode_version();  // "15.0.0"

}  // namespace tessera::unicode
