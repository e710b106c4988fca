// llama.cpp's test vectors for the Llama-2 SentencePiece vocabulary
// (ggml-vocab-llama-spm.gguf.inp/.out): every case must give exactly the ids
// llama.cpp and SentencePiece give.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/tokenizer/llama2c_tokenizer_file.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/vocab_cases.h"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SHARED_DIR) + "/models";

using testing::read_vocab_cases;

void check_all_cases(const Tokenizer& t) {
  const auto cases = read_vocab_cases(kModels + "/ggml-vocab-llama-spm.gguf");
  ASSERT_EQ(cases.size(), 46u);
  int passed = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto ids = t.encode(c.text, false).value();
    EXPECT_EQ(ids, c.ids) << "case " << i << ": [" << c.text << "]";
    passed += ids == c.ids ? 1 : 0;
    // Every case can be represented (byte fallback), so it decodes back.
    EXPECT_EQ(t.decode(ids), c.text) << "case " << i;
    auto with_bos = t.encode(c.text, true).value();
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos.front(), 1);
    EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), ids);
  }
  std::printf("llama-spm test vectors: %d of %zu cases pass\n", passed, cases.size());
}

TEST(LlamaSpmVectors, CaseFileIsReadAsIntended) {
  const auto cases = read_vocab_cases(kModels + "/ggml-vocab-llama-spm.gguf");
  ASSERT_EQ(cases.size(), 46u);
  EXPECT_EQ(cases[0].text, "ied 4 \xc2\xbd months");
  EXPECT_EQ(cases[2].text, "");
  EXPECT_TRUE(cases[2].ids.empty());
  EXPECT_EQ(cases[6].text, "\t");
  EXPECT_EQ(cases[7].text, "\n");
  EXPECT_EQ(cases[7].ids, (std::vector<int32_t>{29871, 13}));
}

TEST(LlamaSpmVectors, GgufVocabulary) {
  auto vocab = load_vocabulary(kModels + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->size(), 32000);
  EXPECT_TRUE(vocab->add_space_prefix);
  check_all_cases(Tokenizer(std::move(vocab).value()));
}

// The same 32000 pieces in llama2.c form give the same ids.
TEST(LlamaSpmVectors, Llama2cFormOfTheVocabulary) {
  auto vocab = read_llama2c_tokenizer(kModels + "/llama2_tokenizer.bin");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  check_all_cases(Tokenizer(std::move(vocab).value()));
}

}  // namespace
}  // namespace tessera
