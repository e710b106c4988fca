// Multi-branch decoding: branches that share a prompt, decoded side by side in
// one forward per step. Both layouts (every branch in one sequence with branch
// ids, or a sequence per branch forked from the prompt) give the same tokens,
// each branch the tokens it would get alone (so no branch sees another), and
// the prompt's K/V are stored once under bim.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/decode/spec_test_util.h"

namespace tessera {
namespace {

using testing::Generated;
using testing::make_engine;

constexpr const char* kModel = "stories260K.gguf";
constexpr const char* kPrompt = "Tom had a dog.";
const std::vector<std::string> kBranches = {" The dog", " One day", "", " Lily"};

GenerationRequest branched(const Engine& engine, int64_t tokens) {
  GenerationRequest request = testing::request_for(engine, kPrompt, tokens, 5);
  for (const std::string& text : kBranches)
    request.branches.push_back(*engine.tokenizer().encode(text, false, /*continuation=*/true));
  return request;
}

std::string layout(const char* name) {
  return std::string("[decode]\nbranch_layout = \"") + name + "\"\n";
}

struct LayoutCase {
  const char* name;
  const char* extra;  // store, sampling, proposer
};

constexpr LayoutCase kCases[] = {
    {"greedy_static", "[cache]\nplugin = \"static\"\n"},
    {"greedy_paged", "[cache]\nplugin = \"paged\"\nblock_size = 8\n"},
    {"sampled", "[sampling]\ntemperature = 0.8\ntop_k = 30\nseed = 3\n"},
    {"ngram", "[decode]\nproposer = \"ngram\"\n"},
    {"self_draft_sampled",
     "[sampling]\ntemperature = 0.8\nseed = 4\n[decode]\nproposer = \"self_draft\"\n"},
};

class Branches : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(Branches, BimAndBatchedGiveTheSameTokens) {
  const LayoutCase& c = GetParam();
  // [decode] may appear once: the layout line goes into the case's section.
  const auto config = [&](const char* name) {
    const std::string extra = c.extra;
    const auto at = extra.find("[decode]\n");
    if (at == std::string::npos) return extra + layout(name);
    return extra.substr(0, at) + layout(name) + extra.substr(at + 9);
  };
  auto bim = make_engine(kModel, config("bim"));
  auto batched = make_engine(kModel, config("batched"));
  ASSERT_NE(bim, nullptr);
  ASSERT_NE(batched, nullptr);
  const Generated a = testing::run(*bim, branched(*bim, 40));
  const Generated b = testing::run(*batched, branched(*batched, 40));
  ASSERT_EQ(a.branches.size(), kBranches.size());
  for (std::size_t i = 0; i < kBranches.size(); ++i) {
    EXPECT_EQ(a.branches[i], b.branches[i]) << "branch " << i;
    EXPECT_EQ(a.branches[i].size(), 40u);
  }
  // Branches were decoded together: fewer forwards than tokens.
  EXPECT_LT(a.stats.decode.verify_steps, 4 * 40);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Branches, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

// Each branch decodes as the prompt and its text would alone: a branch that
// saw another branch's tokens would not.
TEST(Branches, EachBranchIsWhatItsPromptGivesAlone) {
  for (const char* name : {"bim", "batched"}) {
    auto engine = make_engine(kModel, layout(name));
    ASSERT_NE(engine, nullptr);
    const Generated together = testing::run(*engine, branched(*engine, 30));
    for (std::size_t i = 0; i < kBranches.size(); ++i) {
      GenerationRequest alone = testing::request_for(*engine, kPrompt, 30);
      const std::vector<int32_t> text =
          *engine->tokenizer().encode(kBranches[i], false, /*continuation=*/true);
      alone.prompt.insert(alone.prompt.end(), text.begin(), text.end());
      EXPECT_EQ(together.branches[i], testing::run(*engine, alone).tokens)
          << name << ", branch " << i;
    }
  }
}

// bim stores the prompt once and copies nothing; batched on static copies
// the prompt into every branch; on paged it shares the prompt's blocks.
TEST(Branches, StoredAndCopiedBytesPerLayout) {
  auto bim = make_engine(kModel, layout("bim"));
  auto copied = make_engine(kModel, layout("batched"));
  auto shared =
      make_engine(kModel, "[cache]\nplugin = \"paged\"\nblock_size = 4\n" + layout("batched"));
  ASSERT_TRUE(bim && copied && shared);
  const Generated a = testing::run(*bim, branched(*bim, 20));
  const Generated b = testing::run(*copied, branched(*copied, 20));
  const Generated c = testing::run(*shared, branched(*shared, 20));
  const auto prompt = static_cast<int64_t>(branched(*bim, 20).prompt.size());
  int64_t branch_tokens = 0;
  for (const std::string& text : kBranches)
    branch_tokens += static_cast<int64_t>(bim->tokenizer().encode(text, false, true)->size());
  const auto lanes = static_cast<int64_t>(kBranches.size());
  // Each lane keeps the prompt's last token, its text and 20 - 1 generated tokens.
  const int64_t own = branch_tokens + lanes * 20;
  EXPECT_EQ(a.stats.kv_entries, prompt - 1 + own);
  EXPECT_EQ(b.stats.kv_entries, (prompt - 1) * (lanes + 1) + own);
  EXPECT_EQ(a.stats.kv_copied_bytes, 0u);
  EXPECT_GT(b.stats.kv_copied_bytes, 0u);
  EXPECT_LT(c.stats.kv_copied_bytes, b.stats.kv_copied_bytes);
}

// Branches verified together share one forward: drafts that do not fit are
// a clear error naming what to lower.
TEST(Branches, DraftsOfEveryBranchMustFitTheBatch) {
  auto engine =
      make_engine(kModel, "[decode]\nmax_batch = 24\nproposer = \"tree\"\ntree_tokens = 8\n");
  ASSERT_NE(engine, nullptr);
  auto stats = engine->generate(branched(*engine, 10), [](int32_t, int) { return true; });
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("more than decode.max_batch = 24"), std::string::npos)
      << stats.status().message();
}

// An evicting store decodes branches in the batched layout (a sequence and a
// window per branch); with a window that keeps everything it matches bim on
// the static store, a draft model drafting for every branch.
TEST(Branches, BatchedOnAnEvictingStoreMatchesBim) {
  const std::string drafts = "proposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n";
  auto bim = make_engine("tok512-ar-1m.gguf", layout("bim") + drafts);
  auto windowed = make_engine("tok512-ar-1m.gguf",
                              "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 200\n"
                              "max_tokens = 256\n" +
                                  layout("batched") + drafts);
  ASSERT_TRUE(bim && windowed);
  const Generated a = testing::run(*bim, branched(*bim, 30));
  const Generated b = testing::run(*windowed, branched(*windowed, 30));
  for (std::size_t i = 0; i < kBranches.size(); ++i) EXPECT_EQ(a.branches[i], b.branches[i]);
  EXPECT_GT(b.stats.decode.accepted, 0);
}

TEST(Branches, BimNeedsAStoreThatKeepsBranches) {
  auto engine = make_engine(
      kModel, "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 64\n" + layout("bim"));
  ASSERT_NE(engine, nullptr);
  auto stats = engine->generate(branched(*engine, 10), [](int32_t, int) { return true; });
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("branch_layout = \"batched\""), std::string::npos)
      << stats.status().message();
}

}  // namespace
}  // namespace tessera
