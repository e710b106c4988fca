// What one call of cpu::attention (attention.cpp) settles before any token is
// attended: the shapes, the softmax chunking, every thread's scratch and,
// when a long context is split across threads, where each chunk's partial
// results wait for the merge.
#pragma once

#include <cstdint>
#include <limits>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/rope_table.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/visible_keys.h"
#include "core/backend/backend.h"

namespace tessera::cpu {

// Keys per softmax chunk. A context of at most this many keys is one chunk,
// whose merge (weight exp(0) = 1) leaves its sums as they are.
inline constexpr int64_t kChunkKeys = 256;

// The maximum score of a chunk without keys.
inline constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// One thread's scratch. For encoded segments, whose records hold one kv head
// or a token's kv_heads (KVSegment::heads_per_record), the codec's vectors
// are up to kv_width floats.
struct AttentionScratch {
  float* scores;        // [group, capacity]: a head's row contiguous for its softmax
  float* rotated;       // [head_dim]: a key turned by RoPE
  float* chunk_max;     // [group, most_chunks]: per head and chunk, its maximum,
  float* chunk_sum;     //   its exp sum
  float* chunk_weight;  //   and its weight in the merge
  float* chunk_values;  // [group, head_dim]: a chunk's value sums
  float* q_codec;       // [group, kv_width]: the queries in the codec's domain
  float* acc;           // [group, kv_width]: value sums in the codec's domain
  float* seg_rows;      // [group, most_stored]: one segment's scores or weights per head
  float* record_wide;   // [kv_width]: one record-wide vector
};

struct AttentionPass {
  // Reserves the scratch (and the chunk partials when split) for the longer
  // of this call's context and `context_hint`, so decoding never grows it.
  AttentionPass(const AttentionParams& call, const RopeTable& table, ThreadPool& workers,
                int64_t context_hint);

  AttentionScratch scratch(int thread) const;
  // Query head g of kv head kvh, token t: its output row [head_dim].
  float* output(int64_t t, int64_t kvh, int64_t g) const {
    return params.out.f32() + t * params.out.stride[0] + (kvh * group + g) * params.out.stride[1];
  }
  // The same head's partial of chunk c (when split): maximum, exp sum,
  // visible keys, then the value sums [head_dim].
  float* partial(int64_t t, int64_t kvh, int64_t c, int64_t g) const {
    return partials_ +
           (((t * kv_heads + kvh) * most_chunks + c) * group + g) * (kPartialHeader + head_dim);
  }
  static constexpr int64_t kPartialHeader = 3;

  const AttentionParams& params;
  const RopeTable& rope;
  ThreadPool& pool;
  // The vector steps (dot products, exp, value sums) of the fastest kernel
  // set: the same bits in every set (dot_kernels.h).
  const DotKernels& vec;
  int64_t n, heads, head_dim, kv_heads, group, kv_width;
  int64_t most_stored;  // entries of the longest view
  int64_t capacity;     // visible keys per head, at most
  int64_t most_chunks;  // of capacity keys
  float scale;
  bool rotate_stored;  // keys stored before RoPE, turned as they are read
  // How the stored segments are read (visible_keys.h: as rows, or through
  // their codec), settled once from the layer's codec.
  StoredLayout stored;
  // One work item per (token, kv head, chunk), merged after; else one per
  // (token, kv head).
  bool split;

 private:
  float* partials_ = nullptr;
};

}  // namespace tessera::cpu
