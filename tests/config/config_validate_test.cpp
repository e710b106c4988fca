// validate_core: every error class names the position, the key and the fix;
// every shipped config passes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "core/config/config.h"
#include "core/config/config_schema.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Status validate(std::string_view text, std::string name = "configs/x.toml") {
  auto config = Config::parse(text, std::move(name));
  if (!config.ok()) return config.status();
  return config->validate_core();
}

TEST(ConfigValidate, EveryShippedConfigParsesAndValidates) {
  int count = 0;
  for (const auto& file : std::filesystem::directory_iterator(TESSERA_SOURCE_DIR "/configs")) {
    if (file.path().extension() != ".toml") continue;
    SCOPED_TRACE(file.path().string());
    const auto config = Config::load_file(file.path().string());
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    const Status status = config->validate_core();
    EXPECT_TRUE(status.ok()) << status.to_string();
    // Models are named by file name only: the engine searches for them.
    EXPECT_EQ(std::filesystem::path(config->get_string("model.path")).filename().string(),
              config->get_string("model.path"));
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(ConfigValidate, ShippedConfigsHoldWhatTheySay) {
  const auto load = [](const char* name) {
    auto config = Config::load_file(std::string(TESSERA_SOURCE_DIR "/configs/") + name);
    EXPECT_TRUE(config.ok()) << config.status().to_string();
    return std::move(config).value();
  };
  const Config base = load("stories260k.toml");
  EXPECT_EQ(base.get_string("model.path"), "stories260K.gguf");
  EXPECT_EQ(base.get_string("backend.plugin"), "cpu");
  EXPECT_EQ(base.get_int("cache.max_tokens"), 512);
  EXPECT_EQ(base.get_float("sampling.temperature"), 0.0);
  const Config sampling = load("stories260k-sampling.toml");
  EXPECT_EQ(sampling.get_float("sampling.temperature"), 0.8);
  EXPECT_EQ(sampling.get_int("sampling.top_k"), 40);
  EXPECT_EQ(sampling.get_float("sampling.top_p"), 0.95);
  EXPECT_EQ(sampling.get_int("sampling.seed"), 42);
  const Config llama2c = load("stories260k-llama2c.toml");
  EXPECT_EQ(llama2c.get_string("model.path"), "stories260K.bin");
  EXPECT_EQ(llama2c.get_string("model.tokenizer"), "tok512.bin");
  const Config ar = load("tok512-ar-1m.toml");
  EXPECT_EQ(ar.get_string("model.path"), "tok512-ar-1m.gguf");
  EXPECT_EQ(ar.get_int("cache.max_tokens"), 256);
  EXPECT_LE(ar.get_int("decode.max_tokens"), 256);
}

TEST(ConfigValidate, UnknownSectionSuggestsAndListsSections) {
  const Status status = validate("[model]\npath = \"m\"\n\n[cach]\nmax_tokens = 3\n");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("configs/x.toml:4:1: unknown section [cach]"));
  EXPECT_THAT(status.message(), HasSubstr("did you mean [cache]?"));
  EXPECT_THAT(status.message(), HasSubstr("sections allowed: model, backend, cache, cache.codec, "
                                          "decode, sampling, scheduler, server, plugins"));
}

TEST(ConfigValidate, UnknownNestedSectionNamesTheOutermost) {
  const Status status = validate("[model]\npath = \"m\"\n[foo.bar]\nx = 1\n");
  EXPECT_THAT(status.message(), HasSubstr("unknown section [foo]"));
  const Status nested = validate("[model]\npath = \"m\"\n[cache.codex]\nplugin = \"x\"\n");
  EXPECT_THAT(nested.message(), HasSubstr("configs/x.toml:3:1: unknown section [cache.codex]"));
  EXPECT_THAT(nested.message(), HasSubstr("did you mean [cache.codec]?"));
}

TEST(ConfigValidate, UnknownKeyInACoreSectionSuggestsAndListsKeys) {
  const Status status = validate("[model]\npath = \"m\"\n[sampling]\n\ntopk = 4\n");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("configs/x.toml:5:1: unknown key 'sampling.topk'; did you mean "
                        "'sampling.top_k'? keys allowed in [sampling]: temperature, top_k, "
                        "top_p, seed"));
}

TEST(ConfigValidate, KeyInTheWrongSectionSaysWhereItBelongs) {
  const Status status = validate("[model]\npath = \"m\"\nthreads = 2\n");
  EXPECT_THAT(status.message(), HasSubstr("configs/x.toml:3:1: unknown key 'model.threads'"));
  EXPECT_THAT(status.message(), HasSubstr("'threads' is a key of [backend]"));
  EXPECT_THAT(status.message(), HasSubstr("keys allowed in [model]: path, tokenizer"));
}

TEST(ConfigValidate, KeyOutsideAnySection) {
  const Status status = validate("path = \"m\"\n");
  EXPECT_THAT(status.message(), HasSubstr("configs/x.toml:1:1: key 'path' is outside any section"));
  EXPECT_THAT(status.message(), HasSubstr("did you mean 'model.path'?"));
}

TEST(ConfigValidate, WrongTypeGivesTheValuePosition) {
  const Status status = validate("[model]\npath = \"m\"\n\n[sampling]\ntop_k =    \"abc\"\n");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("configs/x.toml:5:12: sampling.top_k: expected integer, got \"abc\""));
}

TEST(ConfigValidate, WrongTypesOfEveryKind) {
  EXPECT_THAT(validate("[model]\npath = 3\n").message(),
              HasSubstr("model.path: expected string, got 3"));
  EXPECT_THAT(validate("[model]\npath = \"m\"\n[sampling]\ntop_k = 1.5\n").message(),
              HasSubstr("sampling.top_k: expected integer, got 1.5"));
  EXPECT_THAT(validate("[model]\npath = \"m\"\n[sampling]\ntemperature = \"hot\"\n").message(),
              HasSubstr("sampling.temperature: expected float, got \"hot\""));
  EXPECT_THAT(validate("[model]\npath = \"m\"\n[plugins]\nsearch_path = \"a:b\"\n").message(),
              HasSubstr("plugins.search_path: expected a list of strings"));
  EXPECT_THAT(validate("[model]\npath = \"m\"\n[plugins]\nsearch_path = [1, 2]\n").message(),
              HasSubstr("plugins.search_path: expected a list of strings"));
  EXPECT_THAT(validate("[model]\npath = [\"m\"]\n").message(),
              HasSubstr("model.path: expected string, got [\"m\"]"));
}

TEST(ConfigValidate, OutOfRangeGivesTheAllowedRange) {
  const Status status = validate("[model]\npath = \"m\"\n[cache]\nmax_tokens = 0\n");
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(status.message(),
              HasSubstr("configs/x.toml:4:14: cache.max_tokens: 0 is out of range; allowed: "
                        "[1, 2147483647]"));

  const Status top_p = validate("[model]\npath = \"m\"\n[sampling]\ntop_p = 0.0\n");
  EXPECT_EQ(top_p.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(top_p.message(), HasSubstr("sampling.top_p: 0 is out of range; allowed: (0, 1]"));
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[sampling]\ntop_p = 1.5\n").code(),
            StatusCode::kOutOfRange);
  EXPECT_TRUE(validate("[model]\npath = \"m\"\n[sampling]\ntop_p = 1\n").ok());
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[sampling]\ntemperature = -0.5\n").code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[backend]\nthreads = 0\n").code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[sampling]\nseed = -1\n").code(),
            StatusCode::kOutOfRange);
}

// 4294967297 = 2^32 + 1 used to wrap when narrowed to int: one thread, and a
// top_k of 1 (greedy). The range is checked on the 64-bit value first.
TEST(ConfigValidate, IntegersThatWouldWrapAreOutOfRange) {
  const Status threads = validate("[model]\npath = \"m\"\n[backend]\nthreads = 4294967297\n");
  EXPECT_EQ(threads.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(threads.message(),
              HasSubstr("backend.threads: 4294967297 is out of range; allowed: [1, 1024]"));
  const Status top_k = validate("[model]\npath = \"m\"\n[sampling]\ntop_k = 4294967297\n");
  EXPECT_EQ(top_k.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(top_k.message(), HasSubstr("allowed: [0, 2147483647]"));
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[cache]\nmax_tokens = 4294967297\n").code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(validate("[model]\npath = \"m\"\n[sampling]\ntemperature = 1e39\n").code(),
            StatusCode::kOutOfRange);

  auto config = Config::parse("[model]\npath = \"m\"\n", "x.toml");
  ASSERT_TRUE(config.ok());
  const Status set = config->apply_override("sampling.top_k=4294967297");
  EXPECT_EQ(set.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(set.message(), HasSubstr("--set sampling.top_k=4294967297"));
}

// The integer keys the core narrows to int (threads, top_k) or counts in
// int32 positions (the token counts) have a range inside int32, and every
// float key one inside float, so a value that passes validation never wraps.
// (sampling.seed is the one integer read as 64 bits.)
TEST(ConfigValidate, EveryNumericCoreKeyFitsTheTypeItIsNarrowedTo) {
  for (const ConfigKey& key : core_config_schema()) {
    SCOPED_TRACE(key.key());
    if (key.spec.type == OptionType::kInt && key.key() != "sampling.seed") {
      EXPECT_LE(key.spec.max, 2147483647.0);
      EXPECT_GE(key.spec.min, -2147483648.0);
    } else if (key.spec.type == OptionType::kFloat) {
      EXPECT_LE(key.spec.max, 3.0e38);
      EXPECT_GE(key.spec.min, -3.0e38);
    }
  }
}

TEST(ConfigValidate, MissingModelPath) {
  const Status status = validate("[backend]\nthreads = 2\n", "configs/nomodel.toml");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("configs/nomodel.toml: missing required key 'model.path'"));
  EXPECT_THAT(status.message(), HasSubstr("--set model.path="));
}

TEST(ConfigValidate, PluginSectionKeysAreLeftForThePlugins) {
  // `sink` is not a core key of [cache]: it may be an option of the cache plugin.
  const Status status = validate(
      "[model]\npath = \"m\"\n[cache]\nplugin = \"sink_window\"\nsink = 4\n"
      "[decode]\ndraft_tokens = 4\n[cache.codec]\nq = 38\n");
  EXPECT_TRUE(status.ok()) << status.to_string();
}

TEST(ConfigValidate, FirstErrorInFileOrder) {
  const Status status =
      validate("[model]\npath = \"m\"\n[sampling]\nseed = \"x\"\ntop_k = \"y\"\n");
  EXPECT_THAT(status.message(), HasSubstr("sampling.seed"));
  EXPECT_THAT(status.message(), Not(HasSubstr("top_k")));
}

}  // namespace
}  // namespace tessera
