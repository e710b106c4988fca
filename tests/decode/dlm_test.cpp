// The `dlm` proposer (tok512-sdar-1m, a block-diffusion model, drafting for
// tok512-ar-1m) is lossless: greedy decoding emits exactly the tokens of
// plain decoding of the target, as a chain and as a tree's drafter, on the
// static, paged and sink_window stores and a cache that fills up; sampled
// decoding keeps the target's distribution; a drafter that is not a
// block-diffusion model on the target's tokenizer is refused, saying what
// and how to fix.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <string>
#include <tuple>

#include "tests/decode/spec_test_util.h"
#include "tests/decode/target_distribution_fit.h"
#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

using testing::Generated;
using ::testing::HasSubstr;
using testing::make_engine;
using testing::request_for;

constexpr const char* kTarget = "tok512-ar-1m.gguf";
constexpr const char* kDlm = "draft_model = \"tok512-sdar-1m.gguf\"\n";

struct StoreCase {
  const char* name;
  const char* cache;
};

constexpr StoreCase kStores[] = {
    {"static", "[cache]\nplugin = \"static\"\n"},
    {"paged", "[cache]\nplugin = \"paged\"\nblock_size = 16\n"},
    // Evicting: the drafter's cache drops old blocks too.
    {"sink_window", "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 40\nmax_tokens = 48\n"},
    // Fills up: both stop at the same token; the drafter's cache runs out of
    // room for whole blocks too.
    {"full", "[cache]\nplugin = \"static\"\nmax_tokens = 50\n"},
};

// Prompts of 1 (BOS alone), 9, 36, 11 and 14 tokens: the first draft starts
// at every place of a 4-token block.
constexpr const char* kPrompts[] = {"", "Once upon a time, there was a", testing::kRepetitivePrompt,
                                    "The dog ran to the park", "A bird sang in the tree"};

struct ChainCase {
  int draft_tokens;
  int passes;
  bool in_order;  // decode.denoise_blocks = "in_order" (else "together")
};

class DlmGreedy : public ::testing::TestWithParam<std::tuple<ChainCase, StoreCase>> {};

// Plain greedy decoding of the target against `decode` drafting, prompt by
// prompt; returns the drafting runs' counters, summed.
DecodeCounters expect_plain_tokens(const StoreCase& store, const std::string& decode,
                                   int max_forwards_per_step) {
  DecodeCounters total;
  auto plain = make_engine(kTarget, store.cache);
  auto spec = make_engine(kTarget, std::string(store.cache) + "[decode]\n" + decode);
  EXPECT_NE(plain, nullptr);
  EXPECT_NE(spec, nullptr);
  if (!plain || !spec) return total;
  for (const char* text : kPrompts) {
    const GenerationRequest request = request_for(*plain, text, testing::kSanitized ? 16 : 64);
    const Generated want = testing::run(*plain, request);
    const Generated got = testing::run(*spec, request);
    EXPECT_EQ(got.tokens, want.tokens) << "prompt '" << text << "'";
    EXPECT_EQ(got.stats.stop_reason, want.stats.stop_reason);
    const DecodeCounters& c = got.stats.decode;
    EXPECT_GT(c.drafted, 0);
    EXPECT_GT(c.accepted, 0) << "the drafter should be right sometimes";
    EXPECT_EQ(c.emitted, c.accepted + c.verify_steps);
    EXPECT_LT(c.verify_steps, want.stats.decode.verify_steps);
    // Every step drafts with at least one forward, and no more than it may.
    EXPECT_GE(c.draft_forwards, c.verify_steps);
    EXPECT_LE(c.draft_forwards, max_forwards_per_step * c.verify_steps);
    total.draft_forwards += c.draft_forwards;
    total.verify_steps += c.verify_steps;
  }
  return total;
}

TEST_P(DlmGreedy, EmitsThePlainGreedyTokens) {
  const auto& [chain, store] = GetParam();
  // Blocks of 4: the rest of the block holding the next position, then whole
  // blocks; each pass is one forward for all of them, or one per block.
  const int blocks = chain.in_order ? (chain.draft_tokens + 2 * 3) / 4 : 1;
  expect_plain_tokens(store,
                      "proposer = \"dlm\"\n" + std::string(kDlm) +
                          "draft_tokens = " + std::to_string(chain.draft_tokens) +
                          "\ndenoise_passes = " + std::to_string(chain.passes) +
                          "\ndenoise_blocks = \"" + (chain.in_order ? "in_order" : "together") +
                          "\"\n",
                      blocks * chain.passes);
}

INSTANTIATE_TEST_SUITE_P(
    DraftsAndStores, DlmGreedy,
    ::testing::Combine(::testing::Values(ChainCase{4, 1, false}, ChainCase{8, 1, false},
                                         ChainCase{4, 2, false}, ChainCase{8, 2, false},
                                         ChainCase{8, 1, true}, ChainCase{8, 2, true}),
                       ::testing::ValuesIn(kStores)),
    [](const auto& test) {
      const ChainCase& chain = std::get<0>(test.param);
      return "draft" + std::to_string(chain.draft_tokens) + "_passes" +
             std::to_string(chain.passes) + (chain.in_order ? "_in_order_" : "_together_") +
             std::get<1>(test.param).name;
    });

class DlmTreeGreedy : public ::testing::TestWithParam<StoreCase> {};

TEST_P(DlmTreeGreedy, EmitsThePlainGreedyTokens) {
  // A depth-3 tree: one forward per level (at most top_k paths each).
  expect_plain_tokens(GetParam(),
                      "proposer = \"tree\"\ntree_drafter = \"dlm\"\n" + std::string(kDlm) +
                          "tree_top_k = 3\ntree_depth = 3\ntree_tokens = 12\n",
                      3);
}

INSTANTIATE_TEST_SUITE_P(Stores, DlmTreeGreedy, ::testing::ValuesIn(kStores),
                         [](const auto& test) { return std::string(test.param.name); });

// Expansions that do not fit one forward are split over several: more
// forwards than the tree's 3 levels.
TEST(DlmTree, SplitsExpansionsOverForwardsWhenTheBatchIsSmall) {
  const DecodeCounters c =
      expect_plain_tokens(kStores[0],
                          "proposer = \"tree\"\ntree_drafter = \"dlm\"\n" + std::string(kDlm) +
                              "tree_top_k = 4\ntree_depth = 3\ntree_tokens = 12\nmax_batch = 16\n",
                          3 * 4);
  EXPECT_GT(c.draft_forwards, 3 * c.verify_steps);
}

// A prompt longer than a forward carries: its blocks go into the drafter's
// cache in forwards of their own first, in chunks of whole blocks.
TEST(DlmGreedy, CatchesUpWithALongPrompt) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += std::string(testing::kRepetitivePrompt) + ". ";
  for (const char* decode : {"proposer = \"dlm\"\n",
                             "proposer = \"tree\"\ntree_drafter = \"dlm\"\ntree_tokens = 12\n"}) {
    const std::string extra = "[decode]\nmax_batch = 32\n" + std::string(decode) + kDlm;
    auto plain = make_engine(kTarget, "[decode]\nmax_batch = 32\n");
    auto spec = make_engine(kTarget, extra);
    ASSERT_NE(plain, nullptr);
    ASSERT_NE(spec, nullptr);
    const GenerationRequest request = request_for(*plain, text, 24);
    ASSERT_GT(request.prompt.size(), 64u);
    const Generated got = testing::run(*spec, request);
    EXPECT_EQ(got.tokens, testing::run(*plain, request).tokens) << decode;
    EXPECT_GT(got.stats.decode.accepted, 0) << decode;
  }
}

// The real pair drafts well: a drafter that saw the wrong context (its
// cached blocks, its own block, the wrong positions) would rarely be right.
DecodeCounters from_bos(const std::string& decode) {
  auto spec = make_engine(kTarget, "[decode]\n" + decode + kDlm);
  EXPECT_NE(spec, nullptr);
  if (!spec) return {};
  return testing::run(*spec, request_for(*spec, "", 127)).stats.decode;
}

double per_step(const DecodeCounters& c) {
  return static_cast<double>(c.emitted) / static_cast<double>(c.verify_steps);
}

double acceptance(const DecodeCounters& c) {
  return static_cast<double>(c.accepted) / static_cast<double>(c.drafted);
}

TEST(DlmGreedy, SdarDraftsForTheOneMillionModel) {
  const DecodeCounters together = from_bos("proposer = \"dlm\"\n");
  EXPECT_GT(acceptance(together), 0.34);
  EXPECT_GT(per_step(together), 3.0);
  const DecodeCounters in_order = from_bos("proposer = \"dlm\"\ndenoise_blocks = \"in_order\"\n");
  EXPECT_GT(acceptance(in_order), 0.46);
  EXPECT_GT(per_step(in_order), 3.5);
  EXPECT_GT(per_step(from_bos("proposer = \"tree\"\ntree_drafter = \"dlm\"\n")), 4.0);
}

// In order, a second block sees the first revealed and adds accepted tokens;
// together, it sees the first's masks.
TEST(DlmGreedy, BlocksInOrderSeeTheEarlierOnesRevealed) {
  const DecodeCounters together = from_bos("proposer = \"dlm\"\ndraft_tokens = 8\n");
  const DecodeCounters in_order =
      from_bos("proposer = \"dlm\"\ndraft_tokens = 8\ndenoise_blocks = \"in_order\"\n");
  EXPECT_GT(per_step(in_order), per_step(together) + 0.5);
  EXPECT_GT(in_order.draft_forwards, together.draft_forwards);
}

TEST(DlmSampling, ChainKeepsTheTargetDistribution) {
  testing::expect_fits(testing::fit_target_distribution("proposer = \"dlm\"\n" + std::string(kDlm),
                                                        testing::kSanitized ? 100 : 800));
}

TEST(DlmSampling, TreeKeepsTheTargetDistribution) {
  testing::expect_fits(
      testing::fit_target_distribution("proposer = \"tree\"\ntree_drafter = \"dlm\"\n" +
                                           std::string(kDlm) + "tree_top_k = 3\ntree_depth = 2\n",
                                       testing::kSanitized ? 100 : 800));
}

Status create(const std::string& decode, const std::string& model = kTarget,
              const std::string& tokenizer = "") {
  return support::shared_model_engine(model, "[decode]\n" + decode, tokenizer).status();
}

TEST(DlmOptions, RefusesAnAutoregressiveDrafter) {
  const Status st = create("proposer = \"dlm\"\ndraft_model = \"stories260K.gguf\"\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("stories260K.gguf is autoregressive"));
  EXPECT_THAT(st.message(), HasSubstr("target model"));
  EXPECT_THAT(st.message(), HasSubstr("tok512-ar-1m.gguf"));
  EXPECT_THAT(st.message(), HasSubstr("decode.draft_model"));
  EXPECT_THAT(st.message(), HasSubstr("decode.proposer = \"ar_draft\""));
}

TEST(DlmOptions, RefusesADrafterOfAnotherTokenizer) {
  // aidreams260K has 512 tokens too, but other pieces: tok512-sdar-1m's
  // vocabulary is not aidreams' plus a mask.
  const Status st = create("proposer = \"dlm\"\n" + std::string(kDlm), "aidreams260K.bin",
                           "aidreams260K_tok512.bin");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("tok512-sdar-1m.gguf (proposer 'dlm') and target model"));
  EXPECT_THAT(st.message(), HasSubstr("aidreams260K.bin differ at token"));
  EXPECT_THAT(st.message(), HasSubstr("must share the target's tokenizer"));
  EXPECT_THAT(st.message(), HasSubstr("name a block-diffusion model trained on"));
}

TEST(DlmOptions, RefusesADrafterWhoseVocabularyIsNotTheTargetsPlusAMask) {
  // The drafter drafting for itself: 513 tokens against 513, the mask among the target's.
  const Status st = create("proposer = \"dlm\"\n" + std::string(kDlm) + "verifier = \"ar\"\n",
                           "tok512-sdar-1m.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("the target's 513 tokens plus its mask token (514 tokens)"));
}

TEST(DlmOptions, MissingDrafterAndTooWideADraft) {
  EXPECT_THAT(create("proposer = \"dlm\"\n").message(), HasSubstr("decode.draft_model is empty"));
  const Status st =
      create("proposer = \"dlm\"\n" + std::string(kDlm) + "draft_tokens = 30\nmax_batch = 32\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("more than decode.max_batch = 32"));
}

}  // namespace
}  // namespace tessera
