// The sweep file's grid: axes in file order, the last varying fastest; section
// axes that set several keys; the sweep's own keys as axes; and the messages
// for sweep files that cannot run.
#include "apps/tessera/sweep/sweep_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tessera::sweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const std::string kText = TESSERA_SHARED_DIR "/data/tinystories_train_head.txt";

Result<SweepSpec> spec_of(const std::string& toml) {
  auto config = Config::parse(toml, "sweep.toml");
  if (!config.ok()) return config.status();
  return read_sweep_spec(*config);
}

std::string with_axes(const std::string& axes, const std::string& sweep = "") {
  return "[model]\npath = \"stories260K.gguf\"\n[sweep]\ntasks = [\"perplexity\"]\ntext = \"" +
         kText + "\"\n" + sweep + "[sweep.axes]\n" + axes;
}

TEST(SweepSpec, GridIsTheProductOfTheAxesLastFastest) {
  auto spec =
      spec_of(with_axes("\"cache.window\" = [8, 16, 32]\n"
                        "\"sampling.temperature\" = [0.0, 0.5]\n"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->points(), 6);
  EXPECT_THAT(spec->choice(0), ElementsAre(0u, 0u));
  EXPECT_THAT(spec->choice(1), ElementsAre(0u, 1u));
  EXPECT_THAT(spec->choice(2), ElementsAre(1u, 0u));
  EXPECT_THAT(spec->choice(5), ElementsAre(2u, 1u));
  ASSERT_TRUE(spec->axes[0].numeric());
  EXPECT_EQ(*spec->axes[0].values[1].number, 16.0);
  EXPECT_EQ(spec->settings.text, kText);
  EXPECT_EQ(spec->settings.max_tokens, 512);  // the default

  auto point = point_setup(*spec, spec->choice(3));
  ASSERT_TRUE(point.ok());
  EXPECT_THAT(point->sets,
              ElementsAre(Pair("cache.window", "16"), Pair("sampling.temperature", "0.5")));
  EXPECT_THAT(point->labels, ElementsAre("16", "0.5"));
}

TEST(SweepSpec, SectionAxisSetsEveryKeyOfItsTable) {
  auto spec = spec_of(with_axes(
      "\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"lattice\", lattice = \"E8\", "
      "q = 37 }]\n"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Axis& axis = spec->axes.at(0);
  EXPECT_FALSE(axis.numeric());
  EXPECT_EQ(axis.values[0].label, "identity");
  EXPECT_EQ(axis.values[1].label, "lattice E8 q=37");  // the option named like the plugin: bare
  // toml++ keeps a table's keys sorted, not in file order.
  EXPECT_THAT(axis.values[1].sets,
              UnorderedElementsAre(Pair("cache.codec.plugin", "lattice"),
                                   Pair("cache.codec.lattice", "E8"), Pair("cache.codec.q", "37")));
}

TEST(SweepSpec, DecodeSectionAxisNamesItsProposerBare) {
  // How a proposer with a model of its own takes it beside the others.
  auto spec = spec_of(
      with_axes("\"decode\" = [{ proposer = \"ngram\" }, { proposer = \"dlm\", draft_model = "
                "\"tok512-sdar-1m.gguf\" }]\n"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Axis& axis = spec->axes.at(0);
  EXPECT_EQ(axis.values[0].label, "ngram");
  EXPECT_EQ(axis.values[1].label, "dlm draft_model=tok512-sdar-1m.gguf");
  EXPECT_THAT(axis.values[1].sets,
              UnorderedElementsAre(Pair("decode.proposer", "dlm"),
                                   Pair("decode.draft_model", "tok512-sdar-1m.gguf")));
}

TEST(SweepSpec, SweepKeysAsAxesChangeTheSettingsNotTheConfig) {
  auto spec = spec_of(with_axes("\"sweep.recall_filler\" = [0, 256]\n", "recall_filler = 5\n"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->settings.recall_filler, 5);
  auto point = point_setup(*spec, spec->choice(1));
  ASSERT_TRUE(point.ok());
  EXPECT_EQ(point->settings.recall_filler, 256);
  EXPECT_TRUE(point->sets.empty());
}

TEST(SweepSpec, BaseConfigHasNoSweepKeys) {
  auto spec = spec_of(with_axes("\"cache.window\" = [8]\n"));
  ASSERT_TRUE(spec.ok());
  for (const ConfigEntry& entry : spec->base.entries())
    EXPECT_EQ(entry.section.rfind("sweep", 0), std::string::npos) << entry.key();
  EXPECT_TRUE(spec->base.has("model.path"));
  EXPECT_TRUE(spec->base.validate_core().ok());
}

TEST(SweepSpec, OverridesOfTheSweepKeys) {
  auto spec = spec_of(with_axes("\"cache.window\" = [8]\n"));
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.max_tokens=128").ok());
  EXPECT_EQ(spec->settings.max_tokens, 128);
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.tasks=memory, recall").ok());
  EXPECT_THAT(spec->settings.tasks, ElementsAre("memory", "recall"));

  EXPECT_THAT(apply_sweep_override(*spec, "sweep.max_tokens=12x").message(),
              HasSubstr("--set sweep.max_tokens=12x: expected an integer"));
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.max_tokens=1").message(),
              HasSubstr("1 is out of range; allowed: [2, "));
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.max_tokes=5").message(),
              HasSubstr("unknown key 'sweep.max_tokes'; did you mean 'max_tokens'"));
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.tasks=speed,sped").message(),
              HasSubstr("unknown task 'sped'; did you mean 'speed'"));
}

TEST(SweepSpec, SetGivesAnAxisOtherValues) {
  auto spec =
      spec_of(with_axes("\"cache.window\" = [8, 16, 32, 64]\n\"decode.proposer\" = [\"ngram\"]\n"
                        "\"cache.codec\" = [{ plugin = \"identity\" }, { plugin = \"int8\" }]\n"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  // A comma-separated list: numbers stay numbers, words become strings.
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.axes.cache.window=16, 64").ok());
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.axes.decode.proposer=ngram,ar_draft").ok());
  EXPECT_EQ(spec->points(), 8);
  EXPECT_EQ(spec->axes[0].key, "cache.window");  // in its place in the grid
  ASSERT_TRUE(spec->axes[0].numeric());
  EXPECT_EQ(*spec->axes[0].values[1].number, 64.0);
  EXPECT_THAT(spec->axes[1].values[1].sets, ElementsAre(Pair("decode.proposer", "ar_draft")));
  // A TOML array as in the file, tables included.
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.axes.cache.window=[128]").ok());
  ASSERT_TRUE(apply_sweep_override(*spec, "sweep.axes.cache.codec=[{ plugin = \"int4\" }]").ok());
  EXPECT_EQ(spec->points(), 2);
  EXPECT_EQ(spec->axes[2].values[0].label, "int4");
  auto point = point_setup(*spec, spec->choice(1));
  ASSERT_TRUE(point.ok());
  EXPECT_THAT(point->sets,
              ElementsAre(Pair("cache.window", "128"), Pair("decode.proposer", "ar_draft"),
                          Pair("cache.codec.plugin", "int4")));

  // An axis the file does not have, or values that are not a list.
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.axes.cache.windw=8").message(),
              HasSubstr("--set sweep.axes.cache.windw=8: the sweep file has no axis "
                        "\"cache.windw\"; did you mean 'cache.window'? its axes: cache.window, "
                        "decode.proposer, cache.codec"));
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.axes.cache.window=[8,").message(),
              HasSubstr("--set sweep.axes.cache.window=[8,: expected values such as [64, 128] or "
                        "64,128 (TOML syntax error"));
  EXPECT_THAT(apply_sweep_override(*spec, "sweep.axes.cache.window=").message(),
              HasSubstr("--set sweep.axes.cache.window=: axis \"cache.window\": expected a list"));
  EXPECT_EQ(spec->points(), 2);  // unchanged by the refused ones
}

TEST(SweepSpec, ErrorsSayWhatAndWhere) {
  const auto error = [](const std::string& toml) {
    auto spec = spec_of(toml);
    return spec.ok() ? std::string("(no error)") : spec.status().message();
  };
  EXPECT_THAT(error("[model]\npath = \"m.gguf\"\n"),
              HasSubstr("sweep.toml has no [sweep] section"));
  EXPECT_THAT(error("[sweep]\ntext = \"" + kText + "\"\n"),
              HasSubstr("[sweep] needs tasks = [...]"));
  EXPECT_THAT(error("[sweep]\ntasks = [\"recall\"]\n"), HasSubstr("[sweep] needs text = "));
  EXPECT_THAT(error("[sweep]\ntasks = [\"ppl\"]\n"), HasSubstr("unknown task 'ppl'"));
  EXPECT_THAT(error(with_axes("", "max_tokns = 5\n")),
              HasSubstr("unknown key 'sweep.max_tokns'; did you mean 'max_tokens'"));
  EXPECT_THAT(error(with_axes("", "max_tokens = 0\n")), HasSubstr("0 is out of range"));
  EXPECT_THAT(error("[sweep]\ntasks = [\"recall\"]\ntext = \"no-such-text.txt\"\n"),
              HasSubstr("no-such-text.txt"));
  EXPECT_THAT(error(with_axes("\"sweep.max_tokens\" = [8, 16]\n")),
              HasSubstr("the sweep keys that can be axes are"));
  EXPECT_THAT(error(with_axes("\"window\" = [8]\n")), HasSubstr("expected section.key"));
  EXPECT_THAT(error(with_axes("\"cache.window\" = 8\n")), HasSubstr("expected a list of values"));
  EXPECT_THAT(error(with_axes("\"cache.window\" = [{ a = 1 }]\n")),
              HasSubstr("\"cache.window\" is not one"));
  EXPECT_THAT(error(with_axes("", "[sweep.grid]\nx = 1\n")),
              HasSubstr("unknown section [sweep.grid]"));
}

}  // namespace
}  // namespace tessera::sweep
