// Many lanes on one decode loop (continuous batching) against each lane run
// alone: INV-3, a lane's tokens never depend on who shares its forward nor on
// how its history arrived; and the loop's own rules (chunks beside decodes,
// cancel, stopping).
#include "core/engine/decode_loop.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/plugin/builtin_plugins.h"
#include "core/plugin/registry.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using testing::make_engine;

constexpr char kContinuous[] = "[scheduler]\nplugin = \"continuous\"\nprefill_chunk = 7\n";
constexpr char kSampled[] = "[sampling]\ntemperature = 0.9\ntop_p = 0.95\n";

struct Job {
  std::string prompt;
  uint64_t seed = 1;
  int64_t max_new_tokens = 24;
  int64_t submit_at_step = 0;  // the loop's step count when it joins
};

struct Outcome {
  std::vector<int32_t> tokens;  // what the sink received
  std::string stop_reason;
};

std::vector<int32_t> encode(Engine& engine, const std::string& text) {
  auto ids = engine.tokenizer().encode(text, /*add_bos=*/true);
  EXPECT_TRUE(ids.ok()) << ids.status().to_string();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

// Runs the jobs on one loop, each joining at its step; every lane ended after.
std::vector<Outcome> run_together(Engine& engine, const std::vector<Job>& jobs,
                                  int64_t* steps = nullptr) {
  std::vector<SequenceState> lanes(jobs.size());
  std::vector<Outcome> outcomes(jobs.size());
  std::vector<bool> submitted(jobs.size(), false);
  DecodeLoop loop(engine);
  std::size_t pending = jobs.size();
  while (pending > 0 || !loop.idle()) {
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      // An idle loop takes the next job at once (its step count stands still).
      if (submitted[j] || (jobs[j].submit_at_step > loop.steps() && !loop.idle())) continue;
      lanes[j].tokens = encode(engine, jobs[j].prompt);
      EXPECT_TRUE(engine.begin_sequence(lanes[j], jobs[j].seed).ok());
      Turn turn;
      turn.lane = &lanes[j];
      turn.max_new_tokens = jobs[j].max_new_tokens;
      turn.stop_at_eos = false;
      turn.sink = [&outcomes, j](int32_t token, int, const TokenLogprob*) {
        outcomes[j].tokens.push_back(token);
        return true;
      };
      turn.done = [&outcomes, j](const TurnOutcome& o) { outcomes[j].stop_reason = o.stop_reason; };
      loop.submit(std::move(turn));
      submitted[j] = true;
      --pending;
    }
    const Status st = loop.step();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) break;
  }
  for (SequenceState& lane : lanes) EXPECT_TRUE(engine.end_sequence(lane).ok());
  if (steps != nullptr) *steps = loop.steps();
  return outcomes;
}

const std::vector<Job> kCrowd = {
    {.prompt = "Once upon a time, there was a little girl named Lily.", .seed = 11},
    {.prompt = "Tom had a big red ball. He liked to play with it in the park every day, "
               "and his dog Max ran after it. One day the ball rolled into the pond.",
     .seed = 12,
     .submit_at_step = 2},
    {.prompt = "The sun was hot.", .seed = 13, .max_new_tokens = 9, .submit_at_step = 5},
    {.prompt = "A bird sat on a tree and sang a song for the children who played below.",
     .seed = 14,
     .max_new_tokens = 40,
     .submit_at_step = 1}};

void expect_same_as_alone(const std::string& config) {
  auto engine = make_engine("stories260K.gguf", kContinuous + config);
  ASSERT_NE(engine, nullptr);
  const std::vector<Outcome> together = run_together(*engine, kCrowd);
  for (std::size_t j = 0; j < kCrowd.size(); ++j) {
    Job alone = kCrowd[j];
    alone.submit_at_step = 0;
    const std::vector<Outcome> by_itself = run_together(*engine, {alone});
    EXPECT_EQ(together[j].tokens, by_itself[0].tokens) << "job " << j;
    EXPECT_EQ(together[j].stop_reason, "max_tokens");
    EXPECT_EQ(static_cast<int64_t>(together[j].tokens.size()), kCrowd[j].max_new_tokens);
  }
}

TEST(DecodeLoop, ALanesTokensDoNotDependOnWhoSharesItsForwardGreedy) {
  expect_same_as_alone("");
}

TEST(DecodeLoop, ALanesTokensDoNotDependOnWhoSharesItsForwardSampled) {
  expect_same_as_alone(kSampled);
}

TEST(DecodeLoop, ALanesTokensDoNotDependOnWhoSharesItsForwardPaged) {
  expect_same_as_alone("[cache]\nplugin = \"paged\"\n");
}

// Greedy drafts are lossless whatever cuts them to fit the shared forward.
TEST(DecodeLoop, WithDraftsEachLaneStillMatchesPlainDecoding) {
  auto plain = make_engine("stories260K.gguf", kContinuous);
  auto drafted = make_engine("stories260K.gguf", std::string(kContinuous) +
                                                     "[decode]\nproposer = \"ngram\"\n"
                                                     "max_batch = 24\n");
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(drafted, nullptr);
  const std::vector<Outcome> expected = run_together(*plain, kCrowd);
  drafted->counters() = {};
  const std::vector<Outcome> got = run_together(*drafted, kCrowd);
  EXPECT_GT(drafted->counters().accepted, 0);  // the drafts did their part
  for (std::size_t j = 0; j < kCrowd.size(); ++j)
    EXPECT_EQ(got[j].tokens, expected[j].tokens) << "job " << j;
}

// INV-3: the same history and seed give the same tokens whether the history
// arrived at once or one token at a time.
TEST(DecodeLoop, HistoryAppendedAtOnceOrTokenByTokenGivesTheSameTokens) {
  for (const std::string& config : {std::string(), std::string(kSampled)}) {
    auto engine = make_engine("stories260K.gguf", kContinuous + config);
    ASSERT_NE(engine, nullptr);
    const std::vector<int32_t> history = encode(*engine, kCrowd[1].prompt);
    std::vector<std::vector<int32_t>> replies;
    for (const bool one_by_one : {false, true}) {
      SequenceState lane;
      ASSERT_TRUE(engine->begin_sequence(lane, 5).ok());
      if (one_by_one) {
        for (const int32_t token : history) {
          lane.tokens.push_back(token);
          ASSERT_TRUE(engine->prefill(lane).ok());  // every token but the newest is fed
        }
      } else {
        lane.tokens = history;
      }
      DecodeLoop loop(*engine);
      Turn turn;
      turn.lane = &lane;
      turn.max_new_tokens = 30;
      turn.stop_at_eos = false;
      std::vector<int32_t> reply;
      turn.sink = [&](int32_t token, int, const TokenLogprob*) {
        reply.push_back(token);
        return true;
      };
      loop.submit(std::move(turn));
      while (!loop.idle()) ASSERT_TRUE(loop.step().ok());
      ASSERT_TRUE(engine->end_sequence(lane).ok());
      replies.push_back(reply);
    }
    EXPECT_EQ(replies[0], replies[1]) << (config.empty() ? "greedy" : "sampled");
    EXPECT_EQ(replies[0].size(), 30u);
  }
}

// A long history is fed in chunks while the lanes already generating go on:
// no step passes without a token for them.
TEST(DecodeLoop, PrefillChunksRideAlongWithDecodes) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  SequenceState talker, reader;
  talker.tokens = encode(*engine, "Once upon a time");
  reader.tokens = encode(*engine, kCrowd[1].prompt + kCrowd[3].prompt);
  ASSERT_GT(reader.tokens.size(), 40u);
  ASSERT_TRUE(engine->begin_sequence(talker).ok());
  ASSERT_TRUE(engine->begin_sequence(reader).ok());
  DecodeLoop loop(*engine);
  int64_t talker_tokens = 0;
  Turn talk;
  talk.lane = &talker;
  talk.max_new_tokens = 100;
  talk.stop_at_eos = false;
  talk.sink = [&](int32_t, int, const TokenLogprob*) {
    ++talker_tokens;
    return true;
  };
  loop.submit(std::move(talk));
  ASSERT_TRUE(loop.step().ok());  // the talker's prompt
  ASSERT_TRUE(loop.step().ok());
  Turn read;
  read.lane = &reader;
  read.max_new_tokens = 1;
  read.stop_at_eos = false;
  bool reader_done = false;
  read.done = [&](const TurnOutcome&) { reader_done = true; };
  loop.submit(std::move(read));
  const int64_t forwards_before = engine->counters().target_forwards;
  int64_t steps = 0;
  while (!reader_done) {
    const int64_t before = talker_tokens;
    ASSERT_TRUE(loop.step().ok());
    ++steps;
    EXPECT_GT(talker_tokens, before) << "step " << steps << " left the talker waiting";
  }
  // Chunks of 7: the history took that many steps, one forward each.
  const auto history = static_cast<int64_t>(reader.tokens.size()) - 2;  // its last one waits
  EXPECT_GE(steps, (history + 6) / 7);
  EXPECT_EQ(engine->counters().target_forwards - forwards_before, steps);
  ASSERT_TRUE(engine->end_sequence(talker).ok());
  ASSERT_TRUE(engine->end_sequence(reader).ok());
}

TEST(DecodeLoop, CancelEndsOnlyThatTurn) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  const std::vector<Outcome> alone = run_together(*engine, {kCrowd[0]});
  SequenceState kept, dropped;
  kept.tokens = encode(*engine, kCrowd[0].prompt);
  dropped.tokens = encode(*engine, kCrowd[2].prompt);
  ASSERT_TRUE(engine->begin_sequence(kept, kCrowd[0].seed).ok());
  ASSERT_TRUE(engine->begin_sequence(dropped).ok());
  DecodeLoop loop(*engine);
  std::vector<int32_t> kept_tokens;
  std::string dropped_reason;
  Turn a;
  a.lane = &kept;
  a.max_new_tokens = kCrowd[0].max_new_tokens;
  a.stop_at_eos = false;
  a.sink = [&](int32_t token, int, const TokenLogprob*) {
    kept_tokens.push_back(token);
    return true;
  };
  loop.submit(std::move(a));
  Turn b;
  b.lane = &dropped;
  b.max_new_tokens = 50;
  b.done = [&](const TurnOutcome& o) { dropped_reason = o.stop_reason; };
  const TurnId id = loop.submit(std::move(b));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(loop.step().ok());
  EXPECT_TRUE(loop.cancel(id));
  EXPECT_EQ(dropped_reason, "cancelled");
  EXPECT_FALSE(loop.cancel(id));  // already ended
  EXPECT_EQ(loop.running(), 1u);
  while (!loop.idle()) ASSERT_TRUE(loop.step().ok());
  EXPECT_EQ(kept_tokens, alone[0].tokens);
  ASSERT_TRUE(engine->end_sequence(kept).ok());
  ASSERT_TRUE(engine->end_sequence(dropped).ok());
}

// A sink may submit turns (a server answering a token with a new request):
// they join after the step, and the running turns are not disturbed.
TEST(DecodeLoop, TurnsSubmittedFromASinkJoinAfterTheStep) {
  auto engine = make_engine("stories260K.gguf", kContinuous);
  ASSERT_NE(engine, nullptr);
  const std::vector<Outcome> alone = run_together(*engine, {kCrowd[0], kCrowd[2]});
  std::vector<SequenceState> lanes(9);
  DecodeLoop loop(*engine);
  std::vector<std::vector<int32_t>> got(lanes.size());
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    lanes[i].tokens = encode(*engine, kCrowd[i == 0 ? 0 : 2].prompt);
    ASSERT_TRUE(engine->begin_sequence(lanes[i], i == 0 ? kCrowd[0].seed : kCrowd[2].seed).ok());
  }
  std::size_t next = 1;
  const auto make_turn = [&](std::size_t i) {
    Turn turn;
    turn.lane = &lanes[i];
    turn.max_new_tokens = i == 0 ? kCrowd[0].max_new_tokens : kCrowd[2].max_new_tokens;
    turn.stop_at_eos = false;
    turn.sink = [&, i](int32_t token, int, const TokenLogprob*) {
      got[i].push_back(token);
      // The first lane starts another at each of its tokens, up to eight.
      if (i == 0 && next < lanes.size()) {
        Turn more;
        more.lane = &lanes[next];
        more.max_new_tokens = kCrowd[2].max_new_tokens;
        more.stop_at_eos = false;
        more.sink = [&, n = next](int32_t t, int, const TokenLogprob*) {
          got[n].push_back(t);
          return true;
        };
        loop.submit(std::move(more));
        ++next;
      }
      return true;
    };
    return turn;
  };
  loop.submit(make_turn(0));
  while (!loop.idle()) ASSERT_TRUE(loop.step().ok());
  EXPECT_EQ(got[0], alone[0].tokens);
  for (std::size_t i = 1; i < lanes.size(); ++i) EXPECT_EQ(got[i], alone[1].tokens) << "lane " << i;
  for (SequenceState& lane : lanes) ASSERT_TRUE(engine->end_sequence(lane).ok());
}

// A plugin's plan that names a lane that does not exist is refused, naming
// the scheduler; nothing runs.
TEST(DecodeLoop, APlanOutsideTheLanesIsRefused) {
  PluginRegistry registry(builtin_plugins());
  registry.scan(
      {TESSERA_BUILD_PLUGIN_DIR, std::string(TESSERA_BINARY_DIR) + "/test_plugins/bad_plan"});
  auto config =
      Config::parse("[model]\npath = \"" + std::string(TESSERA_SHARED_DIR) +
                        "/models/stories260K.gguf\"\n[scheduler]\nplugin = \"bad_plan\"\n",
                    "bad_plan.toml");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  auto engine = Engine::create(*config, registry);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  GenerationRequest request;
  request.prompt = encode(**engine, "Once upon a time");
  request.max_new_tokens = 4;
  const auto stats = (*engine)->generate(request, [](int32_t, int) { return true; });
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInternal);
  EXPECT_NE(stats.status().message().find("the scheduler 'bad_plan' planned lane 1 of 1 twice or "
                                          "out of range"),
            std::string::npos)
      << stats.status().message();
  EXPECT_EQ((*engine)->counters().target_forwards, 0);
}

// The single scheduler runs one request at a time: the second waits.
TEST(DecodeLoop, SingleRunsOneRequestAtATime) {
  auto engine = make_engine("stories260K.gguf");
  ASSERT_NE(engine, nullptr);
  std::vector<Job> jobs = {kCrowd[0], kCrowd[2]};
  jobs[0].max_new_tokens = 10;
  jobs[1].max_new_tokens = 5;
  int64_t steps = 0;
  const std::vector<Outcome> outcomes = run_together(*engine, jobs, &steps);
  EXPECT_EQ(steps, 15);  // 10 then 5, never together
  EXPECT_EQ(outcomes[0].tokens.size(), 10u);
  EXPECT_EQ(outcomes[1].tokens.size(), 5u);
}

}  // namespace
}  // namespace tessera
