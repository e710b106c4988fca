// One restored decode step and the exact prefill it needs, apart from lanes
// and sampling (the verifier's part), so tests can compare its logits with a
// full cache's step by step.
//
// step(): the store holds the sinks and the window of a sequence; the
// restorer (a cache-free forward over the history up to the evicted run's
// end, history_kv.h) recomputes the evicted run's K/V, the projection maps
// them, and the target feeds the sequence's last token attending to them as
// transient K/V with the window lifted. Its own K/V go to the store; the
// restored ones are dropped with the next step.
#pragma once

#include <span>

#include "core/cache/checked_cache_store.h"
#include "core/decode/sequence_state.h"
#include "core/model/batch.h"
#include "core/model/transformer.h"
#include "plugins/verifier_restored/history_kv.h"
#include "plugins/verifier_restored/kv_projection.h"

namespace tessera {

class RestoringForward {
 public:
  // `restorer` may be `target` itself; both, and `projection`, must outlive
  // this. `chunk`: positions per restorer forward (at most max_batch).
  // Scratch for histories of max_tokens positions is taken here, once.
  RestoringForward(Transformer& target, Transformer& restorer, const KVProjection& projection,
                   int chunk, int64_t max_tokens);

  // Stores the K/V of tokens [cached, size) of `seq` (the store holds
  // [0, cached)), each computed attending to every token before it: the
  // target's cache-free forward over all of `tokens`.
  Status prefill(CheckedCacheStore& cache, SequenceId seq, std::span<const int32_t> tokens,
                 int64_t cached, DecodeCounters& counters);
  // Feeds tokens.back() at position size - 1 (the store holds the tokens
  // before it, some evicted) with the evicted run restored, and returns its
  // logits (valid until the target's next forward).
  Result<std::span<const float>> step(CheckedCacheStore& cache, SequenceId seq,
                                      std::span<const int32_t> tokens, DecodeCounters& counters);

 private:
  // A restorer of its own holds activations only for restoring.
  std::size_t restorer_scratch_bytes() const;

  Transformer& target_;
  Transformer& restorer_;
  const KVProjection& projection_;
  int chunk_;
  HistoryKV history_;
  Batch batch_;
};

}  // namespace tessera
