// Reading config files: getters with defaults, syntax errors, missing files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/config.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Config parse_ok(std::string_view text, std::string name = "test.toml") {
  auto config = Config::parse(text, std::move(name));
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  return std::move(config).value();
}

TEST(ConfigParse, DefaultsForAbsentKeys) {
  const Config config = parse_ok("[model]\npath = \"m.gguf\"\n");
  ASSERT_TRUE(config.validate_core().ok());
  EXPECT_EQ(config.get_string("model.path"), "m.gguf");
  EXPECT_EQ(config.get_string("model.tokenizer"), "");
  EXPECT_EQ(config.get_string("backend.plugin"), "cpu");
  EXPECT_EQ(config.get_int("backend.threads"), 1);
  EXPECT_EQ(config.get_string("cache.plugin"), "static");
  EXPECT_EQ(config.get_int("cache.max_tokens"), 512);
  EXPECT_EQ(config.get_string("cache.codec.plugin"), "identity");
  EXPECT_EQ(config.get_string("decode.proposer"), "none");
  EXPECT_EQ(config.get_string("decode.verifier"), "ar");
  EXPECT_EQ(config.get_int("decode.max_tokens"), 256);
  EXPECT_EQ(config.get_float("sampling.temperature"), 0.0);
  EXPECT_EQ(config.get_int("sampling.top_k"), 0);
  EXPECT_EQ(config.get_float("sampling.top_p"), 1.0);
  EXPECT_EQ(config.get_int("sampling.seed"), 0);
  EXPECT_EQ(config.get_string("scheduler.plugin"), "single");
  EXPECT_TRUE(config.get_list("plugins.search_path").empty());
  EXPECT_TRUE(config.has("model.path"));
  EXPECT_FALSE(config.has("backend.threads"));
}

TEST(ConfigParse, ReadsEverySectionIncludingNestedAndInlineTables) {
  const Config config = parse_ok(R"(
[model]
path = "a.bin"
tokenizer = "tok512.bin"
[backend]
plugin = "cuda"
threads = 8
[cache]
plugin = "paged"
max_tokens = 4096
codec = { plugin = "lattice" }
[decode]
max_tokens = 0
[sampling]
temperature = 1          # an integer where a float is expected
top_p = 0.5
[plugins]
search_path = ["/opt/a", "b"]
)");
  ASSERT_TRUE(config.validate_core().ok()) << config.validate_core().to_string();
  EXPECT_EQ(config.get_string("model.tokenizer"), "tok512.bin");
  EXPECT_EQ(config.get_string("backend.plugin"), "cuda");
  EXPECT_EQ(config.get_int("backend.threads"), 8);
  EXPECT_EQ(config.get_int("cache.max_tokens"), 4096);
  EXPECT_EQ(config.get_string("cache.codec.plugin"), "lattice");
  EXPECT_EQ(config.get_int("decode.max_tokens"), 0);
  EXPECT_EQ(config.get_float("sampling.temperature"), 1.0);
  EXPECT_EQ(config.get_float("sampling.top_p"), 0.5);
  EXPECT_EQ(config.get_list("plugins.search_path"), (std::vector<std::string>{"/opt/a", "b"}));
}

TEST(ConfigParse, EntriesFollowTheFileOrder) {
  const Config config = parse_ok("[sampling]\ntop_k = 1\nseed = 2\n[model]\npath = \"m\"\n");
  ASSERT_EQ(config.entries().size(), 3u);
  EXPECT_EQ(config.entries()[0].key(), "sampling.top_k");
  EXPECT_EQ(config.entries()[0].key_where, "test.toml:2:1");
  EXPECT_EQ(config.entries()[0].value_where, "test.toml:2:9");
  EXPECT_EQ(config.entries()[1].key(), "sampling.seed");
  EXPECT_EQ(config.entries()[2].key(), "model.path");
}

TEST(ConfigParse, ArraysKeepTheirScalarsAndInlineTables) {
  const Config config = parse_ok(
      "[sweep.axes]\nw = [8, 0.5, \"x\", true]\nc = [{ plugin = \"int8\" }, { q = 10 }]\n");
  ASSERT_EQ(config.entries().size(), 2u);
  const ConfigEntry& w = config.entries()[0];
  ASSERT_EQ(w.items.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(w.items[0]), 8);
  EXPECT_EQ(std::get<double>(w.items[1]), 0.5);
  EXPECT_EQ(std::get<std::string>(w.items[2]), "x");
  EXPECT_EQ(std::get<bool>(w.items[3]), true);
  const ConfigEntry& c = config.entries()[1];
  ASSERT_EQ(c.item_tables.size(), 2u);
  EXPECT_EQ(c.item_tables[0][0].first, "plugin");
  EXPECT_EQ(std::get<std::string>(c.item_tables[0][0].second), "int8");
  EXPECT_EQ(std::get<int64_t>(c.item_tables[1][0].second), 10);
}

TEST(ConfigParse, WithoutSectionDropsItAndItsSubSections) {
  const Config config = parse_ok(
      "[model]\npath = \"m.gguf\"\n[cache]\nplugin = \"paged\"\n[cache.codec]\nplugin = "
      "\"int8\"\n[cachex]\na = 1\n");
  const Config rest = config.without_section("cache");
  EXPECT_TRUE(rest.has("model.path"));
  EXPECT_FALSE(rest.has("cache.plugin"));
  EXPECT_FALSE(rest.has("cache.codec.plugin"));
  EXPECT_TRUE(rest.has("cachex.a"));  // a prefix of the name is not a sub-section
  EXPECT_EQ(rest.source(), "test.toml");
  EXPECT_TRUE(config.has("cache.codec.plugin"));  // the original is untouched
}

TEST(ConfigParse, SyntaxErrorGivesLineAndColumn) {
  const auto config = Config::parse("[model]\npath = = \"x\"\n", "configs/bad.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("configs/bad.toml:2:8: TOML syntax error"));
}

TEST(ConfigParse, UnclosedStringSaysSo) {
  // toml++ stops at the line end inside the string: the message says what is missing.
  for (const char* text : {"[model]\npath = \"m.gguf\n[cache]\n", "[model]\npath = 'm.gguf\r\n"}) {
    const auto config = Config::parse(text, "open.toml");
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.status().message(), HasSubstr("open.toml:2:15: TOML syntax error: "));
    EXPECT_THAT(config.status().message(),
                HasSubstr("control characters other than TAB (U+0009) are explicitly prohibited; "
                          "the string is probably not closed: add its closing quote on line 2"));
  }
  // At the end of the file.
  const auto at_end = Config::parse("[model]\npath = \"m.gguf", "end.toml");
  ASSERT_FALSE(at_end.ok());
  EXPECT_THAT(at_end.status().message(),
              HasSubstr("end-of-file; the string is probably not closed: add its closing quote"));
  // A control character inside a closed string is another mistake.
  const auto inside = Config::parse("[model]\npath = \"m\x01.gguf\"\n", "ctl.toml");
  ASSERT_FALSE(inside.ok());
  EXPECT_THAT(inside.status().message(), HasSubstr("prohibited"));
  EXPECT_THAT(inside.status().message(), Not(HasSubstr("not closed")));
}

TEST(ConfigParse, DuplicateTableIsASyntaxError) {
  const auto config = Config::parse("[cache]\nmax_tokens = 1\n[cache]\n", "dup.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("dup.toml:3:"));
  EXPECT_THAT(config.status().message(), HasSubstr("cache"));
}

TEST(ConfigLoad, MissingFileIsNotFound) {
  const auto config = Config::load_file("/nonexistent/dir/none.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("/nonexistent/dir/none.toml"));
}

TEST(ConfigLoad, DirectoryIsRefused) {
  const auto config = Config::load_file(TESSERA_SOURCE_DIR "/configs");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigLoad, ReadsAFileAndKnowsItsDirectory) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("tessera_config_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "run.toml";
  {
    std::ofstream out(file);
    out << "[model]\npath = \"x.gguf\"\n\n[backend]\nthreads = \"many\"\n";
  }
  const auto config = Config::load_file(file.string());
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->source(), file.string());
  EXPECT_EQ(config->directory(), dir);
  const Status status = config->validate_core();
  EXPECT_THAT(status.message(),
              HasSubstr(file.string() + ":5:11: backend.threads: expected integer, got \"many\""));
  std::filesystem::remove_all(dir);
}

TEST(ConfigParse, DirectoryOfABareNameIsTheCurrentOne) {
  EXPECT_EQ(parse_ok("", "x.toml").directory(), std::filesystem::path("."));
  EXPECT_EQ(parse_ok("", "configs/x.toml").directory(), std::filesystem::path("configs"));
}

TEST(ConfigParseDeathTest, GetterOfANonCoreKeyIsABug) {
  const Config config = parse_ok("[model]\npath = \"m\"\n");
  EXPECT_DEATH((void)config.get_int("cache.window"), "not a core key");
  EXPECT_DEATH((void)config.get_int("cache.plugin"), "not a core key");
}

}  // namespace
}  // namespace tessera
