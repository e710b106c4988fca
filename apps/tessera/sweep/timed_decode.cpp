#include "apps/tessera/sweep/timed_decode.h"

#include <chrono>
#include <string>

namespace tessera::sweep {
namespace {

DecodeCounters since(const DecodeCounters& now, const DecodeCounters& before) {
  DecodeCounters d;
  d.target_forwards = now.target_forwards - before.target_forwards;
  d.verify_steps = now.verify_steps - before.verify_steps;
  d.draft_forwards = now.draft_forwards - before.draft_forwards;
  d.drafted = now.drafted - before.drafted;
  d.accepted = now.accepted - before.accepted;
  d.emitted = now.emitted - before.emitted;
  d.denoise_forwards = now.denoise_forwards - before.denoise_forwards;
  d.commit_forwards = now.commit_forwards - before.commit_forwards;
  d.propose_seconds = now.propose_seconds - before.propose_seconds;
  d.verify_seconds = now.verify_seconds - before.verify_seconds;
  return d;
}

Status check_room(Engine& engine, std::size_t prompt, int64_t new_tokens) {
  if (new_tokens < 2) return invalid_argument("timed decoding needs at least 2 new tokens");
  const int64_t needed = static_cast<int64_t>(prompt) + new_tokens + 1;
  if (engine.cache().policy().evicts || needed <= engine.max_tokens()) return ok_status();
  return resource_exhausted("timed decoding needs " + std::to_string(needed) +
                            " tokens in the cache, but cache.max_tokens is " +
                            std::to_string(engine.max_tokens()));
}

// The steps after the first, until `new_tokens` tokens exist.
Status timed_steps(Engine& engine, SequenceState& lane, int64_t new_tokens, TimedDecode& run) {
  RETURN_IF_ERROR(engine.step(lane, run.tokens));
  const auto first_step = static_cast<int64_t>(run.tokens.size());
  const DecodeCounters before = engine.counters();
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int64_t>(run.tokens.size()) < new_tokens)
    RETURN_IF_ERROR(engine.step(lane, run.tokens));
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.timed_tokens = static_cast<int64_t>(run.tokens.size()) - first_step;
  run.counters = since(engine.counters(), before);
  return ok_status();
}

}  // namespace

Result<TimedDecode> decode_timed(Engine& engine, std::span<const int32_t> prompt,
                                 int64_t new_tokens) {
  RETURN_IF_ERROR(check_room(engine, prompt.size(), new_tokens));
  if (prompt.empty()) return invalid_argument("timed decoding needs a prompt");
  TimedDecode run;
  run.tokens.reserve(static_cast<std::size_t>(new_tokens) + 256);
  SequenceState lane;
  lane.tokens.assign(prompt.begin(), prompt.end());
  RETURN_IF_ERROR(engine.begin_sequence(lane));
  const Status status = timed_steps(engine, lane, new_tokens, run);
  const Status ended = engine.end_sequence(lane);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(ended);
  return run;
}

}  // namespace tessera::sweep
