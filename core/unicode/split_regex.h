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

// How to read a pattern. kOniguruma is Hugging Face tokenizers' meaning. kLlamaCpp
// reproduces what llama.cpp's unicode_regex_split does on top of it: a pattern without a
// \p{..} category runs through std::wregex on text whose non-ASCII White_Space code
// points were replaced by U+000B, so they still match \s but no longer a literal or a
// range that contains them (deepseek-llm's and deepseek-coder's [一-龥ࠀ-一가-퟿]+ covers
// U+3000 and U+2028). Patterns with a category run the same in both dialects.
enum class RegexDialect { kOniguruma, kLlamaCpp };

class SplitRegex {
 public:
  static constexpr uint64_t kDefaultStepBudget = 50'000'000;

  // Compiles a pre-tokenizer pattern as Hugging Face tokenizers (Oniguruma) and
  // llama.cpp read it. Anything unsupported is Unimplemented naming the construct and
  // its offset; malformed patterns are InvalidArgument.
  static Result<SplitRegex> compile(std::string_view pattern,
                                    RegexDialect dialect = RegexDialect::kOniguruma);

  // Leftmost-first matches over code points, non-overlapping, scanning left to right (an
  // empty match never splits). Appends to `pieces` the [begin, end) code-point ranges
  // covering [0, cps.size()) in order: each match and each gap between matches (Hugging
  // Face Split behaviour "Isolated"; llama.cpp's unicode_regex_split keeps gaps too).
  // Should a match attempt exhaust its step budget (kDefaultStepBudget, or 64 steps per
  // code point of a longer text), that position is treated as not matching (use
  // split_checked() to get an error instead).
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
  enum class FastPath { kNone, kGpt2, kLlama3 };
  SplitRegex() = default;

  std::span<const char32_t> text_to_match(std::span<const char32_t> cps,
                                          std::vector<char32_t>& storage) const;
  Status run_generic(std::span<const char32_t> cps,
                     std::vector<std::pair<uint32_t, uint32_t>>& pieces, uint64_t step_budget,
                     bool stop_on_budget) const;
  void split_fast(std::span<const char32_t> cps,
                  std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

  std::string pattern_;
  std::unique_ptr<const regex::Program> program_;
  FastPath fast_path_ = FastPath::kNone;
  bool non_ascii_space_as_vt_ = false;  // RegexDialect::kLlamaCpp without a category
  int fast_path_variant_ = 0;           // index into the fast-path table of split_regex.cpp
};

}  // namespace tessera::unicode
