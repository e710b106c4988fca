// Attention on encoded records, per codec: query heads scoring (Dot) or
// summing (Accumulate) 4096 stored records the way the CPU attention kernel
// calls the codec, against the same loops over f32 vectors ("f32", what an
// identity cache costs). Times are per record; read them as ratios to f32.
//
//   build/release/benchmarks/encoded_attention_bench
//
// Names read <mode>/<heads>/<head_dim>/<codec>: heads is the number of query
// heads per KV head (1, or 2 as in stories260K and tok512-ar-1m).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_codecs.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

constexpr int kHeadDims[] = {8, 16, 128};
constexpr int64_t kRecords = 4096;  // one kv head of a 4k context

using bench::NamedCodec;

std::vector<NamedCodec> codecs() {
  return bench::codecs_after({"f32", nullptr});
}

// The kernel's decoded-path cost per head: a dot or an axpy per vector.
void run_f32(benchmark::State& state, int heads, int head_dim, bool accumulate) {
  const std::vector<float> x = test::GaussianSource(7).vectors(kRecords, head_dim);
  const std::vector<float> q = test::GaussianSource(8).vectors(heads, head_dim);
  std::vector<float> scores(static_cast<std::size_t>(heads * kRecords), 0.5f / kRecords);
  std::vector<float> acc(static_cast<std::size_t>(heads * head_dim));
  for (auto _ : state) {
    for (int h = 0; h < heads; ++h) {
      float* s = scores.data() + h * kRecords;
      if (accumulate) {
        float* a = acc.data() + h * head_dim;
        std::fill(a, a + head_dim, 0.0f);
        for (int64_t j = 0; j < kRecords; ++j)
          for (int i = 0; i < head_dim; ++i) a[i] += s[j] * x[j * head_dim + i];
      } else {
        for (int64_t j = 0; j < kRecords; ++j) {
          float dot = 0.0f;
          for (int i = 0; i < head_dim; ++i) dot += q[h * head_dim + i] * x[j * head_dim + i];
          s[j] = dot;
        }
      }
    }
    benchmark::DoNotOptimize(acc.data());
    benchmark::DoNotOptimize(scores.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}

void run_codec(benchmark::State& state, const Compressor& codec, int heads, int head_dim,
               bool accumulate) {
  const std::vector<float> x = test::GaussianSource(7).vectors(kRecords, head_dim);
  const std::vector<float> q = test::GaussianSource(8).vectors(heads, head_dim);
  std::vector<uint8_t> records(codec.encoded_bytes(kRecords, head_dim));
  codec.encode(x.data(), kRecords, head_dim, records.data());
  std::vector<float> q_t(static_cast<std::size_t>(heads * head_dim));
  std::vector<float> scores(static_cast<std::size_t>(heads * kRecords), 0.5f / kRecords);
  std::vector<float> acc(static_cast<std::size_t>(heads * head_dim));
  std::vector<float> out(static_cast<std::size_t>(head_dim));
  for (auto _ : state) {
    if (accumulate) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      codec.accumulate_encoded_heads(scores.data(), heads, records.data(), kRecords, head_dim,
                                     acc.data());
      for (int h = 0; h < heads; ++h)
        codec.finish_output(acc.data() + h * head_dim, head_dim, out.data());
      benchmark::DoNotOptimize(out.data());
    } else {
      for (int h = 0; h < heads; ++h)
        codec.transform_query(q.data() + h * head_dim, head_dim, q_t.data() + h * head_dim);
      codec.dot_encoded_heads(q_t.data(), heads, records.data(), kRecords, head_dim, scores.data());
      benchmark::DoNotOptimize(scores.data());
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  const std::vector<NamedCodec> all = codecs();
  for (const bool accumulate : {false, true}) {
    for (const int heads : {1, 2}) {
      for (const int head_dim : kHeadDims) {
        for (const NamedCodec& c : all) {
          const std::string name = std::string(accumulate ? "Accumulate" : "Dot") + "/" +
                                   std::to_string(heads) + "/" + std::to_string(head_dim) + "/" +
                                   c.name;
          const Compressor* codec = c.codec.get();
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
            if (codec == nullptr) {
              run_f32(state, heads, head_dim, accumulate);
            } else {
              run_codec(state, *codec, heads, head_dim, accumulate);
            }
          })->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
