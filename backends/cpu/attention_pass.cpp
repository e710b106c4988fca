#include "backends/cpu/attention_pass.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernel_support.h"

namespace tessera::cpu {
namespace {

int64_t chunks_of(int64_t keys) {
  return (keys + kChunkKeys - 1) / kChunkKeys;
}

}  // namespace

AttentionPass::AttentionPass(const AttentionParams& call, const RopeTable& table,
                             ThreadPool& workers, int64_t context_hint)
    : params(call), rope(table), pool(workers), vec(best_dot_kernels()) {
  n = params.q.dim(0);
  heads = params.q.dim(1);
  head_dim = params.q.dim(2);
  kv_heads = params.batch_k.dim(1);
  group = heads / kv_heads;
  kv_width = kv_heads * head_dim;
  most_stored = 0;
  bool settled = false;  // every segment of a layer has the layer's codec
  for (const KVView& view : params.views) {
    most_stored = std::max(most_stored, view.entries());
    for (const KVSegment& seg : view.segments)
      if (seg.encoded() && !settled) {
        stored = stored_layout_of(seg, head_dim);
        settled = true;
      }
  }
  capacity = most_stored + n;
  most_chunks = chunks_of(capacity);
  scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  rotate_stored = params.stored_keys == StoredKeys::kBeforeRope;

  // AttentionScratch for `longest` keys per head (stored entries are at
  // most that many, so the segment rows too).
  const int64_t longest = std::max(capacity, context_hint);
  const int64_t longest_chunks = chunks_of(longest);
  reserve_or_die(
      pool, static_cast<std::size_t>(2 * longest * group + head_dim + 3 * group * longest_chunks +
                                     group * head_dim + 2 * group * kv_width + kv_width));

  // Too few (token, kv head) items to give every thread one, and a context
  // of several chunks. (Segments read through their codec are scored and
  // summed whole by it: one chunk.)
  split = stored.rows != StoredRows::kCodec && most_chunks > 1 && n * kv_heads < pool.threads();
  if (split) {
    // n * kv_heads < threads here, so a lengthening decode does not grow it.
    partials_ = static_cast<float*>(
        pool.shared_scratch(static_cast<std::size_t>(pool.threads() * longest_chunks * group *
                                                     (kPartialHeader + head_dim)) *
                            sizeof(float)));
    TESSERA_CHECK(partials_ != nullptr, "attention: out of memory for the context's chunks");
  }
}

AttentionScratch AttentionPass::scratch(int thread) const {
  AttentionScratch s;
  s.scores = pool.scratch(thread);
  s.rotated = s.scores + capacity * group;
  s.chunk_max = s.rotated + head_dim;
  s.chunk_sum = s.chunk_max + group * most_chunks;
  s.chunk_weight = s.chunk_sum + group * most_chunks;
  s.chunk_values = s.chunk_weight + group * most_chunks;
  s.q_codec = s.chunk_values + group * head_dim;
  s.acc = s.q_codec + group * kv_width;
  s.seg_rows = s.acc + group * kv_width;
  s.record_wide = s.seg_rows + group * most_stored;
  return s;
}

}  // namespace tessera::cpu
