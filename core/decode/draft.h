// What a proposer hands the verifier, and the per-sequence state both read.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cache/cache_store.h"

namespace tessera {

class Transformer;
class CheckedCacheStore;
class Sampler;

// Drafted tokens as a tree: parents[i] is the index of token i's parent in
// `tokens`, or -1 for a child of the last committed token (a chain has
// parents = -1, 0, 1, ...). probs holds the draft distribution q per token
// ([n, vocab], row-major) when the draft was sampled, and is empty for
// deterministic drafts.
struct Draft {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;

  bool empty() const { return tokens.empty(); }
  void clear() {
    tokens.clear();
    parents.clear();
    probs.clear();
  }
};

// One sequence being generated. tokens[0, cached) have K/V in the cache; the
// rest are waiting to be fed to the model (the prompt at first, then the last
// emitted token).
struct SequenceState {
  SequenceId id = 0;
  std::vector<int32_t> tokens;
  int64_t cached = 0;
  int64_t capacity = 0;
};

// Everything a proposer or verifier may use during one step. References only;
// the engine owns all of it.
struct DecodeContext {
  Transformer& target;
  CheckedCacheStore& cache;
  Sampler& sampler;
  SequenceState& sequence;
};

}  // namespace tessera
