// What one op's trip through the CPU backend's thread pool costs: a
// parallel_for over as many chunks as threads, each writing one float,
// against the same call on a 1-thread pool (no hand-over at all), both in
// the same run. A forward dispatches about nine ops per layer, so this times
// the number of ops is what one parallel region per forward could save.
//
//   build/release/benchmarks/thread_pool_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
//
// Arguments: a dummy 0 (so ctest's /0/ filter picks every case), threads.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace {

void BM_Dispatch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(1));
  tessera::cpu::ThreadPool pool(threads);
  std::vector<float> out(static_cast<std::size_t>(threads) * 16);
  for (auto _ : state) {
    pool.parallel_for(0, threads, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) out[static_cast<std::size_t>(i) * 16] += 1.0f;
    });
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::to_string(threads) + (threads == 1 ? " thread" : " threads"));
}

BENCHMARK(BM_Dispatch)->Args({0, 1})->Args({0, 2})->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
