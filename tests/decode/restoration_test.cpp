// K/V restoration with the target as its own restorer attends exactly as a
// full cache does: over a sink_window store (sink 4, window 16), every step's
// logits match the static cache's within 1e-5, for either codec stage, either
// position rule and through a lossy codec (restored + codec X = static + codec
// X); the greedy tokens equal static's; the store stays at sinks + window.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "plugins/verifier_restored/restoring_forward.h"
#include "tests/decode/spec_test_util.h"

namespace tessera {
namespace {

using testing::make_engine;

constexpr int kSink = 4;
constexpr int kWindow = 16;
constexpr int kTokens = 80;

std::string sink_window_cache(const std::string& stage, const std::string& positions,
                              const std::string& codec) {
  return "[cache]\nplugin = \"sink_window\"\nsink = " + std::to_string(kSink) +
         "\nwindow = " + std::to_string(kWindow) + "\ncodec_stage = \"" + stage +
         "\"\npositions = \"" + positions + "\"\n[cache.codec]\nplugin = \"" + codec + "\"\n";
}

std::string static_cache(const std::string& stage, const std::string& codec) {
  return "[cache]\nplugin = \"static\"\ncodec_stage = \"" + stage +
         "\"\n[cache.codec]\nplugin = \"" + codec + "\"\n";
}

// stage, positions, codec
using StepCase = std::tuple<const char*, const char*, const char*>;

class RestorationSteps : public ::testing::TestWithParam<StepCase> {};

TEST_P(RestorationSteps, SelfMatchesTheStaticCacheAtEveryStep) {
  const auto& [stage, positions, codec] = GetParam();
  auto full = make_engine("stories260K.gguf", static_cache(stage, codec));
  auto windowed = make_engine("stories260K.gguf", sink_window_cache(stage, positions, codec));
  ASSERT_NE(full, nullptr);
  ASSERT_NE(windowed, nullptr);
  const std::vector<int32_t> tokens = testing::greedy_sequence(*full, kTokens);
  const std::vector<float> want = testing::incremental_logits(*full, tokens);
  const std::size_t vocab = static_cast<std::size_t>(full->model().config.vocab_size);

  IdentityProjection identity;
  // Chunks of 7 positions: the restorer's earlier chunks must carry over.
  RestoringForward forward(windowed->transformer(), windowed->transformer(), identity, 7, 512);
  SequenceState lane;
  ASSERT_TRUE(windowed->begin_sequence(lane).ok());
  DecodeCounters counters;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto logits = forward.step(windowed->cache(), lane.id, {tokens.data(), i + 1}, counters);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    ASSERT_EQ(logits->size(), vocab);
    float worst = 0;
    for (std::size_t x = 0; x < vocab; ++x)
      worst = std::max(worst, std::abs((*logits)[x] - want[i * vocab + x]));
    EXPECT_LE(worst, 1e-5f) << "step " << i;
    auto info = windowed->cache().info(lane.id);
    ASSERT_TRUE(info.ok());
    EXPECT_LE(info->stored, kSink + kWindow) << "step " << i;
  }
  // Every step past the window restored what the store dropped.
  EXPECT_GT(counters.restoration_steps, kTokens - kSink - kWindow - 2);
  EXPECT_GT(counters.restored_positions, counters.restoration_steps);
  EXPECT_TRUE(windowed->end_sequence(lane).ok());
}

INSTANTIATE_TEST_SUITE_P(StagesPositionsCodecs, RestorationSteps,
                         ::testing::Values(StepCase{"post_rope", "keep", "identity"},
                                           StepCase{"pre_rope", "keep", "identity"},
                                           StepCase{"post_rope", "reassign", "identity"},
                                           StepCase{"pre_rope", "reassign", "identity"},
                                           StepCase{"post_rope", "keep", "int8"},
                                           StepCase{"pre_rope", "keep", "int4"},
                                           // Records read as stored, keys turned as read.
                                           StepCase{"pre_rope", "keep", "int8"},
                                           StepCase{"pre_rope", "reassign", "f16"},
                                           StepCase{"post_rope", "reassign", "bf16"}),
                         [](const auto& test) {
                           return std::string(std::get<0>(test.param)) + "_" +
                                  std::get<1>(test.param) + "_" + std::get<2>(test.param);
                         });

testing::Generated generate(Engine& engine, const std::string& text, int64_t tokens) {
  return testing::run(engine, testing::request_for(engine, text, tokens));
}

TEST(Restoration, GreedyTokensEqualStaticAtSinkWindowMemory) {
  const std::string restored = "[decode]\nverifier = \"restored\"\nrestore_chunk = 16\n";
  auto full = make_engine("stories260K.gguf", static_cache("post_rope", "identity"));
  auto plain = make_engine("stories260K.gguf", sink_window_cache("post_rope", "keep", "identity"));
  auto restoring = make_engine("stories260K.gguf",
                               sink_window_cache("post_rope", "keep", "identity") + restored);
  ASSERT_NE(full, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(restoring, nullptr);
  // From BOS, and from a prompt longer than the window (prefilled exactly).
  for (const char* text : {"",
                           "Once upon a time, there was a little girl named Lily. She loved "
                           "to play outside in the park with her dog"}) {
    const testing::Generated want = generate(*full, text, kTokens);
    const testing::Generated windowed = generate(*plain, text, kTokens);
    const testing::Generated got = generate(*restoring, text, kTokens);
    EXPECT_EQ(got.tokens, want.tokens) << "prompt '" << text << "'";
    // The store holds what plain sink_window holds.
    EXPECT_EQ(got.stats.kv_entries, windowed.stats.kv_entries);
    EXPECT_EQ(got.stats.kv_live_bytes, windowed.stats.kv_live_bytes);
    EXPECT_EQ(got.stats.kv_peak_bytes, windowed.stats.kv_peak_bytes);
    EXPECT_GT(got.stats.decode.restoration_steps, 0);
    EXPECT_GT(got.stats.decode.restoration_peak_bytes, got.stats.kv_live_bytes);
  }
}

TEST(Restoration, RefusesDrafts) {
  auto config = Config::parse(
      "[model]\npath = \"stories260K.gguf\"\n[decode]\nverifier = \"restored\"\n"
      "proposer = \"ngram\"\n",
      "restored.toml");
  ASSERT_TRUE(config.ok());
  auto engine = Engine::create(*config, support::build_tree_registry());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("restored"), std::string::npos)
      << engine.status().to_string();
}

}  // namespace
}  // namespace tessera
