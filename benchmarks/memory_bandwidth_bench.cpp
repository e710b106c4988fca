// This machine's memory bandwidth: the roofline for decoding, whose every
// token reads all the weights once. Three kernels over 1 GiB in all (far
// past any cache), at 1 and 2 threads, on transparent huge pages where the
// kernel grants them:
//   read            a sum over one 1 GiB array, one stream per thread;
//   triad           a[i] = b[i] + s * c[i] over three 341 MiB arrays (STREAM's);
//   read 4 streams  the sum over four parts of each thread's range at once
//                   (AVX-512), as the decode kernels read their rows.
// The bytes/s counter is the figure; docs/performance.md divides a model's
// weight bytes per token by its time per token and compares.
//
//   build/release/benchmarks/memory_bandwidth_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/bench_memory.h"

namespace {

constexpr std::size_t kBytes = std::size_t{1} << 30;

// Zeroed floats on huge pages where possible, every page touched up front.
class Floats {
 public:
  explicit Floats(std::size_t count) : bytes_(count * sizeof(float)), count_(count) {}
  float* data() const { return reinterpret_cast<float*>(bytes_.data()); }
  std::size_t size() const { return count_; }

 private:
  tessera::bench::MappedBytes bytes_;
  std::size_t count_;
};

// Runs fn(t, begin, end) for t in [0, threads) over [0, n) in contiguous
// parts, part 0 on the calling thread.
template <typename Fn>
void split(int threads, std::size_t n, Fn fn) {
  const auto part = [&](int t) { return n * static_cast<std::size_t>(t) / threads; };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(fn, t, part(t), part(t + 1));
  fn(0, part(0), part(1));
  for (std::thread& w : workers) w.join();
}

// 32 independent partial sums (eight SSE registers), so the adds keep up
// with memory even in a baseline x86-64 build.
float sum_range(const float* x, std::size_t begin, std::size_t end) {
  constexpr int kLanes = 32;
  float acc[kLanes] = {};
  std::size_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l];
  for (; i < end; ++i) acc[0] += x[i];
  float sum = 0;
  for (float a : acc) sum += a;
  return sum;
}

// Four parts of the range read at once, one 64-byte line of each per step
// in 512-bit loads: one core keeps more lines in flight from four places than
// from one (the decode kernels read their rows so, panel_tiles.h). Needs
// AVX-512 (the baseline build's SSE adds cannot keep up with this).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) float sum_four_streams(const float* x, std::size_t begin,
                                                          std::size_t end) {
  using Line = float __attribute__((vector_size(64)));
  constexpr int kStreams = 4, kLine = 16;
  const std::size_t part = (end - begin) / kStreams / kLine * kLine;
  Line acc[kStreams] = {};
  for (std::size_t i = 0; i < part; i += kLine)
    for (int s = 0; s < kStreams; ++s) {
      Line line;
      std::memcpy(&line, x + begin + s * part + i, sizeof line);
      acc[s] += line;
    }
  float sum = sum_range(x, begin + kStreams * part, end);
  for (const Line& a : acc)
    for (int l = 0; l < kLine; ++l) sum += a[l];
  return sum;
}
bool has_four_streams() {
  return __builtin_cpu_supports("avx512f");
}
#else
float sum_four_streams(const float* x, std::size_t begin, std::size_t end) {
  return sum_range(x, begin, end);
}
bool has_four_streams() {
  return false;
}
#endif

enum Kind { kRead, kTriad, kReadFourStreams };

void BM_MemoryBandwidth(benchmark::State& state) {
  const auto kind = static_cast<Kind>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  if (kind == kReadFourStreams && !has_four_streams())
    return state.SkipWithError("read 4 streams needs AVX-512");
  if (kind != kTriad) {
    Floats x(kBytes / sizeof(float));
    if (!x.data()) return state.SkipWithError("cannot map 1 GiB");
    const auto sum = kind == kRead ? sum_range : sum_four_streams;
    std::vector<float> partial(static_cast<std::size_t>(threads));
    for (auto _ : state) {
      split(threads, x.size(), [&](int t, std::size_t b, std::size_t e) {
        partial[static_cast<std::size_t>(t)] = sum(x.data(), b, e);
      });
      benchmark::DoNotOptimize(partial.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(kBytes));
  } else {
    const std::size_t n = kBytes / 3 / sizeof(float);
    Floats a(n), b(n), c(n);
    if (!a.data() || !b.data() || !c.data()) return state.SkipWithError("cannot map 1 GiB");
    for (auto _ : state) {
      split(threads, n, [&](int, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) a.data()[i] = b.data()[i] + 3.0f * c.data()[i];
      });
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(3 * n * sizeof(float)));
  }
  const char* names[] = {"read", "triad", "read 4 streams"};
  state.SetLabel(std::string(names[kind]) + ", " + std::to_string(threads) +
                 (threads == 1 ? " thread" : " threads"));
}

// Args: kind (0 read, 1 triad, 2 read 4 streams), threads.
BENCHMARK(BM_MemoryBandwidth)
    ->ArgsProduct({{kRead, kTriad, kReadFourStreams}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
