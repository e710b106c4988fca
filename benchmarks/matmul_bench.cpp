// The matmul kernels per weight type and shape, on one thread: the fastest
// kernel set this CPU runs (avx512 / avx2) against the scalar reference in
// the same run. Decode (1 token: a matrix-vector product that reads every
// weight once) reports weight bytes/s, to set beside memory_bandwidth_bench;
// prompts (32 tokens) report multiply-adds/s. Shapes are the 1.1b model's
// attention (2048 x 2048), feed-forward (5632 x 2048) and output (32000 x
// 2048) matrices.
//
//   build/release/benchmarks/matmul_bench --benchmark_counters_tabular=true
//
// Arguments: weight type (index in kTypes), tokens, rows, kernel set (0 the
// fastest, 1 scalar).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/interleaved_rows.h"
#include "benchmarks/bench_values.h"
#include "core/tensor/block_quant.h"

namespace {

using tessera::DType;
using namespace tessera::cpu;

constexpr DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                            DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};
constexpr int64_t kCols = 2048;

// Weights and activations in [-0.05, 0.05): the scales come out as real
// weights' do.
std::vector<float> random_values(std::size_t n, uint32_t seed) {
  return tessera::bench::random_values(n, seed, 0.1f);
}

void BM_Matmul(benchmark::State& state) {
  const DType dtype = kTypes[state.range(0)];
  const int64_t tokens = state.range(1), rows = state.range(2);
  const DotKernels& set = state.range(3) == 0 ? best_dot_kernels() : scalar_dot_kernels();
  const std::vector<float> w = random_values(static_cast<std::size_t>(rows * kCols), 1);
  std::vector<uint8_t> weights(tessera::dtype_row_bytes(dtype, rows * kCols));
  tessera::quantize_row(dtype, w.data(), rows * kCols, weights.data());
  const std::size_t row_bytes = tessera::dtype_row_bytes(dtype, kCols);
  // Rows as the CPU backend holds them for this set: interleaved in groups
  // when it has kernels for that.
  const bool interleaved = reads_interleaved(set, dtype) && interleavable(dtype, rows, kCols);
  if (interleaved) {
    std::vector<uint8_t> groups(weights.size());
    for (int64_t g = 0; g < rows; g += group_rows(dtype))
      interleave_group(dtype, weights.data() + static_cast<std::size_t>(g) * row_bytes, row_bytes,
                       kCols, groups.data() + static_cast<std::size_t>(g) * row_bytes);
    weights.swap(groups);
  }
  const std::vector<float> x = random_values(static_cast<std::size_t>(tokens * kCols), 2);
  std::vector<float> out(static_cast<std::size_t>(tokens * rows));
  std::vector<Q8Block> q8(static_cast<std::size_t>(kCols / 32));
  const IntegerActivationLayout layout = integer_activation_layout(set, kCols / 32);
  std::vector<uint8_t> xq(layout.token_bytes * static_cast<std::size_t>(tokens));
  std::vector<Q8KBlock> q8k(static_cast<std::size_t>(tokens * kCols / 256));

  for (auto _ : state) {
    if (const FloatPanelKernel float_kernel = float_panel_for(set, dtype, interleaved)) {
      float_kernel(
          {weights.data(), row_bytes, rows, x.data(), kCols, tokens, kCols, out.data(), rows});
    } else if (const QuantPanelKernel integer_kernel = integer_panel_for(set, dtype, interleaved)) {
      for (int64_t t = 0; t < tokens; ++t)
        quantize_for_integer_kernel(set, dtype, x.data() + t * kCols, kCols, q8.data(),
                                    xq.data() + static_cast<std::size_t>(t) * layout.token_bytes);
      integer_kernel({weights.data(), row_bytes, rows, xq.data(), layout.stride, tokens, kCols / 32,
                      out.data(), rows});
    } else {
      for (int64_t t = 0; t < tokens; ++t)
        set.quantize_q8k(x.data() + t * kCols, kCols, q8k.data() + t * (kCols / 256));
      kquant_panel_for(set, dtype,
                       interleaved)({weights.data(), row_bytes, rows, q8k.data(), kCols / 256,
                                     tokens, kCols / 256, out.data(), rows});
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<double>(state.iterations());
  if (tokens == 1)
    state.counters["weight_bytes/s"] = benchmark::Counter(
        static_cast<double>(weights.size()) * iterations, benchmark::Counter::kIsRate);
  state.counters["madds/s"] = benchmark::Counter(
      static_cast<double>(rows * kCols * tokens) * iterations, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(tessera::dtype_name(dtype)) + " " + set.name +
                 (interleaved ? " interleaved" : ""));
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t type = 0; type < static_cast<int64_t>(std::size(kTypes)); ++type)
    for (const int64_t set : {0, 1}) {
      b->Args({type, 1, 2048, set});
      b->Args({type, 1, 5632, set});
      if (set == 0) b->Args({type, 1, 32000, set});  // the output matrix: past any cache
      b->Args({type, 32, 2048, set});
    }
}

BENCHMARK(BM_Matmul)->Apply(Shapes)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
