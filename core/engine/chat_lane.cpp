#include "core/engine/chat_lane.h"

#include <chrono>
#include <utility>

#include "core/engine/decode_loop.h"

namespace tessera {

Result<std::unique_ptr<ChatLane>> ChatLane::begin(Engine& engine, std::optional<uint64_t> seed) {
  std::unique_ptr<ChatLane> chat(new ChatLane(engine));
  RETURN_IF_ERROR(engine.begin_sequence(chat->lane_, seed));
  chat->begun_ = true;
  return chat;
}

ChatLane::~ChatLane() {
  if (begun_) (void)engine_.end_sequence(lane_);
}

Result<TurnResult> ChatLane::turn(std::span<const int32_t> input, int64_t max_tokens,
                                  const std::function<bool(int32_t)>& sink) {
  const auto start = std::chrono::steady_clock::now();
  TurnResult result;
  result.history_tokens = lane_.cached;
  lane_.tokens.insert(lane_.tokens.end(), input.begin(), input.end());
  result.fed_tokens = static_cast<int64_t>(lane_.tokens.size()) - lane_.cached;
  // The reply ends at the vocabulary's end-of-generation tokens; that token
  // stays in the lane (what a step emitted past it leaves), so the next
  // turn's text follows it.
  DecodeLoop loop(engine_);
  Turn turn;
  turn.lane = &lane_;
  turn.max_new_tokens = max_tokens;
  turn.stop_at_bos = false;
  turn.trim_past_stop = true;
  turn.sink = [&](int32_t token, int, const TokenLogprob*) {
    result.reply.push_back(token);
    return sink(token);
  };
  turn.done = [&](const TurnOutcome& outcome) {
    result.stop_reason = outcome.stop_reason == "eos" ? "end_of_turn" : outcome.stop_reason;
  };
  loop.submit(std::move(turn));
  while (!loop.idle()) RETURN_IF_ERROR(loop.step());
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessera
