// A conversation's lane (tessera chat; the server's sessions later): a cache sequence that keeps
// its K/V across turns. Each turn appends the tokens of the new text and generates the reply; the
// history is never fed again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/decode/sequence_state.h"
#include "core/engine/engine.h"

namespace tessera {

struct TurnResult {
  std::vector<int32_t> reply;  // the tokens shown (the end-of-turn token excluded)
  std::string stop_reason;     // "end_of_turn" | "max_tokens" | "cache_full" | "stopped"
  int64_t fed_tokens = 0;      // tokens this turn fed into the cache before its reply
  int64_t history_tokens = 0;  // tokens the cache held before the turn (kept, not fed again)
  double seconds = 0;
};

class ChatLane {
 public:
  static Result<std::unique_ptr<ChatLane>> begin(Engine& engine,
                                                 std::optional<uint64_t> seed = std::nullopt);
  ~ChatLane();
  ChatLane(const ChatLane&) = delete;
  ChatLane& operator=(const ChatLane&) = delete;

  // Every token of the conversation: those in the cache, then the one still
  // waiting to be fed (the last reply's end-of-turn token, say).
  std::span<const int32_t> tokens() const { return lane_.tokens; }
  int64_t cached() const { return lane_.cached; }

  // Appends `input` and generates up to `max_tokens` reply tokens, each passed
  // to `sink` as it is produced (false from the sink stops the reply). The
  // reply ends at the vocabulary's end-of-generation tokens; that token stays
  // in the lane, so the next turn's text follows it.
  Result<TurnResult> turn(std::span<const int32_t> input, int64_t max_tokens,
                          const std::function<bool(int32_t)>& sink);

 private:
  explicit ChatLane(Engine& engine) : engine_(engine) {}
  Engine& engine_;
  SequenceState lane_;
  bool begun_ = false;
};

}  // namespace tessera
