// The generated Unicode Character Database tables (unicode_tables.cpp, written by
// scripts/gen-unicode-tables.py). Internal to core/unicode: use unicode_data.h and
// normalize.h instead.
#pragma once

#include <cstdint>

namespace tessera::unicode::tables {

inline constexpr int kCategoryCount = 30;
inline constexpr int kBlockShift = 7;

// Property entry bits (see the script's docstring).
inline constexpr uint16_t kCategoryMask = 0x1f;
inline constexpr uint16_t kWhiteSpaceBit = 1u << 5;
inline constexpr uint16_t kNfcNotYesBit = 1u << 6;
inline constexpr int kCombiningClassShift = 8;

extern const char kUnicodeVersion[];
extern const char* const kCategoryNames[kCategoryCount];
extern const uint16_t kPropertyStage1[];
extern const uint16_t kPropertyStage2[];

// Sorted (code point, mapping) pairs, flattened.
extern const uint32_t kLowercaseCount;
extern const uint32_t kLowercase[];
extern const uint32_t kUppercaseCount;
extern const uint32_t kUppercase[];
extern const uint32_t kCaseFoldCount;
extern const uint32_t kCaseFold[];

// Sorted (code point, pool offset, length) triples, flattened; the pool holds the
// full canonical decomposition.
extern const uint32_t kDecompositionCount;
extern const uint32_t kDecompositionIndex[];
extern const uint32_t kDecompositionPool[];

// Sorted keys (first << 21 | second) of the primary composites, and the composites.
extern const uint32_t kCompositionCount;
extern const uint64_t kCompositionKeys[];
extern const uint32_t kCompositionValues[];

inline uint16_t properties(char32_t cp) {
  if (cp >= 0x110000) return 0;  // unassigned (Cn)
  return kPropertyStage2[(static_cast<uint32_t>(kPropertyStage1[cp >> kBlockShift])
                          << kBlockShift) |
                         (cp & ((1u << kBlockShift) - 1))];
}

}  // namespace tessera::unicode::tables
