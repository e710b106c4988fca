// Greedy speculative decoding emits exactly the tokens of plain greedy
// decoding, for every proposer (chain and tree), on every store and with a
// lossy codec, including a cache that fills up (both stop at the same token);
// and on each architecture's tiny synthetic model (qwen2, qwen3, llama 3,
// gemma3: make-model's code path).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/decode/spec_test_util.h"
#include "tests/model/arch_models.h"

namespace tessera {
namespace {

using testing::Generated;
using testing::make_engine;
using testing::request_for;

struct ProposerCase {
  const char* name;
  const char* target;
  const char* decode;  // [decode] lines
};

constexpr ProposerCase kProposers[] = {
    {"ngram", "tok512-ar-1m.gguf", "proposer = \"ngram\"\n"},
    {"self_draft", "tok512-ar-1m.gguf", "proposer = \"self_draft\"\ndraft_layers = 3\n"},
    {"ar_draft", "tok512-ar-1m.gguf",
     "proposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n"},
    {"tree_ar_draft", "tok512-ar-1m.gguf",
     "proposer = \"tree\"\ntree_drafter = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n"},
    {"tree_self_draft", "tok512-ar-1m.gguf",
     "proposer = \"tree\"\ntree_drafter = \"self_draft\"\ndraft_layers = 3\ntree_top_k = 3\n"},
    {"tree_ngram", "tok512-ar-1m.gguf", "proposer = \"tree\"\ntree_drafter = \"ngram\"\n"},
    {"self_draft_260k", "stories260K.gguf", "proposer = \"self_draft\"\ndraft_layers = 2\n"},
    {"tree_self_draft_260k", "stories260K.gguf",
     "proposer = \"tree\"\ndraft_layers = 2\ntree_tokens = 24\n"},
};

struct StoreCase {
  const char* name;
  const char* cache;  // [cache] and [cache.codec] sections
};

constexpr StoreCase kStores[] = {
    {"static", "[cache]\nplugin = \"static\"\n"},
    {"paged", "[cache]\nplugin = \"paged\"\nblock_size = 16\n"},
    {"sink_window", "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 40\nmax_tokens = 48\n"},
    {"int8", "[cache]\nplugin = \"static\"\n[cache.codec]\nplugin = \"int8\"\n"},
    // Fills up: both stop at the same token, speculation drafts less near the end.
    {"full", "[cache]\nplugin = \"static\"\nmax_tokens = 50\n"},
};

// Speculative decoding of `target` with `decode` options over the store in
// `cache` emits plain greedy decoding's tokens, from BOS and from a prompt the
// n-gram proposer finds repeats in; the proposer took part, and plain decoding
// needed at least as many target verifications.
void expect_plain_greedy_tokens(const std::string& target, const std::string& cache,
                                const std::string& decode, int64_t tokens) {
  auto plain = make_engine(target, cache);
  auto spec = make_engine(target, cache + "[decode]\n" + decode);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(spec, nullptr);
  for (const char* text : {"", testing::kRepetitivePrompt}) {
    const GenerationRequest request = request_for(*plain, text, testing::kSanitized ? 20 : tokens);
    const Generated want = testing::run(*plain, request);
    const Generated got = testing::run(*spec, request);
    EXPECT_EQ(got.tokens, want.tokens) << "prompt '" << text << "'";
    EXPECT_EQ(got.stats.stop_reason, want.stats.stop_reason);
    EXPECT_GT(got.stats.decode.drafted, 0);
    EXPECT_EQ(got.stats.decode.emitted, got.stats.decode.accepted + got.stats.decode.verify_steps);
    EXPECT_LE(got.stats.decode.verify_steps, want.stats.decode.verify_steps);
  }
}

class SpeculativeGreedy : public ::testing::TestWithParam<std::tuple<ProposerCase, StoreCase>> {};

TEST_P(SpeculativeGreedy, EmitsThePlainGreedyTokens) {
  const auto& [proposer, store] = GetParam();
  expect_plain_greedy_tokens(proposer.target, store.cache, proposer.decode, 90);
}

INSTANTIATE_TEST_SUITE_P(ProposersAndStores, SpeculativeGreedy,
                         ::testing::Combine(::testing::ValuesIn(kProposers),
                                            ::testing::ValuesIn(kStores)),
                         [](const auto& test) {
                           return std::string(std::get<0>(test.param).name) + "_" +
                                  std::get<1>(test.param).name;
                         });

// The real pair drafts well: stories260K's tokens are mostly the target's.
TEST(SpeculativeGreedy, StoriesDraftsForTheOneMillionModel) {
  auto spec =
      make_engine("tok512-ar-1m.gguf",
                  "[decode]\nproposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n");
  ASSERT_NE(spec, nullptr);
  const Generated got = testing::run(*spec, request_for(*spec, "", 127));
  const DecodeCounters& c = got.stats.decode;
  EXPECT_GT(static_cast<double>(c.accepted) / static_cast<double>(c.drafted), 0.5);
  EXPECT_GT(static_cast<double>(c.emitted) / static_cast<double>(c.verify_steps), 2.5);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Proposers on the architectures: the draft model of ar_draft is the tiny llama.
constexpr ProposerCase kArchProposers[] = {
    {"ngram", "", "proposer = \"ngram\"\n"},
    {"self_draft", "", "proposer = \"self_draft\"\ndraft_layers = 2\n"},
    {"tree_self_draft", "", "proposer = \"tree\"\ndraft_layers = 2\ntree_tokens = 24\n"},
    {"ar_draft", "", "proposer = \"ar_draft\"\n"},
};

class SpeculativeGreedyOnArchitectures
    : public ::testing::TestWithParam<std::tuple<std::string, ProposerCase, StoreCase>> {};

TEST_P(SpeculativeGreedyOnArchitectures, EmitsThePlainGreedyTokens) {
  const auto& [arch, proposer, store] = GetParam();
  const std::string target = testing::arch_model(arch);
  std::string decode = proposer.decode;
  if (std::string(proposer.name) == "ar_draft")
    decode += "draft_model = \"" + testing::arch_model("llama") + "\"\n";
  expect_plain_greedy_tokens(target, store.cache, decode, 60);
}

INSTANTIATE_TEST_SUITE_P(ArchitecturesProposersAndStores, SpeculativeGreedyOnArchitectures,
                         ::testing::Combine(::testing::Values("llama3", "qwen2", "qwen3", "gemma3"),
                                            ::testing::ValuesIn(kArchProposers),
                                            ::testing::Values(kStores[0], kStores[1], kStores[2],
                                                              kStores[3])),
                         [](const auto& test) {
                           return std::get<0>(test.param) + "_" + std::get<1>(test.param).name +
                                  "_" + std::get<2>(test.param).name;
                         });

}  // namespace
}  // namespace tessera
