// AddedTokenMatcher against the definition it replaces: from each position
// left to right, the longest allowed token starting there (the first added of
// equal texts), then on from its end.
#include "core/tokenizer/added_token_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tessera {
namespace {

struct Token {
  std::string text;
  bool special;
};

std::vector<AddedTokenMatcher::Match> by_definition(const std::vector<Token>& tokens,
                                                    const std::string& text, bool parse_special) {
  std::vector<AddedTokenMatcher::Match> out;
  for (std::size_t pos = 0; pos < text.size();) {
    int32_t best = -1;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const Token& t = tokens[i];
      if (t.text.empty() || text.compare(pos, t.text.size(), t.text) != 0) continue;
      bool first = true;  // a repeated text belongs to its first token
      for (std::size_t k = 0; k < i; ++k) first = first && tokens[k].text != t.text;
      if (!first || (t.special && !parse_special)) continue;
      if (best < 0 || t.text.size() > tokens[static_cast<std::size_t>(best)].text.size())
        best = static_cast<int32_t>(i);
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    const std::size_t length = tokens[static_cast<std::size_t>(best)].text.size();
    out.push_back({pos, length, best});
    pos += length;
  }
  return out;
}

TEST(AddedTokenMatcher, AgreesWithTheDefinitionOnRandomTokensAndTexts) {
  std::mt19937 random(31);
  const auto word = [&](std::size_t max_length) {
    std::string s(1 + random() % max_length, 'a');
    for (char& c : s) c = static_cast<char>('a' + random() % 3);
    return s;
  };
  int matched = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<Token> tokens;
    const int count = 1 + static_cast<int>(random() % 6);
    for (int i = 0; i < count; ++i) tokens.push_back({word(5), random() % 3 == 0});
    AddedTokenMatcher matcher;
    for (std::size_t i = 0; i < tokens.size(); ++i)
      matcher.add(tokens[i].text, static_cast<int32_t>(i), tokens[i].special);
    matcher.build();
    const std::string text = word(40);
    for (const bool parse_special : {false, true}) {
      const auto expected = by_definition(tokens, text, parse_special);
      const auto found = matcher.find(text, parse_special);
      ASSERT_EQ(found.size(), expected.size()) << text;
      for (std::size_t i = 0; i < found.size(); ++i) {
        EXPECT_EQ(found[i].begin, expected[i].begin) << text;
        EXPECT_EQ(found[i].length, expected[i].length) << text;
        EXPECT_EQ(found[i].id, expected[i].id) << text;
      }
      matched += static_cast<int>(found.size());
    }
  }
  EXPECT_GT(matched, 10000);  // the cases do match, and often
}

TEST(AddedTokenMatcher, MatchesAcrossItsScanWindows) {
  // Texts far longer than one backward pass, with tokens straddling passes.
  AddedTokenMatcher matcher;
  matcher.add("<|im_end|>", 7, true);
  matcher.add(std::string(70000, 'x'), 8, false);
  matcher.build();
  std::string text(65530, '.');
  text += "<|im_end|>" + std::string(70001, 'x') + "<|im_end|>";
  const auto found = matcher.find(text, true);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].begin, 65530u);
  EXPECT_EQ(found[1].id, 8);
  EXPECT_EQ(found[1].begin, 65540u);
  EXPECT_EQ(found[2].begin, 65540u + 70001u);
  EXPECT_TRUE(matcher.find(text, false).size() == 1 && matcher.find(text, false)[0].id == 8);
  EXPECT_TRUE(AddedTokenMatcher().find(text, true).empty());
}

}  // namespace
}  // namespace tessera
