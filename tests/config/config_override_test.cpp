// --set key=value: overrides of core keys and plugin options, and their errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/config.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

Config base() {
  auto config = Config::parse(R"(
[model]
path = "stories260K.gguf"
[cache]
plugin = "sink_window"
max_tokens = 512
window = 64
[sampling]
top_k = "oops"
)",
                              "base.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  return std::move(config).value();
}

TEST(ConfigOverride, ReplacesCoreKeysOfTheFile) {
  Config config = base();
  EXPECT_FALSE(config.validate_core().ok());  // top_k = "oops"
  ASSERT_TRUE(config.apply_override("sampling.top_k=40").ok());
  ASSERT_TRUE(config.apply_override("cache.max_tokens = 1024").ok());
  ASSERT_TRUE(config.apply_override("model.path=\"other.gguf\"").ok());
  ASSERT_TRUE(config.apply_override("sampling.temperature=1").ok());
  ASSERT_TRUE(config.apply_override("model.tokenizer=").ok());
  ASSERT_TRUE(config.validate_core().ok()) << config.validate_core().to_string();
  EXPECT_EQ(config.get_int("sampling.top_k"), 40);
  EXPECT_EQ(config.get_int("cache.max_tokens"), 1024);
  EXPECT_EQ(config.get_string("model.path"), "other.gguf");
  EXPECT_EQ(config.get_float("sampling.temperature"), 1.0);
  EXPECT_EQ(config.get_string("model.tokenizer"), "");
}

TEST(ConfigOverride, AddsKeysAndSatisfiesRequiredOnes) {
  auto config = Config::parse("[backend]\nthreads = 2\n", "x.toml");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->validate_core().ok());
  ASSERT_TRUE(config->apply_override("model.path=m.gguf").ok());
  ASSERT_TRUE(config->apply_override("cache.codec.plugin=lattice").ok());
  EXPECT_TRUE(config->validate_core().ok());
  EXPECT_EQ(config->get_string("model.path"), "m.gguf");
  EXPECT_EQ(config->get_string("cache.codec.plugin"), "lattice");
}

TEST(ConfigOverride, ListIsColonSeparated) {
  Config config = base();
  ASSERT_TRUE(config.apply_override("plugins.search_path=/a/b:rel::c").ok());
  EXPECT_EQ(config.get_list("plugins.search_path"), (std::vector<std::string>{"/a/b", "rel", "c"}));
}

TEST(ConfigOverride, TypeErrorNamesTheOverride) {
  Config config = base();
  const Status status = config.apply_override("sampling.top_k=abc");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "--set sampling.top_k=abc: sampling.top_k: expected integer, got \"abc\"");
  EXPECT_THAT(config.apply_override("sampling.temperature=warm").message(),
              HasSubstr("--set sampling.temperature=warm: sampling.temperature: expected float"));
}

TEST(ConfigOverride, RangeErrorNamesTheOverride) {
  Config config = base();
  const Status status = config.apply_override("backend.threads=0");
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(),
            "--set backend.threads=0: backend.threads: 0 is out of range; allowed: [1, 1024]");
}

TEST(ConfigOverride, UnknownSectionAndKey) {
  Config config = base();
  const Status section = config.apply_override("decod.max_tokens=3");
  EXPECT_EQ(section.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(section.message(), HasSubstr("--set decod.max_tokens=3: unknown section [decod]"));
  EXPECT_THAT(section.message(), HasSubstr("did you mean [decode]?"));

  const Status key = config.apply_override("sampling.sed=1");
  EXPECT_THAT(key.message(), HasSubstr("--set sampling.sed=1: unknown key 'sampling.sed'; did "
                                       "you mean 'sampling.seed'? keys allowed in [sampling]"));
}

TEST(ConfigOverride, MalformedAssignment) {
  Config config = base();
  EXPECT_THAT(config.apply_override("sampling.seed").message(), HasSubstr("expected key=value"));
  EXPECT_THAT(config.apply_override("seed=3").message(), HasSubstr("not a section.key name"));
}

TEST(ConfigOverride, PluginOptionsAreCheckedWhenThePluginIsKnown) {
  Config config = base();
  ASSERT_TRUE(config.apply_override("sampling.top_k=1").ok());
  // Plugin options are stored as text: any value is accepted for now.
  ASSERT_TRUE(config.apply_override("cache.window=128").ok());
  ASSERT_TRUE(config.apply_override("cache.sink=many").ok());
  ASSERT_TRUE(config.validate_core().ok());

  const OptionSpec window_only[] = {{.name = "window",
                                     .type = OptionType::kInt,
                                     .default_value = "64",
                                     .description = "w",
                                     .min = 1}};
  const OptionSpec both[] = {
      {.name = "sink", .type = OptionType::kInt, .default_value = "4", .description = "s"},
      {.name = "window", .type = OptionType::kInt, .default_value = "64", .description = "w"}};
  const auto bad = config.plugin_options("cache", both, "cache plugin 'sink_window'");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("--set cache.sink=many: cache.sink: expected integer, got \"many\" "
                        "(option of cache plugin 'sink_window')"));

  ASSERT_TRUE(config.apply_override("cache.sink=8").ok());
  const auto values = config.plugin_options("cache", both, "cache plugin 'sink_window'");
  ASSERT_TRUE(values.ok()) << values.status().to_string();
  EXPECT_EQ(values->get_int("window"), 128);  // --set wins over the file's 64
  EXPECT_EQ(values->get_int("sink"), 8);

  const auto unclaimed = config.plugin_options("cache", window_only, "cache plugin 'window'");
  ASSERT_FALSE(unclaimed.ok());
  EXPECT_THAT(unclaimed.status().message(),
              HasSubstr("--set cache.sink=8: unknown key 'cache.sink'"));
}

}  // namespace
}  // namespace tessera
