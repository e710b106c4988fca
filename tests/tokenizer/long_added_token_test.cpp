// An added token of 100,000 bytes (a hostile or broken tokenizer.json) must
// not make tokenizing cost text length x token length: a megabyte of text
// that keeps almost matching it encodes in well under a second in release.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_json.h"

namespace tessera {
namespace {

Tokenizer with_added_token(const std::string& content, bool special) {
  const std::string json = R"({"added_tokens": [{"id": 3, "content": ")" + content +
                           R"(", "special": )" + (special ? "true" : "false") +
                           R"(}], "normalizer": null,
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": false},
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, ")" +
                           content + R"(": 3}, "merges": []}})";
  auto vocab = parse_tokenizer_json(json, "", "test.json");
  TESSERA_CHECK(vocab.ok(), vocab.status().to_string());
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  TESSERA_CHECK(tokenizer.ok(), tokenizer.status().to_string());
  return std::move(tokenizer).value();
}

TEST(LongAddedToken, MegabyteOfNearMatchesEncodesInLinearTime) {
  constexpr std::size_t kLength = 100000;
  const std::string token = std::string(kLength - 1, 'a') + "b";
  // Ten words that match the token up to its last byte, then the token
  // itself twice, once straight after a near miss.
  std::string text;
  for (int i = 0; i < 10; ++i) text += std::string(kLength - 1, 'a') + " ";
  text += token + "a" + token;
  for (const bool special : {false, true}) {
    SCOPED_TRACE(special ? "special" : "plain");
    const Tokenizer tokenizer = with_added_token(token, special);
    const auto start = std::chrono::steady_clock::now();
    auto ids = tokenizer.encode(text, EncodeOptions{.add_special = false, .parse_special = true});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    // Each near miss is its bytes; the token is one id wherever it stands.
    EXPECT_EQ(ids->size(), 10 * kLength + 3);
    EXPECT_EQ(std::count(ids->begin(), ids->end(), 3), 2);
    EXPECT_EQ((*ids)[10 * kLength], 3);
    EXPECT_EQ((*ids)[10 * kLength + 1], 0);
    EXPECT_EQ(ids->back(), 3);
    // Linear work is milliseconds (sanitizers included); the trie walk from
    // every position it replaced took minutes here.
    EXPECT_LT(seconds, 20.0);
  }
  // Not parsing specials, a special token is plain text.
  const Tokenizer special = with_added_token(token, true);
  auto plain = special.encode(token, EncodeOptions{.add_special = false});
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->size(), kLength);
}

}  // namespace
}  // namespace tessera
