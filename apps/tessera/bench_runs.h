// The timed tests of `tessera bench` (llama-bench's): pp<N>, one forward over
// an N-token prompt, and tg<N>, N tokens generated one at a time, each from a
// cache that already holds `depth` tokens of a real text (llama-bench's -d;
// their prefill is not timed).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/status/status.h"

namespace tessera::cli {

struct BenchTest {
  bool prompt = true;  // pp (else tg)
  int64_t tokens = 0;
  int64_t depth = 0;
  // "pp128", "tg64", "pp128@d4096": the test's name in tables and CSV.
  std::string name() const;
};

struct BenchResult {
  std::vector<double> tokens_per_s;  // one per timed run
  // Device submissions per token over the timed runs; < 0 where the backend
  // does not count them (the CPU).
  double submissions_per_token = -1;
};

// The first `count` tokens of `text` as the model's tokenizer reads it (BOS
// first), the text repeated where it is shorter.
Result<std::vector<int32_t>> depth_tokens(Engine& engine, const std::string& text, int64_t count);

// `repeat` timed runs of `test` after one warm-up run. The depth's tokens
// (`context`, at least test.depth of them) are prefilled once; each run
// starts from them (the cache cut back to the depth between runs).
Result<BenchResult> run_bench_test(Engine& engine, const BenchTest& test,
                                   std::span<const int32_t> context, int repeat);

}  // namespace tessera::cli
