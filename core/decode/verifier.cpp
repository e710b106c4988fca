#include "core/decode/verifier.h"

#include "core/decode/lane_prefill.h"
#include "core/model/batch.h"

namespace tessera {

Status Verifier::prefill(DecodeContext& context, SequenceState& lane) {
  if (lane.tokens.size() <= static_cast<std::size_t>(lane.cached) + 1) return ok_status();
  Batch batch;  // once per prompt: nothing to keep between calls
  return feed_all_but_last(context.target, context.cache, lane, batch, context.counters);
}

Status Verifier::feed_and_verify(DecodeContext& context, std::span<const PrefillChunk> chunks,
                                 std::span<const LaneStep> lanes) {
  if (!chunks.empty()) {
    Batch batch;
    for (const PrefillChunk& chunk : chunks)
      RETURN_IF_ERROR(feed_tokens(context.target, context.cache, *chunk.lane, chunk.tokens, batch,
                                  context.counters));
  }
  return lanes.empty() ? ok_status() : verify(context, lanes);
}

}  // namespace tessera
