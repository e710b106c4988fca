// The one rule for finding the files a command or config names
// (core/io/file_lookup.h): absolute as it is; relative first to its base (the
// config's directory, or the current one for the command line), then
// TESSERA_MODEL_PATH, models/, ../shared/models/ (a text also data/,
// ../shared/data/); a name not found lists every directory looked in.
#include "core/io/file_lookup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/config/config.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

namespace fs = std::filesystem;

// TESSERA_MODEL_PATH set (or unset) for one test, then put back.
class ScopedModelPath {
 public:
  explicit ScopedModelPath(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("TESSERA_MODEL_PATH")) old_ = old;
    if (value)
      ::setenv("TESSERA_MODEL_PATH", value->c_str(), 1);
    else
      ::unsetenv("TESSERA_MODEL_PATH");
  }
  ~ScopedModelPath() {
    if (old_)
      ::setenv("TESSERA_MODEL_PATH", old_->c_str(), 1);
    else
      ::unsetenv("TESSERA_MODEL_PATH");
  }
  ScopedModelPath(const ScopedModelPath&) = delete;
  ScopedModelPath& operator=(const ScopedModelPath&) = delete;

 private:
  std::optional<std::string> old_;
};

// A directory as the messages show it: absolute, without a trailing '/'.
std::string shown(const fs::path& dir) {
  std::string text = fs::absolute(dir).lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

TEST(FileLookup, RelativeNameIsFoundInItsBaseDirectoryFirst) {
  TempDir config_dir, env_dir;
  const std::string in_config = config_dir.write("m.gguf", {1});
  env_dir.write("m.gguf", {2});
  ScopedModelPath env(env_dir.file(""));
  auto found = find_file("m.gguf", FileKind::kModel, fs::path(in_config).parent_path(), "model");
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  EXPECT_EQ(fs::path(*found), fs::path(in_config).lexically_normal());
}

TEST(FileLookup, RelativeNameIsFoundInEachDirectoryOfTheModelPath) {
  TempDir base, first, second;
  const std::string wanted = second.write("m.gguf", {1});
  ScopedModelPath env(first.file("") + ":" + second.file(""));
  auto found = find_file("m.gguf", FileKind::kModel, base.file(""), "model file");
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  EXPECT_EQ(fs::path(*found), fs::path(wanted).lexically_normal());
}

TEST(FileLookup, NotFoundListsEveryDirectoryLookedInInOrder) {
  TempDir base, first, second;
  ScopedModelPath env(first.file("") + "::" + second.file(""));
  auto found = find_file("no-such.gguf", FileKind::kModel, base.file(""), "model file");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  const fs::path root(TESSERA_SOURCE_DIR);
  const std::string list = shown(base.file("")) + ", " + shown(first.file("")) + ", " +
                           shown(second.file("")) + ", " + shown(root / "models") + ", " +
                           shown(root.parent_path() / "shared" / "models");
  EXPECT_THAT(found.status().message(),
              HasSubstr("model file 'no-such.gguf' not found; looked in: " + list + "\n"));
  EXPECT_THAT(found.status().message(), HasSubstr("TESSERA_MODEL_PATH"));
  // A text is looked for in the same places, then in data/ and ../shared/data/.
  auto text = find_file("no-such.txt", FileKind::kText, base.file(""), "text file");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(),
              HasSubstr("text file 'no-such.txt' not found; looked in: " + list + ", " +
                        shown(root / "data") + ", " +
                        shown(root.parent_path() / "shared" / "data") + "\n"));
}

TEST(FileLookup, TheCurrentDirectoryIsShownAbsolute) {
  ScopedModelPath env(std::nullopt);
  auto found = find_file("no-such.gguf", FileKind::kModel, ".", "model file");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(),
              HasSubstr("looked in: " + fs::current_path().lexically_normal().string() + ", "));
}

TEST(FileLookup, AbsolutePathIsUsedAsItIs) {
  TempDir dir, base;
  const std::string path = dir.write("m.gguf", {1});
  auto found = find_file(path, FileKind::kModel, base.file(""), "model file");
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  EXPECT_EQ(*found, path);
  auto missing = find_file(dir.file("gone.gguf"), FileKind::kModel, base.file(""), "model file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("model file '" + dir.file("gone.gguf") + "' does not exist"));
  EXPECT_THAT(missing.status().message(), Not(HasSubstr("looked in")));
  auto directory = find_file(dir.file(""), FileKind::kModel, base.file(""), "model file");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.status().message(), HasSubstr("is a directory, not a regular file"));
}

TEST(FileLookup, ACandidateThatIsNotAFileIsPassedOverAndSaidSo) {
  TempDir base, env_dir;
  fs::create_directory(base.file("m.gguf"));
  const std::string wanted = env_dir.write("m.gguf", {1});
  {
    ScopedModelPath env(env_dir.file(""));
    auto found = find_file("m.gguf", FileKind::kModel, base.file(""), "model file");
    ASSERT_TRUE(found.ok()) << found.status().to_string();
    EXPECT_EQ(fs::path(*found), fs::path(wanted).lexically_normal());
  }
  ScopedModelPath env(std::nullopt);
  auto found = find_file("m.gguf", FileKind::kModel, base.file(""), "model file");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(),
              HasSubstr(shown(base.file("")) + " (a directory there, not a regular file)"));
}

TEST(FileLookup, TextsAreFoundInSharedData) {
  const fs::path shared_text = fs::path(TESSERA_SHARED_DIR) / "data" / "tinystories_train_head.txt";
  if (!fs::exists(shared_text)) GTEST_SKIP() << shared_text << " is not here";
  TempDir base;
  ScopedModelPath env(std::nullopt);
  auto found = locate_data_file("tinystories_train_head.txt", base.file(""));
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  EXPECT_EQ(fs::canonical(*found), fs::canonical(shared_text));
  // Not a model: the model search stops before data/.
  EXPECT_FALSE(locate_model_file("tinystories_train_head.txt", base.file("")).ok());
}

TEST(FileLookup, ConfigFilesAreRelativeToTheConfigAndSetsToTheCurrentDirectory) {
  auto config = Config::parse("[model]\npath = \"m.gguf\"\n[decode]\nprojection_file = \"p\"\n",
                              "some/dir/x.toml");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->base_directory("model.path"), fs::path("some/dir"));
  EXPECT_EQ(config->base_directory("decode.projection_file"), fs::path("some/dir"));
  EXPECT_EQ(config->base_directory("model.tokenizer"), fs::path("some/dir"));  // not set
  ASSERT_TRUE(config->apply_override("model.path=other.gguf").ok());
  EXPECT_EQ(config->base_directory("model.path"), fs::path("."));
  // A tool setting a value of the file (a sweep's axis point) keeps it the file's.
  ASSERT_TRUE(
      config->apply_override("decode.projection_file=q", Config::SetFrom::kConfigFile).ok());
  EXPECT_EQ(config->base_directory("decode.projection_file"), fs::path("some/dir"));
  // Copies keep where each value came from.
  const Config copy = config->without_section("sweep");
  EXPECT_EQ(copy.base_directory("model.path"), fs::path("."));
  EXPECT_EQ(copy.base_directory("decode.projection_file"), fs::path("some/dir"));
}

}  // namespace
}  // namespace tessera
