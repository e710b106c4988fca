// Engines and generations for the speculative and multi-branch decoding tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/model/engine_test_util.h"

namespace tessera::testing {

// The sanitizer build runs the same tests on fewer tokens and seeds: it is
// there for memory errors, and runs several times slower.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

struct Generated {
  std::vector<int32_t> tokens;                 // lane 0's, or every branch's below
  std::vector<std::vector<int32_t>> branches;  // per branch, when the request has any
  GenerationStats stats;
};

// Runs `request` (no EOS stop unless asked) and collects what each lane emitted.
inline Generated run(Engine& engine, const GenerationRequest& request) {
  Generated out;
  out.branches.resize(request.branches.size());
  auto stats = engine.generate(request, [&](int32_t token, int lane) {
    if (request.branches.empty())
      out.tokens.push_back(token);
    else
      out.branches[static_cast<std::size_t>(lane)].push_back(token);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  if (stats.ok()) out.stats = *stats;
  return out;
}

inline GenerationRequest request_for(const Engine& engine, const std::string& text, int64_t tokens,
                                     std::optional<uint64_t> seed = std::nullopt) {
  GenerationRequest request;
  auto prompt = engine.tokenizer().encode(text, /*add_bos=*/true);
  EXPECT_TRUE(prompt.ok());
  request.prompt = *prompt;
  request.max_new_tokens = tokens;
  request.stop_at_eos = false;
  request.seed = seed;
  return request;
}

// A prompt that repeats itself, for the n-gram proposer to find.
inline constexpr const char* kRepetitivePrompt =
    "Tom has a red ball. Tom has a red ball. Tom has a red ball and a blue";

}  // namespace tessera::testing
