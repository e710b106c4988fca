// core/unicode against llama.cpp's own unicode.cpp (tests/data/unicode/llamacpp_reference.json,
// written by make_llamacpp_reference.sh): UTF-8 decoding must be identical; pre-tokenizer
// splits are compared preset by preset, and every text where llama.cpp departs from the
// Oniguruma meaning of its pattern is listed in kKnownDifferences with the reason.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/unicode/" + name);
  return nlohmann::json::parse(in);
}

std::string bytes_from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 3)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

TEST(LlamaCppReference, DecodingEqualsUnicodeCptsFromUtf8) {
  const auto llamacpp = read_json("llamacpp_reference.json");
  const auto node = read_json("unicode_reference.json");
  int differs_from_whatwg = 0;
  for (size_t i = 0; i < llamacpp["utf8"].size(); ++i) {
    const auto& entry = llamacpp["utf8"][i];
    const std::string hex = entry["bytes"];
    std::vector<char32_t> cps;
    std::vector<uint32_t> offsets;
    decode_utf8(bytes_from_hex(hex), cps, &offsets);
    const auto expected = entry["llamacpp"].get<std::vector<uint32_t>>();
    EXPECT_EQ(std::vector<uint32_t>(cps.begin(), cps.end()), expected) << hex;
    EXPECT_EQ(offsets.size(), cps.size() + 1);
    EXPECT_EQ(offsets.back(), bytes_from_hex(hex).size());
    if (node["utf8"][i]["whatwg"] != entry["llamacpp"]) ++differs_from_whatwg;
  }
  // The two rules part on most malformed input (see utf8.h); keep the tests honest.
  EXPECT_GT(differs_from_whatwg, 10);
}

// Splits `text` as llama.cpp's unicode_regex_split does: each pattern refines the pieces
// the previous ones left.
std::vector<std::string> split_like_llamacpp(const std::vector<SplitRegex>& regexes,
                                             const std::string& text) {
  std::vector<char32_t> cps;
  decode_utf8(text, cps);
  std::vector<std::pair<uint32_t, uint32_t>> pieces = {{0, static_cast<uint32_t>(cps.size())}};
  for (const SplitRegex& regex : regexes) {
    std::vector<std::pair<uint32_t, uint32_t>> refined;
    for (auto [begin, end] : pieces) {
      std::vector<std::pair<uint32_t, uint32_t>> local;
      regex.split(std::span<const char32_t>(cps.data() + begin, end - begin), local);
      for (auto [b, e] : local) refined.emplace_back(begin + b, begin + e);
    }
    pieces = std::move(refined);
  }
  std::vector<std::string> words;
  for (auto [begin, end] : pieces) words.push_back(to_utf8(cps.data() + begin, end - begin));
  return words;
}

// For each preset, the corpus texts where our split differs from llama.cpp's.
std::map<std::string, std::set<size_t>> differences_from_llamacpp(RegexDialect dialect) {
  const auto llamacpp = read_json("llamacpp_reference.json");
  const auto node = read_json("unicode_reference.json");
  const auto patterns = read_json("llamacpp_patterns.json");
  std::map<std::string, std::set<size_t>> differences;
  for (const auto& [preset, exprs] : patterns["patterns"].items()) {
    std::vector<SplitRegex> regexes;
    for (const auto& expr : exprs) {
      auto regex = SplitRegex::compile(expr.get<std::string>(), dialect);
      EXPECT_TRUE(regex.ok()) << regex.status().to_string();
      if (!regex.ok()) return {};
      regexes.push_back(std::move(regex).value());
    }
    const auto& expected = llamacpp["presets"][preset];
    for (size_t t = 0; t < node["corpus"].size(); ++t) {
      const auto ours = split_like_llamacpp(regexes, node["corpus"][t].get<std::string>());
      if (!expected[t].is_array() || ours != expected[t].get<std::vector<std::string>>())
        differences[preset].insert(t);
    }
  }
  return differences;
}

TEST(LlamaCppReference, LlamaCppDialectSplitsEveryPresetExactlyAsLlamaCpp) {
  EXPECT_EQ(differences_from_llamacpp(RegexDialect::kLlamaCpp),
            (std::map<std::string, std::set<size_t>>{}));
}

TEST(LlamaCppReference, OnigurumaDialectDiffersOnlyWhereLlamaCppHidesNonAsciiSpaces) {
  // deepseek-llm and deepseek-coder split with [一-龥ࠀ-一가-퟿]+, whose range U+0800-U+4E00
  // holds U+3000, U+2028, U+2029, U+205F and U+1680. Oniguruma (Hugging Face) matches them
  // there; llama.cpp turned them into U+000B first (RegexDialect::kLlamaCpp). Texts 10, 11
  // and 48 of the corpus hold such spaces; no other preset or text differs.
  const std::set<size_t> texts_with_non_ascii_spaces = {10, 11, 48};
  EXPECT_EQ(
      differences_from_llamacpp(RegexDialect::kOniguruma),
      (std::map<std::string, std::set<size_t>>{{"deepseek_coder", texts_with_non_ascii_spaces},
                                               {"deepseek_llm", texts_with_non_ascii_spaces}}));
}

}  // namespace
}  // namespace tessera::unicode
