// One query's reads of encoded segments (KVSegment::codec): the codec scores
// its records and sums their values in its own domain, all the group's heads
// in one pass over the records, without decoding them.
#pragma once

#include <cstdint>

#include "backends/cpu/attention_pass.h"
#include "backends/cpu/visible_keys.h"
#include "core/compressor/compressor.h"

namespace tessera::cpu {

class EncodedSegmentReader {
 public:
  // The group's queries of kv head kvh, head g's at q + g * params.q.stride[1].
  EncodedSegmentReader(const AttentionPass& pass, AttentionScratch scratch, const float* q,
                       int64_t kvh)
      : pass_(pass), s_(scratch), q_(q), kvh_(kvh) {}

  // Whether any segment was read.
  bool used() const { return codec_ != nullptr; }
  // The scaled scores of seg's entries that `visible` lets through, head g's
  // at s.scores + g * capacity + at on; returns how many.
  int64_t score(const KVSegment& seg, const StoredFilter& visible, int64_t at);
  // Adds the values of the same entries, weighted by head g's row at
  // s.scores + g * capacity + at on, to the codec-domain sums; returns how many.
  int64_t sum(const KVSegment& seg, const StoredFilter& visible, int64_t at);
  // Adds head g's value sums, brought back from the codec's domain, to out.
  void add_output(int64_t g, float* out) const;

 private:
  // The first segment's codec and record shape; the queries in its domain.
  void start(const KVSegment& seg);

  const AttentionPass& pass_;
  AttentionScratch s_;
  const float* q_;
  int64_t kvh_;
  const Compressor* codec_ = nullptr;
  // How many floats one record decodes to, where this kv head's head_dim of
  // them starts, and which run of records holds it.
  int64_t record_width_ = 0;
  int64_t head_offset_ = 0;
  int64_t record_run_ = 0;
};

}  // namespace tessera::cpu
