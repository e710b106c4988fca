// One token and kv head of an attention pass (attention_pass.h): the group's
// query heads over the keys the token sees (visible_keys.h), every key scored
// once for all of them; then per head and chunk of visible keys the softmax
// (its maximum and exp sum); then the values summed chunk by chunk, each
// chunk merged into the output by its weight, or kept as the chunk's partial
// when the pass splits the context by chunk.
#pragma once

#include <cstdint>

#include "backends/cpu/attention_pass.h"
#include "backends/cpu/encoded_segment_reader.h"
#include "backends/cpu/visible_keys.h"

namespace tessera::cpu {

class QueryAttention {
 public:
  QueryAttention(const AttentionPass& pass, int64_t t, int64_t kvh, int thread);

  // Over every visible key: the group's outputs.
  void attend_all();
  // Over the visible keys [chunk * kChunkKeys, (chunk + 1) * kChunkKeys):
  // that chunk's partials (AttentionPass::partial).
  void attend_chunk(int64_t chunk);

 private:
  void attend(int64_t first, int64_t limit);

  // Scores the visible keys [first, first + limit), head g's in order at
  // scores + g * capacity; returns how many.
  int64_t score(int64_t first, int64_t limit);
  void score_run(const Run& run);
  // `count` f32 keys (key i at keys + i * stride) at index on.
  void score_keys(const float* keys, int64_t stride, int64_t count, int64_t index);
  // A run's keys as they are stored (f32, half floats or int8 codes).
  void score_stored(const Run& run);
  Int8Rows int8_rows(const uint8_t* codes, int64_t row_bytes, int64_t scale_offset,
                     int64_t count) const;
  Int4Rows int4_rows(const Run& run, const uint8_t* records, int64_t row_bytes,
                     int64_t count) const;
  // Every head's `count` scores at out on times the pass's scale.
  void scale_scores(float* out, int64_t count) const;
  // Key i of run as this query must see it (as f32, turned where it must be).
  const float* key_for(const Run& run, int64_t i);

  // Each chunk's maximum and exp sum per head, the scores turned to exp(score
  // - maximum) in place; normalised only after the values are summed (as a
  // single head would: the same arithmetic for any group size).
  void softmax(int64_t visible);
  // The sums zeroed, and each chunk's weight in the merge (or the partials'
  // maximum, sum and keys).
  void start_outputs();
  void start_partials(int64_t visible);

  void sum_values(int64_t first, int64_t limit);
  void sum_run(const Run& run);
  void sum_rows(const Run& run, int64_t from, int64_t count, const float* weights, float* y) const;
  // Where head g's value sums of the current chunk go.
  float* sums_of(int64_t g) const;
  void merge_chunk(int64_t c);
  void finish_outputs();

  bool to_partials() const { return partial_chunk_ >= 0; }

  const AttentionPass& pass_;
  const AttentionParams& a_;
  const DotKernels& vec_;
  int64_t t_, kvh_;
  AttentionScratch s_;
  VisibleKeys keys_;
  int64_t shift_;   // under reassign, how far sink keys move
  const float* q_;  // the group's first query head
  EncodedSegmentReader encoded_;
  int64_t partial_chunk_ = -1;  // the chunk attend_chunk computes
  int64_t chunk_keys_ = kChunkKeys, chunks_ = 0;
  int64_t summed_ = 0;  // visible keys whose values are summed
};

}  // namespace tessera::cpu
