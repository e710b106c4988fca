#include "core/unicode/split_regex.h"

#include <algorithm>
#include <string>

#include "core/unicode/pretokenizer_fast_paths.h"
#include "core/unicode/regex_compiler.h"
#include "core/unicode/regex_matcher.h"
#include "core/unicode/regex_parser.h"
#include "core/unicode/unicode_data.h"

namespace tessera::unicode {

SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;
SplitRegex::~SplitRegex() = default;

namespace {

using fast_path::Contractions;

constexpr const char* kGpt2Body =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3Tail =
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Tail =
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
constexpr const char* kFoldedContractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr const char* kAsciiContractions =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

// The patterns with a hand-written matcher: GPT-2 as llama.cpp and as Hugging Face write
// it, Llama 3 and Qwen2 as their tokenizer.json and as llama.cpp's rewrite write them.
struct FastPathEntry {
  std::string pattern;
  bool gpt2;
  fast_path::Gpt2Options gpt2_options;
  fast_path::Llama3Options llama3_options;
};

const std::vector<FastPathEntry>& fast_path_table() {
  static const auto* table = new std::vector<FastPathEntry>{
      {kGpt2Body, true, {Contractions::kExact, false}, {}},
      {std::string(kGpt2Body) + "|\\s+", true, {Contractions::kExact, true}, {}},
      {std::string(kFoldedContractions) + kLlama3Tail, false, {}, {Contractions::kCaseFold, 3}},
      {std::string(kAsciiContractions) + kLlama3Tail, false, {}, {Contractions::kAsciiCase, 3}},
      {std::string(kFoldedContractions) + kQwen2Tail, false, {}, {Contractions::kCaseFold, 1}},
      {std::string(kAsciiContractions) + kQwen2Tail, false, {}, {Contractions::kAsciiCase, 1}},
  };
  return *table;
}

// llama.cpp's test for "the pattern uses a Unicode category" (unicode_regex_split).
bool has_llamacpp_category(std::string_view pattern) {
  for (std::string_view category : {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}", "\\p{Lu}",
                                    "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"}) {
    if (pattern.find(category) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

Result<SplitRegex> SplitRegex::compile(std::string_view pattern, RegexDialect dialect) {
  auto ast = regex::parse_pattern(pattern);
  if (!ast.ok()) return ast.status();
  auto program = regex::compile_program(std::move(ast).value(), pattern);
  if (!program.ok()) return program.status();
  SplitRegex compiled;
  compiled.pattern_ = std::string(pattern);
  compiled.program_ = std::make_unique<const regex::Program>(std::move(program).value());
  compiled.non_ascii_space_as_vt_ =
      dialect == RegexDialect::kLlamaCpp && !has_llamacpp_category(pattern);
  const auto& table = fast_path_table();
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].pattern != pattern || compiled.non_ascii_space_as_vt_) continue;
    compiled.fast_path_ = table[i].gpt2 ? FastPath::kGpt2 : FastPath::kLlama3;
    compiled.fast_path_variant_ = static_cast<int>(i);
  }
  return compiled;
}

namespace {

// Appends the gap [gap_begin, begin) (when non-empty) and the match [begin, end).
void add_piece(std::vector<std::pair<uint32_t, uint32_t>>& pieces, uint32_t& gap_begin,
               uint32_t begin, uint32_t end) {
  if (begin > gap_begin) pieces.emplace_back(gap_begin, begin);
  pieces.emplace_back(begin, end);
  gap_begin = end;
}

}  // namespace

std::span<const char32_t> SplitRegex::text_to_match(std::span<const char32_t> cps,
                                                    std::vector<char32_t>& storage) const {
  if (!non_ascii_space_as_vt_) return cps;
  storage.assign(cps.begin(), cps.end());
  for (char32_t& cp : storage)
    if (cp >= 0x80 && is_white_space(cp)) cp = U'\v';
  return storage;
}

Status SplitRegex::run_generic(std::span<const char32_t> cps,
                               std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                               uint64_t step_budget, bool stop_on_budget) const {
  regex::Matcher matcher(*program_);
  const uint32_t size = static_cast<uint32_t>(cps.size());
  uint32_t gap_begin = 0;
  uint32_t pos = 0;
  while (pos < size) {
    if (!program_->first.may_start(cps[pos], program_->sets)) {
      ++pos;
      continue;
    }
    uint32_t end = 0;
    uint64_t budget = step_budget;
    const auto outcome = matcher.match_at(cps, pos, end, budget);
    if (outcome == regex::MatchOutcome::kBudgetExhausted && stop_on_budget) {
      if (size > gap_begin) pieces.emplace_back(gap_begin, size);
      return resource_exhausted("pattern '" + pattern_ + "' ran out of its step budget (" +
                                std::to_string(step_budget) + ") at code point " +
                                std::to_string(pos) + " of " + std::to_string(size) +
                                ": catastrophic backtracking; simplify the pattern");
    }
    if (outcome == regex::MatchOutcome::kMatched && end > pos) {
      add_piece(pieces, gap_begin, pos, end);
      pos = end;
    } else {
      ++pos;
    }
  }
  if (size > gap_begin) pieces.emplace_back(gap_begin, size);
  return ok_status();
}

Status SplitRegex::split_generic(std::span<const char32_t> cps,
                                 std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                                 uint64_t step_budget) const {
  std::vector<char32_t> storage;
  return run_generic(text_to_match(cps, storage), pieces, step_budget, true);
}

Status SplitRegex::split_checked(std::span<const char32_t> cps,
                                 std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                                 uint64_t step_budget) const {
  if (fast_path_ != FastPath::kNone) {
    split_fast(cps, pieces);
    return ok_status();
  }
  return split_generic(cps, pieces, step_budget);
}

void SplitRegex::split(std::span<const char32_t> cps,
                       std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  if (fast_path_ != FastPath::kNone) {
    split_fast(cps, pieces);
    return;
  }
  std::vector<char32_t> storage;
  // Per match attempt: the default budget, or more on texts long enough that a plain
  // greedy run over them could need it (a tokenizer pattern takes a few steps per code
  // point), so split() gives up only on real catastrophic backtracking.
  const uint64_t budget = std::max<uint64_t>(kDefaultStepBudget, 64 * uint64_t{cps.size()});
  (void)run_generic(text_to_match(cps, storage), pieces, budget, false);
}

void SplitRegex::split_fast(std::span<const char32_t> cps,
                            std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  const FastPathEntry& entry = fast_path_table()[fast_path_variant_];
  if (fast_path_ == FastPath::kGpt2) {
    fast_path::split_gpt2(cps, entry.gpt2_options, pieces);
  } else {
    fast_path::split_llama3(cps, entry.llama3_options, pieces);
  }
}

bool SplitRegex::match_at(std::span<const char32_t> cps, uint32_t start, uint32_t& end) const {
  std::vector<char32_t> storage;
  const auto text = text_to_match(cps, storage);
  regex::Matcher matcher(*program_);
  uint64_t budget = kDefaultStepBudget;
  return matcher.match_at(text, start, end, budget) == regex::MatchOutcome::kMatched;
}

}  // namespace tessera::unicode
