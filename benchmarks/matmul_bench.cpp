// The matmul kernels per weight type and shape, on one thread: the fastest
// kernel set this CPU runs (avx512 / avx2) against the scalar reference in
// the same run. Decode (1 token: a matrix-vector product that reads every
// weight once) reports weight bytes/s, to set beside memory_bandwidth_bench;
// prompts (32 tokens) report multiply-adds/s. Shapes are the 1.1b model's
// attention (2048 x 2048), feed-forward (5632 x 2048) and output (32000 x
// 2048) matrices.
//
// BM_DecodeFromMemory is decode as a model meets it: six layers of the 1.1b
// model's matrices one after another (q, k, v, o, gate, up, down; down as
// 5632 x 2048, the same bytes), 0.5 GB in f16, far past the L3, on huge
// pages like the backend's weight copy. The single-matrix figures above
// repeat one matrix, part of which may stay in cache.
//
//   build/release/benchmarks/matmul_bench --benchmark_counters_tabular=true
//
// Arguments: weight type (index in kTypes), tokens, rows, kernel set (0 the
// fastest, 1 scalar); BM_DecodeFromMemory: weight type.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/interleaved_rows.h"
#include "benchmarks/bench_memory.h"
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

// `rows` x kCols random weights of `dtype` as the CPU backend holds them for
// `set`: interleaved in groups when it has kernels for that.
struct HeldWeights {
  std::vector<uint8_t> bytes;
  bool interleaved = false;
};
HeldWeights held_weights(const DotKernels& set, DType dtype, int64_t rows) {
  const std::vector<float> w = random_values(static_cast<std::size_t>(rows * kCols), 1);
  HeldWeights held;
  held.bytes.resize(tessera::dtype_row_bytes(dtype, rows * kCols));
  tessera::quantize_row(dtype, w.data(), rows * kCols, held.bytes.data());
  const std::size_t row_bytes = tessera::dtype_row_bytes(dtype, kCols);
  held.interleaved = reads_interleaved(set, dtype) && interleavable(dtype, rows, kCols);
  if (held.interleaved) {
    std::vector<uint8_t> groups(held.bytes.size());
    for (int64_t g = 0; g < rows; g += group_rows(dtype))
      interleave_group(dtype, held.bytes.data() + static_cast<std::size_t>(g) * row_bytes,
                       row_bytes, kCols, groups.data() + static_cast<std::size_t>(g) * row_bytes);
    held.bytes.swap(groups);
  }
  return held;
}

// out = `rows` weight rows at `weights` against `tokens` activations x, as
// the backend's matmul does it on one thread (activations quantized first
// for the integer kernels).
class Matmul {
 public:
  Matmul(const DotKernels& set, DType dtype, bool interleaved, int64_t tokens)
      : set_(set),
        dtype_(dtype),
        interleaved_(interleaved),
        tokens_(tokens),
        x_(random_values(static_cast<std::size_t>(tokens * kCols), 2)),
        q8_(static_cast<std::size_t>(kCols / 32)),
        layout_(integer_activation_layout(set, kCols / 32)),
        xq_(layout_.token_bytes * static_cast<std::size_t>(tokens)),
        q8k_(static_cast<std::size_t>(tokens * kCols / 256)) {}

  void run(const uint8_t* weights, int64_t rows, float* out) {
    const std::size_t row_bytes = tessera::dtype_row_bytes(dtype_, kCols);
    if (const FloatPanelKernel float_kernel = float_panel_for(set_, dtype_, interleaved_)) {
      float_kernel({weights, row_bytes, rows, x_.data(), kCols, tokens_, kCols, out, rows});
    } else if (const QuantPanelKernel integer_kernel =
                   integer_panel_for(set_, dtype_, interleaved_)) {
      for (int64_t t = 0; t < tokens_; ++t)
        quantize_for_integer_kernel(set_, dtype_, x_.data() + t * kCols, kCols, q8_.data(),
                                    xq_.data() + static_cast<std::size_t>(t) * layout_.token_bytes);
      integer_kernel(
          {weights, row_bytes, rows, xq_.data(), layout_.stride, tokens_, kCols / 32, out, rows});
    } else {
      for (int64_t t = 0; t < tokens_; ++t)
        set_.quantize_q8k(x_.data() + t * kCols, kCols, q8k_.data() + t * (kCols / 256));
      kquant_panel_for(set_, dtype_, interleaved_)(
          {weights, row_bytes, rows, q8k_.data(), kCols / 256, tokens_, kCols / 256, out, rows});
    }
  }

 private:
  const DotKernels& set_;
  DType dtype_;
  bool interleaved_;
  int64_t tokens_;
  std::vector<float> x_;
  std::vector<Q8Block> q8_;
  IntegerActivationLayout layout_;
  std::vector<uint8_t> xq_;
  std::vector<Q8KBlock> q8k_;
};

void BM_Matmul(benchmark::State& state) {
  const DType dtype = kTypes[state.range(0)];
  const int64_t tokens = state.range(1), rows = state.range(2);
  const DotKernels& set = state.range(3) == 0 ? best_dot_kernels() : scalar_dot_kernels();
  const HeldWeights weights = held_weights(set, dtype, rows);
  Matmul matmul(set, dtype, weights.interleaved, tokens);
  std::vector<float> out(static_cast<std::size_t>(tokens * rows));
  for (auto _ : state) {
    matmul.run(weights.bytes.data(), rows, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<double>(state.iterations());
  if (tokens == 1)
    state.counters["weight_bytes/s"] = benchmark::Counter(
        static_cast<double>(weights.bytes.size()) * iterations, benchmark::Counter::kIsRate);
  state.counters["madds/s"] = benchmark::Counter(
      static_cast<double>(rows * kCols * tokens) * iterations, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(tessera::dtype_name(dtype)) + " " + set.name +
                 (weights.interleaved ? " interleaved" : ""));
}

// One 1.1b layer's matrices (rows of kCols) and how many layers in all.
constexpr int64_t kLayerRows[] = {2048, 256, 256, 2048, 5632, 5632, 5632};
constexpr int kLayers = 6;

void BM_DecodeFromMemory(benchmark::State& state) {
  const DType dtype = kTypes[state.range(0)];
  const DotKernels& set = best_dot_kernels();
  const std::size_t row_bytes = tessera::dtype_row_bytes(dtype, kCols);
  // One layer's matrices made once, copied to every layer's place.
  std::vector<HeldWeights> layer;
  std::size_t layer_bytes = 0;
  for (const int64_t rows : kLayerRows) {
    layer.push_back(held_weights(set, dtype, rows));
    layer_bytes += layer.back().bytes.size();
  }
  tessera::bench::MappedBytes stack(layer_bytes * kLayers);
  if (stack.data() == nullptr) return state.SkipWithError("cannot map the layers");
  for (std::size_t at = 0; at < stack.size();)
    for (const HeldWeights& matrix : layer) {
      std::memcpy(stack.data() + at, matrix.bytes.data(), matrix.bytes.size());
      at += matrix.bytes.size();
    }
  Matmul matmul(set, dtype, layer.front().interleaved, 1);
  std::vector<float> out(5632);
  for (auto _ : state) {
    const uint8_t* weights = stack.data();
    for (int l = 0; l < kLayers; ++l)
      for (const int64_t rows : kLayerRows) {
        matmul.run(weights, rows, out.data());
        weights += static_cast<std::size_t>(rows) * row_bytes;
      }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["weight_bytes/s"] = benchmark::Counter(
      static_cast<double>(stack.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(tessera::dtype_name(dtype)) + " " + set.name +
                 (layer.front().interleaved ? " interleaved" : "") + ", 6 layers of 1.1b");
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
BENCHMARK(BM_DecodeFromMemory)->DenseRange(0, std::size(kTypes) - 1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
