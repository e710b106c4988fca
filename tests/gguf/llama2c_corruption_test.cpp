// Damaged llama2.c checkpoints: wrong sizes, impossible headers, a missing or
// mismatched tokenizer. Each must fail with a clean Status naming the file.
#include <gtest/gtest.h>

#include <limits>

#include "core/io/mapped_file.h"
#include "core/model/llama2c_model.h"
#include "core/model/model.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::model_path;
using testing::put;

const std::vector<uint8_t>& stories_bin() {
  static const std::vector<uint8_t> bytes = testing::read_bytes(model_path("stories260K.bin"));
  return bytes;
}

Status load_bytes(const std::vector<uint8_t>& bytes, const std::string& name = "broken.bin") {
  return load_llama2c_model(MappedFile::from_bytes(name, bytes), model_path("tok512.bin")).status();
}

struct HeaderCase {
  std::string name;
  int field;  // 0..6: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
  int32_t value;
  std::string message_part;
};

TEST(Llama2cCorruption, ImpossibleHeaders) {
  const std::vector<HeaderCase> cases = {
      {"negative dim", 0, -64, "dim = -64"},
      {"zero dim", 0, 0, "dim = 0"},
      {"negative hidden", 1, -1, "hidden_dim = -1"},
      {"zero layers", 2, 0, "n_layers = 0"},
      {"absurd layers", 2, 1 << 30, "n_layers = 1073741824"},
      {"zero heads", 3, 0, "n_heads = 0"},
      {"heads do not divide dim", 3, 7, "not divisible by n_heads"},
      {"kv heads do not divide heads", 4, 3, "not divisible by n_kv_heads"},
      {"negative kv heads", 4, -4, "n_kv_heads = -4"},
      {"zero vocab", 5, 0, "vocab_size = 0"},
      {"most negative vocab", 5, std::numeric_limits<int32_t>::min(), "vocab_size"},
      {"absurd dim", 0, std::numeric_limits<int32_t>::max(), "dim = 2147483647"},
      {"negative seq_len", 6, -512, "seq_len = -512"},
      {"odd head size", 0, 8 * 3, "head size 3 is odd"},
  };
  for (const HeaderCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> bytes = stories_bin();
    put<int32_t>(bytes, 4 * static_cast<uint64_t>(c.field), c.value);
    const Status st = load_bytes(bytes);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.to_string();
    EXPECT_NE(st.message().find("broken.bin"), std::string::npos) << st.to_string();
    EXPECT_NE(st.message().find(c.message_part), std::string::npos) << st.to_string();
  }
}

TEST(Llama2cCorruption, SizeMustMatchTheHeaderExactly) {
  const std::vector<uint8_t>& valid = stories_bin();
  for (std::size_t cut :
       {valid.size() - 1, valid.size() - 4, valid.size() / 2, std::size_t{100}, std::size_t{28}}) {
    SCOPED_TRACE("size " + std::to_string(cut));
    const Status st =
        load_bytes(std::vector<uint8_t>(valid.begin(), valid.begin() + static_cast<long>(cut)));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kDataLoss);
    EXPECT_NE(st.message().find("expected 1056540 bytes"), std::string::npos) << st.to_string();
    EXPECT_NE(st.message().find("but the file has " + std::to_string(cut) + " bytes"),
              std::string::npos)
        << st.to_string();
  }
  std::vector<uint8_t> longer = valid;
  longer.push_back(0);
  const Status st = load_bytes(longer);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("but the file has 1056541 bytes"), std::string::npos);
  // A header that claims an unshared classifier needs vocab * dim more floats.
  std::vector<uint8_t> unshared = valid;
  put<int32_t>(unshared, 20, -512);
  EXPECT_EQ(load_bytes(unshared).code(), StatusCode::kDataLoss);
}

TEST(Llama2cCorruption, ShorterThanTheHeader) {
  for (std::size_t n = 1; n < 28; ++n) {
    const Status st = load_bytes(
        std::vector<uint8_t>(stories_bin().begin(), stories_bin().begin() + static_cast<long>(n)));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kDataLoss);
    EXPECT_NE(st.message().find("28-byte header"), std::string::npos) << st.to_string();
  }
}

TEST(Llama2cCorruption, NewerExportIsUnimplemented) {
  std::vector<uint8_t> bytes = stories_bin();
  put<uint32_t>(bytes, 0, 0x616b3432);  // "ak42"
  const Status st = load_bytes(bytes);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("ak42"), std::string::npos);
}

TEST(Llama2cCorruption, UnsharedClassifierLoads) {
  // vocab_size < 0: a classifier matrix [vocab, dim] follows the RoPE tables.
  std::vector<uint8_t> bytes = stories_bin();
  put<int32_t>(bytes, 20, -512);
  const std::size_t extra = 512 * 64 * sizeof(float);
  for (std::size_t i = 0; i < extra; ++i) bytes.push_back(static_cast<uint8_t>(i * 7));
  auto m =
      load_llama2c_model(MappedFile::from_bytes("unshared.bin", bytes), model_path("tok512.bin"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->config.vocab_size, 512);
  EXPECT_NE(m->weights.output.data, m->weights.token_embedding.data);
  EXPECT_EQ(static_cast<const uint8_t*>(m->weights.output.data) + extra,
            m->file->data() + m->file->size());
  EXPECT_EQ(m->tensors.back().name, "output.weight");
}

TEST(Llama2cCorruption, TokenizerIsRequired) {
  auto m = load_model(model_path("stories260K.bin"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("model.tokenizer"), std::string::npos);
  EXPECT_NE(m.status().message().find("stories260K.bin"), std::string::npos);
}

TEST(Llama2cCorruption, TokenizerOfAnotherSizeIsRejected) {
  auto m = load_model(model_path("stories260K.bin"), model_path("llama2_tokenizer.bin"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("32000 tokens"), std::string::npos) << m.status().to_string();
}

TEST(Llama2cCorruption, RandomFileIsNeitherFormat) {
  testing::TempDir dir;
  const std::string path = dir.write("notes.txt", std::vector<uint8_t>(1000, 'x'));
  auto m = load_model(path, model_path("tok512.bin"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("no GGUF magic"), std::string::npos);
  EXPECT_NE(m.status().message().find(path), std::string::npos);
}

TEST(Llama2cCorruption, TruncatedFileThroughLoadModel) {
  testing::TempDir dir;
  const std::vector<uint8_t>& valid = stories_bin();
  const std::string path =
      dir.write("cut.bin", std::vector<uint8_t>(valid.begin(), valid.end() - 1000));
  auto m = load_model(path, model_path("tok512.bin"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find(path), std::string::npos);
  EXPECT_NE(m.status().message().find("expected"), std::string::npos) << m.status().to_string();
}

}  // namespace
}  // namespace tessera
