// The prefix cache behind the server's sessions: a chat that resends its
// whole conversation every turn (what an OpenAI client does) begins each
// turn from the blocks of the turns before and gets exactly the tokens it
// gets without the cache, greedy and sampled with the same seed; a gRPC
// session's first append begins from it too; a store that shares no blocks
// or a verifier that writes other K/V refuse it with what to change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/session/session_manager.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::make_engine;

constexpr char kPagedContinuous[] =
    "[cache]\nplugin = \"paged\"\nmax_tokens = 512\n"
    "[scheduler]\nplugin = \"continuous\"\nprefill_chunk = 8\n";

std::vector<int32_t> encode(Engine& engine, const std::string& text, bool bos) {
  auto ids = engine.tokenizer().encode(text, bos, /*continuation=*/!bos);
  EXPECT_TRUE(ids.ok()) << ids.status().to_string();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

struct Turn {
  std::vector<int32_t> tokens;
  int64_t cached = 0;
};

// One turn of a one-turn session (as an HTTP completion runs), closed after.
Turn one_turn(SessionManager& sessions, const std::vector<int32_t>& prompt,
              std::optional<uint64_t> seed) {
  SessionOptions options;
  options.seed = seed;
  GenerateOptions generate;
  generate.max_tokens = 12;
  generate.stop_at_eos = false;
  Turn turn;
  bool done = false;
  auto started = sessions.start_turn(
      options, "", prompt, generate,
      [&](int32_t token, int, const TokenLogprob*) {
        turn.tokens.push_back(token);
        return true;
      },
      [&](const GenerateOutcome&) { done = true; });
  EXPECT_TRUE(started.ok()) << started.status().to_string();
  if (!started.ok()) return turn;
  while (sessions.generating()) sessions.step();
  EXPECT_TRUE(done);
  EXPECT_TRUE(sessions.close(started->id, "").ok());
  turn.cached = started->cached_tokens;
  return turn;
}

// A conversation of `lines`, the whole history resent each turn; returns
// each turn's reply and cached tokens.
std::vector<Turn> conversation(Engine& engine, const std::vector<std::string>& lines,
                               std::optional<uint64_t> seed) {
  SessionManager sessions(engine, {});
  std::vector<int32_t> history;
  std::vector<Turn> turns;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::vector<int32_t> line = encode(engine, lines[i], /*bos=*/i == 0);
    history.insert(history.end(), line.begin(), line.end());
    turns.push_back(one_turn(sessions, history, seed));
    history.insert(history.end(), turns.back().tokens.begin(), turns.back().tokens.end());
  }
  return turns;
}

const std::vector<std::string> kLines = {
    "Once upon a time there was a little girl named Lily. She liked to play in the park.",
    " One day she saw a big red ball under a tree.", " Her mom said it was time to go home.",
    " Lily was sad, but she waved goodbye to the ball."};

TEST(PrefixCacheSessions, AResentConversationComputesOnlyTheNewTurnAndGetsTheSameTokens) {
  // Greedy, sampled, encoded K/V (f16 as tessera serve keeps them; int8),
  // and speculative decoding (drafts verified, then compacted).
  for (const std::string variant :
       {"", "[sampling]\ntemperature = 0.8\n", "[cache.codec]\nplugin = \"f16\"\n",
        "[cache.codec]\nplugin = \"int8\"\n", "[decode]\nproposer = \"ngram\"\n"}) {
    const bool sampled = variant.find("temperature") != std::string::npos;
    auto cached = make_engine("stories260K.gguf", kPagedContinuous + variant);
    auto plain = make_engine("stories260K.gguf", kPagedContinuous + variant);
    ASSERT_NE(cached, nullptr);
    ASSERT_NE(plain, nullptr);
    ASSERT_TRUE(cached->enable_prefix_cache(std::size_t{64} << 20).ok());
    const std::optional<uint64_t> seed = sampled ? std::optional(7ull) : std::nullopt;
    const std::string& sampling = variant;
    const std::vector<Turn> with = conversation(*cached, kLines, seed);
    const std::vector<Turn> without = conversation(*plain, kLines, seed);
    ASSERT_EQ(with.size(), without.size());
    int64_t history = 0;
    for (std::size_t i = 0; i < with.size(); ++i) {
      EXPECT_EQ(with[i].tokens, without[i].tokens) << "turn " << i << " " << sampling;
      EXPECT_EQ(without[i].cached, 0);
      if (i > 0) {
        // Everything the turn before held, in whole blocks of 16.
        EXPECT_GE(with[i].cached, history - 16) << "turn " << i;
        EXPECT_EQ(with[i].cached % 16, 0);
      }
      history +=
          static_cast<int64_t>(encode(*cached, kLines[i], i == 0).size() + with[i].tokens.size());
    }
    const auto stats = cached->prefix_cache_stats();
    ASSERT_TRUE(stats.has_value());
    EXPECT_EQ(stats->lookups, 4);
    EXPECT_EQ(stats->hits, 3);
    EXPECT_GT(stats->blocks, 0);
  }
}

TEST(PrefixCacheSessions, AGrpcSessionsFirstAppendBeginsFromTheCache) {
  auto engine = make_engine("stories260K.gguf", kPagedContinuous);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->enable_prefix_cache(std::size_t{64} << 20).ok());
  SessionManager sessions(*engine, {});
  const std::vector<int32_t> prompt = encode(*engine, kLines[0] + kLines[1], true);
  const Turn first = one_turn(sessions, prompt, std::nullopt);
  auto id = sessions.create({}, "");
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(sessions.append(*id, "", prompt).ok());
  auto info = sessions.info(*id, "");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->cached, (static_cast<int64_t>(prompt.size()) - 1) / 16 * 16);
  EXPECT_EQ(info->stored_entries, info->cached);
  GenerateOptions generate;
  generate.max_tokens = 12;
  generate.stop_at_eos = false;
  std::vector<int32_t> reply;
  ASSERT_TRUE(sessions
                  .generate(*id, "", generate,
                            [&](int32_t token, int, const TokenLogprob*) {
                              reply.push_back(token);
                              return true;
                            },
                            {})
                  .ok());
  while (sessions.generating()) sessions.step();
  EXPECT_EQ(reply, first.tokens);
}

TEST(PrefixCacheSessions, ConfigsThatCannotShareBlocksSayWhatToChange) {
  auto static_store = make_engine("stories260K.gguf", "[cache]\nplugin = \"static\"\n");
  ASSERT_NE(static_store, nullptr);
  const Status refused = static_store->enable_prefix_cache(1 << 20);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("cache.plugin = \"paged\""));
  EXPECT_TRUE(static_store->enable_prefix_cache(0).ok()) << "0 is off, on any store";
  EXPECT_FALSE(static_store->prefix_caching());
}

}  // namespace
}  // namespace tessera
