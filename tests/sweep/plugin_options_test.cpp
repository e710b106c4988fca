// One config holding every proposer's options: each proposer keeps the ones
// it (and a tree's drafter) reads, misspelled keys stay for the engine to
// report, and other sections are left as they were.
#include "apps/tessera/sweep/plugin_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/shared_model_engine.h"

namespace tessera::sweep {
namespace {

using ::testing::Contains;
using ::testing::Not;

const std::string kModels = TESSERA_SHARED_DIR "/models/";
const std::string kBase = "[model]\npath = \"" + kModels +
                          "tok512-ar-1m.gguf\"\n"
                          "[cache]\nmax_tokens = 300\n[cache.codec]\nplugin = \"int8\"\n"
                          "[decode]\nproposer = \"PROPOSER\"\ndraft_tokens = 3\ndraft_model = \"" +
                          kModels +
                          "stories260K.gguf\"\n"
                          "draft_layers = 3\ntree_drafter = \"ar_draft\"\nmax_tokens = 50\n";

Config config_with(const std::string& proposer, const std::string& extra = "") {
  std::string toml = kBase;
  toml.replace(toml.find("PROPOSER"), 8, proposer);
  auto config = Config::parse(toml + extra, "spec.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_TRUE(config->validate_core().ok());
  return *config;
}

TEST(PluginOptions, TreeReadsItsDrafterOptions) {
  auto read = options_read(config_with("tree"), support::build_tree_registry(), "decode");
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_THAT(*read, Contains("tree_tokens"));
  EXPECT_THAT(*read, Contains("draft_model"));  // ar_draft's, the tree's drafter
  EXPECT_THAT(*read, Not(Contains("draft_layers")));
}

TEST(PluginOptions, EachProposerKeepsWhatItReads) {
  const PluginRegistry& registry = support::build_tree_registry();
  auto ngram = without_other_plugins_options(config_with("ngram"), registry, "decode");
  ASSERT_TRUE(ngram.ok()) << ngram.status().to_string();
  EXPECT_TRUE(ngram->has("decode.draft_tokens"));
  EXPECT_FALSE(ngram->has("decode.draft_model"));
  EXPECT_FALSE(ngram->has("decode.draft_layers"));
  EXPECT_FALSE(ngram->has("decode.tree_drafter"));
  EXPECT_EQ(ngram->get_int("decode.max_tokens"), 50);  // core keys stay
  EXPECT_EQ(ngram->get_string("cache.codec.plugin"), "int8");
  EXPECT_EQ(ngram->get_int("cache.max_tokens"), 300);

  auto self = without_other_plugins_options(config_with("self_draft"), registry, "decode");
  ASSERT_TRUE(self.ok()) << self.status().to_string();
  EXPECT_TRUE(self->has("decode.draft_layers"));
  EXPECT_FALSE(self->has("decode.draft_model"));

  auto none = without_other_plugins_options(config_with("none"), registry, "decode");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_FALSE(none->has("decode.draft_tokens"));
  auto engine = Engine::create(*none, registry);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
}

TEST(PluginOptions, AMisspelledKeyStaysForTheEngineToReport) {
  auto pruned = without_other_plugins_options(config_with("ngram", "draft_tokns = 2\n"),
                                              support::build_tree_registry(), "decode");
  ASSERT_TRUE(pruned.ok()) << pruned.status().to_string();
  EXPECT_TRUE(pruned->has("decode.draft_tokns"));
  auto engine = Engine::create(*pruned, support::build_tree_registry());
  ASSERT_FALSE(engine.ok());
  EXPECT_THAT(engine.status().message(), ::testing::HasSubstr("draft_tokns"));
}

}  // namespace
}  // namespace tessera::sweep
