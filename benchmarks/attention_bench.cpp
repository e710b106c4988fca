// The CPU backend's attention and RMSNorm ops on one thread, at the shapes of
// the 110m (12 heads of 64, one per kv head) and 1.1b (32 query heads of 64
// over 4 kv heads) models: a 128-token prompt with no stored keys (causal),
// and one decoded token over 512 or 2048 stored keys; each against the
// same attention written as plain loops (one query head and key at a time,
// std::exp: the baseline, "naive"). attention_pairs/s counts (query head,
// visible key) pairs: each is one score and one value row summed. Read the
// figures as ratios within one run.
//
//   build/release/benchmarks/attention_bench --benchmark_repetitions=3
//
// Arguments: a dummy 0 (so ctest's /0/ filter picks every case), the shape
// (0: 110m, 1: 1.1b), tokens in the batch, stored keys, the implementation
// (0: the CPU backend's op, 1: plain loops). RMSNorm: tokens, then 0: the
// op, 1: a plain loop.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/rope_table.h"
#include "backends/cpu/thread_pool.h"
#include "benchmarks/bench_values.h"

namespace {

using namespace tessera;
using namespace tessera::cpu;
using tessera::bench::random_values;

struct Shape {
  const char* name;
  int64_t heads, kv_heads, head_dim;
};
constexpr Shape kShapes[] = {{"110m", 12, 12, 64}, {"1.1b", 32, 4, 64}};

// The baseline: per token and query head, every visible key scored by a
// plain loop, softmax by std::exp, values summed; same inputs and layout.
void naive_attention(const AttentionParams& a, const float* k, const float* v, int64_t stored,
                     std::vector<float>& scores) {
  const int64_t n = a.q.dim(0), heads = a.q.dim(1), hd = a.q.dim(2), kvh = a.batch_k.dim(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t g = h / (heads / kvh);
      const float* q = a.q.f32() + (t * heads + h) * hd;
      const int64_t keys = stored + t + 1;
      const auto key = [&](int64_t j) {
        return j < stored ? k + (g * stored + j) * hd
                          : a.batch_k.f32() + ((j - stored) * kvh + g) * hd;
      };
      const auto value = [&](int64_t j) {
        return j < stored ? v + (g * stored + j) * hd
                          : a.batch_v.f32() + ((j - stored) * kvh + g) * hd;
      };
      float top = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        float dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += q[d] * key(j)[d];
        scores[static_cast<std::size_t>(j)] = dot * scale;
        top = std::max(top, scores[static_cast<std::size_t>(j)]);
      }
      float sum = 0;
      for (int64_t j = 0; j < keys; ++j)
        sum += scores[static_cast<std::size_t>(j)] =
            std::exp(scores[static_cast<std::size_t>(j)] - top);
      float* o = a.out.f32() + (t * heads + h) * hd;
      std::fill_n(o, hd, 0.0f);
      for (int64_t j = 0; j < keys; ++j)
        for (int64_t d = 0; d < hd; ++d) o[d] += scores[static_cast<std::size_t>(j)] * value(j)[d];
      for (int64_t d = 0; d < hd; ++d) o[d] /= sum;
    }
}

void BM_Attention(benchmark::State& state) {
  const Shape shape = kShapes[state.range(1)];
  const int64_t n = state.range(2), stored = state.range(3);
  const int64_t hd = shape.head_dim, kvh = shape.kv_heads;
  std::vector<float> q = random_values(static_cast<std::size_t>(n * shape.heads * hd), 1);
  std::vector<float> bk = random_values(static_cast<std::size_t>(n * kvh * hd), 2);
  std::vector<float> bv = random_values(static_cast<std::size_t>(n * kvh * hd), 3);
  std::vector<float> k = random_values(static_cast<std::size_t>(kvh * stored * hd), 4);
  std::vector<float> v = random_values(static_cast<std::size_t>(kvh * stored * hd), 5);
  std::vector<float> out(q.size());
  std::vector<int32_t> stored_positions(static_cast<std::size_t>(stored)), positions;
  for (int64_t j = 0; j < stored; ++j)
    stored_positions[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);
  for (int64_t t = 0; t < n; ++t) positions.push_back(static_cast<int32_t>(stored + t));
  KVSegment seg;
  seg.count = stored;
  seg.positions = stored_positions.data();
  seg.k = Tensor::contiguous(k.data(), DType::kF32, {kvh, stored, hd});
  seg.v = Tensor::contiguous(v.data(), DType::kF32, {kvh, stored, hd});
  const KVView view{std::span<const KVSegment>(&seg, stored > 0 ? 1 : 0)};
  // Causal within the batch.
  const int64_t words = (n + 63) / 64;
  std::vector<uint64_t> mask(static_cast<std::size_t>(n * words));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      mask[static_cast<std::size_t>(i * words + j / 64)] |= uint64_t{1} << (j % 64);
  const std::vector<int32_t> view_of(static_cast<std::size_t>(n), 0);
  AttentionParams a;
  a.q = Tensor::contiguous(q.data(), DType::kF32, {n, shape.heads, hd});
  a.batch_k = Tensor::contiguous(bk.data(), DType::kF32, {n, kvh, hd});
  a.batch_v = Tensor::contiguous(bv.data(), DType::kF32, {n, kvh, hd});
  a.positions = positions;
  a.views = std::span<const KVView>(&view, 1);
  a.view_of = view_of;
  a.in_batch = {mask, words};
  a.out = Tensor::contiguous(out.data(), DType::kF32, {n, shape.heads, hd});
  ThreadPool pool(1);
  RopeTable rope;
  const bool naive = state.range(4) == 1;
  std::vector<float> scores(static_cast<std::size_t>(stored + n));
  for (auto _ : state) {
    if (naive)
      naive_attention(a, k.data(), v.data(), stored, scores);
    else
      attention(a, rope, &pool);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  // Token t sees the stored keys and batch tokens 0..t.
  const double pairs =
      static_cast<double>(shape.heads) * static_cast<double>(n * stored + n * (n + 1) / 2);
  state.counters["attention_pairs/s"] = benchmark::Counter(
      pairs * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(shape.name) + (n == 1 ? " decode" : " prompt") +
                 (naive ? ", naive" : ", op"));
}

void BM_RmsNorm(benchmark::State& state) {
  const int64_t n = state.range(1), dim = 2048;
  std::vector<float> x = random_values(static_cast<std::size_t>(n * dim), 6);
  std::vector<float> w = random_values(static_cast<std::size_t>(dim), 7);
  std::vector<float> out(x.size());
  ThreadPool pool(1);
  const Tensor xt = Tensor::contiguous(x.data(), DType::kF32, {n, dim});
  const Tensor wt = Tensor::contiguous(w.data(), DType::kF32, {dim});
  const Tensor ot = Tensor::contiguous(out.data(), DType::kF32, {n, dim});
  const bool naive = state.range(2) == 1;
  for (auto _ : state) {
    if (naive) {
      for (int64_t t = 0; t < n; ++t) {
        const float* row = x.data() + t * dim;
        float squares = 0;
        for (int64_t i = 0; i < dim; ++i) squares += row[i] * row[i];
        const float inv = 1.0f / std::sqrt(squares / static_cast<float>(dim) + 1e-5f);
        for (int64_t i = 0; i < dim; ++i)
          out[static_cast<std::size_t>(t * dim + i)] =
              row[i] * inv * w[static_cast<std::size_t>(i)];
      }
    } else {
      rms_norm(xt, wt, 1e-5f, ot, &pool);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["floats/s"] =
      benchmark::Counter(static_cast<double>(n * dim) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.SetLabel(naive ? "naive" : "op");
}

void AttentionCases(benchmark::internal::Benchmark* b) {
  for (const int64_t naive : {0, 1}) {
    b->Args({0, 0, 128, 0, naive});
    b->Args({0, 1, 128, 0, naive});
    b->Args({0, 0, 1, 512, naive});
    b->Args({0, 1, 1, 512, naive});
    b->Args({0, 1, 1, 2048, naive});
  }
}
BENCHMARK(BM_Attention)->Apply(AttentionCases)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RmsNorm)->ArgsProduct({{0}, {1, 128}, {0, 1}})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
