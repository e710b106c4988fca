// What a proposer or verifier may use during one step. References only; the
// engine owns all of it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/decode/draft.h"
#include "core/decode/sequence_state.h"
#include "core/sampling/token_logprob.h"

namespace tessera {

class Transformer;
class CheckedCacheStore;
class PluginServices;

struct DecodeContext {
  Transformer& target;
  CheckedCacheStore& cache;
  PluginServices& services;
  DecodeCounters& counters;
};

// One lane's part of a verification step: its draft, and where the tokens it
// emits go. With `logprobs` (ABI 7.0; null unless the lane asked), the
// verifier appends one record per token it appends to `emitted`, in the same
// order: score_token() of the token on the target's logits at its position,
// with `top_logprobs` alternatives. The engine checks the counts match.
struct LaneStep {
  SequenceState* lane = nullptr;
  const Draft* draft = nullptr;
  std::vector<int32_t>* emitted = nullptr;
  std::vector<TokenLogprob>* logprobs = nullptr;
  int top_logprobs = 0;
};

// The next `tokens` of a lane's waiting tokens, fed into the cache without
// sampling beside other lanes' decoding (continuous batching); fewer than
// the lane's waiting tokens, so its last one still waits.
struct PrefillChunk {
  SequenceState* lane = nullptr;
  int64_t tokens = 0;
};

}  // namespace tessera
