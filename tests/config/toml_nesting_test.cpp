// The nesting guard in front of toml++: deep dotted keys, table headers,
// arrays and inline tables are refused with a position before toml++ (which
// recurses once per level) sees them; every ordinary TOML form passes.
#include "core/config/toml_nesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/config/config.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string repeat(std::string_view part, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += part;
  return out;
}

// Ten thousand levels used to overflow the stack inside toml++ (SIGSEGV).
TEST(TomlNesting, DeepDottedKeyIsRefusedWithItsPosition) {
  const std::string text = "[model]\npath = \"m\"\n" + repeat("a.", 10000) + "b = 1\n";
  const auto config = Config::parse(text, "deep.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("deep.toml:3:1: "));
  EXPECT_THAT(config.status().message(), HasSubstr("more than 32 levels"));
}

TEST(TomlNesting, DeepTableHeadersAreRefused) {
  for (const std::string& text :
       {"[" + repeat("a.", 10000) + "b]\nc = 1\n", "[[" + repeat("a.", 10000) + "b]]\nc = 1\n",
        "[" + repeat("t.", 20) + "u]\n" + repeat("k.", 20) + "v = 1\n"}) {
    const auto config = Config::parse(text, "deep.toml");
    ASSERT_FALSE(config.ok()) << text.substr(0, 40);
    EXPECT_THAT(config.status().message(), HasSubstr("more than 32 levels"));
  }
}

TEST(TomlNesting, DeepArraysAndInlineTablesAreRefused) {
  const std::string arrays = "x = " + repeat("[", 10000) + repeat("]", 10000) + "\n";
  const std::string tables = "x = " + repeat("{a=", 10000) + "1" + repeat("}", 10000) + "\n";
  const std::string mixed =
      "x = " + repeat("[{" + repeat("k.", 5) + "a=", 10) + "1" + repeat("}]", 10) + "\n";
  for (const std::string& text : {arrays, tables, mixed}) {
    const Status status = check_toml_nesting(text, "deep.toml");
    ASSERT_FALSE(status.ok()) << text.substr(0, 40);
    EXPECT_THAT(status.message(), HasSubstr("deep.toml:1:"));
  }
}

TEST(TomlNesting, TheLimitItselfIsAllowed) {
  // Depth counts nodes from the root: a header of 31 parts plus one key is 32.
  EXPECT_TRUE(check_toml_nesting("[" + repeat("a.", 30) + "b]\nc = 1\n", "ok.toml").ok());
  EXPECT_FALSE(check_toml_nesting("[" + repeat("a.", 31) + "b]\nc = 1\n", "x.toml").ok());
  EXPECT_TRUE(check_toml_nesting("x = " + repeat("[", 31) + repeat("]", 31), "ok.toml").ok());
  EXPECT_FALSE(check_toml_nesting("x = " + repeat("[", 32) + "1" + repeat("]", 32), "x.toml").ok());
}

// Dots and brackets inside strings and comments, floats, dates and multi-line
// values are not nesting.
TEST(TomlNesting, StringsCommentsAndValuesDoNotCount) {
  const std::string text =
      "# " + repeat("a.", 100) + "\n" + "key = \"" + repeat("[a.", 100) + "\"\n" + "lit = '" +
      repeat("{.", 100) + "'\n" + "multi = \"\"\"\n" + repeat("[x.y]\n", 50) + "\\\"\"\"\"\n" +
      "raw = '''" + repeat("]]", 50) + "'''\n" + "floats = [" + repeat("1.5, ", 200) + "2.5]\n" +
      "when = 1979-05-27 07:32:00.999\n" + "list = [\n  1, # a comment [[[\n  2,\n]\n" +
      "\"quoted.key\".'also.quoted' = { a = [1, 2], b.c = \"d\" }\n";
  EXPECT_TRUE(check_toml_nesting(text, "ok.toml").ok())
      << check_toml_nesting(text, "ok.toml").message();
  EXPECT_TRUE(Config::parse(text, "ok.toml").ok());
}

// Text that is not TOML is left to toml++, whose message is more precise.
TEST(TomlNesting, BrokenTextIsLeftToTheParser) {
  EXPECT_TRUE(check_toml_nesting("a = \"unterminated\n" + repeat("b.", 100) + "c = 1", "x").ok());
  const auto config = Config::parse("a = \"unterminated\n", "broken.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("TOML syntax error"));
}

}  // namespace
}  // namespace tessera
