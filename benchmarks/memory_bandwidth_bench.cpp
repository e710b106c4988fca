// This machine's memory bandwidth: the roofline for decoding, whose every
// token reads all the weights once. Two kernels over 1 GiB in all (far past
// any cache), at 1 and 2 threads, on transparent huge pages where the kernel
// grants them:
//   read   a sum over one 1 GiB array (what a matrix-vector product does);
//   triad  a[i] = b[i] + s * c[i] over three 341 MiB arrays (STREAM's).
// The bytes/s counter is the figure; docs/performance.md divides a model's
// weight bytes per token by its time per token and compares.
//
//   build/release/benchmarks/memory_bandwidth_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t kBytes = std::size_t{1} << 30;

// Zeroed floats on huge pages where possible, every page touched up front.
class Floats {
 public:
  explicit Floats(std::size_t count) : count_(count) {
    const std::size_t bytes = count * sizeof(float);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_HUGEPAGE);
    data_ = static_cast<float*>(p);
    for (std::size_t i = 0; i < count; i += 1024) data_[i] = 1.0f;
  }
  ~Floats() {
    if (data_) munmap(data_, count_ * sizeof(float));
  }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* data() const { return data_; }
  std::size_t size() const { return count_; }

 private:
  float* data_ = nullptr;
  std::size_t count_ = 0;
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

void BM_MemoryBandwidth(benchmark::State& state) {
  const bool triad = state.range(0) == 1;
  const int threads = static_cast<int>(state.range(1));
  if (!triad) {
    Floats x(kBytes / sizeof(float));
    if (!x.data()) return state.SkipWithError("cannot map 1 GiB");
    std::vector<float> partial(static_cast<std::size_t>(threads));
    for (auto _ : state) {
      split(threads, x.size(), [&](int t, std::size_t b, std::size_t e) {
        partial[static_cast<std::size_t>(t)] = sum_range(x.data(), b, e);
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
  state.SetLabel(std::string(triad ? "triad" : "read") + ", " + std::to_string(threads) +
                 (threads == 1 ? " thread" : " threads"));
}

// Args: kind (0 read, 1 triad), threads.
BENCHMARK(BM_MemoryBandwidth)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
