// Decoding timed step by step through the engine: the first step (the
// prompt's prefill, a draft model's catch-up over the prompt and the first
// token) is left out, so what is timed and counted is decoding alone, the
// same way with and without a proposer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/decode/sequence_state.h"
#include "core/engine/engine.h"
#include "core/status/status.h"

namespace tessera::sweep {

struct TimedDecode {
  std::vector<int32_t> tokens;  // every token generated (the first step's too), at least new_tokens
  int64_t timed_tokens = 0;     // tokens emitted by the steps after the first
  double seconds = 0;           // wall time of those steps
  DecodeCounters counters;      // their forwards, drafts and times

  double tokens_per_second() const { return seconds > 0 ? timed_tokens / seconds : 0; }
};

// Generates at least `new_tokens` (>= 2) tokens after `prompt` in a fresh
// lane, end of text or not (a step may emit several). The cache must hold
// prompt + new_tokens + 1 entries unless its store evicts.
Result<TimedDecode> decode_timed(Engine& engine, std::span<const int32_t> prompt,
                                 int64_t new_tokens);

}  // namespace tessera::sweep
