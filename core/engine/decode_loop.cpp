#include "core/engine/decode_loop.h"

#include <algorithm>
#include <utility>

#include "core/engine/engine.h"

namespace tessera {

DecodeLoop::DecodeLoop(Engine& engine) : engine_(engine) {}

TurnId DecodeLoop::submit(Turn turn) {
  Running running;
  running.id = next_id_++;
  const TurnId id = running.id;
  running.submitted = next_submitted_++;
  if (turn.group == 0) turn.group = (uint64_t{1} << 63) | running.id;  // a group of its own
  running.turn = std::move(turn);
  if (running.turn.max_new_tokens <= 0) running.stop_reason = "max_tokens";
  if (in_step_) {
    // From a sink, during delivery: turns_ must not move under the step.
    joining_.push_back(std::move(running));
    return id;
  }
  turns_.push_back(std::move(running));
  finish_stopped();
  return id;
}

bool DecodeLoop::cancel(TurnId id, std::string reason) {
  for (Running& turn : joining_)
    if (turn.id == id && turn.stop_reason.empty()) {
      turn.stop_reason = std::move(reason);
      return true;
    }
  for (Running& turn : turns_) {
    if (turn.id != id || !turn.stop_reason.empty()) continue;
    turn.stop_reason = std::move(reason);
    if (!in_step_) finish_stopped();
    return true;
  }
  return false;
}

void DecodeLoop::stop_full_lanes() {
  if (engine_.cache().policy().evicts) return;
  // A step writes every running lane's waiting tokens (and keeps the last
  // emitted one waiting): they must fit below the sequence's capacity.
  // Lanes sharing a sequence (branches) share its room.
  for (Running& turn : turns_) {
    if (!turn.stop_reason.empty()) continue;
    const SequenceState& lane = *turn.turn.lane;
    int64_t waiting = 0;
    for (const Running& other : turns_)
      if (other.stop_reason.empty() && other.turn.lane->id == lane.id)
        waiting += static_cast<int64_t>(other.turn.lane->tokens.size()) - other.turn.lane->cached;
    auto info = engine_.cache().info(lane.id);
    if (info.ok() && info->stored + waiting > lane.capacity - 1) turn.stop_reason = "cache_full";
  }
}

Status DecodeLoop::deliver(Running& turn, std::span<const int32_t> emitted) {
  SequenceState& lane = *turn.turn.lane;
  ++turn.steps;
  turn.drafted += lane.last_draft;
  const Tokenizer& tokenizer = engine_.tokenizer();
  // emitted[i] sits at lane.tokens[first + i].
  const int64_t first = static_cast<int64_t>(lane.tokens.size() - emitted.size());
  for (std::size_t i = 0; i < emitted.size() && turn.stop_reason.empty(); ++i) {
    const int32_t token = emitted[i];
    if (turn.turn.stop_at_eos && (tokenizer.is_end_of_generation(token) ||
                                  (turn.turn.stop_at_bos && token == tokenizer.bos()))) {
      turn.stop_reason = "eos";
    } else if (std::find(turn.turn.stop_tokens.begin(), turn.turn.stop_tokens.end(), token) !=
               turn.turn.stop_tokens.end()) {
      turn.stop_reason = "stop_token";
    } else {
      ++turn.generated;
      const TokenLogprob* scored =
          i < lane.step_logprobs.size() && lane.logprobs >= 0 ? &lane.step_logprobs[i] : nullptr;
      if (turn.turn.sink && !turn.turn.sink(token, turn.turn.sink_lane, scored))
        turn.stop_reason = "stopped";
      else if (turn.generated == turn.turn.max_new_tokens)
        turn.stop_reason = "max_tokens";
    }
    if (!turn.stop_reason.empty() && turn.turn.trim_past_stop)
      return engine_.keep_tokens(lane, first + static_cast<int64_t>(i) + 1);
  }
  return ok_status();
}

void DecodeLoop::finish_stopped() {
  // Ended turns leave the list first, then hear of it: a done callback may
  // submit the lane's next turn.
  std::vector<Running> ended;
  for (auto it = turns_.begin(); it != turns_.end();) {
    if (it->stop_reason.empty()) {
      ++it;
      continue;
    }
    ended.push_back(std::move(*it));
    it = turns_.erase(it);
  }
  for (Running& turn : ended)
    if (turn.turn.done)
      turn.turn.done({turn.id, turn.stop_reason, turn.generated, turn.steps, turn.drafted});
}

Status DecodeLoop::plan_step() {
  views_.clear();
  for (const Running& turn : turns_)
    views_.push_back({turn.turn.group, turn.submitted, engine_.prefill_waiting(*turn.turn.lane),
                      engine_.decode_rows(*turn.turn.lane)});
  plan_.clear();
  engine_.scheduler().plan(views_, engine_.transformer().max_batch(), plan_);
  // A plugin's plan is checked before anything runs: each lane once, chunks
  // within what the lane has waiting, and at least one lane.
  const std::string who = "the scheduler '" + engine_.description().scheduler + "' ";
  if (plan_.empty()) return internal_error(who + "planned a step that runs no lane");
  std::vector<bool> taken(turns_.size(), false);
  const auto take = [&](std::size_t index) {
    if (index >= turns_.size() || taken[index]) return false;
    taken[index] = true;
    return true;
  };
  for (const std::size_t index : plan_.decode)
    if (!take(index))
      return internal_error(who + "planned lane " + std::to_string(index) + " of " +
                            std::to_string(turns_.size()) + " twice or out of range");
  for (const auto& [index, tokens] : plan_.prefill)
    if (!take(index) || tokens < 1 || tokens > views_[index].prefill_waiting)
      return internal_error(who + "planned a chunk of " + std::to_string(tokens) +
                            " tokens for lane " + std::to_string(index) +
                            ", which is out of range, planned twice, or has fewer waiting");

  chunks_.clear();
  decode_lanes_.clear();
  for (const auto& [index, tokens] : plan_.prefill)
    chunks_.push_back({turns_[index].turn.lane, tokens});
  for (const std::size_t index : plan_.decode) decode_lanes_.push_back(turns_[index].turn.lane);
  if (emitted_.size() < decode_lanes_.size()) emitted_.resize(decode_lanes_.size());
  for (std::size_t i = 0; i < decode_lanes_.size(); ++i) emitted_[i].clear();
  return ok_status();
}

Status DecodeLoop::deliver_step(const Status& stepped) {
  if (!stepped.ok()) {
    for (const std::size_t index : plan_.decode) turns_[index].stop_reason = "error";
    for (const auto& [index, tokens] : plan_.prefill) turns_[index].stop_reason = "error";
    return stepped;
  }
  Status delivered = ok_status();
  for (std::size_t i = 0; i < plan_.decode.size(); ++i) {
    Running& turn = turns_[plan_.decode[i]];
    if (!turn.stop_reason.empty()) continue;  // cancelled by a sink during this delivery
    if (Status st = deliver(turn, emitted_[i]); !st.ok() && delivered.ok()) {
      delivered = st;
      turn.stop_reason = "error";
    }
  }
  return delivered;
}

Status DecodeLoop::step() {
  finish_stopped();
  stop_full_lanes();
  finish_stopped();
  if (turns_.empty()) return ok_status();
  RETURN_IF_ERROR(plan_step());
  // Lanes of several requests share the forward's rows: their drafts are
  // cut to fit rather than refused.
  bool shared = !plan_.prefill.empty();
  for (const std::size_t index : plan_.decode)
    shared = shared || turns_[index].turn.group != turns_[plan_.decode.front()].turn.group;
  in_step_ = true;
  const Status stepped =
      engine_.step(chunks_, decode_lanes_, std::span(emitted_).first(decode_lanes_.size()), shared);
  ++steps_;
  last_step_lanes_ = plan_.decode.size() + plan_.prefill.size();
  const Status result = deliver_step(stepped);
  in_step_ = false;
  for (Running& turn : joining_) turns_.push_back(std::move(turn));
  joining_.clear();
  finish_stopped();
  return result;
}

}  // namespace tessera
