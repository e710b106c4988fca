// Encode and decode speed of the KV codecs against the identity codec (a
// memcpy), measured in the same run on the same N(0, 1) vectors. The table at
// the end gives each codec's time as a multiple of identity's; absolute times
// depend on the machine.
//
//   build/release/benchmarks/codec_bench
//
// Names read <mode>/<head_dim index>/<codec>: head_dim index 0 is 128 (the
// common size), 1 is 8 (stories260K).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_codecs.h"
#include "plugins/compressor_identity/identity_codec.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

constexpr int kHeadDims[] = {128, 8};
constexpr int64_t kVectorsPerBatch = 256;  // e.g. one layer's K for 256 tokens of one head
constexpr const char* kModes[] = {"Encode", "Decode", "EncodeDecode"};

using bench::NamedCodec;

std::vector<NamedCodec> codecs() {
  return bench::codecs_after({"identity", std::make_shared<const IdentityCodec>()});
}

void run_codec(benchmark::State& state, const Compressor& codec, int head_dim, int mode) {
  const std::vector<float> x = test::GaussianSource(7).vectors(kVectorsPerBatch, head_dim);
  std::vector<uint8_t> bytes(codec.encoded_bytes(kVectorsPerBatch, head_dim));
  std::vector<float> decoded(x.size());
  codec.encode(x.data(), kVectorsPerBatch, head_dim, bytes.data());
  for (auto _ : state) {
    if (mode != 1) codec.encode(x.data(), kVectorsPerBatch, head_dim, bytes.data());
    if (mode != 0) codec.decode(bytes.data(), kVectorsPerBatch, head_dim, decoded.data());
    benchmark::DoNotOptimize(bytes.data());
    benchmark::DoNotOptimize(decoded.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kVectorsPerBatch);
  state.counters["bits/vec"] = codec.bits_per_vector(head_dim);
}

// Prints the usual console table, then each codec's time over identity's.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : benchmark::ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (!run.error_occurred && run.run_type == Run::RT_Iteration)
        seconds_[run.benchmark_name()] = run.GetAdjustedRealTime();
    }
    benchmark::ConsoleReporter::ReportRuns(runs);
  }

  void print_ratios(const std::vector<NamedCodec>& all) const {
    std::printf("\nTime relative to identity (same run, %lld vectors per batch):\n",
                static_cast<long long>(kVectorsPerBatch));
    for (int d = 0; d < 2; ++d) {
      for (const char* mode : kModes) {
        const auto base = seconds_.find(name(mode, d, "identity"));
        if (base == seconds_.end()) continue;
        std::printf("  %-12s head_dim %3d:", mode, kHeadDims[d]);
        for (const NamedCodec& c : all) {
          const auto it = seconds_.find(name(mode, d, c.name));
          if (it != seconds_.end() && c.name != "identity")
            std::printf("  %s %.1fx", c.name.c_str(), it->second / base->second);
        }
        std::printf("\n");
      }
    }
  }

  static std::string name(const char* mode, int d, const std::string& codec) {
    return std::string(mode) + "/" + std::to_string(d) + "/" + codec;
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  const std::vector<NamedCodec> all = codecs();
  for (int d = 0; d < 2; ++d) {
    for (int mode = 0; mode < 3; ++mode) {
      for (const NamedCodec& c : all) {
        const std::string name = RatioReporter::name(kModes[mode], d, c.name);
        const Compressor* codec = c.codec.get();
        const int head_dim = kHeadDims[d];
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
          run_codec(state, *codec, head_dim, mode);
        })->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios(all);
  benchmark::Shutdown();
  return 0;
}
