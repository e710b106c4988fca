// Grouped-query attention on the CPU (cpu_kernels.h): per token and kv head,
// every visible key is scored once for all the query heads that read it, in
// one fixed order (stored segments, then the batch's own keys), and the
// softmax is taken over chunks of kChunkKeys visible keys, flash-decoding
// style: per chunk its maximum, its exp sum and its value sum; then the
// chunks merged in order. The chunks are fixed by the key's place in that
// order, never by the thread count, so a long context can be split across
// threads (one work item per chunk) and give the bits one thread gives.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/kernel_support.h"
#include "core/compressor/compressor.h"

namespace tessera::cpu {
namespace {

// Keys per softmax chunk. A context of at most this many keys is one chunk,
// whose merge (weight exp(0) = 1) leaves its sums as they are.
constexpr int64_t kChunkKeys = 256;

constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// Visible entries stored one after another: entry i's key at k + i *
// k_stride, its value at v + i * v_stride, its position positions[i]; the
// first is the index-th visible key of the range.
struct Run {
  const float* k;
  int64_t k_stride;
  const float* v;
  int64_t v_stride;
  const int32_t* positions;
  int64_t count, index;
};

}  // namespace

void attention(const AttentionParams& a, const RopeTable& rope, ThreadPool* pool,
               int64_t context_hint) {
  const int64_t n = a.q.dim(0);
  const int64_t heads = a.q.dim(1);
  const int64_t head_dim = a.q.dim(2);
  const int64_t kv_heads = a.batch_k.dim(1);
  TESSERA_DCHECK(pool != nullptr, "attention: no thread pool");
  TESSERA_DCHECK(a.q.rank == 3 && a.out.rank == 3 && a.batch_k.rank == 3 && a.batch_v.rank == 3,
                 "attention: q, out, batch_k, batch_v are 3-D");
  TESSERA_DCHECK(kv_heads > 0 && heads % kv_heads == 0, "attention: heads % kv_heads != 0");
  TESSERA_DCHECK(a.out.dim(0) == n && a.out.dim(1) == heads && a.out.dim(2) == head_dim,
                 "attention: out is [n, heads, head_dim]");
  TESSERA_DCHECK(a.batch_k.dim(0) == n && a.batch_k.dim(2) == head_dim && a.batch_v.dim(0) == n &&
                     a.batch_v.dim(1) == kv_heads && a.batch_v.dim(2) == head_dim,
                 "attention: batch K/V are [n, kv_heads, head_dim]");
  TESSERA_DCHECK(
      static_cast<int64_t>(a.positions.size()) == n && static_cast<int64_t>(a.view_of.size()) == n,
      "attention: one position and one view per token");
  TESSERA_DCHECK(inner_contiguous(a.q) && inner_contiguous(a.out) && inner_contiguous(a.batch_k) &&
                     inner_contiguous(a.batch_v),
                 "attention: inner stride");

  int64_t most_stored = 0;
  bool any_encoded = false;
  for (const KVView& view : a.views) {
    most_stored = std::max(most_stored, view.entries());
    for (const KVSegment& seg : view.segments) any_encoded = any_encoded || seg.encoded();
  }
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const bool rotate_stored = a.stored_keys == StoredKeys::kBeforeRope;
  const int64_t kv_width = kv_heads * head_dim;
  const int64_t capacity = most_stored + n;  // visible keys per head, at most
  const int64_t most_chunks = (capacity + kChunkKeys - 1) / kChunkKeys;
  // The vector steps (dot products, exp, value sums) of the fastest kernel
  // set: the same bits in every set (dot_kernels.h).
  const DotKernels& vec = best_dot_kernels();

  // Per thread: scores [group, capacity] (a head's row contiguous for its
  // softmax); a rotated key [head_dim]; per head and chunk its maximum, exp
  // sum and merge weight [3, group, most_chunks]; a chunk's value sums
  // [group, head_dim]; for encoded segments, whose records hold one kv head
  // or a token's kv_heads (KVSegment::heads_per_record), so up to kv_width
  // floats: queries in the codec's domain [group, kv_width], one segment's
  // scores or weights per head [group, most_stored], value sums in the
  // codec's domain [group, kv_width] and one record-wide vector [kv_width].
  // (Stored entries are at most `keys`, so the segment rows too.)
  const auto scratch_floats = [&](int64_t keys) {
    const int64_t chunks = (keys + kChunkKeys - 1) / kChunkKeys;
    return 2 * keys * group + head_dim + 3 * group * chunks + group * head_dim +
           2 * group * kv_width + kv_width;
  };
  // Sized once for the longest context the caller announced, so decoding
  // never grows it.
  reserve_or_die(*pool, static_cast<std::size_t>(scratch_floats(std::max(capacity, context_hint))));

  // Too few (token, kv head) items to give every thread one, and a context
  // of several chunks: one work item per chunk, merged after. (Encoded
  // segments are scored and summed whole by their codec: one chunk.)
  const bool split = !any_encoded && most_chunks > 1 && n * kv_heads < pool->threads();
  // Per (token, kv head, chunk, head): maximum, exp sum, keys, value sums.
  const int64_t partial_floats = 3 + head_dim;
  float* partials = nullptr;
  if (split) {
    // Sized for the longest context announced (n * kv_heads < threads here),
    // so a lengthening decode does not grow it.
    const int64_t longest_chunks = (std::max(capacity, context_hint) + kChunkKeys - 1) / kChunkKeys;
    partials = static_cast<float*>(pool->shared_scratch(
        static_cast<std::size_t>(pool->threads() * longest_chunks * group * partial_floats) *
        sizeof(float)));
    TESSERA_CHECK(partials != nullptr, "attention: out of memory for the context's chunks");
  }
  const auto partial_of = [&](int64_t t, int64_t kvh, int64_t c, int64_t g) {
    return partials + (((t * kv_heads + kvh) * most_chunks + c) * group + g) * partial_floats;
  };
  const auto out_of = [&](int64_t t, int64_t kvh, int64_t g) {
    return a.out.f32() + t * a.out.stride[0] + (kvh * group + g) * a.out.stride[1];
  };

  // Token t, kv head kvh, the visible keys [first, first + limit) in the
  // order: the query heads' outputs, or with `to_partials` the one chunk's
  // maximum, sum and value sums (first a multiple of kChunkKeys, limit
  // kChunkKeys).
  const auto attend = [&](int64_t t, int64_t kvh, int64_t first, int64_t limit, bool to_partials,
                          int thread) {
    float* scores = pool->scratch(thread);
    float* rotated = scores + capacity * group;
    float* chunk_max = rotated + head_dim;
    float* chunk_sum = chunk_max + group * most_chunks;
    float* chunk_weight = chunk_sum + group * most_chunks;
    float* chunk_values = chunk_weight + group * most_chunks;
    float* q_codec = chunk_values + group * head_dim;
    float* acc = q_codec + group * kv_width;
    float* seg_rows = acc + group * kv_width;
    float* record_wide = seg_rows + group * most_stored;

    const int64_t position = a.positions[static_cast<std::size_t>(t)];
    const KVView& view = a.views[static_cast<std::size_t>(a.view_of[static_cast<std::size_t>(t)])];
    const int64_t shift = a.rule.sink_shift(position);
    const float* q0 = a.q.f32() + t * a.q.stride[0] + kvh * group * a.q.stride[1];

    // The key of an entry at position p as this query must see it.
    const auto key_for = [&](const float* key, int64_t p, bool before_rope) -> const float* {
      const int64_t moved = p < a.rule.sink ? shift : 0;
      if (before_rope) {
        rope.rotate(key, p + moved, rotated);
        return rotated;
      }
      if (moved == 0) return key;
      rope.rotate(key, moved, rotated);
      return rotated;
    };
    // Visits every visible decoded (key, value) in the fixed order: stored
    // segments, then batch tokens, those of [first, first + limit), in runs
    // of entries stored one after another (a Run). Encoded segments (only
    // when the range is all of them) are handed to `encoded_segment` whole,
    // in their place; it returns how many of their entries are visible.
    const auto each_visible = [&](auto&& visit, auto&& encoded_segment) {
      int64_t index = -first;
      // Entries [0, count) from (k, v, p), all visible: the part in the range.
      const auto offer = [&](const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                             const int32_t* p, int64_t count) {
        const int64_t skip = std::max<int64_t>(0, -index);
        const int64_t end = std::min(count, limit - index);
        if (skip < end)
          visit(Run{k + skip * k_stride, k_stride, v + skip * v_stride, v_stride, p + skip,
                    end - skip, index + skip});
        index += count;
      };
      // Entries [0, count) in runs of visible ones.
      const auto offer_visible = [&](const float* k, int64_t k_stride, const float* v,
                                     int64_t v_stride, const int32_t* p, int64_t count,
                                     auto&& visible) {
        for (int64_t j = 0; j < count && index < limit;) {
          if (!visible(j)) {
            ++j;
            continue;
          }
          int64_t end = j + 1;
          while (end < count && visible(end)) ++end;
          offer(k + j * k_stride, k_stride, v + j * v_stride, v_stride, p + j, end - j);
          j = end;
        }
      };
      for (const KVSegment& seg : view.segments) {
        if (seg.encoded()) {
          index += encoded_segment(seg);  // its visible entries
          continue;
        }
        const float* ks = seg.k.f32() + kvh * seg.k.stride[0];
        const float* vs = seg.v.f32() + kvh * seg.v.stride[0];
        if (!a.rule.limits()) {  // every entry visible
          offer(ks, seg.k.stride[1], vs, seg.v.stride[1], seg.positions, seg.count);
          continue;
        }
        offer_visible(ks, seg.k.stride[1], vs, seg.v.stride[1], seg.positions, seg.count,
                      [&](int64_t j) { return a.rule.sees(position, seg.positions[j]); });
      }
      offer_visible(a.batch_k.f32() + kvh * a.batch_k.stride[1], a.batch_k.stride[0],
                    a.batch_v.f32() + kvh * a.batch_v.stride[1], a.batch_v.stride[0],
                    a.positions.data(), n, [&](int64_t j) {
                      return a.in_batch.sees(t, j) &&
                             a.rule.sees(position, a.positions[static_cast<std::size_t>(j)]);
                    });
    };

    // Scores of `count` keys (key i at keys + i * stride) for every query
    // head of the group, at index..: one f32 panel (the float-row order),
    // keys as the panel's rows against the heads as its tokens, or with one
    // head, the head as the one row against the keys as tokens (so the
    // tiles still hold several keys).
    const auto score_keys = [&](const float* keys, int64_t stride, int64_t count, int64_t index) {
      float* out = scores + index;
      if (group == 1)
        vec.f32({reinterpret_cast<const uint8_t*>(q0),
                 static_cast<std::size_t>(head_dim) * sizeof(float), 1, keys, stride, count,
                 head_dim, out, 1});
      else
        vec.f32({reinterpret_cast<const uint8_t*>(keys),
                 static_cast<std::size_t>(stride) * sizeof(float), count, q0, a.q.stride[1], group,
                 head_dim, out, capacity});
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < count; ++i) out[g * capacity + i] *= scale;
    };

    // Scores: head g's for the visible keys in order at g * capacity.
    int64_t visible = 0;
    const Compressor* codec = nullptr;  // of the encoded segments, if any
    // Their records: how many floats one decodes to, where this kv head's
    // head_dim of them starts, and which run of records holds it.
    int64_t record_width = head_dim;
    int64_t head_offset = 0;
    int64_t record_run = kvh;
    each_visible(
        [&](const Run& run) {
          // Keys turned by the rotation one at a time, into `rotated`.
          const bool turned =
              rotate_stored ||
              (shift != 0 && std::any_of(run.positions, run.positions + run.count,
                                         [&](int32_t p) { return p < a.rule.sink; }));
          if (!turned)
            score_keys(run.k, run.k_stride, run.count, run.index);
          else
            for (int64_t i = 0; i < run.count; ++i)
              score_keys(key_for(run.k + i * run.k_stride, run.positions[i], rotate_stored), 0, 1,
                         run.index + i);
          visible = run.index + run.count;
        },
        [&](const KVSegment& seg) -> int64_t {
          const int64_t before = visible;
          // The codec scores its records against the queries in its own
          // domain, all the group's heads in one pass over the records. The
          // queries are brought there once per token and kv head (every
          // segment of a layer has the layer's codec). A record of several
          // heads is scored against the query placed at this head's floats,
          // zeros elsewhere: the dot product of the head's part, exactly.
          TESSERA_DCHECK(codec == nullptr || codec == seg.codec, "attention: one codec per layer");
          if (codec == nullptr) {
            codec = seg.codec;
            record_width = seg.heads_per_record * head_dim;
            head_offset = (kvh % seg.heads_per_record) * head_dim;
            record_run = kvh / seg.heads_per_record;
            std::fill_n(record_wide, record_width, 0.0f);
            for (int64_t g = 0; g < group; ++g) {
              std::copy_n(q0 + g * a.q.stride[1], head_dim, record_wide + head_offset);
              codec->transform_query(record_wide, static_cast<int>(record_width),
                                     q_codec + g * record_width);
            }
          }
          TESSERA_DCHECK(seg.heads_per_record * head_dim == record_width,
                         "attention: one record width per layer");
          const uint8_t* records = seg.k_records + record_run * seg.record_head_stride;
          codec->dot_encoded_heads(q_codec, static_cast<int>(group), records, seg.count,
                                   static_cast<int>(record_width), seg_rows);
          if (!a.rule.limits()) {  // every entry visible: no per-entry test
            for (int64_t g = 0; g < group; ++g) {
              const float* seg_row = seg_rows + g * seg.count;
              float* row = scores + g * capacity + visible;
              for (int64_t j = 0; j < seg.count; ++j) row[j] = seg_row[j] * scale;
            }
            visible += seg.count;
            return seg.count;
          }
          for (int64_t g = 0; g < group; ++g) {
            const float* seg_row = seg_rows + g * seg.count;
            int64_t k = visible;
            for (int64_t j = 0; j < seg.count; ++j)
              if (a.rule.sees(position, seg.positions[j]))
                scores[g * capacity + k++] = seg_row[j] * scale;
          }
          for (int64_t j = 0; j < seg.count; ++j)
            visible += a.rule.sees(position, seg.positions[j]) ? 1 : 0;
          return visible - before;
        });
    // Keys visited but not in the range (the batch loop stops at its end).
    visible = std::min(visible, limit);

    // Softmax per head and chunk, normalised after the values are summed (as
    // a single head would: the same arithmetic for any group size).
    const int64_t chunk_keys = codec != nullptr ? std::max<int64_t>(visible, 1) : kChunkKeys;
    const int64_t chunks = (visible + chunk_keys - 1) / chunk_keys;
    for (int64_t g = 0; g < group; ++g) {
      float* row = scores + g * capacity;
      float* max_of = chunk_max + g * most_chunks;
      float* sum_of = chunk_sum + g * most_chunks;
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t begin = c * chunk_keys, end = std::min(visible, begin + chunk_keys);
        float max_score = kNoKeys;
        for (int64_t j = begin; j < end; ++j) max_score = std::max(max_score, row[j]);
        vec.exp_shifted(row + begin, end - begin, max_score);
        float sum = 0.0f;
        for (int64_t j = begin; j < end; ++j) sum += row[j];
        max_of[c] = max_score;
        sum_of[c] = sum;
      }
      if (to_partials) {
        float* partial = partial_of(t, kvh, first / kChunkKeys, g);
        partial[0] = chunks == 0 ? kNoKeys : max_of[0];
        partial[1] = chunks == 0 ? 0.0f : sum_of[0];
        partial[2] = static_cast<float>(visible);
        std::fill_n(partial + 3, head_dim, 0.0f);
      } else {
        std::fill_n(out_of(t, kvh, g), head_dim, 0.0f);
        // Chunk c's weight in the merge: exp(its maximum - the largest).
        float* weight = chunk_weight + g * most_chunks;
        std::copy_n(max_of, chunks, weight);
        if (chunks > 0) vec.exp_shifted(weight, chunks, *std::max_element(max_of, max_of + chunks));
      }
    }
    if (visible == 0) return;

    // Values: chunk by chunk, each chunk's sums merged into the output by its
    // weight (one chunk: weight 1, the sums themselves) or kept as a partial.
    if (codec) std::fill_n(acc, group * record_width, 0.0f);
    const auto sums_of = [&](int64_t g) {
      if (to_partials) return partial_of(t, kvh, first / kChunkKeys, g) + 3;
      return chunks == 1 ? out_of(t, kvh, g) : chunk_values + g * head_dim;
    };
    const auto merge_chunk = [&](int64_t c) {
      if (to_partials || chunks == 1) return;
      for (int64_t g = 0; g < group; ++g) {
        float* sums = chunk_values + g * head_dim;
        vec.axpy_rows(chunk_weight + g * most_chunks + c, sums, 0, 1, out_of(t, kvh, g), head_dim);
        std::fill_n(sums, head_dim, 0.0f);
      }
    };
    if (!to_partials && chunks > 1) std::fill_n(chunk_values, group * head_dim, 0.0f);
    int64_t j = 0;
    each_visible(
        [&](const Run& run) {
          TESSERA_DCHECK(run.index == j, "attention: runs in order");
          // Up to each chunk's end, then the chunk merged.
          for (int64_t done = 0; done < run.count;) {
            const int64_t take = std::min(run.count - done, chunk_keys - j % chunk_keys);
            for (int64_t g = 0; g < group; ++g)
              vec.axpy_rows(scores + g * capacity + j, run.v + done * run.v_stride, run.v_stride,
                            take, sums_of(g), head_dim);
            j += take;
            done += take;
            if (j % chunk_keys == 0) merge_chunk(j / chunk_keys - 1);
          }
        },
        [&](const KVSegment& seg) -> int64_t {
          // Values summed by the codec in its domain, all the group's heads
          // in one pass over the records, brought back once below.
          const uint8_t* records = seg.v_records + record_run * seg.record_head_stride;
          const int64_t seg_first = j;
          for (int64_t g = 0; g < group; ++g) {
            float* seg_row = seg_rows + g * seg.count;
            if (!a.rule.limits()) {  // every entry visible: no per-entry test
              std::copy_n(scores + g * capacity + seg_first, seg.count, seg_row);
              j = seg_first + seg.count;
              continue;
            }
            int64_t k = seg_first;
            for (int64_t e = 0; e < seg.count; ++e)
              seg_row[e] =
                  a.rule.sees(position, seg.positions[e]) ? scores[g * capacity + k++] : 0.0f;
            j = k;
          }
          seg.codec->accumulate_encoded_heads(seg_rows, static_cast<int>(group), records, seg.count,
                                              static_cast<int>(record_width), acc);
          return j - seg_first;
        });
    if (j % chunk_keys != 0) merge_chunk(chunks - 1);
    if (to_partials) return;
    for (int64_t g = 0; g < group; ++g) {
      float* o = out_of(t, kvh, g);
      if (codec) {  // this head's part of the record-wide sum
        codec->finish_output(acc + g * record_width, static_cast<int>(record_width), record_wide);
        for (int64_t d = 0; d < head_dim; ++d) o[d] += record_wide[head_offset + d];
      }
      // The exp sums merged as the values were.
      float total = 0.0f;
      for (int64_t c = 0; c < chunks; ++c)
        total = std::fma(chunk_weight[g * most_chunks + c], chunk_sum[g * most_chunks + c], total);
      const float inv_sum = 1.0f / total;
      for (int64_t d = 0; d < head_dim; ++d) o[d] *= inv_sum;
    }
  };

  const int64_t work = (most_stored + n) * head_dim * 2 * group;
  if (!split) {
    pool->parallel_for(
        0, n * kv_heads,
        [&](int64_t begin, int64_t end, int thread) {
          for (int64_t item = begin; item < end; ++item)
            attend(item / kv_heads, item % kv_heads, 0, capacity, false, thread);
        },
        min_chunk_for(work));
    return;
  }
  pool->parallel_for(
      0, n * kv_heads * most_chunks,
      [&](int64_t begin, int64_t end, int thread) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t c = item % most_chunks, token_head = item / most_chunks;
          attend(token_head / kv_heads, token_head % kv_heads, c * kChunkKeys, kChunkKeys, true,
                 thread);
        }
      },
      1);
  // The merge, per token and query head, exactly as attend merges in place.
  pool->parallel_for(
      0, n * heads,
      [&](int64_t begin, int64_t end, int thread) {
        float* weight = pool->scratch(thread);
        for (int64_t item = begin; item < end; ++item) {
          const int64_t t = item / heads, kvh = (item % heads) / group, g = item % group;
          float* o = out_of(t, kvh, g);
          std::fill_n(o, head_dim, 0.0f);
          int64_t chunks = 0;
          while (chunks < most_chunks && partial_of(t, kvh, chunks, g)[2] > 0) {
            weight[chunks] = partial_of(t, kvh, chunks, g)[0];
            ++chunks;
          }
          if (chunks == 0) continue;
          vec.exp_shifted(weight, chunks, *std::max_element(weight, weight + chunks));
          float total = 0.0f;
          for (int64_t c = 0; c < chunks; ++c) {
            const float* partial = partial_of(t, kvh, c, g);
            vec.axpy_rows(weight + c, partial + 3, 0, 1, o, head_dim);
            total = std::fma(weight[c], partial[1], total);
          }
          const float inv_sum = 1.0f / total;
          for (int64_t d = 0; d < head_dim; ++d) o[d] *= inv_sum;
        }
      },
      1);
}

}  // namespace tessera::cpu
