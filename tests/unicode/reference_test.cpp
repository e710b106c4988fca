// core/unicode against node 20's RegExp, String.prototype.normalize and TextDecoder:
// tests/data/unicode/unicode_reference.json, written by make_unicode_reference.mjs (see
// there for how Oniguruma patterns are rewritten into JS ones).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/unicode/normalize.h"
#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace tessera::unicode {
namespace {

const nlohmann::json& reference() {
  static const nlohmann::json* json = [] {
    std::ifstream in(std::string(TESSERA_SOURCE_DIR) +
                     "/tests/data/unicode/unicode_reference.json");
    auto* parsed = new nlohmann::json(nlohmann::json::parse(in));
    return parsed;
  }();
  return *json;
}

std::vector<std::pair<uint32_t, uint32_t>> pieces_from_ends(const std::vector<uint32_t>& ends) {
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  uint32_t begin = 0;
  for (uint32_t end : ends) {
    pieces.emplace_back(begin, end);
    begin = end;
  }
  return pieces;
}

std::string show(const std::vector<char32_t>& cps,
                 const std::vector<std::pair<uint32_t, uint32_t>>& pieces) {
  std::string out;
  for (auto [begin, end] : pieces) {
    out += "[" + to_utf8(cps.data() + begin, end - begin) + "]";
  }
  return out;
}

TEST(UnicodeReference, SplitMatchesNodeRegExpOnEveryPatternAndText) {
  const auto& json = reference();
  const auto& corpus = json["corpus"];
  int compared = 0;
  for (const auto& entry : json["splits"]) {
    const std::string name = entry["name"];
    auto regex = SplitRegex::compile(entry["pattern"].get<std::string>());
    ASSERT_TRUE(regex.ok()) << name << ": " << regex.status().to_string();
    for (size_t t = 0; t < corpus.size(); ++t) {
      std::vector<char32_t> cps;
      decode_utf8(corpus[t].get<std::string>(), cps);
      const auto expected = pieces_from_ends(entry["ends"][t].get<std::vector<uint32_t>>());
      std::vector<std::pair<uint32_t, uint32_t>> pieces;
      regex->split(cps, pieces);
      EXPECT_EQ(pieces, expected) << name << " on text " << t << "\n  got      "
                                  << show(cps, pieces) << "\n  expected " << show(cps, expected);
      std::vector<std::pair<uint32_t, uint32_t>> generic;
      ASSERT_TRUE(regex->split_generic(cps, generic).ok());
      EXPECT_EQ(generic, pieces) << name << " fast path != generic machine on text " << t;
      ++compared;
    }
  }
  EXPECT_GE(compared, 39 * 50);
}

TEST(UnicodeReference, NormalizationMatchesNode) {
  for (const auto& entry : reference()["normalization"]) {
    const std::string text = entry["text"];
    EXPECT_EQ(nfc(text), entry["nfc"].get<std::string>()) << text;
    EXPECT_EQ(nfd(text), entry["nfd"].get<std::string>()) << text;
  }
}

std::string bytes_from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 3)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

TEST(UnicodeReference, WhatwgDecodingMatchesTextDecoder) {
  for (const auto& entry : reference()["utf8"]) {
    const std::string hex = entry["bytes"];
    std::vector<char32_t> cps;
    decode_utf8(bytes_from_hex(hex), cps, nullptr, Utf8Errors::kWhatwg);
    const auto expected = entry["whatwg"].get<std::vector<uint32_t>>();
    EXPECT_EQ(std::vector<uint32_t>(cps.begin(), cps.end()), expected) << hex;
  }
}

}  // namespace
}  // namespace tessera::unicode
