// The thread-safe face of the sessions: many client threads at once, a
// reader that leaves mid-stream, a shutdown during generation, the metrics.
#include "core/session/session_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::make_engine;

constexpr char kContinuous[] = "[scheduler]\nplugin = \"continuous\"\n";

struct Streamed {
  std::vector<int32_t> tokens;
  GenerateOutcome outcome;
};

Streamed read_all(TokenStream& stream) {
  Streamed out;
  TokenStream::Event event;
  while (stream.next(event)) {
    if (event.end) {
      out.outcome = event.outcome;
    } else {
      out.tokens.push_back(event.token);
    }
  }
  return out;
}

// One client: a session, a prompt, two turns; returns both replies.
std::vector<std::vector<int32_t>> converse(SessionRuntime& runtime, Engine& engine, int client) {
  std::vector<std::vector<int32_t>> replies;
  SessionOptions options;
  options.seed = static_cast<uint64_t>(client);
  auto id = runtime.create(options, "key");
  EXPECT_TRUE(id.ok()) << id.status().to_string();
  if (!id.ok()) return replies;
  const std::string prompt = client % 2 ? "Once upon a time" : "The little dog ran to the park";
  for (int turn = 0; turn < 2; ++turn) {
    auto tokens = engine.tokenizer().encode(turn == 0 ? prompt : " Then", turn == 0, turn > 0);
    EXPECT_TRUE(tokens.ok());
    EXPECT_TRUE(runtime.append(*id, "key", *tokens).ok());
    GenerateOptions generate;
    generate.max_tokens = 8 + client;
    generate.stop_at_eos = false;
    auto stream = runtime.generate(*id, "key", generate);
    EXPECT_TRUE(stream.ok()) << stream.status().to_string();
    if (!stream.ok()) return replies;
    const Streamed got = read_all(**stream);
    EXPECT_EQ(got.outcome.stop_reason, "max_tokens");
    replies.push_back(got.tokens);
  }
  EXPECT_TRUE(runtime.close(*id, "key").ok());
  return replies;
}

TEST(SessionRuntime, ClientsOnManyThreadsEachGetWhatTheyGetAlone) {
  auto engine =
      make_engine("stories260K.gguf", std::string(kContinuous) + "[sampling]\ntemperature = 0.7\n");
  ASSERT_NE(engine, nullptr);
  constexpr int kClients = 8;
  std::vector<std::vector<std::vector<int32_t>>> together(kClients), alone(kClients);
  {
    SessionRuntime runtime(*engine, {});
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] { together[c] = converse(runtime, *engine, c); });
    for (std::thread& t : clients) t.join();
    const SessionMetrics metrics = runtime.metrics();
    EXPECT_EQ(metrics.sessions.created, kClients);
    EXPECT_EQ(metrics.live_sessions, 0);
    EXPECT_GT(metrics.batch_lanes.count, 0);
  }
  for (int c = 0; c < kClients; ++c) {
    SessionRuntime runtime(*engine, {});
    alone[c] = converse(runtime, *engine, c);
    EXPECT_EQ(together[c], alone[c]) << "client " << c;
  }
}

TEST(SessionRuntime, AReaderThatLeavesCancelsItsTurnAndTheSessionGoesOn) {
  // A window store never fills, and the turn asks for more tokens than it
  // could make in minutes: only the reader leaving ends it.
  auto engine = make_engine("stories260K.gguf", std::string(kContinuous) +
                                                    "[cache]\nplugin = \"sink_window\"\n"
                                                    "window = 32\n");
  ASSERT_NE(engine, nullptr);
  SessionRuntime runtime(*engine, {});
  auto id = runtime.create({}, "");
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(runtime.append(*id, "", *engine->tokenizer().encode("Once upon a time", true)).ok());
  GenerateOptions options;
  options.max_tokens = 1 << 30;
  options.stop_at_eos = false;
  auto stream = runtime.generate(*id, "", options);
  ASSERT_TRUE(stream.ok());
  TokenStream::Event event;
  ASSERT_TRUE((*stream)->next(event));
  (*stream)->abandon();
  stream->reset();
  // The session takes appends again once its turn has ended.
  Status appended;
  for (int tries = 0; tries < 3000; ++tries) {
    appended = runtime.append(*id, "", std::vector<int32_t>{1});
    if (appended.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(appended.ok()) << appended.to_string();
  auto info = runtime.info(*id, "");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->generating);
  options.max_tokens = 5;
  auto again = runtime.generate(*id, "", options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(read_all(**again).tokens.size(), 5u);
}

// A new session fed "Once", generating `max_tokens` (no stop at EOS).
std::shared_ptr<TokenStream> open_turn(SessionRuntime& runtime, Engine& engine,
                                       int64_t max_tokens) {
  auto id = runtime.create({}, "");
  EXPECT_TRUE(id.ok());
  EXPECT_TRUE(runtime.append(*id, "", *engine.tokenizer().encode("Once", true)).ok());
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.stop_at_eos = false;
  auto stream = runtime.generate(*id, "", options);
  EXPECT_TRUE(stream.ok()) << stream.status().to_string();
  return stream.ok() ? *stream : nullptr;
}

TEST(SessionRuntime, ShutdownEndsRunningTurnsWithAStatus) {
  // A window store never fills: the turn runs until the shutdown ends it.
  auto engine = make_engine("stories260K.gguf", std::string(kContinuous) +
                                                    "[cache]\nplugin = \"sink_window\"\n"
                                                    "window = 32\n");
  ASSERT_NE(engine, nullptr);
  SessionRuntime runtime(*engine, {});
  auto stream = open_turn(runtime, *engine, 1 << 30);
  ASSERT_NE(stream, nullptr);
  TokenStream::Event event;
  ASSERT_TRUE(stream->next(event));
  runtime.shutdown();
  const Streamed rest = read_all(*stream);
  EXPECT_EQ(rest.outcome.stop_reason, "shutdown");
  EXPECT_EQ(runtime.create({}, "").status().code(), StatusCode::kUnavailable);
}

TEST(SessionRuntime, MetricsAreInPrometheusTextFormat) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SessionRuntime runtime(*engine, {});
  auto stream = open_turn(runtime, *engine, 6);
  ASSERT_NE(stream, nullptr);
  read_all(*stream);
  const std::string text = prometheus_text(runtime.metrics());
  EXPECT_THAT(text, HasSubstr("# TYPE tessera_sessions_live gauge\ntessera_sessions_live 1\n"));
  EXPECT_THAT(text, HasSubstr("tessera_tokens_out_total 6\n"));
  EXPECT_THAT(text, HasSubstr("tessera_sessions_evicted_total{reason=\"lru\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tessera_step_seconds_bucket{le=\"+Inf\"} "));
  EXPECT_THAT(text, HasSubstr("tessera_batch_lanes_count "));
}

// Six one-turn requests at once on two slots: each starts its turn in one
// call (never evicted by the others) and waits for room when both slots
// generate. Every request gets its reply.
TEST(SessionRuntime, OneTurnRequestsAtTheLimitWaitForRoomInsteadOfEvictingEachOther) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = *engine->tokenizer().encode("Once upon a time", true);
  SessionRuntime runtime(*engine, {.max_sessions = 2, .idle_ttl_seconds = 0});
  constexpr int kRequests = 6;
  std::vector<Streamed> got(kRequests);
  std::vector<int> waits(kRequests, 0);
  const auto request = [&](int r) {
    GenerateOptions options;
    options.max_tokens = 16;
    options.stop_at_eos = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      auto started = runtime.start_turn({}, "", prompt, options);
      if (started.ok()) {
        got[r] = read_all(*started->stream);
        // Idle once its turn ended, it may already have made room for another.
        const Status closed = runtime.close(started->session_id, "");
        EXPECT_TRUE(closed.ok() || closed.code() == StatusCode::kNotFound) << closed.to_string();
        return;
      }
      ASSERT_EQ(started.status().code(), StatusCode::kResourceExhausted)
          << started.status().to_string();
      ++waits[r];
      ASSERT_TRUE(runtime.wait_for_capacity("", deadline)) << "no room within a minute";
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRequests; ++r) threads.emplace_back(request, r);
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRequests; ++r) {
    EXPECT_EQ(got[r].outcome.stop_reason, "max_tokens") << "request " << r;
    EXPECT_EQ(got[r].tokens, got[0].tokens) << "request " << r;  // greedy: all alike
    EXPECT_EQ(got[r].tokens.size(), 16u);
  }
  EXPECT_EQ(runtime.metrics().sessions.created, kRequests);
}

TEST(SessionRuntime, WaitingForCapacityEndsWhenATurnEndsOrAtTheDeadline) {
  auto engine = make_engine("stories260K.gguf", std::string(kContinuous) +
                                                    "[cache]\nplugin = \"sink_window\"\n"
                                                    "window = 32\n");
  ASSERT_NE(engine, nullptr);
  SessionRuntime runtime(*engine, {.max_sessions = 1, .idle_ttl_seconds = 0});
  EXPECT_TRUE(runtime.wait_for_capacity("", std::chrono::steady_clock::now()));  // room now
  GenerateOptions endless;
  endless.max_tokens = 1 << 30;
  endless.stop_at_eos = false;
  auto started = runtime.start_turn({}, "", {1, 2, 3}, endless);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(runtime.wait_for_capacity("", before + std::chrono::milliseconds(50)));
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(50));
  // The turn ends on another thread while this one waits.
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(runtime.cancel(started->session_id, "").ok());
  });
  EXPECT_TRUE(
      runtime.wait_for_capacity("", std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  cancel.join();
  EXPECT_EQ(read_all(*started->stream).outcome.stop_reason, "cancelled");
  GenerateOptions two;
  two.max_tokens = 2;
  auto next = runtime.start_turn({}, "", {1, 2, 3}, two);
  ASSERT_TRUE(next.ok()) << next.status().to_string();  // the idle one made room
  EXPECT_EQ(read_all(*next->stream).tokens.size(), 2u);
  EXPECT_EQ(runtime.metrics().sessions.evicted_lru, 1);
}

}  // namespace
}  // namespace tessera
