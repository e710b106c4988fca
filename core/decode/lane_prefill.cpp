#include "core/decode/lane_prefill.h"

namespace tessera {

Status feed_all_but_last(Transformer& target, CheckedCacheStore& cache, SequenceState& lane,
                         Batch& batch, DecodeCounters& counters) {
  const auto size = static_cast<int64_t>(lane.tokens.size());
  if (size - lane.cached <= 1) return ok_status();
  batch.clear();
  int32_t parent = -1;
  for (int64_t i = lane.cached; i < size - 1; ++i)
    parent = batch.add(lane.tokens[static_cast<std::size_t>(i)], lane.id, static_cast<int32_t>(i),
                       parent, kWriteKv, 0, lane.branch);
  RETURN_IF_ERROR(target.forward(cache, batch).status());
  ++counters.target_forwards;
  lane.cached = size - 1;
  return ok_status();
}

}  // namespace tessera
