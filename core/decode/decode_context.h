// What a proposer or verifier may use during one step. References only; the
// engine owns all of it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/decode/draft.h"
#include "core/decode/sequence_state.h"

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
// emits go.
struct LaneStep {
  SequenceState* lane = nullptr;
  const Draft* draft = nullptr;
  std::vector<int32_t>* emitted = nullptr;
};

// The next `tokens` of a lane's waiting tokens, fed into the cache without
// sampling beside other lanes' decoding (continuous batching); fewer than
// the lane's waiting tokens, so its last one still waits.
struct PrefillChunk {
  SequenceState* lane = nullptr;
  int64_t tokens = 0;
};

}  // namespace tessera
