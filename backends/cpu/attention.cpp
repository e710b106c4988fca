// Grouped-query attention on the CPU (cpu_kernels.h): per token and kv head,
// every visible key is scored once for all the query heads that read it, in
// one fixed order (stored segments, then the batch's own keys), and the
// softmax is taken over chunks of kChunkKeys visible keys, flash-decoding
// style: per chunk its maximum, its exp sum and its value sum; then the
// chunks merged in order. The chunks are fixed by the key's place in that
// order, never by the thread count, so a long context can be split across
// threads (one work item per chunk) and give the bits one thread gives.
// Stored entries of another branch (BIM) are left out like those the window
// rule cuts: they take no place in that order.
//
// attention_pass.h: what a call settles once; visible_keys.h: which keys a
// query sees, in that order; query_attention.h: one token and kv head;
// encoded_segment_reader.h: segments read through their codec.
#include <algorithm>
#include <cmath>

#include "backends/cpu/attention_pass.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_support.h"
#include "backends/cpu/query_attention.h"

namespace tessera::cpu {
namespace {

void check_shapes(const AttentionParams& a) {
  const int64_t n = a.q.dim(0), heads = a.q.dim(1), head_dim = a.q.dim(2);
  const int64_t kv_heads = a.batch_k.dim(1);
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
  TESSERA_DCHECK(a.branches.empty() || static_cast<int64_t>(a.branches.size()) == n,
                 "attention: one branch per token, or none");
  TESSERA_DCHECK(inner_contiguous(a.q) && inner_contiguous(a.out) && inner_contiguous(a.batch_k) &&
                     inner_contiguous(a.batch_v),
                 "attention: inner stride");
  (void)n, (void)heads, (void)head_dim, (void)kv_heads;
}

// One work item per (token, kv head), head by head: a prompt's tokens one
// after another over the same kv head's keys and values, which stay in
// cache between them (token by token, each token read every head's K/V in
// turn: at depth, more than the L3 holds).
void attend_whole(const AttentionPass& pass) {
  const int64_t work = pass.capacity * pass.head_dim * 2 * pass.group;
  pass.pool.parallel_for(
      0, pass.n * pass.kv_heads,
      [&](int64_t begin, int64_t end, int thread) {
        for (int64_t item = begin; item < end; ++item)
          QueryAttention(pass, item % pass.n, item / pass.n, thread).attend_all();
      },
      min_chunk_for(work));
}

// One work item per (token, kv head, chunk), each to its partials.
void attend_by_chunk(const AttentionPass& pass) {
  pass.pool.parallel_for(
      0, pass.n * pass.kv_heads * pass.most_chunks,
      [&](int64_t begin, int64_t end, int thread) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t c = item % pass.most_chunks, token_head = item / pass.most_chunks;
          QueryAttention(pass, token_head / pass.kv_heads, token_head % pass.kv_heads, thread)
              .attend_chunk(c);
        }
      },
      1);
}

// Query head g of token t and kv head kvh: its chunks' partials merged in
// order, exactly as QueryAttention merges them in place. `weight` holds
// most_chunks floats.
void merge_partials(const AttentionPass& pass, int64_t t, int64_t kvh, int64_t g, float* weight) {
  float* o = pass.output(t, kvh, g);
  std::fill_n(o, pass.head_dim, 0.0f);
  int64_t chunks = 0;
  while (chunks < pass.most_chunks && pass.partial(t, kvh, chunks, g)[2] > 0) {
    weight[chunks] = pass.partial(t, kvh, chunks, g)[0];
    ++chunks;
  }
  if (chunks == 0) return;
  pass.vec.exp_shifted(weight, chunks, *std::max_element(weight, weight + chunks));
  float total = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* partial = pass.partial(t, kvh, c, g);
    pass.vec.axpy_rows(weight + c, partial + AttentionPass::kPartialHeader, 0, 1, o, pass.head_dim);
    total = std::fma(weight[c], partial[1], total);
  }
  const float inv_sum = 1.0f / total;
  for (int64_t d = 0; d < pass.head_dim; ++d) o[d] *= inv_sum;
}

void merge_all_partials(const AttentionPass& pass) {
  pass.pool.parallel_for(
      0, pass.n * pass.heads,
      [&](int64_t begin, int64_t end, int thread) {
        for (int64_t item = begin; item < end; ++item)
          merge_partials(pass, item / pass.heads, (item % pass.heads) / pass.group,
                         item % pass.group, pass.pool.scratch(thread));
      },
      1);
}

}  // namespace

void attention(const AttentionParams& a, const RopeTable& rope, ThreadPool* pool,
               int64_t context_hint) {
  TESSERA_DCHECK(pool != nullptr, "attention: no thread pool");
  check_shapes(a);
  const AttentionPass pass(a, rope, *pool, context_hint);
  if (!pass.split) {
    attend_whole(pass);
    return;
  }
  attend_by_chunk(pass);
  merge_all_partials(pass);
}

}  // namespace tessera::cpu
