#include "backends/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/interleaved_rows.h"
#include "backends/cpu/rope_table.h"
#include "core/compressor/compressor.h"
#include "core/status/status.h"
#include "core/tensor/block_quant.h"

// Shape checks cost nothing in release builds; callers validate user input.
#ifndef NDEBUG
#define TESSERA_DCHECK(cond, msg) TESSERA_CHECK(cond, msg)
#else
#define TESSERA_DCHECK(cond, msg) \
  do {                            \
  } while (0)
#endif

namespace tessera::cpu {
namespace {

// Dot product with a fixed reduction order: lane l accumulates the elements
// i = l (mod kLanes) of the kLanes-aligned prefix, the lanes are combined in
// a fixed tree, then the tail is added in order. The independent lanes let the
// compiler use vector registers at -O2 without reassociating anything.
constexpr int kLanes = 8;

inline float dot(const float* a, const float* b, int64_t k) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < k; ++i) s += a[i] * b[i];
  return s;
}

// Kernels return nothing, so they cannot report a failed allocation. The
// backend sizes the scratch for the longest context at init (refusing one it
// cannot have), so growing here only happens for a row longer than that, a
// few KiB at most.
void reserve_or_die(ThreadPool& pool, std::size_t floats) {
  TESSERA_CHECK(pool.reserve_scratch(floats), "cpu kernels: out of memory growing scratch");
}

// Enough work per chunk that waking a thread pays off.
int64_t min_chunk_for(int64_t work_per_index, int64_t target = 32768) {
  return std::max<int64_t>(1, target / std::max<int64_t>(work_per_index, 1));
}

#ifndef NDEBUG
bool inner_contiguous(const Tensor& t) {
  return t.rank == 0 || t.stride[t.rank - 1] == 1;
}
#endif

}  // namespace

void embedding(const Tensor& table, std::span<const int32_t> tokens, const Tensor& out,
               ThreadPool* pool, bool interleaved) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t dim = table.dim(1);
  TESSERA_DCHECK(pool != nullptr, "embedding: no thread pool");
  TESSERA_DCHECK(table.rank == 2 && out.rank == 2, "embedding: tables and outputs are 2-D");
  TESSERA_DCHECK(out.dtype == DType::kF32 && out.dim(0) == n && out.dim(1) == dim,
                 "embedding: out must be f32 [n, dim]");
  TESSERA_DCHECK(inner_contiguous(table) && inner_contiguous(out), "embedding: inner stride");
#ifndef NDEBUG
  for (int32_t token : tokens)
    TESSERA_DCHECK(token >= 0 && token < table.dim(0), "embedding: token out of range");
#endif
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          // Any weight type, through the reference decoder (a row per token).
          const int64_t row = tokens[static_cast<std::size_t>(t)];
          if (interleaved) {
            dequantize_interleaved_row(table.dtype, static_cast<const uint8_t*>(table.data),
                                       dtype_row_bytes(table.dtype, table.stride[0]), row, dim,
                                       out.f32() + t * out.stride[0]);
            continue;
          }
          dequantize_row(table.dtype,
                         static_cast<const uint8_t*>(table.data) +
                             dtype_row_bytes(table.dtype, row * table.stride[0]),
                         dim, out.f32() + t * out.stride[0]);
        }
      },
      min_chunk_for(dim));
}

void matmul(const Tensor& x, const Tensor& w, const Tensor& out, ThreadPool* pool,
            bool interleaved) {
  const int64_t n = x.dim(0);
  const int64_t k = x.dim(1);
  const int64_t m = w.dim(0);
  TESSERA_DCHECK(pool != nullptr, "matmul: no thread pool");
  TESSERA_DCHECK(x.rank == 2 && w.rank == 2 && out.rank == 2, "matmul: operands are 2-D");
  TESSERA_DCHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32, "matmul: x, out are f32");
  TESSERA_DCHECK(w.dim(1) == k, "matmul: w is [m, k]");
  TESSERA_DCHECK(out.dim(0) == n && out.dim(1) == m, "matmul: out is [n, m]");
  TESSERA_DCHECK(inner_contiguous(x) && inner_contiguous(w) && inner_contiguous(out),
                 "matmul: inner stride");
  const DotKernels& kernels = best_dot_kernels();
  const float* xd = x.f32();
  const int64_t xs = x.stride[0];
  // Rows start at whole blocks: one byte stride, computed once (not per row).
  const std::size_t row_bytes = dtype_row_bytes(w.dtype, w.stride[0]);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  // Each thread computes the panel of its rows against every token; chunks
  // are whole register tiles of rows (the kernels' tiles are at most 16) and
  // whole groups of interleaved rows.
  const auto for_row_panels = [&](int64_t work_per_row, auto&& panel) {
    constexpr int64_t kChunkRows = kGroupRows;
    const int64_t tiles = (m + kChunkRows - 1) / kChunkRows;
    pool->parallel_for(
        0, tiles,
        [&](int64_t begin, int64_t end, int) {
          const int64_t first = begin * kChunkRows, last = std::min(m, end * kChunkRows);
          panel(wd + static_cast<std::size_t>(first) * row_bytes, first, last - first);
        },
        min_chunk_for(kChunkRows * work_per_row));
  };

  // Block-quantized weights meet activations quantized once per token for
  // all the rows: Q8 blocks (one scale per 32) for q8_0 and q4_0, Q8K blocks
  // (one per 256) for q4_K and q6_K; then integer dot products.
  const auto row_panels = [&](QuantPanelKernel kernel, const void* xq, int64_t stride,
                              int64_t blocks) {
    for_row_panels(n * k / 4, [&](const uint8_t* rows, int64_t first, int64_t count) {
      kernel({rows, row_bytes, count, xq, stride, n, blocks, out.f32() + first, out.stride[0]});
    });
  };
  if (const QuantPanelKernel kernel = kquant_panel_for(kernels, w.dtype, interleaved)) {
    const int64_t blocks = k / 256;
    auto* xq = static_cast<Q8KBlock*>(
        pool->shared_scratch(static_cast<std::size_t>(n * blocks) * sizeof(Q8KBlock)));
    TESSERA_CHECK(xq != nullptr, "cpu kernels: out of memory for quantized activations");
    pool->parallel_for(
        0, n,
        [&](int64_t begin, int64_t end, int) {
          for (int64_t t = begin; t < end; ++t)
            kernels.quantize_q8k(xd + t * xs, k, xq + t * blocks);
        },
        min_chunk_for(k));
    row_panels(kernel, xq, blocks, blocks);
    return;
  }
  if (const QuantPanelKernel kernel = integer_panel_for(kernels, w.dtype, interleaved)) {
    // The set's own arrangement of each token's blocks, after the Q8Blocks
    // on the way there (one token per thread at a time) when it arranges.
    const int64_t blocks = k / 32;
    const IntegerActivationLayout layout = integer_activation_layout(kernels, blocks);
    const std::size_t q8_bytes = kernels.arrange_q8 == nullptr
                                     ? 0
                                     : static_cast<std::size_t>(blocks) * sizeof(Q8Block) *
                                           static_cast<std::size_t>(pool->threads());
    const std::size_t arranged_offset = (q8_bytes + 63) / 64 * 64;
    auto* scratch = static_cast<uint8_t*>(
        pool->shared_scratch(arranged_offset + static_cast<std::size_t>(n) * layout.token_bytes));
    TESSERA_CHECK(scratch != nullptr, "cpu kernels: out of memory for quantized activations");
    uint8_t* xq = scratch + arranged_offset;
    pool->parallel_for(
        0, n,
        [&](int64_t begin, int64_t end, int thread) {
          auto* q8 = reinterpret_cast<Q8Block*>(scratch) + thread * blocks;
          for (int64_t t = begin; t < end; ++t)
            quantize_for_integer_kernel(kernels, w.dtype, xd + t * xs, k, q8,
                                        xq + static_cast<std::size_t>(t) * layout.token_bytes);
        },
        min_chunk_for(k));
    row_panels(kernel, xq, layout.stride, blocks);
    return;
  }

  // f32, f16 and bf16 rows are read in place, converted in registers.
  const FloatPanelKernel kernel = float_panel_for(kernels, w.dtype);
  TESSERA_DCHECK(kernel != nullptr, "matmul: weight type without a kernel");
  for_row_panels(n * k, [&](const uint8_t* rows, int64_t first, int64_t count) {
    kernel({rows, row_bytes, count, xd, xs, n, k, out.f32() + first, out.stride[0]});
  });
}

void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out,
              ThreadPool* pool) {
  const int64_t n = x.dim(0);
  const int64_t d = x.dim(1);
  TESSERA_DCHECK(pool != nullptr, "rms_norm: no thread pool");
  TESSERA_DCHECK(x.rank == 2 && out.rank == 2 && out.dim(0) == n && out.dim(1) == d,
                 "rms_norm: x and out are [n, d]");
  TESSERA_DCHECK(weight.elements() == d, "rms_norm: weight is [d]");
  TESSERA_DCHECK(inner_contiguous(x) && inner_contiguous(out) && inner_contiguous(weight),
                 "rms_norm: inner stride");
  const float* wd = weight.f32();
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          const float* xt = x.f32() + t * x.stride[0];
          float* ot = out.f32() + t * out.stride[0];
          const float mean = dot(xt, xt, d) / static_cast<float>(d);
          const float scale = 1.0f / std::sqrt(mean + eps);
          for (int64_t i = 0; i < d; ++i) ot[i] = wd[i] * (scale * xt[i]);
        }
      },
      min_chunk_for(d));
}

void rope(const Tensor& x, std::span<const int32_t> positions, const RopeTable& table,
          ThreadPool* pool) {
  const int64_t n = x.dim(0);
  const int64_t heads = x.dim(1);
  const int64_t head_dim = x.dim(2);
  TESSERA_DCHECK(pool != nullptr, "rope: no thread pool");
  TESSERA_DCHECK(x.rank == 3 && x.dtype == DType::kF32, "rope: x is f32 [n, heads, head_dim]");
  TESSERA_DCHECK(head_dim % 2 == 0, "rope: head_dim must be even");
  TESSERA_DCHECK(static_cast<int64_t>(positions.size()) == n, "rope: one position per token");
  TESSERA_DCHECK(inner_contiguous(x), "rope: inner stride");
  pool->parallel_for(
      0, n,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) {
          float* xt = x.f32() + t * x.stride[0];
          const int64_t pos = positions[static_cast<std::size_t>(t)];
          for (int64_t h = 0; h < heads; ++h) {
            float* head = xt + h * x.stride[1];
            table.rotate(head, pos, head);
          }
        }
      },
      min_chunk_for(heads * head_dim * 4));
}

void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, ThreadPool* pool) {
  const int64_t count = out.elements();
  TESSERA_DCHECK(pool != nullptr, "swiglu: no thread pool");
  TESSERA_DCHECK(gate.elements() == count && up.elements() == count, "swiglu: shapes differ");
  TESSERA_DCHECK(gate.is_contiguous() && up.is_contiguous() && out.is_contiguous(),
                 "swiglu: tensors must be contiguous");
  const float* g = gate.f32();
  const float* u = up.f32();
  float* o = out.f32();
  const auto silu_mul = best_dot_kernels().silu_mul;
  pool->parallel_for(
      0, count,
      [&](int64_t begin, int64_t end, int) {
        silu_mul(g + begin, u + begin, o + begin, end - begin);
      },
      min_chunk_for(8));
}

void add(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool) {
  const int64_t count = out.elements();
  TESSERA_DCHECK(pool != nullptr, "add: no thread pool");
  TESSERA_DCHECK(a.elements() == count && b.elements() == count, "add: shapes differ");
  TESSERA_DCHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(),
                 "add: tensors must be contiguous");
  const float* ad = a.f32();
  const float* bd = b.f32();
  float* od = out.f32();
  pool->parallel_for(
      0, count,
      [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) od[i] = ad[i] + bd[i];
      },
      min_chunk_for(1, 65536));
}

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
  for (const KVView& view : a.views) most_stored = std::max(most_stored, view.entries());
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const bool rotate_stored = a.stored_keys == StoredKeys::kBeforeRope;
  // Per thread: scores [group, capacity] (a head's row contiguous for its
  // softmax); a rotated key [head_dim]; 1/sum per
  // head [group]; for encoded segments, whose records hold one kv head or a
  // token's kv_heads (KVSegment::heads_per_record), so up to kv_width floats:
  // queries in the codec's domain [group, kv_width], one segment's scores or
  // weights per head [group, most_stored], value sums in the codec's domain
  // [group, kv_width] and one record-wide vector [kv_width].
  const int64_t kv_width = kv_heads * head_dim;
  const int64_t capacity = most_stored + n;  // visible keys per head, at most
  const int64_t scores_floats = capacity * group;
  // The vector steps (dot products, exp, value sums) of the fastest kernel
  // set: the same bits in every set (dot_kernels.h).
  const DotKernels& vec = best_dot_kernels();
  const int64_t scratch =
      scores_floats + head_dim + group + 2 * group * kv_width + group * most_stored + kv_width;
  // Sized once for the longest context the caller announced, so decoding
  // never grows it.
  const int64_t longest = std::max(most_stored + n, context_hint);
  reserve_or_die(*pool,
                 static_cast<std::size_t>(std::max(scratch, longest * 2 * group + head_dim + group +
                                                                2 * group * kv_width + kv_width)));

  pool->parallel_for(
      0, n * kv_heads,
      [&](int64_t begin, int64_t end, int thread) {
        float* scores = pool->scratch(thread);
        float* rotated = scores + scores_floats;
        float* inv_sum = rotated + head_dim;
        float* q_codec = inv_sum + group;
        float* acc = q_codec + group * kv_width;
        float* seg_rows = acc + group * kv_width;
        float* record_wide = seg_rows + group * most_stored;
        for (int64_t item = begin; item < end; ++item) {
          const int64_t t = item / kv_heads;
          const int64_t kvh = item % kv_heads;
          const int64_t position = a.positions[static_cast<std::size_t>(t)];
          const KVView& view =
              a.views[static_cast<std::size_t>(a.view_of[static_cast<std::size_t>(t)])];
          const int64_t shift = a.rule.sink_shift(position);
          const float* q0 = a.q.f32() + t * a.q.stride[0] + kvh * group * a.q.stride[1];
          const auto out_of = [&](int64_t g) {
            return a.out.f32() + t * a.out.stride[0] + (kvh * group + g) * a.out.stride[1];
          };

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
          // Visits every visible decoded (key, value) in the fixed order:
          // stored segments, then batch tokens. Encoded segments are handed
          // to `encoded_segment` whole, in their place in that order.
          const auto each_visible = [&](auto&& visit, auto&& encoded_segment) {
            for (const KVSegment& seg : view.segments) {
              if (seg.encoded()) {
                encoded_segment(seg);
                continue;
              }
              const float* ks = seg.k.f32() + kvh * seg.k.stride[0];
              const float* vs = seg.v.f32() + kvh * seg.v.stride[0];
              for (int64_t j = 0; j < seg.count; ++j) {
                const int64_t p = seg.positions[j];
                if (!a.rule.sees(position, p)) continue;
                visit(ks + j * seg.k.stride[1], vs + j * seg.v.stride[1], p, rotate_stored);
              }
            }
            for (int64_t j = 0; j < n; ++j) {
              if (!a.in_batch.sees(t, j)) continue;
              const int64_t p = a.positions[static_cast<std::size_t>(j)];
              if (!a.rule.sees(position, p)) continue;
              visit(a.batch_k.f32() + j * a.batch_k.stride[0] + kvh * a.batch_k.stride[1],
                    a.batch_v.f32() + j * a.batch_v.stride[0] + kvh * a.batch_v.stride[1], p,
                    rotate_stored);
            }
          };

          // Scores: head g's for the visible keys in order at g * capacity.
          int64_t visible = 0;
          const Compressor* codec = nullptr;  // of the encoded segments, if any
          // Their records: how many floats one decodes to, where this kv
          // head's head_dim of them starts, and which run of records holds it.
          int64_t record_width = head_dim;
          int64_t head_offset = 0;
          int64_t record_run = kvh;
          each_visible(
              [&](const float* key, const float*, int64_t p, bool before_rope) {
                const float* k = key_for(key, p, before_rope);
                for (int64_t g = 0; g < group; ++g)
                  scores[g * capacity + visible] =
                      vec.dot_f32(q0 + g * a.q.stride[1], k, head_dim) * scale;
                ++visible;
              },
              [&](const KVSegment& seg) {
                // The codec scores its records against the queries in its own
                // domain, all the group's heads in one pass over the records.
                // The queries are brought there once per token and kv head
                // (every segment of a layer has the layer's codec). A record
                // of several heads is scored against the query placed at this
                // head's floats, zeros elsewhere: the dot product of the head's
                // part, exactly.
                TESSERA_DCHECK(codec == nullptr || codec == seg.codec,
                               "attention: one codec per layer");
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
                  return;
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
              });

          // Softmax per head, normalised after the values are summed (as a
          // single head would: the same arithmetic for any group size).
          for (int64_t g = 0; g < group; ++g) {
            std::fill_n(out_of(g), head_dim, 0.0f);
            float* row = scores + g * capacity;
            float max_score = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j < visible; ++j) max_score = std::max(max_score, row[j]);
            vec.exp_shifted(row, visible, max_score);
            float sum = 0.0f;
            for (int64_t j = 0; j < visible; ++j) sum += row[j];
            inv_sum[g] = 1.0f / sum;
          }
          if (visible == 0) continue;
          if (codec) std::fill_n(acc, group * record_width, 0.0f);
          int64_t j = 0;
          each_visible(
              [&](const float*, const float* v, int64_t, bool) {
                for (int64_t g = 0; g < group; ++g)
                  vec.axpy(scores[g * capacity + j], v, out_of(g), head_dim);
                ++j;
              },
              [&](const KVSegment& seg) {
                // Values summed by the codec in its domain, all the group's
                // heads in one pass over the records, brought back once below.
                const uint8_t* records = seg.v_records + record_run * seg.record_head_stride;
                const int64_t first = j;
                for (int64_t g = 0; g < group; ++g) {
                  float* seg_row = seg_rows + g * seg.count;
                  if (!a.rule.limits()) {  // every entry visible: no per-entry test
                    std::copy_n(scores + g * capacity + first, seg.count, seg_row);
                    j = first + seg.count;
                    continue;
                  }
                  int64_t k = first;
                  for (int64_t e = 0; e < seg.count; ++e)
                    seg_row[e] =
                        a.rule.sees(position, seg.positions[e]) ? scores[g * capacity + k++] : 0.0f;
                  j = k;
                }
                seg.codec->accumulate_encoded_heads(seg_rows, static_cast<int>(group), records,
                                                    seg.count, static_cast<int>(record_width), acc);
              });
          for (int64_t g = 0; g < group; ++g) {
            float* o = out_of(g);
            if (codec) {  // this head's part of the record-wide sum
              codec->finish_output(acc + g * record_width, static_cast<int>(record_width),
                                   record_wide);
              for (int64_t d = 0; d < head_dim; ++d) o[d] += record_wide[head_offset + d];
            }
            for (int64_t d = 0; d < head_dim; ++d) o[d] *= inv_sum[g];
          }
        }
      },
      min_chunk_for((most_stored + n) * head_dim * 2 * group));
}

}  // namespace tessera::cpu
