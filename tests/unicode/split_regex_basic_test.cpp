// SplitRegex on small hand-checked inputs and on patterns it must refuse.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

constexpr const char* kLlama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

std::vector<std::string> split_text(const SplitRegex& regex, const std::string& text) {
  std::vector<char32_t> cps;
  decode_utf8(text, cps);
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  regex.split(cps, pieces);
  std::vector<std::string> out;
  for (auto [begin, end] : pieces) out.push_back(to_utf8(cps.data() + begin, end - begin));
  return out;
}

SplitRegex compile_ok(const std::string& pattern) {
  auto regex = SplitRegex::compile(pattern);
  EXPECT_TRUE(regex.ok()) << regex.status().to_string();
  return std::move(regex).value();
}

TEST(SplitRegexBasic, Llama3SplitsWordsNumbersAndSpaces) {
  const SplitRegex regex = compile_ok(kLlama3);
  EXPECT_EQ(split_text(regex, "Hello world's 12345 THE'LL  x\n\n"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", "123", "45", " THE", "'LL", " ",
                                      " x", "\n\n"}));
}

TEST(SplitRegexBasic, Gpt2KeepsUnmatchedGaps) {
  const SplitRegex regex = compile_ok(kGpt2);
  // The trailing single space after "b" matches nothing in GPT-2's pattern (\s+(?!\S)
  // needs what follows to be no non-space): it stays a gap piece.
  EXPECT_EQ(split_text(regex, "a  b "), (std::vector<std::string>{"a", " ", " b", " "}));
}

TEST(SplitRegexBasic, QuantifiersLazyPossessiveAndLookahead) {
  EXPECT_EQ(split_text(compile_ok("a+?"), "aaa"), (std::vector<std::string>{"a", "a", "a"}));
  EXPECT_EQ(split_text(compile_ok("a{2,3}"), "aaaaa"), (std::vector<std::string>{"aaa", "aa"}));
  // Possessive a*+ never gives back, so a*+a cannot match.
  EXPECT_EQ(split_text(compile_ok("a*+a|b"), "aab"), (std::vector<std::string>{"aa", "b"}));
  EXPECT_EQ(split_text(compile_ok("\\d+(?=x)"), "12x34"), (std::vector<std::string>{"12", "x34"}));
  EXPECT_EQ(split_text(compile_ok("(?:ab)*"), "ababc"), (std::vector<std::string>{"abab", "c"}));
  EXPECT_EQ(split_text(compile_ok("(a*)*b"), "aab"), (std::vector<std::string>{"aab"}));
}

TEST(SplitRegexBasic, CaseInsensitiveComparesCaseFoldings) {
  // U+017F LATIN SMALL LETTER LONG S folds to 's', U+212A KELVIN SIGN to 'k'.
  const SplitRegex regex = compile_ok("(?i:'s|k)");
  EXPECT_EQ(split_text(regex, "'S'\u017f\u212a"),
            (std::vector<std::string>{"'S", "'\u017f", "\u212a"}));
}

TEST(SplitRegexBasic, NonAsciiRanges) {
  const SplitRegex regex = compile_ok("[一-龥]+|[\\u3040-\\u309f]+");
  EXPECT_EQ(split_text(regex, "漢字かなabc"), (std::vector<std::string>{"漢字", "かな", "abc"}));
}

TEST(SplitRegexBasic, AnchorsAreLineAnchors) {
  // $ matches before '\n', so \s+ gives back the newline.
  EXPECT_EQ(split_text(compile_ok("\\s+$"), "a  \nb  "),
            (std::vector<std::string>{"a", "  ", "\nb", "  "}));
}

void expect_refused(const std::string& pattern, StatusCode code, const std::string& fragment) {
  auto regex = SplitRegex::compile(pattern);
  ASSERT_FALSE(regex.ok()) << pattern;
  EXPECT_EQ(regex.status().code(), code) << regex.status().to_string();
  EXPECT_NE(regex.status().message().find(fragment), std::string::npos)
      << regex.status().to_string();
}

TEST(SplitRegexBasic, RefusesUnsupportedAndMalformedPatterns) {
  expect_refused("(a)\\1", StatusCode::kUnimplemented, "backreference \\1 at offset 3");
  expect_refused("(?<=a)b", StatusCode::kUnimplemented, "lookbehind '(?<=' at offset 0");
  expect_refused("(?<name>a)", StatusCode::kUnimplemented, "named group at offset 0");
  expect_refused("\\p{Han}+", StatusCode::kUnimplemented, "property \\p{Han}");
  expect_refused("[a[b]]", StatusCode::kUnimplemented, "nested character class");
  expect_refused("(ab", StatusCode::kInvalidArgument, "missing ')'");
  expect_refused("ab)", StatusCode::kInvalidArgument, "unbalanced ')' at offset 2");
  expect_refused("*a", StatusCode::kInvalidArgument, "nothing to repeat");
  expect_refused("[z-a]", StatusCode::kInvalidArgument, "out of order");
  expect_refused("a{100001}", StatusCode::kInvalidArgument, "above 100000");
}

TEST(SplitRegexBasic, StepBudgetStopsCatastrophicBacktracking) {
  const SplitRegex regex = compile_ok("(?:a|a)*b");
  const std::vector<char32_t> text(40, U'a');
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  const Status status = regex.split_checked(text, pieces, 100000);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.to_string();
  EXPECT_NE(status.message().find("step budget"), std::string::npos);
}

}  // namespace
}  // namespace tessera::unicode
