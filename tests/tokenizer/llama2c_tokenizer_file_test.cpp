// read_llama2c_tokenizer: the real tokenizer files, and each kind of damaged file.
#include "core/tokenizer/llama2c_tokenizer_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SHARED_DIR) + "/models";

// Builds llama2.c tokenizer bytes: header, then (score, length, bytes) records.
class FileBuilder {
 public:
  explicit FileBuilder(int32_t max_token_length) { put(max_token_length); }
  FileBuilder& token(float score, const std::string& piece) {
    return token(score, static_cast<int32_t>(piece.size()), piece);
  }
  FileBuilder& token(float score, int32_t length, const std::string& bytes) {
    put(score);
    put(length);
    bytes_ += bytes;
    return *this;
  }
  FileBuilder& raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  // Writes the file under the test's temporary folder and returns its path.
  std::string write(const std::string& name) const {
    const auto path = std::filesystem::path(testing::TempDir()) / ("tokenizer_" + name + ".bin");
    std::ofstream out(path, std::ios::binary);
    out.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    return path.string();
  }

 private:
  template <typename T>
  void put(T value) {
    char buffer[sizeof(T)];
    std::memcpy(buffer, &value, sizeof(T));
    bytes_.append(buffer, sizeof(T));
  }
  std::string bytes_;
};

FileBuilder minimal(int32_t max_token_length = 8) {
  FileBuilder b(max_token_length);
  b.token(0, "<unk>").token(0, "\n<s>\n").token(0, "\n</s>\n");
  return b;
}

TEST(Llama2cTokenizerFile, ReadsTok512) {
  auto vocab = read_llama2c_tokenizer(kModels + "/tok512.bin");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->size(), 512);
  ASSERT_EQ(vocab->scores.size(), 512u);
  ASSERT_EQ(vocab->types.size(), 512u);
  EXPECT_EQ(vocab->bos_id, 1);
  EXPECT_EQ(vocab->eos_id, 2);
  EXPECT_EQ(vocab->unk_id, 0);
  EXPECT_TRUE(vocab->add_space_prefix);
  EXPECT_EQ(vocab->pieces[0], "<unk>");
  EXPECT_EQ(vocab->types[0], TokenType::kUnknown);
  EXPECT_EQ(vocab->pieces[1], "<s>");  // "\n<s>\n" in the file
  EXPECT_EQ(vocab->types[1], TokenType::kControl);
  EXPECT_EQ(vocab->pieces[2], "</s>");
  EXPECT_EQ(vocab->types[2], TokenType::kControl);
  for (int i = 0; i < 256; ++i) {
    char expected[8];
    std::snprintf(expected, sizeof(expected), "<0x%02X>", i);
    EXPECT_EQ(vocab->pieces[static_cast<std::size_t>(3 + i)], expected);
    EXPECT_EQ(vocab->types[static_cast<std::size_t>(3 + i)], TokenType::kByte);
  }
  EXPECT_EQ(vocab->pieces[259], "\xe2\x96\x81t");  // " t" in the file
  EXPECT_EQ(vocab->types[259], TokenType::kNormal);
  EXPECT_FLOAT_EQ(vocab->scores[260], -1.0f);
  EXPECT_EQ(vocab->pieces[260], "he");
  for (const auto& piece : vocab->pieces) EXPECT_EQ(piece.find(' '), std::string::npos) << piece;
}

TEST(Llama2cTokenizerFile, ReadsLlama2Vocabulary) {
  auto vocab = read_llama2c_tokenizer(kModels + "/llama2_tokenizer.bin");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->size(), 32000);
  EXPECT_EQ(vocab->pieces[259], "\xe2\x96\x81\xe2\x96\x81");  // "  " in the file
  EXPECT_FLOAT_EQ(vocab->scores[259], -1e9f);
  EXPECT_EQ(vocab->pieces[15043], "\xe2\x96\x81Hello");
}

// Both forms of a vocabulary must agree piece for piece, or a model would
// tokenize differently depending on the file it was loaded from.
void expect_same_vocabulary(const Vocabulary& a, const Vocabulary& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.scores.size(), b.scores.size());
  ASSERT_EQ(a.types.size(), b.types.size());
  for (std::size_t i = 0; i < a.pieces.size(); ++i) {
    EXPECT_EQ(a.pieces[i], b.pieces[i]) << "token " << i;
    EXPECT_EQ(a.scores[i], b.scores[i]) << "token " << i;
    EXPECT_EQ(a.types[i], b.types[i]) << "token " << i;
  }
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
  EXPECT_EQ(a.unk_id, b.unk_id);
  EXPECT_EQ(a.add_space_prefix, b.add_space_prefix);
}

TEST(Llama2cTokenizerFile, Tok512MatchesTheGgufEmbeddedVocabulary) {
  auto from_bin = read_llama2c_tokenizer(kModels + "/tok512.bin");
  ASSERT_TRUE(from_bin.ok()) << from_bin.status().to_string();
  auto from_gguf = load_vocabulary(kModels + "/stories260K.gguf");
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().to_string();
  expect_same_vocabulary(*from_bin, *from_gguf);
  // load_vocabulary on the .bin goes through this reader too.
  auto via_loader = load_vocabulary(kModels + "/tok512.bin");
  ASSERT_TRUE(via_loader.ok()) << via_loader.status().to_string();
  expect_same_vocabulary(*from_bin, *via_loader);
}

TEST(Llama2cTokenizerFile, Llama2MatchesTheGgufVocabulary) {
  auto from_bin = read_llama2c_tokenizer(kModels + "/llama2_tokenizer.bin");
  ASSERT_TRUE(from_bin.ok()) << from_bin.status().to_string();
  auto from_gguf = load_vocabulary(kModels + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().to_string();
  expect_same_vocabulary(*from_bin, *from_gguf);
}

TEST(Llama2cTokenizerFile, ConvertsEverySpace) {
  auto path = minimal().token(-1, " a b ").write("spaces");
  auto vocab = read_llama2c_tokenizer(path);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->size(), 4);
  EXPECT_EQ(vocab->pieces[3],
            "\xe2\x96\x81"
            "a\xe2\x96\x81"
            "b\xe2\x96\x81");
  EXPECT_EQ(vocab->types[3], TokenType::kNormal);
}

TEST(Llama2cTokenizerFile, ByteTypeOnlyForExactBytePieces) {
  auto path = minimal().token(0, "<0x0A>").token(0, "<0xzz>").token(0, "<0x0A>x").write("bytes");
  auto vocab = read_llama2c_tokenizer(path);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->types[3], TokenType::kByte);
  EXPECT_EQ(vocab->types[4], TokenType::kNormal);
  EXPECT_EQ(vocab->types[5], TokenType::kNormal);
}

TEST(Llama2cTokenizerFile, MissingFileIsNotFound) {
  auto vocab = read_llama2c_tokenizer(kModels + "/no_such_tokenizer.bin");
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kNotFound);
  EXPECT_NE(vocab.status().message().find("no_such_tokenizer.bin"), std::string::npos);
}

TEST(Llama2cTokenizerFile, RejectsShortHeader) {
  // A header alone has no tokens.
  auto vocab = read_llama2c_tokenizer(FileBuilder(8).write("header_only"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(vocab.status().message().find("only 0 tokens"), std::string::npos);

  std::string path = FileBuilder(8).write("short");
  std::filesystem::resize_file(path, 2);
  vocab = read_llama2c_tokenizer(path);
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(vocab.status().message().find("too short"), std::string::npos);
}

TEST(Llama2cTokenizerFile, RejectsNonPositiveMaxLength) {
  auto vocab = read_llama2c_tokenizer(minimal(0).write("max0"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("max_token_length"), std::string::npos);
}

TEST(Llama2cTokenizerFile, RejectsTruncatedRecordHeader) {
  auto vocab = read_llama2c_tokenizer(minimal().raw("abc").write("trunc_header"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(vocab.status().message().find("token 3"), std::string::npos)
      << vocab.status().message();
}

TEST(Llama2cTokenizerFile, RejectsTruncatedPiece) {
  auto vocab = read_llama2c_tokenizer(minimal().token(0, 5, "ab").write("trunc_piece"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(vocab.status().message().find("token 3"), std::string::npos);
  EXPECT_NE(vocab.status().message().find("cut short"), std::string::npos);
}

TEST(Llama2cTokenizerFile, RejectsBadLengths) {
  auto negative = read_llama2c_tokenizer(minimal().token(0, -1, "").write("negative"));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("byte length -1"), std::string::npos);

  auto too_long = read_llama2c_tokenizer(minimal(8).token(0, "123456789").write("too_long"));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("byte length 9"), std::string::npos);
}

TEST(Llama2cTokenizerFile, RejectsTooFewTokens) {
  auto vocab = read_llama2c_tokenizer(FileBuilder(8).token(0, "<unk>").write("one_token"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("only 1 tokens"), std::string::npos);
}

}  // namespace
}  // namespace tessera
