// The regex of a pre-tokenizer "Split" step, over code points.
//
// Patterns are read in the Oniguruma (Ruby syntax) dialect of Hugging Face tokenizers,
// which llama.cpp's pre-tokenizer lists copy: \s is the White_Space property, \d is Nd,
// \w is L|M|N|Pc, \p{..} takes general categories (L, Lu, Nd, ...), '.' is anything but
// '\n', ^ and $ are line anchors, (?i:..) compares simple case foldings. Supported:
// literals and escapes (\t \n \r \f \v \xHH \x{H..} \uHHHH), classes with negation and
// ranges (non-ASCII too), groups ( ) (?: ) (?i: ) (?i) (?> ), alternation, greedy, lazy
// and possessive quantifiers ? * + {n} {n,} {n,m}, lookahead (?= ) (?! ), anchors ^ $ \A
// \z \Z \b \B. Anything else is Unimplemented, naming the construct and its offset:
// backreferences, lookbehind, named groups, nested classes, scripts such as \p{Han}.
//
// Matching is a backtracking machine with leftmost-first priorities; each match attempt
// has a step budget (kDefaultStepBudget executed instructions), far above what the
// tokenizer patterns need (a few per code point) but a bound on catastrophic backtracking.
// The llama3/qwen2/gpt-2 family patterns run on a hand-written matcher instead (see
// has_fast_path()); tests check that it splits exactly as the generic machine does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status/status.h"

namespace tessera::unicode {

namespace regex {
struct Program;
}

class SplitRegex {
 public:
  static constexpr uint64_t kDefaultStepBudget = 50'000'000;

  // Compiles a pre-tokenizer pattern as Hugging Face tokenizers (Oniguruma) and
  // llama.cpp read it. Anything unsupported is Unimplemented naming the construct and
  // its offset; malformed patterns are InvalidArgument.
  static Result<SplitRegex> compile(std::string_view pattern);

  // Leftmost-first matches over code points, non-overlapping, scanning left to right (an
  // empty match never splits). Appends to `pieces` the [begin, end) code-point ranges
  // covering [0, cps.size()) in order: each match and each gap between matches (Hugging
  // Face Split behaviour "Isolated"; llama.cpp's unicode_regex_split keeps gaps too).
  // Should a match attempt exhaust the step budget, that position is treated as not
  // matching (use split_checked() to get an error instead).
  void split(std::span<const char32_t> cps,
             std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

  // The same, but a match attempt that exhausts `step_budget` is ResourceExhausted
  // naming the pattern and the code-point position (pieces then hold what was found
  // before it).
  Status split_checked(std::span<const char32_t> cps,
                       std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                       uint64_t step_budget = kDefaultStepBudget) const;

  // The same with the generic machine even where a fast path exists (for tests and
  // benchmarks).
  Status split_generic(std::span<const char32_t> cps,
                       std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                       uint64_t step_budget = kDefaultStepBudget) const;

  // The match at `start` (leftmost-first), or false; for tests.
  bool match_at(std::span<const char32_t> cps, uint32_t start, uint32_t& end) const;

  const std::string& pattern() const { return pattern_; }
  bool has_fast_path() const { return fast_path_ != FastPath::kNone; }

  SplitRegex(SplitRegex&&) noexcept;
  SplitRegex& operator=(SplitRegex&&) noexcept;
  ~SplitRegex();

 private:
  enum class FastPath { kNone, kGpt2, kLlama3, kQwen2 };
  SplitRegex() = default;

  std::string pattern_;
  std::unique_ptr<const regex::Program> program_;
  FastPath fast_path_ = FastPath::kNone;
};

}  // namespace tessera::unicode
