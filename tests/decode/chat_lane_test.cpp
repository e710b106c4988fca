// ChatLane keeps a conversation's K/V across turns: each turn feeds only its
// new tokens, and the reply equals decoding the whole conversation afresh
// (cached decoding against recompute), with every proposer and store.
#include "core/engine/chat_lane.h"

#include <gtest/gtest.h>

#include "tests/decode/spec_test_util.h"

namespace tessera {
namespace {

using testing::make_engine;

struct Turns {
  std::vector<std::vector<int32_t>> inputs;
  std::vector<TurnResult> results;
  std::vector<int32_t> tokens;  // the lane's tokens at the end
};

constexpr int64_t kReplyTokens = 20;

Turns converse(Engine& engine, const std::vector<std::string>& messages) {
  Turns turns;
  auto lane = ChatLane::begin(engine);
  EXPECT_TRUE(lane.ok()) << lane.status().to_string();
  if (!lane.ok()) return turns;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    auto input = engine.tokenizer().encode(messages[i], /*add_bos=*/i == 0, /*continuation=*/i > 0);
    EXPECT_TRUE(input.ok());
    auto result = (*lane)->turn(*input, kReplyTokens, [](int32_t) { return true; });
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    if (!result.ok()) return turns;
    turns.inputs.push_back(*input);
    turns.results.push_back(*result);
  }
  turns.tokens.assign((*lane)->tokens().begin(), (*lane)->tokens().end());
  return turns;
}

const std::vector<std::string> kMessages = {"Once upon a time", " Tom went to the park.",
                                            " The sun was hot."};

TEST(ChatLane, EachTurnFeedsOnlyItsNewTokens) {
  auto engine = make_engine("tok512-ar-1m.gguf");
  ASSERT_NE(engine, nullptr);
  const Turns turns = converse(*engine, kMessages);
  ASSERT_EQ(turns.results.size(), kMessages.size());
  int64_t held = 0;
  for (std::size_t t = 0; t < turns.results.size(); ++t) {
    const TurnResult& r = turns.results[t];
    EXPECT_EQ(r.history_tokens, held) << "turn " << t;
    // The previous reply's last token waits for this turn; then the input.
    EXPECT_EQ(r.fed_tokens, static_cast<int64_t>(turns.inputs[t].size()) + (t > 0 ? 1 : 0));
    EXPECT_FALSE(r.reply.empty());
    held = r.history_tokens + r.fed_tokens + static_cast<int64_t>(r.reply.size()) - 1;
  }
}

// Turn k's reply equals a fresh greedy generation from every token before it.
TEST(ChatLane, RepliesEqualDecodingTheWholeConversationAfresh) {
  auto engine = make_engine("tok512-ar-1m.gguf");
  ASSERT_NE(engine, nullptr);
  const Turns turns = converse(*engine, kMessages);
  ASSERT_EQ(turns.results.size(), kMessages.size());
  std::vector<int32_t> history;
  for (std::size_t t = 0; t < turns.results.size(); ++t) {
    history.insert(history.end(), turns.inputs[t].begin(), turns.inputs[t].end());
    auto fresh = make_engine("tok512-ar-1m.gguf");
    ASSERT_NE(fresh, nullptr);
    GenerationRequest request;
    request.prompt = history;
    request.max_new_tokens = static_cast<int64_t>(turns.results[t].reply.size());
    request.stop_at_eos = false;
    EXPECT_EQ(testing::run(*fresh, request).tokens, turns.results[t].reply) << "turn " << t;
    history.insert(history.end(), turns.results[t].reply.begin(), turns.results[t].reply.end());
  }
}

// Speculative decoding and other stores keep the plain lane's replies.
TEST(ChatLane, ProposersAndStoresKeepThePlainReplies) {
  auto plain = make_engine("tok512-ar-1m.gguf");
  ASSERT_NE(plain, nullptr);
  const Turns expected = converse(*plain, kMessages);
  for (const std::string extra :
       {"[decode]\nproposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n",
        "[decode]\nproposer = \"ngram\"\n", "[cache]\nplugin = \"paged\"\n",
        // Whole blocks in its own cache, some past where a turn is cut.
        "[decode]\nproposer = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\n",
        "[decode]\nproposer = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\ndraft_tokens = 8\n",
        "[decode]\nproposer = \"tree\"\ntree_drafter = \"ar_draft\"\n"
        "draft_model = \"stories260K.gguf\"\n"}) {
    auto engine = make_engine("tok512-ar-1m.gguf", extra);
    ASSERT_NE(engine, nullptr);
    const Turns turns = converse(*engine, kMessages);
    ASSERT_EQ(turns.results.size(), expected.results.size()) << extra;
    for (std::size_t t = 0; t < turns.results.size(); ++t)
      EXPECT_EQ(turns.results[t].reply, expected.results[t].reply) << extra << " turn " << t;
  }
}

// Short replies cut most steps inside their accepted drafts. A cut removes
// only tokens the step emitted, past everything a proposer's own state
// covers (drafts it wrote ahead are checked against the lane at its next
// propose), so every proposer stays in step and the replies stay the plain
// lane's.
TEST(ChatLane, RepliesCutInsideAStepKeepEveryProposerInStep) {
  const std::vector<std::string> messages = {"Once upon a time", " Tom", " went", " to the",
                                             " park."};
  const auto replies = [&](const std::string& extra, int64_t reply_tokens) {
    auto engine = make_engine("tok512-ar-1m.gguf", extra);
    EXPECT_NE(engine, nullptr);
    std::vector<std::vector<int32_t>> out;
    if (engine == nullptr) return out;
    auto lane = ChatLane::begin(*engine);
    EXPECT_TRUE(lane.ok());
    for (std::size_t i = 0; i < messages.size(); ++i) {
      auto input = engine->tokenizer().encode(messages[i], i == 0, i > 0);
      auto result = (*lane)->turn(*input, reply_tokens + static_cast<int64_t>(i % 3),
                                  [](int32_t) { return true; });
      EXPECT_TRUE(result.ok()) << extra << ": " << result.status().to_string();
      if (!result.ok()) break;
      out.push_back(result->reply);
    }
    return out;
  };
  for (const int64_t reply_tokens : {2, 5}) {
    const auto plain = replies("", reply_tokens);
    for (const std::string extra :
         {"[decode]\nproposer = \"dlm\"\ndraft_model = \"tok512-sdar-1m.gguf\"\ndraft_tokens = 8\n",
          "[decode]\nproposer = \"ar_draft\"\ndraft_model = \"stories260K.gguf\"\n",
          "[decode]\nproposer = \"tree\"\ntree_drafter = \"dlm\"\n"
          "draft_model = \"tok512-sdar-1m.gguf\"\n"})
      EXPECT_EQ(replies(extra, reply_tokens), plain) << extra << " replies of " << reply_tokens;
  }
}

TEST(ChatLane, MaxTokensOfZeroFeedsNothingAndGeneratesNothing) {
  auto engine = make_engine("tok512-ar-1m.gguf");
  ASSERT_NE(engine, nullptr);
  auto lane = ChatLane::begin(*engine);
  ASSERT_TRUE(lane.ok());
  const std::vector<int32_t> input = {engine->tokenizer().bos()};
  auto result = (*lane)->turn(input, 0, [](int32_t) { return true; });
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->reply.empty());
  EXPECT_EQ(result->stop_reason, "max_tokens");
}

}  // namespace
}  // namespace tessera
