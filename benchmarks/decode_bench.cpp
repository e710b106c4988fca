// Decode speed on the real models: the KV-cached engine against full
// recomputation of the prefix at every step (what decoding costs without a
// cache), measured in the same run. Read the ratio of the tokens/s counters;
// absolute times depend on the machine.
//
//   build/release/benchmarks/decode_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <numeric>
#include <vector>

#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

constexpr const char* kModels[] = {"stories260K.gguf", "tok512-ar-1m.gguf"};

std::unique_ptr<Engine> engine_or_exit(const std::string& model, int threads) {
  auto engine =
      support::shared_model_engine(model, "[backend]\nthreads = " + std::to_string(threads) + "\n");
  if (!engine.ok()) {
    std::cerr << "decode_bench: " << engine.status().to_string() << "\n";
    std::exit(1);
  }
  return std::move(engine).value();
}

void report_tokens_per_second(benchmark::State& state, double tokens) {
  state.counters["tokens/s"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
}

// Greedy generation of `state.range(1)` tokens from BOS with the KV cache.
void BM_DecodeCached(benchmark::State& state) {
  auto engine = engine_or_exit(kModels[state.range(0)], 1);
  GenerationRequest request;
  request.prompt = {engine->tokenizer().bos()};
  request.max_new_tokens = state.range(1);
  request.stop_at_eos = false;
  int64_t tokens = 0;
  for (auto _ : state) {
    auto stats = engine->generate(request, [](int32_t, int) { return true; });
    if (!stats.ok()) {
      state.SkipWithError(stats.status().to_string().c_str());
      return;
    }
    tokens += stats->generated_tokens;
  }
  state.SetLabel(kModels[state.range(0)]);
  report_tokens_per_second(state, static_cast<double>(tokens));
}

// The baseline: every new token reruns the whole prefix in a fresh sequence
// (one batched forward, no cache carried between steps).
void BM_DecodeFullRecompute(benchmark::State& state) {
  auto engine = engine_or_exit(kModels[state.range(0)], 1);
  const int64_t length = state.range(1);
  int64_t tokens = 0;
  Sampler sampler(engine->sampling());
  for (auto _ : state) {
    std::vector<int32_t> sequence = {engine->tokenizer().bos()};
    while (static_cast<int64_t>(sequence.size()) <= length) {
      SequenceState seq;
      if (!engine->begin_sequence(seq).ok()) {
        state.SkipWithError("begin_sequence failed");
        return;
      }
      std::vector<int32_t> positions(sequence.size());
      std::iota(positions.begin(), positions.end(), 0);
      auto logits = engine->transformer().forward(engine->cache(), seq.id, sequence, positions);
      if (!logits.ok() || !engine->end_sequence(seq).ok()) {
        state.SkipWithError("forward failed");
        return;
      }
      sequence.push_back(sampler.sample(*logits));
      ++tokens;
    }
  }
  state.SetLabel(kModels[state.range(0)]);
  report_tokens_per_second(state, static_cast<double>(tokens));
}

// Prompt processing: one batched forward over the prompt against one token
// per forward, both with the cache.
void BM_Prefill(benchmark::State& state) {
  auto engine = engine_or_exit(kModels[state.range(0)], 1);
  const bool batched = state.range(2) != 0;
  std::vector<int32_t> prompt(static_cast<std::size_t>(state.range(1)));
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(1 + i % 500);
  std::vector<int32_t> positions(prompt.size());
  std::iota(positions.begin(), positions.end(), 0);
  const std::size_t chunk = batched ? prompt.size() : 1;
  for (auto _ : state) {
    SequenceState seq;
    if (!engine->begin_sequence(seq).ok()) {
      state.SkipWithError("begin_sequence failed");
      return;
    }
    for (std::size_t start = 0; start < prompt.size(); start += chunk) {
      auto logits = engine->transformer().forward(engine->cache(), seq.id,
                                                  std::span(prompt).subspan(start, chunk),
                                                  std::span(positions).subspan(start, chunk));
      if (!logits.ok()) {
        state.SkipWithError(logits.status().to_string().c_str());
        return;
      }
    }
    if (!engine->end_sequence(seq).ok()) state.SkipWithError("end_sequence failed");
  }
  state.SetLabel(std::string(kModels[state.range(0)]) + (batched ? " batched" : " one-by-one"));
  report_tokens_per_second(
      state, static_cast<double>(state.iterations()) * static_cast<double>(prompt.size()));
}

BENCHMARK(BM_DecodeCached)->ArgsProduct({{0, 1}, {128}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeFullRecompute)->ArgsProduct({{0, 1}, {128}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Prefill)->ArgsProduct({{0, 1}, {128}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
