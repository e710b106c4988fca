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

float dot(const float* a, const float* b, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// One query head: scores into `scores` (slots + n), softmax, values into out.
void attend_one(const MaskedAttentionParams& p, int64_t i, int64_t h, float* scores) {
  const int64_t head_dim = p.q.dim(2);
  const int64_t slots = p.cache_k.dim(1);
  const int64_t n = p.q.dim(0);
  const int64_t kv = h / (p.q.dim(1) / p.cache_k.dim(0));
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const float* q = p.q.f32() + i * p.q.stride[0] + h * p.q.stride[1];
  const float* mask = p.mask.f32() + i * p.mask.stride[0];
  const auto cache_key = [&](const Tensor& t, int64_t s) {
    return t.f32() + kv * t.stride[0] + s * t.stride[1];
  };
  const auto batch_key = [&](const Tensor& t, int64_t j) {
    return t.f32() + j * t.stride[0] + kv * t.stride[1];
  };
  constexpr float kHidden = -std::numeric_limits<float>::infinity();
  float top = kHidden;
  for (int64_t c = 0; c < slots + n; ++c) {
    if (mask[c] == kHidden) continue;
    const float* key = c < slots ? cache_key(p.cache_k, c) : batch_key(p.batch_k, c - slots);
    scores[c] = dot(q, key, head_dim) * scale + mask[c];
    top = std::max(top, scores[c]);
  }
  float* out = p.out.f32() + i * p.out.stride[0] + h * p.out.stride[1];
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0;
  if (top == kHidden) return;  // sees nothing
  float sum = 0;
  for (int64_t c = 0; c < slots + n; ++c) {
    if (mask[c] == kHidden) continue;
    const float weight = std::exp(scores[c] - top);
    sum += weight;
    const float* value = c < slots ? cache_key(p.cache_v, c) : batch_key(p.batch_v, c - slots);
    for (int64_t d = 0; d < head_dim; ++d) out[d] += weight * value[d];
  }
  for (int64_t d = 0; d < head_dim; ++d) out[d] /= sum;
}

}  // namespace

void masked_attention(const MaskedAttentionParams& params, ThreadPool* pool) {
  const int64_t n = params.q.dim(0);
  const int64_t heads = params.q.dim(1);
  const auto width = static_cast<std::size_t>(params.cache_k.dim(1) + n);
  const auto run = [&](int64_t begin, int64_t end, float* scores) {
    for (int64_t item = begin; item < end; ++item) attend_one(params, item / heads, item % heads, scores);
  };
  if (pool == nullptr) {
    std::vector<float> scores(width);
    run(0, n * heads, scores.data());
    return;
  }
  if (pool->scratch_size() < width && !pool->reserve_scratch(width)) {
    std::vector<float> scores(width);  // no pool scratch to be had: this call's own
    run(0, n * heads, scores.data());
    return;
  }
  pool->parallel_for(0, n * heads, [&](int64_t begin, int64_t end, int thread) {
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
