// Pre-tokenizer split throughput: SplitRegex over ~1.2 MB of text (tinyshakespeare, with a
// multilingual line - CJK, Cyrillic, Arabic, Devanagari, emoji, NBSP - after every 20th
// line) with the Llama 3 and GPT-2 patterns, the hand-written fast path against the
// generic backtracking machine, in the same run. bytes_per_second is of the UTF-8 text.
//
//   build/release/benchmarks/split_regex_bench
//
// Arguments: pattern (0 Llama 3, 1 GPT-2), path (0 as split() runs it, 1 generic machine).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/unicode/split_regex.h"
#include "core/unicode/utf8.h"

namespace {

constexpr const char* kPatterns[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
};
constexpr const char* kPatternNames[] = {"llama3", "gpt2"};

const std::string& bench_text() {
  static const std::string text = [] {
    std::ifstream in(std::string(TESSERA_SHARED_DIR) + "/data/tinyshakespeare.txt");
    const char* multilingual[] = {
        "日本語のテキスト、漢字とかな。 中文文本，我爱北京天安门。\n",
        "Русский текст: Привет, мир! Ελληνικά: Γειά σου Κόσμε!\n",
        "العربية: مرحبا بالعالم ١٢٣ हिन्दी: नमस्ते दुनिया।\n",
        "emoji 😀👍🏽 👨‍👩‍👧‍👦\u00a0nbsp\u3000ideographic   1234567 don't "
        "WE'LL\n",
    };
    std::string line, out;
    for (int i = 0; std::getline(in, line); ++i) {
      out += line + "\n";
      if (i % 20 == 19) out += multilingual[(i / 20) % 4];
    }
    return out;
  }();
  return text;
}

void BM_SplitRegex(benchmark::State& state) {
  const int pattern = static_cast<int>(state.range(0));
  const bool generic = state.range(1) == 1;
  auto regex = tessera::unicode::SplitRegex::compile(kPatterns[pattern]);
  if (!regex.ok()) {
    state.SkipWithError(regex.status().to_string().c_str());
    return;
  }
  const std::string& text = bench_text();
  if (text.size() < 1000) {
    state.SkipWithError("tinyshakespeare.txt not found under TESSERA_SHARED_DIR/data");
    return;
  }
  std::vector<char32_t> cps;
  tessera::unicode::decode_utf8(text, cps);
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  for (auto _ : state) {
    pieces.clear();
    if (generic) {
      (void)regex->split_generic(cps, pieces);
    } else {
      regex->split(cps, pieces);
    }
    benchmark::DoNotOptimize(pieces.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["pieces"] = static_cast<double>(pieces.size());
  state.SetLabel(std::string(kPatternNames[pattern]) +
                 (generic ? " generic" : (regex->has_fast_path() ? " fast path" : " generic")));
}

BENCHMARK(BM_SplitRegex)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
