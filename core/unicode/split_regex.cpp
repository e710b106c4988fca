#include "core/unicode/split_regex.h"

#include <string>

#include "core/unicode/regex_compiler.h"
#include "core/unicode/regex_matcher.h"
#include "core/unicode/regex_parser.h"

namespace tessera::unicode {

SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;
SplitRegex::~SplitRegex() = default;

Result<SplitRegex> SplitRegex::compile(std::string_view pattern) {
  auto ast = regex::parse_pattern(pattern);
  if (!ast.ok()) return ast.status();
  auto program = regex::compile_program(std::move(ast).value(), pattern);
  if (!program.ok()) return program.status();
  SplitRegex compiled;
  compiled.pattern_ = std::string(pattern);
  compiled.program_ = std::make_unique<const regex::Program>(std::move(program).value());
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

Status SplitRegex::split_generic(std::span<const char32_t> cps,
                                 std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                                 uint64_t step_budget) const {
  regex::Matcher matcher(*program_);
  const uint32_t size = static_cast<uint32_t>(cps.size());
  uint32_t gap_begin = 0;
  uint32_t pos = 0;
  while (pos < size) {
    uint32_t end = 0;
    uint64_t budget = step_budget;
    const auto outcome = matcher.match_at(cps, pos, end, budget);
    if (outcome == regex::MatchOutcome::kBudgetExhausted) {
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

Status SplitRegex::split_checked(std::span<const char32_t> cps,
                                 std::vector<std::pair<uint32_t, uint32_t>>& pieces,
                                 uint64_t step_budget) const {
  return split_generic(cps, pieces, step_budget);
}

void SplitRegex::split(std::span<const char32_t> cps,
                       std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  regex::Matcher matcher(*program_);
  const uint32_t size = static_cast<uint32_t>(cps.size());
  uint32_t gap_begin = 0;
  uint32_t pos = 0;
  while (pos < size) {
    uint32_t end = 0;
    uint64_t budget = kDefaultStepBudget;
    if (matcher.match_at(cps, pos, end, budget) == regex::MatchOutcome::kMatched && end > pos) {
      add_piece(pieces, gap_begin, pos, end);
      pos = end;
    } else {
      ++pos;
    }
  }
  if (size > gap_begin) pieces.emplace_back(gap_begin, size);
}

bool SplitRegex::match_at(std::span<const char32_t> cps, uint32_t start, uint32_t& end) const {
  regex::Matcher matcher(*program_);
  uint64_t budget = kDefaultStepBudget;
  return matcher.match_at(cps, start, end, budget) == regex::MatchOutcome::kMatched;
}

}  // namespace tessera::unicode
