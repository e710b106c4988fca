// Decode speed at a long context per KV codec, against identity in the same
// run: a 4096-token prefill into a static cache, then one token per step, each
// attending to everything before it. The codecs that attend encoded (int8,
// int4, lattice) read their records without decoding them. Read the ratio of
// the tokens/s counters; absolute times depend on the machine.
//
//   build/release/benchmarks/kv_codec_decode_bench --benchmark_counters_tabular=true
//   (ctest runs it once with --benchmark_filter=/0/ to check that it runs)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

struct CodecSetting {
  const char* label;
  const char* toml;        // [cache.codec]
  const char* cache = "";  // more [cache] keys
};

// The last two store one codec vector per token across its KV heads: the
// attention scores each query head against the whole record.
constexpr const char* kTokenSpan = "codec_span = \"token\"\n";
constexpr CodecSetting kCodecs[] = {
    {"identity", "plugin = \"identity\"\n"},
    {"int8", "plugin = \"int8\"\n"},
    {"int4", "plugin = \"int4\"\n"},
    {"lattice D4 q38", "plugin = \"lattice\"\nlattice = \"D4\"\nq = 38\n"},
    {"lattice E8 q37", "plugin = \"lattice\"\nlattice = \"E8\"\nq = 37\n"},
    {"int8 per token", "plugin = \"int8\"\n", kTokenSpan},
    {"lattice E8 q37 per token", "plugin = \"lattice\"\nlattice = \"E8\"\nq = 37\n", kTokenSpan},
};
constexpr const char* kModels[] = {"stories260K.gguf", "tok512-ar-1m.gguf"};
constexpr int64_t kContext = 4096;
constexpr int64_t kSteps = 32;

void BM_DecodeAtLongContext(benchmark::State& state) {
  const CodecSetting& codec = kCodecs[state.range(0)];
  const char* model = kModels[state.range(1)];
  auto engine = support::shared_model_engine(
      model, "[cache]\nmax_tokens = " + std::to_string(kContext + kSteps) + "\n" + codec.cache +
                 "[cache.codec]\n" + codec.toml);
  if (!engine.ok()) {
    state.SkipWithError(engine.status().to_string().c_str());
    return;
  }
  Engine& e = **engine;
  // Any tokens will do for timing: the model is run past its trained context.
  std::vector<int32_t> prompt(kContext);
  for (int64_t i = 0; i < kContext; ++i)
    prompt[static_cast<std::size_t>(i)] = static_cast<int32_t>(3 + i * 7 % 500);
  std::vector<int32_t> positions(kContext);
  std::iota(positions.begin(), positions.end(), 0);
  int64_t tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    SequenceState seq;
    if (!e.begin_sequence(seq).ok() ||
        !e.transformer().forward(e.cache(), seq.id, prompt, positions).ok()) {
      state.SkipWithError("prefill failed");
      return;
    }
    state.ResumeTiming();
    int32_t token = 5;
    for (int64_t step = 0; step < kSteps; ++step) {
      const int32_t position = static_cast<int32_t>(kContext + step);
      auto logits = e.transformer().forward(e.cache(), seq.id, {&token, 1}, {&position, 1});
      if (!logits.ok()) {
        state.SkipWithError(logits.status().to_string().c_str());
        return;
      }
      token = static_cast<int32_t>(3 + step);
    }
    tokens += kSteps;
    state.PauseTiming();
    (void)e.end_sequence(seq);
    state.ResumeTiming();
  }
  state.SetLabel(std::string(model) + ", " + codec.label);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_DecodeAtLongContext)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {0, 1}})
    ->ArgNames({"codec", "model"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
