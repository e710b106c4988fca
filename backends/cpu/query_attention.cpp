#include "backends/cpu/query_attention.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernel_support.h"
#include "backends/cpu/record_rows.h"

namespace tessera::cpu {

QueryAttention::QueryAttention(const AttentionPass& pass, int64_t t, int64_t kvh, int thread)
    : pass_(pass),
      a_(pass.params),
      vec_(pass.vec),
      t_(t),
      kvh_(kvh),
      s_(pass.scratch(thread)),
      keys_(pass.params, t, kvh, pass.stored),
      shift_(a_.rule.sink_shift(keys_.position())),
      q_(a_.q.f32() + t * a_.q.stride[0] + kvh * pass.group * a_.q.stride[1]),
      encoded_(pass, s_, q_, kvh) {}

void QueryAttention::attend_all() {
  attend(0, pass_.capacity);
}

void QueryAttention::attend_chunk(int64_t chunk) {
  partial_chunk_ = chunk;
  attend(chunk * kChunkKeys, kChunkKeys);
}

void QueryAttention::attend(int64_t first, int64_t limit) {
  const int64_t visible = score(first, limit);
  // A codec scores and sums its segments whole: one chunk.
  chunk_keys_ = encoded_.used() ? std::max<int64_t>(visible, 1) : kChunkKeys;
  chunks_ = (visible + chunk_keys_ - 1) / chunk_keys_;
  softmax(visible);
  if (to_partials())
    start_partials(visible);
  else
    start_outputs();
  if (visible == 0) return;
  sum_values(first, limit);
  if (!to_partials()) finish_outputs();
}

int64_t QueryAttention::score(int64_t first, int64_t limit) {
  int64_t visible = 0;
  keys_.each(
      first, limit,
      [&](const Run& run) {
        score_run(run);
        visible = run.index + run.count;
      },
      [&](const KVSegment& seg, const StoredFilter& filter) {
        const int64_t seen = encoded_.score(seg, filter, visible);
        visible += seen;
        return seen;
      });
  TESSERA_DCHECK(visible <= limit, "attention: runs cut to the range");
  return visible;
}

void QueryAttention::score_run(const Run& run) {
  // Keys turned by the rotation one at a time, into `rotated`.
  const bool turned = pass_.rotate_stored ||
                      (shift_ != 0 && std::any_of(run.positions, run.positions + run.count,
                                                  [&](int32_t p) { return p < a_.rule.sink; }));
  if (!turned) {
    score_stored(run);
    return;
  }
  for (int64_t i = 0; i < run.count; ++i) score_keys(key_for(run, i), 0, 1, run.index + i);
}

// One f32 panel (the float-row order): the keys as the panel's rows against
// the heads as its tokens, or with one head, the head as the one row against
// the keys as tokens (so the tiles still hold several keys).
void QueryAttention::score_keys(const float* keys, int64_t stride, int64_t count, int64_t index) {
  const int64_t group = pass_.group, head_dim = pass_.head_dim, capacity = pass_.capacity;
  float* out = s_.scores + index;
  if (group == 1)
    vec_.f32({reinterpret_cast<const uint8_t*>(q_),
              static_cast<std::size_t>(head_dim) * sizeof(float), 1, keys, stride, count, head_dim,
              out, 1});
  else
    vec_.f32({reinterpret_cast<const uint8_t*>(keys),
              static_cast<std::size_t>(stride) * sizeof(float), count, q_, a_.q.stride[1], group,
              head_dim, out, capacity});
  scale_scores(out, count);
}

// A run's keys as they are stored: f32 as an f32 panel; f16 / bf16, int8 and
// int4 codes converted in registers, in the f32-row order (the keys as the
// panel's rows against the heads as its tokens), so that each score has the
// bits of the f32 panel over the decoded keys.
void QueryAttention::score_stored(const Run& run) {
  float* out = s_.scores + run.index;
  switch (run.type) {
    case StoredRows::kF32:
      score_keys(reinterpret_cast<const float*>(run.k), run.k_stride / 4, run.count, run.index);
      return;
    case StoredRows::kF16:
    case StoredRows::kBF16:
      (run.type == StoredRows::kF16 ? vec_.f16_as_f32 : vec_.bf16_as_f32)(
          {run.k, static_cast<std::size_t>(run.k_stride), run.count, q_, a_.q.stride[1],
           pass_.group, pass_.head_dim, out, pass_.capacity});
      break;
    case StoredRows::kInt8:
      vec_.int8_row_scores(int8_rows(run.k, run.k_stride, run.scale_offset, run.count), q_,
                           a_.q.stride[1], pass_.group, out, pass_.capacity);
      break;
    case StoredRows::kInt4:
      vec_.int4_row_scores(int4_rows(run, run.k, run.k_stride, run.count), q_, a_.q.stride[1],
                           pass_.group, out, pass_.capacity);
      break;
    case StoredRows::kCodec:
      TESSERA_DCHECK(false, "attention: a codec's segment read as rows");
      return;
  }
  scale_scores(out, run.count);
}

Int8Rows QueryAttention::int8_rows(const uint8_t* codes, int64_t row_bytes, int64_t scale_offset,
                                   int64_t count) const {
  return {codes, row_bytes, scale_offset, count, pass_.head_dim};
}

Int4Rows QueryAttention::int4_rows(const Run& run, const uint8_t* records, int64_t row_bytes,
                                   int64_t count) const {
  return {records, row_bytes, run.scale_offset, run.first, run.group, count, pass_.head_dim};
}

void QueryAttention::scale_scores(float* out, int64_t count) const {
  const float scale = pass_.scale;  // a local: the stores below cannot change it
  for (int64_t g = 0; g < pass_.group; ++g)
    for (int64_t i = 0; i < count; ++i) out[g * pass_.capacity + i] *= scale;
}

const float* QueryAttention::key_for(const Run& run, int64_t i) {
  const int64_t p = run.positions[i];
  const float* key = reinterpret_cast<const float*>(run.key(i));
  if (run.type != StoredRows::kF32) {  // a record's row, as f32 first
    decode_record_row(run, run.key(i), pass_.head_dim, s_.record_wide);
    key = s_.record_wide;
  }
  const int64_t moved = p < a_.rule.sink ? shift_ : 0;
  if (pass_.rotate_stored) {
    pass_.rope.rotate(key, p + moved, s_.rotated);
    return s_.rotated;
  }
  if (moved == 0) return key;
  pass_.rope.rotate(key, moved, s_.rotated);
  return s_.rotated;
}

void QueryAttention::softmax(int64_t visible) {
  for (int64_t g = 0; g < pass_.group; ++g) {
    float* row = s_.scores + g * pass_.capacity;
    float* max_of = s_.chunk_max + g * pass_.most_chunks;
    float* sum_of = s_.chunk_sum + g * pass_.most_chunks;
    for (int64_t c = 0; c < chunks_; ++c) {
      const int64_t begin = c * chunk_keys_, end = std::min(visible, begin + chunk_keys_);
      float max_score = kNoKeys;
      for (int64_t j = begin; j < end; ++j) max_score = std::max(max_score, row[j]);
      vec_.exp_shifted(row + begin, end - begin, max_score);
      float sum = 0.0f;
      for (int64_t j = begin; j < end; ++j) sum += row[j];
      max_of[c] = max_score;
      sum_of[c] = sum;
    }
  }
}

void QueryAttention::start_outputs() {
  for (int64_t g = 0; g < pass_.group; ++g) {
    std::fill_n(pass_.output(t_, kvh_, g), pass_.head_dim, 0.0f);
    // Chunk c's weight in the merge: exp(its maximum - the largest).
    const float* max_of = s_.chunk_max + g * pass_.most_chunks;
    float* weight = s_.chunk_weight + g * pass_.most_chunks;
    std::copy_n(max_of, chunks_, weight);
    if (chunks_ > 0) vec_.exp_shifted(weight, chunks_, *std::max_element(max_of, max_of + chunks_));
  }
  if (chunks_ > 1) std::fill_n(s_.chunk_values, pass_.group * pass_.head_dim, 0.0f);
}

void QueryAttention::start_partials(int64_t visible) {
  for (int64_t g = 0; g < pass_.group; ++g) {
    float* partial = pass_.partial(t_, kvh_, partial_chunk_, g);
    partial[0] = chunks_ == 0 ? kNoKeys : s_.chunk_max[g * pass_.most_chunks];
    partial[1] = chunks_ == 0 ? 0.0f : s_.chunk_sum[g * pass_.most_chunks];
    partial[2] = static_cast<float>(visible);
    std::fill_n(partial + AttentionPass::kPartialHeader, pass_.head_dim, 0.0f);
  }
}

void QueryAttention::sum_values(int64_t first, int64_t limit) {
  summed_ = 0;
  keys_.each(
      first, limit, [&](const Run& run) { sum_run(run); },
      [&](const KVSegment& seg, const StoredFilter& filter) {
        const int64_t seen = encoded_.sum(seg, filter, summed_);
        summed_ += seen;
        return seen;
      });
  if (summed_ % chunk_keys_ != 0) merge_chunk(chunks_ - 1);
}

// Up to each chunk's end, then the chunk merged.
void QueryAttention::sum_run(const Run& run) {
  TESSERA_DCHECK(run.index == summed_, "attention: runs in order");
  for (int64_t done = 0; done < run.count;) {
    const int64_t take = std::min(run.count - done, chunk_keys_ - summed_ % chunk_keys_);
    for (int64_t g = 0; g < pass_.group; ++g)
      sum_rows(run, done, take, s_.scores + g * pass_.capacity + summed_, sums_of(g));
    summed_ += take;
    done += take;
    if (summed_ % chunk_keys_ == 0) merge_chunk(summed_ / chunk_keys_ - 1);
  }
}

// y += the values of run's entries [from, from + count) by their weights.
void QueryAttention::sum_rows(const Run& run, int64_t from, int64_t count, const float* weights,
                              float* y) const {
  const int64_t n = pass_.head_dim;
  const uint8_t* rows = run.value(from);
  switch (run.type) {
    case StoredRows::kF32:
      vec_.axpy_rows(weights, reinterpret_cast<const float*>(rows), run.v_stride / 4, count, y, n);
      return;
    case StoredRows::kF16:
      vec_.axpy_f16_rows(weights, reinterpret_cast<const uint16_t*>(rows), run.v_stride / 2, count,
                         y, n);
      return;
    case StoredRows::kBF16:
      vec_.axpy_bf16_rows(weights, reinterpret_cast<const uint16_t*>(rows), run.v_stride / 2, count,
                          y, n);
      return;
    case StoredRows::kInt8:
      vec_.axpy_int8_rows(weights, int8_rows(rows, run.v_stride, run.scale_offset, count), y);
      return;
    case StoredRows::kInt4:
      vec_.axpy_int4_rows(weights, int4_rows(run, rows, run.v_stride, count), y);
      return;
    case StoredRows::kCodec:
      TESSERA_DCHECK(false, "attention: a codec's segment read as rows");
      return;
  }
}

// One chunk's sums are the output itself (weight 1).
float* QueryAttention::sums_of(int64_t g) const {
  if (to_partials())
    return pass_.partial(t_, kvh_, partial_chunk_, g) + AttentionPass::kPartialHeader;
  return chunks_ == 1 ? pass_.output(t_, kvh_, g) : s_.chunk_values + g * pass_.head_dim;
}

void QueryAttention::merge_chunk(int64_t c) {
  if (to_partials() || chunks_ == 1) return;
  for (int64_t g = 0; g < pass_.group; ++g) {
    float* sums = s_.chunk_values + g * pass_.head_dim;
    vec_.axpy_rows(s_.chunk_weight + g * pass_.most_chunks + c, sums, 0, 1,
                   pass_.output(t_, kvh_, g), pass_.head_dim);
    std::fill_n(sums, pass_.head_dim, 0.0f);
  }
}

void QueryAttention::finish_outputs() {
  for (int64_t g = 0; g < pass_.group; ++g) {
    float* o = pass_.output(t_, kvh_, g);
    if (encoded_.used()) encoded_.add_output(g, o);
    // The exp sums merged as the values were.
    const float* weight = s_.chunk_weight + g * pass_.most_chunks;
    const float* sum = s_.chunk_sum + g * pass_.most_chunks;
    float total = 0.0f;
    for (int64_t c = 0; c < chunks_; ++c) total = std::fma(weight[c], sum[c], total);
    const float inv_sum = 1.0f / total;
    for (int64_t d = 0; d < pass_.head_dim; ++d) o[d] *= inv_sum;
  }
}

}  // namespace tessera::cpu
