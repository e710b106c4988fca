#include "core/engine/chat_lane.h"

#include <chrono>

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

bool ChatLane::cache_full() const {
  if (engine_.cache().policy().evicts) return false;
  const auto info = engine_.cache().info(lane_.id);
  const int64_t waiting = static_cast<int64_t>(lane_.tokens.size()) - lane_.cached;
  return info.ok() && info->stored + waiting > lane_.capacity - 1;
}

Status ChatLane::keep_tokens(int64_t end) {
  if (static_cast<int64_t>(lane_.tokens.size()) <= end) return ok_status();
  lane_.tokens.resize(static_cast<std::size_t>(end));
  // The last kept token waits to be fed with the next turn, like any last
  // emitted token.
  if (lane_.cached > end - 1) {
    RETURN_IF_ERROR(engine_.cache().truncate(lane_.id, end - 1));
    lane_.cached = end - 1;
  }
  return ok_status();
}

Result<TurnResult> ChatLane::turn(std::span<const int32_t> input, int64_t max_tokens,
                                  const std::function<bool(int32_t)>& sink) {
  const auto start = std::chrono::steady_clock::now();
  TurnResult result;
  result.history_tokens = lane_.cached;
  lane_.tokens.insert(lane_.tokens.end(), input.begin(), input.end());
  result.fed_tokens = static_cast<int64_t>(lane_.tokens.size()) - lane_.cached;
  const Tokenizer& tokenizer = engine_.tokenizer();
  std::vector<int32_t> emitted;
  if (max_tokens <= 0) result.stop_reason = "max_tokens";
  while (result.stop_reason.empty()) {
    if (cache_full()) {
      result.stop_reason = "cache_full";
      break;
    }
    emitted.clear();
    RETURN_IF_ERROR(engine_.step(lane_, emitted));
    // emitted[i] sits at lane_.tokens[first + i].
    const int64_t first = static_cast<int64_t>(lane_.tokens.size() - emitted.size());
    for (std::size_t i = 0; i < emitted.size() && result.stop_reason.empty(); ++i) {
      const int64_t at = first + static_cast<int64_t>(i);
      if (tokenizer.is_end_of_generation(emitted[i])) {
        result.stop_reason = "end_of_turn";
      } else {
        result.reply.push_back(emitted[i]);
        if (!sink(emitted[i]))
          result.stop_reason = "stopped";
        else if (static_cast<int64_t>(result.reply.size()) == max_tokens)
          result.stop_reason = "max_tokens";
      }
      if (!result.stop_reason.empty()) RETURN_IF_ERROR(keep_tokens(at + 1));
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessera
