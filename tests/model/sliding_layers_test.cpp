// A model with sliding-window layers (tiny gemma3: window 4 on layers 0 and
// 2) keeps those layers apart in a window store (core/engine/model_cache.h):
// the tokens and logits equal keeping every token in every layer
// (cache.swa_full), for every store that keeps every token, a lossy codec,
// and proposers whose rejected drafts and accepted tree paths move entries;
// the sliding layers hold at most window + decode.max_batch entries however
// long the sequence runs, and the cache's bytes say so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/model/arch_models.h"
#include "tests/model/engine_test_util.h"
#include "tests/support/reference_forward.h"

namespace tessera {
namespace {

using testing::batched_logits;
using testing::greedy_sequence;
using testing::incremental_logits;
using testing::make_engine;

// max_batch 32: the sliding layers keep 4 + 32 entries, far fewer than the
// 150 tokens the tests run.
constexpr const char* kSmallBatch = "[decode]\nmax_batch = 32\n";
constexpr int64_t kSlidingEntries = 4 + 32;

std::string gemma() {
  return testing::arch_model("gemma3");
}

std::string config(const std::string& cache, bool swa_full, const std::string& decode = "") {
  return "[cache]\nswa_full = " + std::string(swa_full ? "true" : "false") + "\n" + cache +
         kSmallBatch + decode;
}

TEST(SlidingLayers, KeptApartOnlyWhereTheyCanOutgrowTheirWindow) {
  auto apart = make_engine(gemma(), config("", false));
  ASSERT_NE(apart, nullptr);
  EXPECT_EQ(apart->cache().group_count(), 2);
  EXPECT_EQ(apart->cache().describe_groups(),
            "static: layers 1, 3; sink_window (sliding-window layers): layers 0, 2");
  auto full = make_engine(gemma(), config("", true));
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->cache().group_count(), 1);
  // A store that evicts bounds every layer already; a cache too short to
  // outgrow the window gains nothing; a model without sliding layers has none.
  auto evicting =
      make_engine(gemma(), config("plugin = \"sink_window\"\nsink = 2\nwindow = 16\n", false));
  ASSERT_NE(evicting, nullptr);
  EXPECT_EQ(evicting->cache().group_count(), 1);
  auto short_cache = make_engine(gemma(), config("max_tokens = 36\n", false));
  ASSERT_NE(short_cache, nullptr);
  EXPECT_EQ(short_cache->cache().group_count(), 1);
  auto llama = make_engine(testing::arch_model("llama3"), config("", false));
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->cache().group_count(), 1);
}

TEST(SlidingLayers, LogitsEqualKeepingEveryToken) {
  auto apart = make_engine(gemma(), config("", false));
  auto full = make_engine(gemma(), config("", true));
  ASSERT_NE(apart, nullptr);
  ASSERT_NE(full, nullptr);
  const std::vector<int32_t> tokens = greedy_sequence(*full, 120);
  const std::vector<float> want = incremental_logits(*full, tokens);
  // Fewer keys in the sliding layers' attention, in other chunks: equal
  // within float rounding, prefilled in chunks or one token at a time.
  EXPECT_LT(support::max_relative_error(incremental_logits(*apart, tokens), want), 1e-5);
  EXPECT_LT(support::max_relative_error(batched_logits(*apart, tokens, 32), want), 1e-5);
  EXPECT_LT(support::max_relative_error(batched_logits(*apart, tokens, 7), want), 1e-5);
}

TEST(SlidingLayers, EveryStoreCodecAndProposerGivesTheFullCacheTokens) {
  auto full = make_engine(gemma(), config("", true));
  ASSERT_NE(full, nullptr);
  const std::vector<int32_t> want = greedy_sequence(*full, 150);
  const std::string draft = "draft_model = \"" + testing::arch_model("llama") + "\"\n";
  struct Case {
    const char* cache;
    std::string decode;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"plugin = \"paged\"\nblock_size = 16\n", ""},
      {"codec_stage = \"pre_rope\"\n", ""},
      {"codec_span = \"token\"\n", ""},
      {"", "proposer = \"ngram\"\n"},
      {"plugin = \"paged\"\nblock_size = 5\n", "proposer = \"ngram\"\n"},
      {"", "proposer = \"self_draft\"\ndraft_layers = 2\n"},
      {"", "proposer = \"tree\"\ndraft_layers = 2\ntree_tokens = 24\n"},
      {"plugin = \"paged\"\nblock_size = 16\n",
       "proposer = \"tree\"\ndraft_layers = 2\ntree_tokens = 24\n"},
      {"", "proposer = \"ar_draft\"\n" + draft},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.cache) + c.decode);
    auto engine = make_engine(gemma(), config(c.cache, false, c.decode));
    ASSERT_NE(engine, nullptr);
    ASSERT_EQ(engine->cache().group_count(), 2);
    EXPECT_EQ(greedy_sequence(*engine, 150), want);
  }
  // A lossy codec: the sliding layers hold the same encoded entries either way.
  auto int8_full = make_engine(gemma(), config("[cache.codec]\nplugin = \"int8\"\n", true));
  auto int8_apart = make_engine(gemma(), config("[cache.codec]\nplugin = \"int8\"\n", false));
  ASSERT_NE(int8_full, nullptr);
  ASSERT_NE(int8_apart, nullptr);
  EXPECT_EQ(greedy_sequence(*int8_apart, 150), greedy_sequence(*int8_full, 150));
}

TEST(SlidingLayers, TheirEntriesStayAtTheWindowAndTheBytesSaySo) {
  auto apart = make_engine(gemma(), config("", false));
  auto full = make_engine(gemma(), config("", true));
  ASSERT_NE(apart, nullptr);
  ASSERT_NE(full, nullptr);
  const std::vector<int32_t> tokens = greedy_sequence(*full, 200);
  SequenceState seq;
  ASSERT_TRUE(apart->begin_sequence(seq).ok());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const int32_t position = static_cast<int32_t>(i);
    ASSERT_TRUE(
        apart->transformer().forward(apart->cache(), seq.id, {&tokens[i], 1}, {&position, 1}).ok());
    const auto stored = static_cast<int64_t>(i + 1);
    ASSERT_EQ(*apart->cache().stored_length(seq.id, 1, 0), stored);  // global
    ASSERT_EQ(*apart->cache().stored_length(seq.id, 0, 1), std::min(stored, kSlidingEntries));
    ASSERT_EQ(*apart->cache().stored_length(seq.id, 2, 0), std::min(stored, kSlidingEntries));
    ASSERT_EQ(apart->cache().info(seq.id)->stored, stored);
  }
  // Half the layers at 36 of 200 entries: about (400 + 72) / 800 of the bytes
  // every layer keeping every token takes (positions aside).
  SequenceState full_seq;
  ASSERT_TRUE(full->begin_sequence(full_seq).ok());
  std::vector<int32_t> positions(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) positions[i] = static_cast<int32_t>(i);
  for (std::size_t start = 0; start < tokens.size(); start += 32) {
    const std::size_t n = std::min<std::size_t>(32, tokens.size() - start);
    ASSERT_TRUE(
        full->transformer()
            .forward(full->cache(), full_seq.id, {&tokens[start], n}, {&positions[start], n})
            .ok());
  }
  const double ratio = static_cast<double>(apart->cache().bytes().live) /
                       static_cast<double>(full->cache().bytes().live);
  EXPECT_GT(ratio, 0.55);
  EXPECT_LT(ratio, 0.62);
  EXPECT_GE(apart->cache().bytes().peak, apart->cache().bytes().live);
  // Taking back the last decode.max_batch tokens works; further does not.
  ASSERT_TRUE(apart->cache().truncate(seq.id, 200 - 32).ok());
  EXPECT_EQ(*apart->cache().stored_length(seq.id, 0, 0), 4);
  const Status too_far = apart->cache().truncate(seq.id, 100);
  EXPECT_EQ(too_far.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(too_far.message().find("sliding-window layers keep only their window"),
            std::string::npos)
      << too_far.message();
  ASSERT_TRUE(apart->end_sequence(seq).ok());
}

// Branches in one sequence (BIM) need branch ids in every group; the window
// store keeps none, so the engine says what to do instead, and the batched
// layout (a sequence per branch, forked) works.
TEST(SlidingLayers, BranchesInOneSequenceAskForTheBatchedLayout) {
  for (const bool batched : {false, true}) {
    auto engine = make_engine(
        gemma(),
        config("", false, batched ? "branch_layout = \"batched\"\n" : "branch_layout = \"bim\"\n"));
    ASSERT_NE(engine, nullptr);
    SequenceState prefix;
    ASSERT_TRUE(engine->begin_sequence(prefix).ok());
    prefix.tokens = {engine->tokenizer().bos()};
    SequenceState branch;
    const Status status = engine->begin_branch(prefix, 1, branch);
    if (batched) {
      EXPECT_TRUE(status.ok()) << status.to_string();
      if (status.ok()) {
        EXPECT_TRUE(engine->end_sequence(branch).ok());
      }
    } else {
      EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
      EXPECT_NE(status.message().find("decode.branch_layout = \"batched\""), std::string::npos)
          << status.message();
      EXPECT_NE(status.message().find("cache.swa_full = true"), std::string::npos);
    }
    EXPECT_TRUE(engine->end_sequence(prefix).ok());
  }
}

}  // namespace
}  // namespace tessera
