#include "core/unicode/unicode_data.h"

#include <algorithm>
#include <array>

#include "core/unicode/unicode_tables.h"

namespace tessera::unicode {
namespace {

constexpr uint16_t flags_of_category(GeneralCategory category) {
  using G = GeneralCategory;
  switch (category) {
    case G::Lu:
      return kLetter | kUppercase;
    case G::Ll:
      return kLetter | kLowercase;
    case G::Lt:
    case G::Lm:
    case G::Lo:
      return kLetter;
    case G::Mn:
    case G::Mc:
    case G::Me:
      return kMark;
    case G::Nd:
      return kNumber | kDigit;
    case G::Nl:
    case G::No:
      return kNumber;
    case G::Pc:
    case G::Pd:
    case G::Ps:
    case G::Pe:
    case G::Pi:
    case G::Pf:
    case G::Po:
      return kPunctuation;
    case G::Sm:
    case G::Sc:
    case G::Sk:
    case G::So:
      return kSymbol;
    case G::Zs:
    case G::Zl:
    case G::Zp:
      return kSeparator;
    default:
      return kOther;
  }
}

constexpr std::array<uint16_t, kGeneralCategoryCount> kFlagsOfCategory = [] {
  std::array<uint16_t, kGeneralCategoryCount> flags{};
  for (int i = 0; i < kGeneralCategoryCount; ++i)
    flags[i] = flags_of_category(static_cast<GeneralCategory>(i));
  return flags;
}();

// Binary search in a flattened sorted (code point, value) array.
char32_t lookup_mapping(const uint32_t* pairs, uint32_t count, char32_t cp) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (pairs[2 * mid] < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < count && pairs[2 * lo] == cp ? pairs[2 * lo + 1] : cp;
}

}  // namespace

uint16_t flags_of(char32_t cp) {
  const uint16_t properties = tables::properties(cp);
  return kFlagsOfCategory[properties & tables::kCategoryMask] |
         ((properties & tables::kWhiteSpaceBit) ? kWhitespace : 0);
}

GeneralCategory category_of(char32_t cp) {
  return static_cast<GeneralCategory>(tables::properties(cp) & tables::kCategoryMask);
}

const char* general_category_name(GeneralCategory category) {
  return tables::kCategoryNames[static_cast<int>(category)];
}

const char* general_category(char32_t cp) {
  return general_category_name(category_of(cp));
}

bool is_white_space(char32_t cp) {
  return (tables::properties(cp) & tables::kWhiteSpaceBit) != 0;
}

uint8_t combining_class(char32_t cp) {
  return static_cast<uint8_t>(tables::properties(cp) >> tables::kCombiningClassShift);
}

char32_t simple_lowercase(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return lookup_mapping(tables::kLowercase, tables::kLowercaseCount, cp);
}

char32_t simple_uppercase(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  return lookup_mapping(tables::kUppercase, tables::kUppercaseCount, cp);
}

char32_t simple_casefold(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return lookup_mapping(tables::kCaseFold, tables::kCaseFoldCount, cp);
}

const char* unicode_version() {
  return tables::kUnicodeVersion;
}

}  // namespace tessera::unicode
