#include "backends/cpu/encoded_segment_reader.h"

#include <algorithm>

#include "backends/cpu/kernel_support.h"

namespace tessera::cpu {

void EncodedSegmentReader::start(const KVSegment& seg) {
  // Every segment of a layer has the layer's codec: the queries are brought
  // into its domain once per token and kv head. A record of several heads is
  // scored against the query placed at this head's floats, zeros elsewhere:
  // the dot product of the head's part, exactly.
  codec_ = seg.codec;
  record_width_ = seg.heads_per_record * pass_.head_dim;
  head_offset_ = (kvh_ % seg.heads_per_record) * pass_.head_dim;
  record_run_ = kvh_ / seg.heads_per_record;
  std::fill_n(s_.record_wide, record_width_, 0.0f);
  for (int64_t g = 0; g < pass_.group; ++g) {
    std::copy_n(q_ + g * pass_.params.q.stride[1], pass_.head_dim, s_.record_wide + head_offset_);
    codec_->transform_query(s_.record_wide, static_cast<int>(record_width_),
                            s_.q_codec + g * record_width_);
  }
  std::fill_n(s_.acc, pass_.group * record_width_, 0.0f);
}

int64_t EncodedSegmentReader::score(const KVSegment& seg, const StoredFilter& visible, int64_t at) {
  if (codec_ == nullptr) start(seg);
  TESSERA_DCHECK(codec_ == seg.codec, "attention: one codec per layer");
  TESSERA_DCHECK(seg.heads_per_record * pass_.head_dim == record_width_,
                 "attention: one record width per layer");
  const uint8_t* records = seg.k_records + record_run_ * seg.record_head_stride;
  codec_->dot_encoded_heads(s_.q_codec, static_cast<int>(pass_.group), records, seg.count,
                            static_cast<int>(record_width_), s_.seg_rows);
  const float scale = pass_.scale;  // a local: the stores below cannot change it
  int64_t seen = seg.count;
  for (int64_t g = 0; g < pass_.group; ++g) {
    const float* seg_row = s_.seg_rows + g * seg.count;
    float* row = s_.scores + g * pass_.capacity + at;
    if (visible.all()) {  // no per-entry test
      for (int64_t j = 0; j < seg.count; ++j) row[j] = seg_row[j] * scale;
      continue;
    }
    int64_t k = 0;
    for (int64_t j = 0; j < seg.count; ++j)
      if (visible(j)) row[k++] = seg_row[j] * scale;
    seen = k;
  }
  return seen;
}

int64_t EncodedSegmentReader::sum(const KVSegment& seg, const StoredFilter& visible, int64_t at) {
  TESSERA_DCHECK(codec_ == seg.codec, "attention: the segment was scored");
  int64_t seen = seg.count;
  for (int64_t g = 0; g < pass_.group; ++g) {
    const float* row = s_.scores + g * pass_.capacity + at;
    float* seg_row = s_.seg_rows + g * seg.count;
    if (visible.all()) {  // no per-entry test
      std::copy_n(row, seg.count, seg_row);
      continue;
    }
    int64_t k = 0;
    for (int64_t e = 0; e < seg.count; ++e) seg_row[e] = visible(e) ? row[k++] : 0.0f;
    seen = k;
  }
  const uint8_t* records = seg.v_records + record_run_ * seg.record_head_stride;
  codec_->accumulate_encoded_heads(s_.seg_rows, static_cast<int>(pass_.group), records, seg.count,
                                   static_cast<int>(record_width_), s_.acc);
  return seen;
}

void EncodedSegmentReader::add_output(int64_t g, float* out) const {
  codec_->finish_output(s_.acc + g * record_width_, static_cast<int>(record_width_),
                        s_.record_wide);
  for (int64_t d = 0; d < pass_.head_dim; ++d) out[d] += s_.record_wide[head_offset_ + d];
}

}  // namespace tessera::cpu
