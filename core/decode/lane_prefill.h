// Feeding a lane's waiting tokens into the cache without sampling: the part of
// a prompt before its last token (the last one is fed with the step that
// samples after it). The engine does this before branching a prompt; a
// verifier does it before a verification batch, which must fit one forward.
#pragma once

#include "core/cache/checked_cache_store.h"
#include "core/decode/sequence_state.h"
#include "core/model/batch.h"
#include "core/model/transformer.h"

namespace tessera {

// Feeds lane.tokens[cached, size - 1) as a chain of the lane's branch (in
// chunks of max_batch) and sets lane.cached = size - 1. Nothing when at most
// one token waits. `batch` is scratch. Counts the forward in counters.
Status feed_all_but_last(Transformer& target, CheckedCacheStore& cache, SequenceState& lane,
                         Batch& batch, DecodeCounters& counters);

// Appends lane.tokens[cached, cached + count) to `batch` as a chain of the
// lane's branch, K/V written (count < the lane's waiting tokens).
void add_chunk_rows(const SequenceState& lane, int64_t count, Batch& batch);

// Feeds the next `count` of the lane's waiting tokens in one forward (count
// below the waiting ones: the last still waits) and advances lane.cached.
Status feed_tokens(Transformer& target, CheckedCacheStore& cache, SequenceState& lane,
                   int64_t count, Batch& batch, DecodeCounters& counters);

}  // namespace tessera
