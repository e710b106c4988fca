// plugin_options: plugin keys checked against the chosen plugins' schemas,
// defaults filled, unclaimed keys reported with what is allowed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/config.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr OptionSpec kSinkWindow[] = {
    {.name = "sink",
     .type = OptionType::kInt,
     .default_value = "4",
     .description = "sinks",
     .min = 0},
    {.name = "window",
     .type = OptionType::kInt,
     .default_value = "64",
     .description = "window",
     .min = 1,
     .max = 65536},
    {.name = "reassign",
     .type = OptionType::kBool,
     .default_value = "false",
     .description = "re-number positions"},
};
constexpr OptionSpec kLattice[] = {
    {.name = "lattice",
     .type = OptionType::kString,
     .default_value = "\"D4\"",
     .description = "lattice",
     .choices = "D4|E8"},
    {.name = "scale",
     .type = OptionType::kFloat,
     .default_value = "0.5",
     .description = "s",
     .min = 0},
};
constexpr OptionSpec kDraft[] = {
    {.name = "draft_tokens",
     .type = OptionType::kInt,
     .default_value = "4",
     .description = "draft",
     .min = 1},
    {.name = "shared", .type = OptionType::kInt, .default_value = "1", .description = "x"},
};
constexpr OptionSpec kVerify[] = {
    {.name = "tree", .type = OptionType::kBool, .default_value = "false", .description = "tree"},
    {.name = "shared", .type = OptionType::kInt, .default_value = "2", .description = "y"},
};

Config parse(std::string_view text) {
  auto config = Config::parse(text, "configs/p.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_TRUE(config->validate_core().ok()) << config->validate_core().to_string();
  return std::move(config).value();
}

TEST(PluginOptions, PresentKeysAreCheckedAndAbsentOnesDefaulted) {
  const Config config = parse(R"(
[model]
path = "m"
[cache]
plugin = "sink_window"
max_tokens = 1024
window = 128
[cache.codec]
plugin = "lattice"
lattice = "E8"
scale = 2
)");
  const auto cache = config.plugin_options("cache", kSinkWindow, "cache plugin 'sink_window'");
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  EXPECT_EQ(cache->get_int("window"), 128);
  EXPECT_EQ(cache->get_int("sink"), 4);
  EXPECT_FALSE(cache->get_bool("reassign"));
  EXPECT_EQ(cache->all().size(), 3u);  // core keys are not plugin options

  const auto codec = config.plugin_options("cache.codec", kLattice, "compressor plugin 'lattice'");
  ASSERT_TRUE(codec.ok()) << codec.status().to_string();
  EXPECT_EQ(codec->get_string("lattice"), "E8");
  // An integer where a float is expected is stored as a float.
  EXPECT_TRUE(std::holds_alternative<double>(codec->all().at("scale")));
  EXPECT_EQ(codec->get_float("scale"), 2.0);
}

TEST(PluginOptions, PluginWithoutOptionsGetsNone) {
  const Config config = parse("[model]\npath = \"m\"\n[cache]\nmax_tokens = 8\n");
  const auto values = config.plugin_options("cache", {}, "cache plugin 'static'");
  ASSERT_TRUE(values.ok());
  EXPECT_TRUE(values->all().empty());
}

TEST(PluginOptions, UnknownKeySuggestsAndListsCoreAndPluginKeys) {
  const Config config = parse(
      "[model]\npath = \"m\"\n[cache]\nplugin = \"static\"\n\n\n"
      "max_tokns = 1024\n");
  const auto values = config.plugin_options("cache", {}, "cache plugin 'static'");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(values.status().message(),
            "configs/p.toml:7:1: unknown key 'cache.max_tokns'; did you mean "
            "'cache.max_tokens'? keys allowed in [cache]: plugin, max_tokens, max_memory_mib, "
            "codec_stage, codec_span, codec_skip_layers, swa_full; "
            "cache plugin "
            "'static' has no options");

  const Config typo = parse("[model]\npath = \"m\"\n[cache]\nwindw = 3\n");
  const auto sw = typo.plugin_options("cache", kSinkWindow, "cache plugin 'sink_window'");
  ASSERT_FALSE(sw.ok());
  EXPECT_THAT(sw.status().message(),
              HasSubstr("configs/p.toml:4:1: unknown key 'cache.windw'; did you mean "
                        "'cache.window'? keys allowed in [cache]: plugin, max_tokens, "
                        "max_memory_mib, codec_stage, codec_span, codec_skip_layers, swa_full; "
                        "cache plugin 'sink_window': sink, window, reassign"));
}

TEST(PluginOptions, WrongTypeNamesThePlugin) {
  const Config config = parse("[model]\npath = \"m\"\n[cache]\nsink = \"four\"\n");
  const auto values = config.plugin_options("cache", kSinkWindow, "cache plugin 'sink_window'");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(values.status().message(),
            "configs/p.toml:4:8: cache.sink: expected integer, got \"four\" (option of cache "
            "plugin 'sink_window')");
  const Config flag = parse("[model]\npath = \"m\"\n[cache]\nreassign = 1\n");
  EXPECT_THAT(flag.plugin_options("cache", kSinkWindow, "c").status().message(),
              HasSubstr("cache.reassign: expected bool, got 1"));
}

TEST(PluginOptions, OutOfRangeAndChoices) {
  const Config range = parse("[model]\npath = \"m\"\n[cache]\nwindow = 0\n");
  const auto values = range.plugin_options("cache", kSinkWindow, "cache plugin 'sink_window'");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(values.status().message(),
              HasSubstr("cache.window: 0 is out of range; allowed: [1, 65536]"));

  const Config choice = parse("[model]\npath = \"m\"\n[cache.codec]\nlattice = \"E9\"\n");
  const auto codec = choice.plugin_options("cache.codec", kLattice, "compressor plugin 'lattice'");
  ASSERT_FALSE(codec.ok());
  EXPECT_EQ(codec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(codec.status().message(),
              HasSubstr("cache.codec.lattice: \"E9\" is not allowed; did you mean 'E8'? "
                        "allowed: D4, E8"));
}

TEST(PluginOptions, SharedSectionIsValidatedAgainstEveryPluginInIt) {
  const Config config = parse(R"(
[model]
path = "m"
[decode]
proposer = "ngram"
verifier = "tree"
max_tokens = 10
draft_tokens = 6
tree = true
shared = 9
)");
  const PluginSchema plugins[] = {{"proposer plugin 'ngram'", kDraft},
                                  {"verifier plugin 'tree'", kVerify}};
  const auto values = config.plugin_options("decode", plugins);
  ASSERT_TRUE(values.ok()) << values.status().to_string();
  ASSERT_EQ(values->size(), 2u);
  EXPECT_EQ((*values)[0].get_int("draft_tokens"), 6);
  EXPECT_FALSE((*values)[0].has("tree"));
  EXPECT_TRUE((*values)[1].get_bool("tree"));
  EXPECT_FALSE((*values)[1].has("draft_tokens"));
  // An option both declare reaches both.
  EXPECT_EQ((*values)[0].get_int("shared"), 9);
  EXPECT_EQ((*values)[1].get_int("shared"), 9);

  // With only the proposer, the verifier's key is unclaimed.
  const auto proposer_only = config.plugin_options("decode", kDraft, "proposer plugin 'ngram'");
  ASSERT_FALSE(proposer_only.ok());
  EXPECT_THAT(proposer_only.status().message(),
              HasSubstr("configs/p.toml:9:1: unknown key 'decode.tree'"));
}

TEST(PluginOptions, UnclaimedKeyInASharedSectionListsEveryOwner) {
  const Config config = parse("[model]\npath = \"m\"\n[decode]\ndraft_token = 3\n");
  const PluginSchema plugins[] = {{"proposer plugin 'ngram'", kDraft},
                                  {"verifier plugin 'ar'", {}}};
  const auto values = config.plugin_options("decode", plugins);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().message(),
            "configs/p.toml:4:1: unknown key 'decode.draft_token'; did you mean "
            "'decode.draft_tokens'? keys allowed in [decode]: proposer, alternate_proposers, "
            "verifier, max_tokens, "
            "max_batch, branch_layout; "
            "proposer plugin 'ngram': draft_tokens, shared; verifier plugin 'ar' has no "
            "options");
}

TEST(PluginOptions, OtherSectionsDoNotLeakIn) {
  const Config config =
      parse("[model]\npath = \"m\"\n[cache]\nwindow = 32\n[cache.codec]\nsink = 1\n");
  const auto values = config.plugin_options("cache", kSinkWindow, "cache plugin 'sink_window'");
  ASSERT_TRUE(values.ok()) << values.status().to_string();
  EXPECT_EQ(values->get_int("sink"), 4);  // [cache.codec] sink belongs to the codec
  EXPECT_EQ(values->get_int("window"), 32);
}

TEST(PluginOptions, BadDefaultInAManifestIsInternal) {
  const OptionSpec broken[] = {
      {.name = "n", .type = OptionType::kInt, .default_value = "four", .description = "n"}};
  const Config config = parse("[model]\npath = \"m\"\n");
  const auto values = config.plugin_options("scheduler", broken, "scheduler plugin 'x'");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), StatusCode::kInternal);
  EXPECT_THAT(values.status().message(), HasSubstr("scheduler plugin 'x'"));
}

TEST(ConfigSchema, SectionsOfPluginKinds) {
  EXPECT_EQ(config_section_for_kind("backend"), "backend");
  EXPECT_EQ(config_section_for_kind("cache"), "cache");
  EXPECT_EQ(config_section_for_kind("compressor"), "cache.codec");
  EXPECT_EQ(config_section_for_kind("proposer"), "decode");
  EXPECT_EQ(config_section_for_kind("verifier"), "decode");
  EXPECT_EQ(config_section_for_kind("scheduler"), "scheduler");
  EXPECT_EQ(config_section_for_kind("nonsense"), "");
  EXPECT_TRUE(is_plugin_section("cache.codec"));
  EXPECT_FALSE(is_plugin_section("sampling"));
}

}  // namespace
}  // namespace tessera
