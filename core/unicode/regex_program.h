// The compiled form of a SplitRegex pattern: character sets and the instructions of a
// backtracking machine. Internal to core/unicode (regex_compiler.cpp writes it,
// regex_matcher.cpp runs it).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tessera::unicode::regex {

// One term of a character class: code point ranges, general categories (bit i =
// GeneralCategory i) and the White_Space property, optionally negated (\P{L}, \S, \D).
struct ClassAtom {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  uint32_t categories = 0;
  bool white_space = false;
  bool negated = false;

  bool matches(char32_t cp) const;
};

// A character class: the union of its atoms, optionally negated; under (?i) it also
// matches every code point whose simple case folding equals that of a member.
class CharSet {
 public:
  CharSet(std::vector<ClassAtom> atoms, bool negated, bool case_insensitive);

  bool matches(char32_t cp) const {
    if (cp < 0x10000) return (bmp_[cp >> 6] >> (cp & 63)) & 1;
    return matches_slow(cp);
  }

 private:
  bool matches_raw(char32_t cp) const;
  bool matches_slow(char32_t cp) const;

  std::vector<ClassAtom> atoms_;
  bool negated_;
  bool case_insensitive_;
  std::vector<uint64_t> bmp_;  // the answer for every code point below U+10000
};

enum class Op : uint8_t {
  kSet,              // consume one code point in sets[a]
  kSplit,            // try a, on failure b
  kJump,             // go to a
  kMatch,            // success (ends the program or a sub-program)
  kLookahead,        // sub-program at pc+1 must match here (b: the instruction after it)
  kNegLookahead,     // sub-program at pc+1 must not match here
  kAtomic,           // run sub-program at pc+1 once, keep its first match, continue at b
  kLoopEnter,        // register a = position (undone on backtracking)
  kLoopCheck,        // fail when the loop body matched empty (position == register a)
  kLineStart,        // ^
  kLineEnd,          // $
  kTextStart,        // \A
  kTextEnd,          // \z
  kTextEndNewline,   // \Z
  kWordBoundary,     // \b
  kNotWordBoundary,  // \B
};

struct Instruction {
  Op op;
  uint32_t a = 0;
  uint32_t b = 0;
};

struct Program {
  std::vector<CharSet> sets;
  std::vector<Instruction> code;  // starts at 0
  uint32_t registers = 0;
};

}  // namespace tessera::unicode::regex
