// Reading the files a user names (--config, --text): only regular files, with
// a size limit, and never blocking. /dev/zero used to grow until bad_alloc and
// a FIFO blocked forever; a directory said "has no tokens".
#include "core/io/text_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/config/config.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

TEST(TextFile, ReadsARegularFile) {
  TempDir dir;
  const std::string path = dir.write("a.txt", {'h', 'i', '\n'});
  auto text = read_text_file(path, "text file", 100);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, "hi\n");
}

TEST(TextFile, DevZeroIsRefusedAsADevice) {
  auto text = read_text_file("/dev/zero", "text file", 1 << 20);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(),
              HasSubstr("text file '/dev/zero' is a character device, not a regular file"));
}

TEST(TextFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.file("pipe");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = read_text_file(path, "config file", 1 << 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("is a FIFO (named pipe), not a regular file"));
}

TEST(TextFile, DirectoryIsRefused) {
  TempDir dir;
  auto text = read_text_file(dir.file(""), "text file", 1 << 20);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("is a directory, not a regular file"));
}

TEST(TextFile, MissingFileIsNotFound) {
  auto text = read_text_file("/nonexistent/x.txt", "text file", 1 << 20);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
}

TEST(TextFile, LargerThanTheLimitIsRefusedBeforeReading) {
  TempDir dir;
  const std::string path = dir.write("big.txt", std::vector<uint8_t>(101, 'x'));
  auto text = read_text_file(path, "text file", 100);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(text.status().message(), HasSubstr("has 101 bytes, more than the 100"));
}

TEST(ConfigFile, DevZeroFifoAndDirectoryAreClearErrors) {
  TempDir dir;
  const std::string fifo = dir.file("config.toml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/zero"), fifo, dir.file("")}) {
    auto config = Config::load_file(path);
    ASSERT_FALSE(config.ok()) << path;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(config.status().message(), HasSubstr("not a regular file")) << path;
  }
}

TEST(ConfigFile, AConfigLargerThanAMegabyteIsRefused) {
  TempDir dir;
  const std::string path =
      dir.write("huge.toml", std::vector<uint8_t>(kMaxConfigFileBytes + 1, '#'));
  auto config = Config::load_file(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace tessera
