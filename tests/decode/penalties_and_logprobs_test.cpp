// Presence / frequency penalties and token log-probabilities through every
// decoding path: speculative greedy decoding with penalties emits plain
// greedy decoding's tokens (the penalty of a path's later positions counts
// its earlier tokens), each emitted token's record is the target's
// log_softmax at its position (cached against recompute; speculative
// against plain), and block diffusion scores what it reveals.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/session/session_manager.h"
#include "tests/decode/spec_test_util.h"

namespace tessera {
namespace {

using testing::Generated;
using testing::make_engine;
using testing::request_for;

constexpr char kPenalties[] = "[sampling]\npresence_penalty = 0.6\nfrequency_penalty = 0.4\n";

struct Proposer {
  const char* name;
  const char* decode;
};

constexpr Proposer kProposers[] = {
    {"ngram", "proposer = \"ngram\"\n"},
    {"self_draft", "proposer = \"self_draft\"\ndraft_layers = 3\n"},
    {"ar_draft", "proposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n"},
    {"tree_ar_draft",
     "proposer = \"tree\"\ntree_drafter = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n"},
};

constexpr const char* kTarget = "tok512-ar-1m.gguf";

int distinct(const std::vector<int32_t>& tokens) {
  return static_cast<int>(std::set<int32_t>(tokens.begin(), tokens.end()).size());
}

TEST(Penalties, SpeculativeGreedyEmitsThePlainPenalisedTokens) {
  auto plain = make_engine(kTarget, kPenalties);
  auto unpenalised = make_engine(kTarget);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(unpenalised, nullptr);
  // Long enough for repeats (and so penalties and n-gram drafts) from BOS.
  const int64_t count = 80;
  for (const char* text : {"", testing::kRepetitivePrompt}) {
    const GenerationRequest request = request_for(*plain, text, count);
    const Generated want = testing::run(*plain, request);
    // The penalties do something: fewer repeats than without them.
    const Generated free_run = testing::run(*unpenalised, request);
    EXPECT_NE(want.tokens, free_run.tokens) << "prompt '" << text << "'";
    EXPECT_GT(distinct(want.tokens), distinct(free_run.tokens)) << "prompt '" << text << "'";
    for (const Proposer& proposer : kProposers) {
      auto spec = make_engine(kTarget, std::string(kPenalties) + "[decode]\n" + proposer.decode);
      ASSERT_NE(spec, nullptr) << proposer.name;
      const Generated got = testing::run(*spec, request);
      EXPECT_EQ(got.tokens, want.tokens) << proposer.name << ", prompt '" << text << "'";
      EXPECT_GT(got.stats.decode.accepted, 0) << proposer.name;
    }
  }
}

// One turn of a session of its own, with log-probabilities.
struct Scored {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> records;
  int missing = 0;  // tokens that came without a record
};

Scored scored_turn(Engine& engine, const std::vector<int32_t>& prompt, int top, int64_t count) {
  SessionManager sessions(engine, {});
  Scored out;
  GenerateOptions options;
  options.max_tokens = count;
  options.stop_at_eos = false;
  options.logprobs = top;
  bool done = false;
  auto started = sessions.start_turn(
      {}, "", prompt, options,
      [&](int32_t token, int, const TokenLogprob* record) {
        out.tokens.push_back(token);
        if (record)
          out.records.push_back(*record);
        else
          ++out.missing;
        return true;
      },
      [&](const GenerateOutcome& outcome) {
        EXPECT_TRUE(outcome.status.ok()) << outcome.status.to_string();
        done = true;
      });
  EXPECT_TRUE(started.ok()) << started.status().to_string();
  while (sessions.generating()) sessions.step();
  EXPECT_TRUE(done);
  return out;
}

std::vector<int32_t> encoded(Engine& engine, const char* text) {
  auto ids = engine.tokenizer().encode(text, /*add_bos=*/true);
  EXPECT_TRUE(ids.ok());
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

void expect_greedy_records(const Scored& got, int top) {
  ASSERT_EQ(got.missing, 0);
  ASSERT_EQ(got.records.size(), got.tokens.size());
  for (std::size_t i = 0; i < got.tokens.size(); ++i) {
    const TokenLogprob& r = got.records[i];
    EXPECT_EQ(r.token, got.tokens[i]);
    ASSERT_EQ(r.top_count, top);
    // Greedy without penalties: the emitted token is the most likely.
    EXPECT_EQ(r.top_tokens[0], r.token) << "position " << i;
    EXPECT_EQ(r.top_logprobs[0], r.logprob);
    EXPECT_LE(r.logprob, 0.0f);
    for (int j = 1; j < r.top_count; ++j)
      EXPECT_LE(r.top_logprobs[static_cast<std::size_t>(j)],
                r.top_logprobs[static_cast<std::size_t>(j - 1)]);
  }
}

TEST(Logprobs, EachRecordIsTheTargetsAtItsPositionCachedAgainstRecompute) {
  auto engine = make_engine(kTarget);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encoded(*engine, "Once upon a time");
  const Scored got = scored_turn(*engine, prompt, 5, 24);
  expect_greedy_records(got, 5);
  // A fresh session whose prompt ends just before token i scores it alike.
  for (const std::size_t i : {std::size_t{0}, std::size_t{7}, std::size_t{23}}) {
    std::vector<int32_t> longer = prompt;
    longer.insert(longer.end(), got.tokens.begin(),
                  got.tokens.begin() + static_cast<std::ptrdiff_t>(i));
    const Scored again = scored_turn(*engine, longer, 5, 1);
    ASSERT_EQ(again.records.size(), 1u);
    EXPECT_EQ(again.records[0].token, got.tokens[i]);
    EXPECT_NEAR(again.records[0].logprob, got.records[i].logprob, 1e-4) << "position " << i;
  }
}

TEST(Logprobs, SpeculativeDecodingReportsThePlainRecords) {
  auto plain = make_engine(kTarget);
  ASSERT_NE(plain, nullptr);
  const std::vector<int32_t> prompt = encoded(*plain, testing::kRepetitivePrompt);
  const Scored want = scored_turn(*plain, prompt, 3, 40);
  expect_greedy_records(want, 3);
  for (const Proposer& proposer : kProposers) {
    auto spec = make_engine(kTarget, std::string("[decode]\n") + proposer.decode);
    ASSERT_NE(spec, nullptr) << proposer.name;
    const Scored got = scored_turn(*spec, prompt, 3, 40);
    ASSERT_EQ(got.tokens, want.tokens) << proposer.name;
    ASSERT_EQ(got.records.size(), want.records.size()) << proposer.name;
    for (std::size_t i = 0; i < got.records.size(); ++i) {
      EXPECT_NEAR(got.records[i].logprob, want.records[i].logprob, 1e-4)
          << proposer.name << ", position " << i;
      EXPECT_EQ(got.records[i].top_tokens[0], want.records[i].top_tokens[0]) << proposer.name;
    }
  }
}

TEST(Logprobs, SampledTokensAreScoredOnTheRawDistribution) {
  auto engine = make_engine(kTarget, "[sampling]\ntemperature = 1.2\ntop_k = 8\n");
  ASSERT_NE(engine, nullptr);
  const Scored got = scored_turn(*engine, encoded(*engine, "Once upon a time"), 20, 30);
  ASSERT_EQ(got.records.size(), got.tokens.size());
  for (const TokenLogprob& r : got.records) {
    ASSERT_EQ(r.top_count, 20);
    // top_k = 8 draws among the 8 most likely; the record is the model's own
    // distribution, so the token is among its top 8 with its own logprob.
    bool found = false;
    for (int j = 0; j < 8; ++j)
      if (r.top_tokens[static_cast<std::size_t>(j)] == r.token) {
        found = true;
        EXPECT_EQ(r.top_logprobs[static_cast<std::size_t>(j)], r.logprob);
      }
    EXPECT_TRUE(found);
    double mass = 0;
    for (int j = 0; j < r.top_count; ++j)
      mass += std::exp(static_cast<double>(r.top_logprobs[static_cast<std::size_t>(j)]));
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
}

TEST(Logprobs, BlockDiffusionScoresEveryRevealedToken) {
  auto engine = make_engine("tok512-sdar-1m.gguf", "[decode]\nverifier = \"block_diffusion\"\n");
  ASSERT_NE(engine, nullptr);
  const Scored got = scored_turn(*engine, encoded(*engine, "Once upon a time"), 2, 12);
  expect_greedy_records(got, 2);
  const int32_t mask = engine->model().config.mask_token_id;
  for (const TokenLogprob& r : got.records)
    for (int j = 0; j < r.top_count; ++j)
      EXPECT_NE(r.top_tokens[static_cast<std::size_t>(j)], mask);
}

// The restored verifier re-creates what the window dropped: its records are
// those of a store that kept everything.
TEST(Logprobs, TheRestoredVerifierReportsTheFullCachesRecords) {
  const std::string window =
      "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 24\ncodec_stage = "
      "\"post_rope\"\npositions = \"keep\"\n";
  auto full = make_engine("stories260K.gguf", "[cache]\nplugin = \"static\"\n");
  auto restoring = make_engine("stories260K.gguf",
                               window + "[decode]\nverifier = \"restored\"\nrestore_chunk = 16\n");
  ASSERT_NE(full, nullptr);
  ASSERT_NE(restoring, nullptr);
  const std::vector<int32_t> prompt = encoded(*full, "Once upon a time");
  const Scored want = scored_turn(*full, prompt, 2, 40);  // well past the window
  const Scored got = scored_turn(*restoring, prompt, 2, 40);
  expect_greedy_records(got, 2);
  ASSERT_EQ(got.tokens, want.tokens);
  for (std::size_t i = 0; i < got.records.size(); ++i)
    EXPECT_NEAR(got.records[i].logprob, want.records[i].logprob, 1e-3) << "position " << i;
}

TEST(Logprobs, MoreThanTwentyAlternativesAreRefused) {
  auto engine = make_engine(kTarget);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  GenerateOptions options;
  options.logprobs = 21;
  auto started = sessions.start_turn({}, "", encoded(*engine, "Once"), options, {}, {});
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sessions.live(), 0u);
}

}  // namespace
}  // namespace tessera
