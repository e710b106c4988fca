// The byte-pair tokenizer on small hand-made tokenizer.json vocabularies:
// merge order, ignore_merges, byte fallback and unk, added tokens with and
// without parse_special, lstrip/rstrip, decoding, and what ends a generation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_json.h"

namespace tessera {
namespace {

// A tokenizer.json with a Split on spaces (Isolated) and no byte level: the
// pieces are the plain characters, so cases read easily.
std::string plain_json(const std::string& vocab, const std::string& merges,
                       const std::string& extra_model = "", const std::string& added = "[]") {
  return R"({"added_tokens": )" + added +
         R"(, "normalizer": null,
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": false},
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": )" +
         vocab + R"(, "merges": )" + merges + extra_model + "}}";
}

Tokenizer make(const std::string& json) {
  auto vocab = parse_tokenizer_json(json, "", "test.json");
  TESSERA_CHECK(vocab.ok(), vocab.status().to_string());
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  TESSERA_CHECK(tokenizer.ok(), tokenizer.status().to_string());
  return std::move(tokenizer).value();
}

std::vector<int32_t> ids(const Tokenizer& t, const std::string& text, bool parse_special = false) {
  auto out = t.encode(text, EncodeOptions{.add_special = false, .parse_special = parse_special});
  TESSERA_CHECK(out.ok(), out.status().to_string());
  return *out;
}

const std::string kAbc = R"({"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, " ": 6})";

TEST(BpeTokenizer, LowestRankMergesFirst) {
  // "b c" first: a + bc, and no merge makes abc from them.
  EXPECT_EQ(ids(make(plain_json(kAbc, R"(["b c", "a b"])")), "abc"), (std::vector<int32_t>{0, 4}));
  // "a b" first, then "ab c".
  EXPECT_EQ(ids(make(plain_json(kAbc, R"(["a b", "b c", "ab c"])")), "abc"),
            (std::vector<int32_t>{5}));
  // Pairs as [left, right] lists read the same.
  EXPECT_EQ(ids(make(plain_json(kAbc, R"([["a", "b"], ["ab", "c"]])")), "abc"),
            (std::vector<int32_t>{5}));
}

TEST(BpeTokenizer, TiesGoToTheLeftmostPair) {
  const Tokenizer t = make(plain_json(R"({"a": 0, "aa": 1})", R"(["a a"])"));
  EXPECT_EQ(ids(t, "aaa"), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(ids(t, "aaaa"), (std::vector<int32_t>{1, 1}));
}

TEST(BpeTokenizer, IgnoreMergesKeepsWholeWordTokens) {
  // No merge reaches "abc", but the word is a token.
  const std::string merges = R"(["b c"])";
  EXPECT_EQ(ids(make(plain_json(kAbc, merges)), "abc"), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(ids(make(plain_json(kAbc, merges, R"(, "ignore_merges": true)")), "abc"),
            (std::vector<int32_t>{5}));
}

TEST(BpeTokenizer, ByteFallbackUnknownAndFusedUnknown) {
  const std::string vocab = R"({"<unk>": 0, "a": 1, "<0xC3>": 2, "<0xA9>": 3})";
  const Tokenizer fallback =
      make(plain_json(vocab, "[]", R"(, "byte_fallback": true, "unk_token": "<unk>")"));
  EXPECT_EQ(ids(fallback, "a\xc3\xa9"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ids(fallback, "ax"), (std::vector<int32_t>{1, 0}));  // no <0x78>: unk
  const Tokenizer fused =
      make(plain_json(vocab, "[]", R"(, "unk_token": "<unk>", "fuse_unk": true)"));
  EXPECT_EQ(ids(fused, "xyza"), (std::vector<int32_t>{0, 1}));
  const Tokenizer unfused = make(plain_json(vocab, "[]", R"(, "unk_token": "<unk>")"));
  EXPECT_EQ(ids(unfused, "xyza"), (std::vector<int32_t>{0, 0, 0, 1}));
  // No unk and no byte tokens: an error naming the text, never a wrong id.
  const Tokenizer none = make(plain_json(R"({"a": 0})", "[]"));
  const auto bad = none.encode("ab", EncodeOptions{.add_special = false});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'b'"), std::string::npos) << bad.status().to_string();
}

const std::string kAdded =
    R"([{"id": 7, "content": "<|im_start|>", "special": true},
        {"id": 8, "content": "<think>", "special": false},
        {"id": 9, "content": "<|eot|>", "special": true, "lstrip": true, "rstrip": true}])";
const std::string kChars =
    R"({"a": 0, "b": 1, "<": 2, "|": 3, "i": 4, "m": 5, "_": 6, " ": 10, "s": 11, "t": 12,
        "r": 13, ">": 14, "h": 15, "n": 16, "k": 17, "e": 18, "o": 19})";

TEST(BpeTokenizer, ControlTokensOnlyWithParseSpecial) {
  const Tokenizer t = make(plain_json(kChars, "[]", "", kAdded));
  // Plain text: the control token's spelling is characters; the user-defined
  // <think> is always a token.
  EXPECT_EQ(ids(t, "a<|im_start|>b"),
            (std::vector<int32_t>{0, 2, 3, 4, 5, 6, 11, 12, 0, 13, 12, 3, 14, 1}));
  EXPECT_EQ(ids(t, "a<think>b"), (std::vector<int32_t>{0, 8, 1}));
  EXPECT_EQ(ids(t, "a<|im_start|>b", true), (std::vector<int32_t>{0, 7, 1}));
}

TEST(BpeTokenizer, AddedTokensStripTheirWhitespace) {
  const Tokenizer t = make(plain_json(kChars, "[]", "", kAdded));
  EXPECT_EQ(ids(t, "a  <|eot|>  b", true), (std::vector<int32_t>{0, 9, 1}));
  EXPECT_EQ(ids(t, "a <think> b", true), (std::vector<int32_t>{0, 10, 8, 10, 1}));
}

TEST(BpeTokenizer, DecodePrintsControlTokensOnlyWhenAsked) {
  const Tokenizer t = make(plain_json(kChars, "[]", "", kAdded));
  const std::vector<int32_t> seq = {7, 0, 8, 1, 9};
  EXPECT_EQ(t.decode(seq), "a<think>b");
  EXPECT_EQ(t.decode(seq, /*print_control=*/true), "<|im_start|>a<think>b<|eot|>");
  EXPECT_EQ(t.decode_token(0, 7), "");
  EXPECT_EQ(t.decode_token(0, 7, true), "<|im_start|>");
}

// Byte-level: a character split over two tokens streams as its two halves,
// and the stream's bytes are exactly the text.
TEST(BpeTokenizer, StreamedBytesConcatenateToTheText) {
  // "é" is C3 A9; in the GPT-2 alphabet C3 is "Ã" and A9 is "©".
  const std::string json = R"({"added_tokens": [], "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"Ã": 0, "©": 1, "a": 2}, "merges": []}})";
  const Tokenizer t = make(json);
  const auto encoded = ids(t, "a\xc3\xa9");
  EXPECT_EQ(encoded, (std::vector<int32_t>{2, 0, 1}));
  std::string streamed;
  int32_t previous = -1;
  for (int32_t id : encoded) {
    streamed += t.decode_token(previous, id);
    previous = id;
  }
  EXPECT_EQ(streamed, "a\xc3\xa9");
  EXPECT_EQ(t.decode_token(2, 0), "\xc3");  // half a character: the byte as it is
}

TEST(BpeTokenizer, BosFromThePostProcessorAndStopTokens) {
  const std::string json = R"({"added_tokens": [{"id": 1, "content": "<bos>", "special": true},
      {"id": 2, "content": "<end_of_turn>", "special": true},
      {"id": 3, "content": "<eos>", "special": true}],
    "normalizer": null, "pre_tokenizer": null, "decoder": null,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<bos>": {"id": "<bos>", "ids": [1], "tokens": ["<bos>"]}}},
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
  auto vocab = parse_tokenizer_json(json, R"({"eos_token": "<eos>", "chat_template": "{{x}}"})",
                                    "test.json");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->bos_id, 1);
  EXPECT_EQ(vocab->eos_id, 3);
  EXPECT_EQ(vocab->eot_id, 2);
  EXPECT_EQ(vocab->chat_template, "{{x}}");
  const Tokenizer t(std::move(vocab).value());
  EXPECT_TRUE(t.adds_bos());
  EXPECT_EQ(t.encode("a", true).value(), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(t.encode("a", false).value(), (std::vector<int32_t>{0}));
  EXPECT_EQ(t.end_of_generation(), (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(t.is_end_of_generation(2));
  EXPECT_FALSE(t.is_end_of_generation(1));
}

}  // namespace
}  // namespace tessera
