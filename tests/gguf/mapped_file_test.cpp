#include "core/io/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::TempDir;

TEST(MappedFile, MapsTheWholeFile) {
  TempDir dir;
  const std::string p = dir.write("f.bin", {1, 2, 3, 4, 5});
  auto file = MappedFile::open(p);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->size(), 5u);
  EXPECT_EQ((*file)->path(), p);
  const uint8_t expected[] = {1, 2, 3, 4, 5};
  EXPECT_EQ(std::memcmp((*file)->data(), expected, 5), 0);
}

TEST(MappedFile, MissingFileIsNotFound) {
  auto file = MappedFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(MappedFile, DirectoryIsRejected) {
  TempDir dir;
  auto file = MappedFile::open(dir.file(""));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(file.status().message().find("directory"), std::string::npos);
}

TEST(MappedFile, EmptyFileIsRejected) {
  TempDir dir;
  const std::string p = dir.write("empty.gguf", {});
  auto file = MappedFile::open(p);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find("empty"), std::string::npos);
  EXPECT_NE(file.status().message().find(p), std::string::npos);
}

TEST(MappedFile, UnreadableFileIsFailedPrecondition) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can read any file";
  TempDir dir;
  const std::string p = dir.write("secret.gguf", {1, 2, 3});
  ASSERT_EQ(::chmod(p.c_str(), 0), 0);
  auto file = MappedFile::open(p);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(file.status().message().find("permission"), std::string::npos);
}

TEST(MappedFile, FromBytesHoldsACopy) {
  std::vector<uint8_t> bytes = {9, 8, 7};
  auto file = MappedFile::from_bytes("mem.gguf", bytes);
  bytes[0] = 0;
  EXPECT_EQ(file->size(), 3u);
  EXPECT_EQ(file->data()[0], 9);
  EXPECT_EQ(file->path(), "mem.gguf");
}

}  // namespace
}  // namespace tessera
