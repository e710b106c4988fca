#include "core/decode/lane_prefill.h"

#include <string>

namespace tessera {

void add_chunk_rows(const SequenceState& lane, int64_t count, Batch& batch) {
  int32_t parent = -1;
  for (int64_t i = lane.cached; i < lane.cached + count; ++i)
    parent = batch.add(lane.tokens[static_cast<std::size_t>(i)], lane.id, static_cast<int32_t>(i),
                       parent, kWriteKv, 0, lane.branch);
}

Status feed_tokens(Transformer& target, CheckedCacheStore& cache, SequenceState& lane,
                   int64_t count, Batch& batch, DecodeCounters& counters) {
  const auto waiting = static_cast<int64_t>(lane.tokens.size()) - lane.cached;
  if (count <= 0) return ok_status();
  if (count >= waiting)
    return invalid_argument("a prefill chunk of " + std::to_string(count) +
                            " tokens for a lane with " + std::to_string(waiting) +
                            " waiting; the last one waits for its step");
  batch.clear();
  add_chunk_rows(lane, count, batch);
  RETURN_IF_ERROR(target.forward(cache, batch).status());
  ++counters.target_forwards;
  lane.cached += count;
  return ok_status();
}

Status feed_all_but_last(Transformer& target, CheckedCacheStore& cache, SequenceState& lane,
                         Batch& batch, DecodeCounters& counters) {
  const auto size = static_cast<int64_t>(lane.tokens.size());
  if (size - lane.cached <= 1) return ok_status();
  return feed_tokens(target, cache, lane, size - 1 - lane.cached, batch, counters);
}

}  // namespace tessera
