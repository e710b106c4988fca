// The fixed-shape step's attention and cache update (Backend::masked_attention,
// Backend::cache_update): plain loops, since the shapes are small and fixed
// (one block of queries over an embedded cache).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/thread_pool.h"

namespace tessera::cpu {
namespace {

// Query heads one call handles (a fixed array per query, no allocation).
constexpr int64_t kMaxHeads = 256;

// Eight running sums the compiler keeps in one vector register (a single
// sum is a serial chain it may not reorder).
float dot(const float* a, const float* b, int64_t n) {
  float lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += a[i + l] * b[i + l];
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (const float lane : lanes) sum += lane;
  return sum;
}

// One query, every head: the mask row is scanned once, each visible key
// scored for every head (scores: heads rows of slots + n), then the
// softmax-weighted values summed per head.
void attend_query(const MaskedAttentionParams& p, int64_t i, float* scores) {
  const int64_t head_dim = p.q.dim(2);
  const int64_t heads = p.q.dim(1);
  const int64_t slots = p.cache_k.dim(1);
  const int64_t width = slots + p.q.dim(0);
  const int64_t group = heads / p.cache_k.dim(0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const float* mask = p.mask.f32() + i * p.mask.stride[0];
  const auto key_of = [&](const Tensor& cache, const Tensor& batch, int64_t c, int64_t kv) {
    return c < slots ? cache.f32() + kv * cache.stride[0] + c * cache.stride[1]
                     : batch.f32() + (c - slots) * batch.stride[0] + kv * batch.stride[1];
  };
  constexpr float kHidden = -std::numeric_limits<float>::infinity();
  float top[kMaxHeads];
  float sum[kMaxHeads];
  for (int64_t h = 0; h < heads; ++h) top[h] = kHidden;
  for (int64_t c = 0; c < width; ++c) {
    if (mask[c] == kHidden) continue;
    for (int64_t h = 0; h < heads; ++h) {
      const float* q = p.q.f32() + i * p.q.stride[0] + h * p.q.stride[1];
      const float score =
          dot(q, key_of(p.cache_k, p.batch_k, c, h / group), head_dim) * scale + mask[c];
      scores[h * width + c] = score;
      top[h] = std::max(top[h], score);
    }
  }
  for (int64_t h = 0; h < heads; ++h) {
    float* out = p.out.f32() + i * p.out.stride[0] + h * p.out.stride[1];
    for (int64_t d = 0; d < head_dim; ++d) out[d] = 0;
    sum[h] = 0;
  }
  if (top[0] == kHidden) return;  // sees nothing (every head alike)
  for (int64_t c = 0; c < width; ++c) {
    if (mask[c] == kHidden) continue;
    for (int64_t h = 0; h < heads; ++h) {
      const float weight = std::exp(scores[h * width + c] - top[h]);
      sum[h] += weight;
      const float* value = key_of(p.cache_v, p.batch_v, c, h / group);
      float* out = p.out.f32() + i * p.out.stride[0] + h * p.out.stride[1];
      for (int64_t d = 0; d < head_dim; ++d) out[d] += weight * value[d];
    }
  }
  for (int64_t h = 0; h < heads; ++h) {
    float* out = p.out.f32() + i * p.out.stride[0] + h * p.out.stride[1];
    for (int64_t d = 0; d < head_dim; ++d) out[d] /= sum[h];
  }
}

}  // namespace

void masked_attention(const MaskedAttentionParams& params, ThreadPool* pool) {
  const int64_t n = params.q.dim(0);
  const int64_t heads = params.q.dim(1);
  TESSERA_CHECK(heads <= kMaxHeads, "masked_attention: too many query heads");
  const auto scratch = static_cast<std::size_t>(heads * (params.cache_k.dim(1) + n));
  const auto run = [&](int64_t begin, int64_t end, float* scores) {
    for (int64_t i = begin; i < end; ++i) attend_query(params, i, scores);
  };
  if (pool == nullptr || (pool->scratch_size() < scratch && !pool->reserve_scratch(scratch))) {
    std::vector<float> scores(scratch);  // no pool scratch to be had: this call's own
    run(0, n, scores.data());
    return;
  }
  pool->parallel_for(0, n, [&](int64_t begin, int64_t end, int thread) {
    run(begin, end, pool->scratch(thread));
  });
}

void cache_update(const Tensor& cache, const Tensor& keep, const Tensor& insert,
                  const Tensor& rows) {
  const int64_t kv_heads = cache.dim(0);
  const int64_t slots = cache.dim(1);
  const int64_t head_dim = cache.dim(2);
  const int64_t n = insert.dim(1);
  for (int64_t s = 0; s < slots; ++s) {
    const float k = keep.f32()[s];
    const float* into = insert.f32() + s * insert.stride[0];
    // A slot kept whole and given nothing stays as it is (old * 1 + 0): the
    // formula's result without touching it.
    bool inserted = false;
    for (int64_t j = 0; j < n; ++j) inserted = inserted || into[j] != 0.0f;
    if (k == 1.0f && !inserted) continue;
    for (int64_t h = 0; h < kv_heads; ++h) {
      float* slot = cache.f32() + h * cache.stride[0] + s * cache.stride[1];
      // keep * old, with a dropped slot's old contents never read (0 * NaN).
      for (int64_t d = 0; d < head_dim; ++d) slot[d] = k != 0.0f ? slot[d] * k : 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        if (into[j] == 0.0f) continue;
        const float* row = rows.f32() + j * rows.stride[0] + h * rows.stride[1];
        for (int64_t d = 0; d < head_dim; ++d) slot[d] += into[j] * row[d];
      }
    }
  }
}

}  // namespace tessera::cpu
