// docs/config.md carries the generated key table; it must match the schema.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ConfigDocs, KeyTableMatchesTheSchema) {
  const std::string doc = read(TESSERA_SOURCE_DIR "/docs/config.md");
  const std::string begin = "<!-- BEGIN GENERATED KEYS -->\n";
  const std::string end = "<!-- END GENERATED KEYS -->";
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/config.md lacks " << begin;
  ASSERT_NE(e, std::string::npos) << "docs/config.md lacks " << end;
  ASSERT_LT(b, e);
  const std::string table = doc.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(table, config_reference_markdown())
      << "docs/config.md is out of date; put this between the markers:\n"
      << config_reference_markdown();
}

TEST(ConfigDocs, DocSaysHowPluginOptionsAreListed) {
  const std::string doc = read(TESSERA_SOURCE_DIR "/docs/config.md");
  EXPECT_THAT(doc, HasSubstr("tessera plugins"));
  EXPECT_THAT(doc, HasSubstr("TESSERA_MODEL_PATH"));
  EXPECT_THAT(doc, HasSubstr("--set"));
}

// The messages docs/config.md quotes are the ones the code writes, and its
// list of sections is the schema's.
TEST(ConfigDocs, QuotedMessagesAreTheOnesTheCodeWrites) {
  const std::string doc = read(TESSERA_SOURCE_DIR "/docs/config.md");
  std::vector<std::string> messages;
  // An unknown key of [cache] under the static store, which has no options.
  auto unknown =
      Config::parse("[model]\npath = \"m.gguf\"\n\n[cache]\nplugin = \"static\"\n\nmax_tokns = 5\n",
                    "configs/x.toml");
  ASSERT_TRUE(unknown.ok());
  ASSERT_TRUE(unknown->validate_core().ok());
  const PluginSchema static_store{"cache plugin 'static'", {}};
  auto options = unknown->plugin_options("cache", std::span(&static_store, 1));
  ASSERT_FALSE(options.ok());
  messages.push_back(options.status().message());
  auto type = Config::parse("[model]\npath = \"m.gguf\"\n\n[sampling]\ntop_k = \"abc\"\n",
                            "configs/x.toml");
  ASSERT_TRUE(type.ok());
  messages.push_back(type->validate_core().message());
  auto range =
      Config::parse("[model]\npath = \"m.gguf\"\n[cache]\nmax_tokens = 0\n", "configs/x.toml");
  ASSERT_TRUE(range.ok());
  messages.push_back(range->validate_core().message());
  auto open = Config::parse("[model]\npath = \"stories260K.gguf\n", "configs/x.toml");
  ASSERT_FALSE(open.ok());
  messages.push_back(open.status().message());
  for (const std::string& message : messages)
    EXPECT_THAT(doc, HasSubstr("\n" + message + "\n")) << "docs/config.md should quote:\n"
                                                       << message;

  auto file = Config::parse("[model]\npath = \"m.gguf\"\n", "c.toml");
  ASSERT_TRUE(file.ok());
  const Status set = file->apply_override("sampling.top_k=abc");
  EXPECT_THAT(doc, HasSubstr("(`" + set.message() + "`)")) << set.message();

  const auto sections = doc.find("The sections are ");
  ASSERT_NE(sections, std::string::npos);
  const std::string sentence =
      doc.substr(sections, doc.find('.', doc.find("[plugins]", sections)) - sections);
  for (const auto section : config_sections())
    EXPECT_THAT(sentence, HasSubstr("`[" + std::string(section) + "]`"));
}

TEST(ConfigSchema, ReferenceTableHasOneRowPerKey) {
  const std::string table = config_reference_markdown();
  std::set<std::string> keys;
  for (const auto& key : core_config_schema()) {
    EXPECT_THAT(table, HasSubstr("| `" + key.key() + "` |"));
    EXPECT_TRUE(keys.insert(key.key()).second) << "duplicate " << key.key();
    EXPECT_TRUE(is_config_section(key.section)) << key.section;
  }
  // The names later tools depend on.
  for (const char* name : {"model.path",
                           "model.tokenizer",
                           "backend.plugin",
                           "backend.threads",
                           "backend.weights",
                           "cache.plugin",
                           "cache.max_tokens",
                           "cache.max_memory_mib",
                           "cache.codec_stage",
                           "cache.codec_span",
                           "cache.codec_skip_layers",
                           "cache.codec.plugin",
                           "cache.swa_full",
                           "decode.proposer",
                           "decode.verifier",
                           "decode.max_tokens",
                           "decode.max_batch",
                           "decode.branch_layout",
                           "sampling.temperature",
                           "sampling.top_k",
                           "sampling.top_p",
                           "sampling.seed",
                           "sampling.presence_penalty",
                           "sampling.frequency_penalty",
                           "scheduler.plugin",
                           "plugins.search_path",
                           "server.max_sessions_per_key",
                           "server.queue_timeout_s",
                           "server.max_body_bytes",
                           "server.header_timeout_s",
                           "server.max_connections_per_address",
                           "server.metrics_need_key",
                           "server.prefix_cache_mib"})
    EXPECT_EQ(keys.count(name), 1u) << name;
  EXPECT_EQ(keys.size(), 40u);
  EXPECT_THAT(table, HasSubstr("| `sampling.top_p` | float | `1.0` | (0, 1] |"));
  EXPECT_THAT(table, HasSubstr("| `model.path` | string | required |"));
  EXPECT_THAT(table, HasSubstr("| `plugins.search_path` | list of strings | `[]` |"));
}

TEST(ConfigSchema, EveryDefaultPassesItsOwnCheck) {
  for (const auto& key : core_config_schema()) {
    if (key.required || key.list) continue;
    const std::string header =
        std::string(key.section) == "model" ? "" : "[" + std::string(key.section) + "]\n";
    auto config = Config::parse(
        "[model]\npath = \"m\"\n" + header + key.spec.name + " = " + key.spec.default_value + "\n",
        "d.toml");
    ASSERT_TRUE(config.ok()) << key.key();
    EXPECT_TRUE(config->validate_core().ok())
        << key.key() << ": " << config->validate_core().to_string();
  }
}

}  // namespace
}  // namespace tessera
