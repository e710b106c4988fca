// The hand-written matchers for the GPT-2 / Llama 3 / Qwen2 patterns against the generic
// backtracking machine: the reference corpus (reference_test.cpp compares both with node),
// and here random text over an alphabet of the code points these patterns tell apart.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/unicode/split_regex.h"

namespace tessera::unicode {
namespace {

std::vector<std::string> fast_path_patterns() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/unicode/unicode_reference.json");
  const auto json = nlohmann::json::parse(in);
  std::vector<std::string> patterns;
  for (const auto& entry : json["splits"]) {
    const std::string name = entry["name"];
    if (name == "llama.cpp/gpt2/0" || name == "llama.cpp/llama3/0" || name == "llama.cpp/qwen2/0" ||
        name == "tokenizer.json/qwen3/0" || name == "tokenizer.json/llama3/0")
      patterns.push_back(entry["pattern"]);
  }
  patterns.push_back(
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
  return patterns;
}

TEST(FastPath, ChosenForTheGpt2Llama3AndQwen2Patterns) {
  const auto patterns = fast_path_patterns();
  ASSERT_EQ(patterns.size(), 6u);
  for (const std::string& pattern : patterns) {
    auto regex = SplitRegex::compile(pattern);
    ASSERT_TRUE(regex.ok());
    EXPECT_TRUE(regex->has_fast_path()) << pattern;
  }
  auto other = SplitRegex::compile("\\p{N}+| ?\\p{L}+");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_fast_path());
}

TEST(FastPath, EqualsGenericMachineOnRandomText) {
  // Apostrophes and the letters of the contractions in every case (with U+017F, which
  // folds to 's'), other letters, digits of several scripts, every kind of whitespace,
  // punctuation, symbols, marks, CJK, emoji, an unassigned code point.
  const std::u32string alphabet =
      U"''''sStTrReEvVmMlLdD\u017f\u212aaZ\u00e9\u4e00\u0915\u0301\u093f"
      U"0123\u0663\u00bd     \t\n\n\r\r\u00a0\u3000\u2028\u0085\u000b"
      U"!?.,-_()\u3002\u00bf$+<\u20ac\U0001F600\u200d\u0378";
  std::mt19937 rng(22);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 40);
  for (const std::string& pattern : fast_path_patterns()) {
    auto regex = SplitRegex::compile(pattern);
    ASSERT_TRUE(regex.ok());
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<char32_t> text(static_cast<size_t>(length(rng)));
      for (char32_t& cp : text) cp = alphabet[pick(rng)];
      std::vector<std::pair<uint32_t, uint32_t>> fast, generic;
      regex->split(text, fast);
      ASSERT_TRUE(regex->split_generic(text, generic).ok());
      ASSERT_EQ(fast, generic) << pattern << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace tessera::unicode
