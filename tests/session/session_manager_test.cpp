// Sessions keep their history's K/V across turns, run side by side on one
// loop without changing each other's tokens (INV-3), and fail loudly: an
// unknown, evicted or foreign id, a bad token, a turn at the wrong time.
#include "core/session/session_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::make_engine;

constexpr char kContinuous[] = "[scheduler]\nplugin = \"continuous\"\nprefill_chunk = 8\n";

std::vector<int32_t> encode(Engine& engine, const std::string& text, bool bos = true) {
  auto ids = engine.tokenizer().encode(text, bos, /*continuation=*/!bos);
  EXPECT_TRUE(ids.ok()) << ids.status().to_string();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

// What one turn produced.
struct Reply {
  std::vector<int32_t> tokens;
  GenerateOutcome outcome;
  bool done = false;
};

// Starts a turn whose tokens and end land in `reply`.
Status start(SessionManager& sessions, const std::string& id, Reply& reply, int64_t max_tokens,
             const std::string& owner = "") {
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.stop_at_eos = false;
  return sessions.generate(
      id, owner, options,
      [&reply](int32_t token, int, const TokenLogprob*) {
        reply.tokens.push_back(token);
        return true;
      },
      [&reply](const GenerateOutcome& outcome) {
        reply.outcome = outcome;
        reply.done = true;
      });
}

void run_until_idle(SessionManager& sessions) {
  while (sessions.generating()) sessions.step();
}

// Greedy tokens continuing `tokens`, decoded afresh by the engine.
std::vector<int32_t> fresh_continuation(Engine& engine, const std::vector<int32_t>& tokens,
                                        int64_t count) {
  GenerationRequest request;
  request.prompt = tokens;
  request.max_new_tokens = count;
  request.stop_at_eos = false;
  std::vector<int32_t> out;
  auto stats = engine.generate(request, [&](int32_t t, int) {
    out.push_back(t);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return out;
}

TEST(Sessions, EachTurnContinuesTheHistoryWithoutFeedingItAgain) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "");
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  std::vector<int32_t> history = encode(*engine, "Once upon a time");
  ASSERT_TRUE(sessions.append(*id, "", history).ok());
  for (const std::string text : {" Tom went to the park.", " The sun was hot."}) {
    Reply reply;
    ASSERT_TRUE(start(sessions, *id, reply, 12).ok());
    run_until_idle(sessions);
    ASSERT_TRUE(reply.done);
    EXPECT_EQ(reply.outcome.stop_reason, "max_tokens");
    EXPECT_EQ(reply.tokens, fresh_continuation(*engine, history, 12));
    history.insert(history.end(), reply.tokens.begin(), reply.tokens.end());
    auto info = sessions.info(*id, "");
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->tokens, static_cast<int64_t>(history.size()));
    // Everything but the last reply token has K/V; the next turn feeds only
    // that token and its own.
    EXPECT_EQ(info->cached, info->tokens - 1);
    EXPECT_EQ(info->stored_entries, info->cached);
    EXPECT_GT(info->kv_bytes, 0u);
    const std::vector<int32_t> more = encode(*engine, text, /*bos=*/false);
    ASSERT_TRUE(sessions.append(*id, "", more).ok());
    history.insert(history.end(), more.begin(), more.end());
  }
}

// INV-3: each session's tokens, for its history and seed, are what it gets
// alone, whatever runs beside it; greedy and sampled.
TEST(Sessions, SessionsSideBySideGetWhatEachGetsAlone) {
  for (const std::string sampling : {"", "[sampling]\ntemperature = 0.8\n"}) {
    auto engine = make_engine("stories260K.gguf", kContinuous + sampling);
    ASSERT_NE(engine, nullptr);
    const std::vector<std::string> prompts = {
        "Once upon a time", "Lily had a red ball. She liked to throw it high in the sky.",
        "The dog ran", "A little bird sang a song in the tall green tree by the river."};
    const auto run = [&](const std::vector<std::size_t>& which) {
      SessionManager sessions(*engine, {});
      std::map<std::size_t, Reply> replies;
      std::map<std::size_t, std::string> ids;
      for (const std::size_t p : which) {
        SessionOptions options;
        options.seed = 100 + p;
        auto id = sessions.create(options, "");
        EXPECT_TRUE(id.ok());
        ids[p] = *id;
        EXPECT_TRUE(sessions.append(*id, "", encode(*engine, prompts[p])).ok());
      }
      // Turns start at different steps.
      for (const std::size_t p : which) {
        EXPECT_TRUE(start(sessions, ids[p], replies[p], 16 + 4 * static_cast<int64_t>(p)).ok());
        sessions.step();
      }
      run_until_idle(sessions);
      return replies;
    };
    auto together = run({0, 1, 2, 3});
    for (std::size_t p = 0; p < prompts.size(); ++p) {
      auto alone = run({p});
      EXPECT_EQ(together[p].tokens, alone[p].tokens) << "session " << p << " " << sampling;
      EXPECT_EQ(together[p].tokens.size(), 16 + 4 * p);
    }
  }
}

TEST(Sessions, HistoryAppendedAtOnceOrTokenByTokenGivesTheSameReply) {
  auto engine =
      make_engine("stories260K.gguf", std::string(kContinuous) + "[sampling]\ntemperature = 0.9\n");
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> history = encode(*engine, "Tom had a big red ball and a dog.");
  std::vector<std::vector<int32_t>> replies;
  for (const bool one_by_one : {false, true}) {
    SessionManager sessions(*engine, {});
    SessionOptions options;
    options.seed = 7;
    auto id = sessions.create(options, "");
    ASSERT_TRUE(id.ok());
    if (one_by_one) {
      for (const int32_t token : history) ASSERT_TRUE(sessions.append(*id, "", {&token, 1}).ok());
    } else {
      ASSERT_TRUE(sessions.append(*id, "", history).ok());
    }
    Reply reply;
    ASSERT_TRUE(start(sessions, *id, reply, 20).ok());
    run_until_idle(sessions);
    replies.push_back(reply.tokens);
  }
  EXPECT_EQ(replies[0], replies[1]);
}

TEST(Sessions, BadCallsAreRefusedWithTheirReason) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "key-a");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 32u);  // 128 bits, hex
  // Unknown, and another key's: the same NOT_FOUND.
  EXPECT_EQ(sessions.append("0123", "key-a", std::vector<int32_t>{1}).code(),
            StatusCode::kNotFound);
  const Status foreign = sessions.append(*id, "key-b", std::vector<int32_t>{1});
  EXPECT_EQ(foreign.code(), StatusCode::kNotFound);
  EXPECT_THAT(foreign.message(), HasSubstr("not this key's"));
  // A token outside the vocabulary: nothing appended.
  const Status oov = sessions.append(*id, "key-a", std::vector<int32_t>{1, 512});
  EXPECT_EQ(oov.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(oov.message(), HasSubstr("token 1 is 512"));
  EXPECT_EQ(sessions.info(*id, "key-a")->tokens, 0);
  // No history to continue.
  Reply reply;
  EXPECT_EQ(start(sessions, *id, reply, 4, "key-a").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(sessions.append(*id, "key-a", encode(*engine, "Once")).ok());
  // Absurd max tokens.
  GenerateOptions negative;
  negative.max_tokens = -1;
  EXPECT_EQ(sessions.generate(*id, "key-a", negative, {}, {}).code(), StatusCode::kInvalidArgument);
  // One turn at a time, and no append during it.
  ASSERT_TRUE(start(sessions, *id, reply, 30, "key-a").ok());
  Reply second;
  EXPECT_EQ(start(sessions, *id, second, 4, "key-a").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(sessions.append(*id, "key-a", std::vector<int32_t>{1}).code(),
            StatusCode::kFailedPrecondition);
  run_until_idle(sessions);
  EXPECT_EQ(reply.tokens.size(), 30u);
  // Beyond the cache: refused whole.
  const std::vector<int32_t> huge(static_cast<std::size_t>(engine->max_tokens()), 1);
  EXPECT_EQ(sessions.append(*id, "key-a", huge).code(), StatusCode::kResourceExhausted);
}

TEST(Sessions, TheLeastRecentlyUsedIsEvictedAtCapacityAndSaysSo) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  auto now = SessionManager::Clock::time_point{};
  SessionManager sessions(*engine, {.max_sessions = 2, .idle_ttl_seconds = 0},
                          [&now] { return now; });
  auto first = sessions.create({}, "");
  now += std::chrono::seconds(1);
  auto second = sessions.create({}, "");
  now += std::chrono::seconds(1);
  ASSERT_TRUE(sessions.append(*first, "", std::vector<int32_t>{1}).ok());  // first is used last
  now += std::chrono::seconds(1);
  auto third = sessions.create({}, "");
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(sessions.live(), 2u);
  EXPECT_EQ(sessions.counters().evicted_lru, 1);
  const Status gone = sessions.info(*second, "").status();
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
  EXPECT_THAT(gone.message(), HasSubstr("evicted (least recently used"));
  EXPECT_TRUE(sessions.info(*first, "").ok());
}

TEST(Sessions, IdleSessionsExpireAfterTheirTtl) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  auto now = SessionManager::Clock::time_point{};
  SessionManager sessions(*engine, {.max_sessions = 8, .idle_ttl_seconds = 60},
                          [&now] { return now; });
  auto idle = sessions.create({}, "");
  auto busy = sessions.create({}, "");
  ASSERT_TRUE(sessions.append(*busy, "", encode(*engine, "Once upon a time")).ok());
  Reply reply;
  ASSERT_TRUE(start(sessions, *busy, reply, 5).ok());
  now += std::chrono::seconds(61);
  sessions.expire_idle();  // the generating one is in use
  EXPECT_EQ(sessions.counters().evicted_ttl, 1);
  EXPECT_THAT(sessions.info(*idle, "").status().message(), HasSubstr("idle longer than"));
  run_until_idle(sessions);
  EXPECT_TRUE(reply.done);
  EXPECT_EQ(reply.tokens.size(), 5u);
  EXPECT_TRUE(sessions.info(*busy, "").ok());
}

TEST(Sessions, AForkContinuesLikeItsSource) {
  for (const std::string cache : {"static", "paged"}) {
    auto engine = make_engine("stories260K.gguf",
                              std::string(kContinuous) + "[cache]\nplugin = \"" + cache + "\"\n");
    ASSERT_NE(engine, nullptr);
    SessionManager sessions(*engine, {});
    auto id = sessions.create({}, "");
    ASSERT_TRUE(sessions.append(*id, "", encode(*engine, "Once upon a time")).ok());
    Reply first;
    ASSERT_TRUE(start(sessions, *id, first, 10).ok());
    run_until_idle(sessions);
    auto fork = sessions.fork(*id, "");
    ASSERT_TRUE(fork.ok()) << fork.status().to_string();
    EXPECT_EQ(sessions.info(*fork, "")->tokens, sessions.info(*id, "")->tokens);
    // The fork holds the same K/V bytes; on paged they are the source's own
    // blocks, shared (copy-on-write), on static a copy.
    EXPECT_EQ(sessions.info(*fork, "")->kv_bytes, sessions.info(*id, "")->kv_bytes);
    EXPECT_EQ(sessions.info(*fork, "")->kv_shared_bytes,
              cache == "paged" ? sessions.info(*fork, "")->kv_bytes : 0u)
        << cache;
    Reply a, b;
    ASSERT_TRUE(start(sessions, *id, a, 15).ok());
    ASSERT_TRUE(start(sessions, *fork, b, 15).ok());
    run_until_idle(sessions);
    EXPECT_EQ(a.tokens, b.tokens) << cache;
    EXPECT_EQ(a.tokens.size(), 15u);
  }
}

TEST(Sessions, ClosingOneWhileItGeneratesLeavesTheOthersRunning) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto doomed = sessions.create({}, "");
  auto kept = sessions.create({}, "");
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  ASSERT_TRUE(sessions.append(*doomed, "", prompt).ok());
  ASSERT_TRUE(sessions.append(*kept, "", prompt).ok());
  Reply doomed_reply, kept_reply;
  ASSERT_TRUE(start(sessions, *doomed, doomed_reply, 40).ok());
  ASSERT_TRUE(start(sessions, *kept, kept_reply, 25).ok());
  for (int i = 0; i < 5; ++i) sessions.step();
  ASSERT_TRUE(sessions.close(*doomed, "").ok());
  EXPECT_TRUE(doomed_reply.done);
  EXPECT_EQ(doomed_reply.outcome.stop_reason, "closed");
  EXPECT_THAT(sessions.info(*doomed, "").status().message(), HasSubstr("closed by its owner"));
  run_until_idle(sessions);
  EXPECT_EQ(kept_reply.tokens, fresh_continuation(*engine, prompt, 25));
}

TEST(Sessions, AStopTokenEndsTheTurnAndStaysInTheHistory) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  const std::vector<int32_t> free_run = fresh_continuation(*engine, prompt, 20);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "");
  ASSERT_TRUE(sessions.append(*id, "", prompt).ok());
  GenerateOptions options;
  options.max_tokens = 20;
  options.stop_at_eos = false;
  options.stop_tokens = {free_run[5]};
  std::vector<int32_t> got;
  GenerateOutcome outcome;
  ASSERT_TRUE(sessions
                  .generate(
                      *id, "", options,
                      [&](int32_t t, int, const TokenLogprob*) {
                        got.push_back(t);
                        return true;
                      },
                      [&](const GenerateOutcome& o) { outcome = o; })
                  .ok());
  run_until_idle(sessions);
  const auto first = std::find(free_run.begin(), free_run.end(), free_run[5]);
  EXPECT_EQ(got, std::vector<int32_t>(free_run.begin(), first));
  EXPECT_EQ(outcome.stop_reason, "stop_token");
  EXPECT_EQ(sessions.info(*id, "")->tokens, static_cast<int64_t>(prompt.size() + got.size() + 1));
}

// One call makes the session and starts its turn: it is generating from the
// moment it exists, so other requests at the limit cannot evict it.
TEST(Sessions, StartTurnMakesASessionThatGeneratesAtOnce) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {.max_sessions = 2, .idle_ttl_seconds = 0});
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  GenerateOptions options;
  options.max_tokens = 12;
  options.stop_at_eos = false;
  std::vector<Reply> replies(3);
  std::vector<std::string> ids;
  for (int r = 0; r < 2; ++r) {
    auto started = sessions.start_turn(
        {}, "", prompt, options,
        [&replies, r](int32_t token, int, const TokenLogprob*) {
          replies[r].tokens.push_back(token);
          return true;
        },
        [&replies, r](const GenerateOutcome& outcome) {
          replies[r].outcome = outcome;
          replies[r].done = true;
        });
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    ids.push_back(started->id);
    EXPECT_TRUE(sessions.info(started->id, "")->generating);
  }
  // Both slots generate: the third is refused, and neither running turn lost.
  const auto third = sessions.start_turn({}, "", prompt, options, {}, {});
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("server.max_sessions"));
  EXPECT_FALSE(sessions.has_room_for(""));
  EXPECT_EQ(sessions.counters().evicted_lru, 0);
  run_until_idle(sessions);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(replies[r].done);
    EXPECT_EQ(replies[r].outcome.stop_reason, "max_tokens");
    EXPECT_EQ(replies[r].tokens, fresh_continuation(*engine, prompt, 12));
    EXPECT_EQ(sessions.info(ids[r], "")->tokens, static_cast<int64_t>(prompt.size() + 12));
  }
  EXPECT_TRUE(sessions.has_room_for(""));
  EXPECT_EQ(sessions.counters().tokens_in, static_cast<int64_t>(2 * prompt.size()));
}

TEST(Sessions, StartTurnChecksEverythingFirstAndNamesNoSession) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {.max_sessions = 1, .idle_ttl_seconds = 0});
  auto idle = sessions.create({}, "");
  ASSERT_TRUE(idle.ok());
  GenerateOptions options;
  const std::vector<int32_t> oov = {1, 512};
  const Status bad_token = sessions.start_turn({}, "", oov, options, {}, {}).status();
  EXPECT_EQ(bad_token.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_token.message(), HasSubstr("token 1 is 512"));
  EXPECT_EQ(bad_token.message().find("session "), std::string::npos) << bad_token.message();
  EXPECT_EQ(sessions.start_turn({}, "", {}, options, {}, {}).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<int32_t> huge(static_cast<std::size_t>(engine->max_tokens()), 1);
  const Status too_long = sessions.start_turn({}, "", huge, options, {}, {}).status();
  EXPECT_EQ(too_long.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(too_long.message(), HasSubstr("cache.max_tokens"));
  // Nothing was made, and the idle session was not evicted for refused calls.
  EXPECT_EQ(sessions.counters().created, 1);
  EXPECT_EQ(sessions.counters().evicted_lru, 0);
  EXPECT_TRUE(sessions.info(*idle, "").ok());
}

// A turn of no tokens ends inside the call that starts it; the session must
// not be left generating.
TEST(Sessions, ATurnOfZeroTokensLeavesTheSessionIdle) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "");
  ASSERT_TRUE(sessions.append(*id, "", encode(*engine, "Once")).ok());
  Reply reply;
  ASSERT_TRUE(start(sessions, *id, reply, 0).ok());
  EXPECT_TRUE(reply.done);
  EXPECT_EQ(reply.outcome.stop_reason, "max_tokens");
  EXPECT_FALSE(sessions.info(*id, "")->generating);
  EXPECT_TRUE(sessions.append(*id, "", std::vector<int32_t>{1}).ok());
}

TEST(Sessions, AKeyAtItsQuotaEvictsOnlyItsOwnIdleSession) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  auto now = SessionManager::Clock::time_point{};
  SessionManager sessions(*engine,
                          {.max_sessions = 8, .idle_ttl_seconds = 0, .max_sessions_per_key = 2},
                          [&now] { return now; });
  const auto create = [&](const std::string& key) {
    now += std::chrono::seconds(1);
    auto id = sessions.create({}, key);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    return id.ok() ? *id : std::string();
  };
  const std::string other = create("key-b");  // the oldest of all
  const std::string a1 = create("key-a");
  const std::string a2 = create("key-a");
  const std::string a3 = create("key-a");  // key-a at its quota: a1 goes
  EXPECT_EQ(sessions.live(), 3u);
  EXPECT_EQ(sessions.counters().evicted_key_quota, 1);
  EXPECT_EQ(sessions.counters().evicted_lru, 0);
  EXPECT_THAT(sessions.info(a1, "key-a").status().message(),
              HasSubstr("at server.max_sessions_per_key = 2"));
  EXPECT_TRUE(sessions.info(other, "key-b").ok());
  // Both of key-a's sessions generating: refused, though the server has room.
  Reply r2, r3;
  for (const std::string& id : {a2, a3})
    ASSERT_TRUE(sessions.append(id, "key-a", encode(*engine, "Once upon a time")).ok());
  ASSERT_TRUE(start(sessions, a2, r2, 4, "key-a").ok());
  ASSERT_TRUE(start(sessions, a3, r3, 4, "key-a").ok());
  EXPECT_FALSE(sessions.has_room_for("key-a"));
  EXPECT_TRUE(sessions.has_room_for("key-b"));
  const Status refused = sessions.create({}, "key-a").status();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("server.max_sessions_per_key"));
  EXPECT_TRUE(sessions.create({}, "key-b").ok());
  run_until_idle(sessions);
  EXPECT_TRUE(sessions.has_room_for("key-a"));
}

// At the server's limit the victim is the least recently used idle session
// of the key holding the most, not the oldest of all.
TEST(Sessions, AtTheServerLimitTheKeyHoldingTheMostIsEvictedFirst) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  auto now = SessionManager::Clock::time_point{};
  SessionManager sessions(*engine, {.max_sessions = 3, .idle_ttl_seconds = 0},
                          [&now] { return now; });
  const auto create = [&](const std::string& key) {
    now += std::chrono::seconds(1);
    auto id = sessions.create({}, key);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    return id.ok() ? *id : std::string();
  };
  const std::string lone = create("key-a");  // the oldest
  const std::string b1 = create("key-b");
  const std::string b2 = create("key-b");
  create("key-c");
  EXPECT_TRUE(sessions.info(lone, "key-a").ok());
  EXPECT_THAT(sessions.info(b1, "key-b").status().message(), HasSubstr("evicted"));
  EXPECT_TRUE(sessions.info(b2, "key-b").ok());
  EXPECT_EQ(sessions.counters().evicted_lru, 1);
}

TEST(Sessions, AnotherKeyLearnsNothingOfAnEndedSession) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "key-a");
  ASSERT_TRUE(id.ok());
  const Status unknown = sessions.info("0123456789abcdef0123456789abcdef", "key-b").status();
  ASSERT_TRUE(sessions.close(*id, "key-a").ok());
  const Status foreign = sessions.info(*id, "key-b").status();
  EXPECT_EQ(foreign.code(), StatusCode::kNotFound);
  EXPECT_THAT(foreign.message(), HasSubstr("never created, or not this key's"));
  EXPECT_EQ(foreign.message().find("closed"), std::string::npos) << foreign.message();
  // The same words as an unknown id, but for the id itself.
  EXPECT_EQ(foreign.message().size(), unknown.message().size());
  EXPECT_THAT(sessions.info(*id, "key-a").status().message(), HasSubstr("closed by its owner"));
}

TEST(Sessions, AHugeIdIsNotEchoedWhole) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  const std::string huge(100000, 'x');
  const Status status = sessions.append(huge, "", std::vector<int32_t>{1});
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_LT(status.message().size(), 200u);
  EXPECT_THAT(status.message(), HasSubstr(std::string(64, 'x') + "..."));
  EXPECT_EQ(echoed_id(std::string("a\nb\xff", 4)), "a?b?");
  EXPECT_EQ(echoed_id("0123"), "0123");
}

// An unseeded session draws its seed (temperature 1: three sessions would
// otherwise say the same), reports it, and that seed replays it; a server
// that fixes the default seed is reproducible.
TEST(Sessions, AnUnseededSessionDrawsItsSeedAndReportsIt) {
  auto engine =
      make_engine("stories260K.gguf", std::string(kContinuous) + "[sampling]\ntemperature = 1.0\n");
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  const auto turn = [&](SessionManager& sessions, const SessionOptions& options, uint64_t& seed) {
    auto id = sessions.create(options, "");
    EXPECT_TRUE(id.ok());
    EXPECT_TRUE(sessions.append(*id, "", prompt).ok());
    Reply reply;
    EXPECT_TRUE(start(sessions, *id, reply, 24).ok());
    run_until_idle(sessions);
    seed = sessions.info(*id, "")->seed;
    return reply.tokens;
  };
  SessionManager drawing(*engine, {});
  std::vector<std::vector<int32_t>> replies(3);
  std::vector<uint64_t> seeds(3);
  for (int r = 0; r < 3; ++r) replies[r] = turn(drawing, {}, seeds[r]);
  EXPECT_FALSE(replies[0] == replies[1] && replies[1] == replies[2]);
  EXPECT_FALSE(seeds[0] == seeds[1] && seeds[1] == seeds[2]);
  for (const uint64_t seed : seeds) EXPECT_LT(seed, uint64_t{1} << 53);  // exact in JSON
  SessionOptions replay;
  replay.seed = seeds[1];
  uint64_t replayed_seed = 0;
  EXPECT_EQ(turn(drawing, replay, replayed_seed), replies[1]);
  EXPECT_EQ(replayed_seed, seeds[1]);
  SessionManager fixed(
      *engine,
      {.max_sessions = 8, .idle_ttl_seconds = 0, .max_sessions_per_key = 0, .default_seed = 42});
  uint64_t first_seed = 0, second_seed = 0;
  EXPECT_EQ(turn(fixed, {}, first_seed), turn(fixed, {}, second_seed));
  EXPECT_EQ(first_seed, 42u);
  EXPECT_EQ(second_seed, 42u);
}

TEST(Sessions, AskingForInfoCountsAsUse) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  auto now = SessionManager::Clock::time_point{};
  SessionManager sessions(*engine, {.max_sessions = 2, .idle_ttl_seconds = 0},
                          [&now] { return now; });
  auto first = sessions.create({}, "");
  now += std::chrono::seconds(1);
  auto second = sessions.create({}, "");
  now += std::chrono::seconds(1);
  EXPECT_DOUBLE_EQ(sessions.info(*first, "")->idle_seconds, 2.0);
  EXPECT_DOUBLE_EQ(sessions.info(*first, "")->idle_seconds, 0.0);  // the last ask was a use
  now += std::chrono::seconds(1);
  ASSERT_TRUE(sessions.create({}, "").ok());
  EXPECT_TRUE(sessions.info(*first, "").ok());
  EXPECT_EQ(sessions.info(*second, "").status().code(), StatusCode::kNotFound);
}

TEST(Sessions, InfoReturnsTheHistoryWhenAskedForIt) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionManager sessions(*engine, {});
  auto id = sessions.create({}, "");
  std::vector<int32_t> history = encode(*engine, "Once upon a time");
  ASSERT_TRUE(sessions.append(*id, "", history).ok());
  Reply reply;
  ASSERT_TRUE(start(sessions, *id, reply, 7).ok());
  run_until_idle(sessions);
  history.insert(history.end(), reply.tokens.begin(), reply.tokens.end());
  EXPECT_TRUE(sessions.info(*id, "")->history.empty());
  EXPECT_EQ(sessions.info(*id, "", /*with_history=*/true)->history, history);
}

}  // namespace
}  // namespace tessera
