// Block-diffusion decoding of tok512-sdar-1m against autoregressive decoding
// of tok512-ar-1m (the AR model it was trained from: the same shapes), in the
// same run: the dynamic verifier, with the commit fused into the next
// denoise forward, and through the fixed-shape step. Read the ratios of the
// tokens/s counters; absolute times depend on the machine. One thread.
//
//   build/release/benchmarks/block_diffusion_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

struct Mode {
  const char* label;
  const char* model;
  const char* decode;  // [decode] keys
};

constexpr Mode kModes[] = {
    {"ar (tok512-ar-1m)", "tok512-ar-1m.gguf", ""},
    {"sdar dynamic", "tok512-sdar-1m.gguf", "verifier = \"block_diffusion\"\n"},
    {"sdar fused commit", "tok512-sdar-1m.gguf",
     "verifier = \"block_diffusion\"\nfuse_commit = true\n"},
    {"sdar fixed-shape", "tok512-sdar-1m.gguf",
     "verifier = \"block_diffusion\"\nfixed_shape = true\n"},
};

void BM_GreedyFromBos(benchmark::State& state) {
  const Mode& mode = kModes[state.range(0)];
  auto engine = support::shared_model_engine(
      mode.model,
      "[backend]\nthreads = 1\n[cache]\nmax_tokens = 256\n[decode]\n" + std::string(mode.decode));
  if (!engine.ok()) {
    std::cerr << "block_diffusion_bench: " << engine.status().to_string() << "\n";
    std::exit(1);
  }
  GenerationRequest request;
  request.prompt = {(*engine)->tokenizer().bos()};
  request.max_new_tokens = state.range(1);
  request.stop_at_eos = false;
  int64_t tokens = 0, forwards = 0;
  for (auto _ : state) {
    auto stats = (*engine)->generate(request, [](int32_t, int) { return true; });
    if (!stats.ok()) {
      state.SkipWithError(stats.status().to_string().c_str());
      return;
    }
    tokens += stats->generated_tokens;
    forwards += stats->decode.target_forwards;
  }
  state.SetLabel(mode.label);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["tokens/forward"] = static_cast<double>(tokens) / static_cast<double>(forwards);
}
// Arguments: the mode (kModes), the tokens generated.
BENCHMARK(BM_GreedyFromBos)->ArgsProduct({{0, 1, 2, 3}, {128}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
