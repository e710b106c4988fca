// Whether sampled speculative decoding keeps the target's distribution: over
// many seeds, the first emitted token and the first two together are tested
// (chi-square) against the target's own sampling distribution (temperature,
// top-k and top-p applied), computed from plain forwards of the target.
// Shared by the sampling tests of every proposer.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/decode/chi_square.h"
#include "tests/decode/spec_test_util.h"

namespace tessera::testing {

inline constexpr const char* kFitSampling =
    "[sampling]\ntemperature = 0.9\ntop_k = 20\ntop_p = 0.95\nseed = 1\n";
inline constexpr const char* kFitTarget = "tok512-ar-1m.gguf";
inline constexpr const char* kFitPrompt = "Once upon a time, there was a";

// The target's sampling distribution after `tokens`.
inline std::vector<float> target_distribution(Engine& plain, const std::vector<int32_t>& tokens) {
  const auto vocab = static_cast<std::size_t>(plain.model().config.vocab_size);
  const std::vector<float> all = batched_logits(plain, tokens, tokens.size());
  std::vector<float> p;
  Sampler(plain.sampling()).distribution(std::span(all).last(vocab), p);
  return p;
}

struct Fits {
  ChiSquare first, pair;
};

// Generates two tokens for each of `seeds` seeds with the [decode] lines
// `decode`, and fits them against the target alone.
inline Fits fit_target_distribution(const std::string& decode, int seeds) {
  auto plain = make_engine(kFitTarget, kFitSampling);
  auto spec = make_engine(kFitTarget, std::string(kFitSampling) + "[decode]\n" + decode);
  if (!plain || !spec) return {};
  const GenerationRequest base = request_for(*plain, kFitPrompt, 2);
  std::map<int32_t, int64_t> first;
  std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
  int64_t accepted = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    GenerationRequest request = base;
    request.seed = 1000 + static_cast<uint64_t>(seed);
    const Generated got = run(*spec, request);
    if (got.tokens.size() != 2) return {};
    ++first[got.tokens[0]];
    ++pairs[{got.tokens[0], got.tokens[1]}];
    accepted += got.stats.decode.accepted;
  }
  EXPECT_GT(accepted, seeds / 4) << "the draft should be accepted often";
  // Expected: p(x1) and p(x1) p(x2 | x1) from the target alone.
  const std::vector<float> p1 = target_distribution(*plain, base.prompt);
  std::map<int32_t, double> want_first;
  std::map<std::pair<int32_t, int32_t>, double> want_pairs;
  for (std::size_t x1 = 0; x1 < p1.size(); ++x1) {
    if (p1[x1] <= 0) continue;
    want_first[static_cast<int32_t>(x1)] = p1[x1];
    std::vector<int32_t> longer = base.prompt;
    longer.push_back(static_cast<int32_t>(x1));
    const std::vector<float> p2 = target_distribution(*plain, longer);
    for (std::size_t x2 = 0; x2 < p2.size(); ++x2)
      if (p2[x2] > 0)
        want_pairs[{static_cast<int32_t>(x1), static_cast<int32_t>(x2)}] = p1[x1] * p2[x2];
  }
  return {chi_square(first, want_first, seeds), chi_square(pairs, want_pairs, seeds)};
}

inline void expect_fits(const Fits& f) {
  if (kSanitized) return;  // too few seeds to judge a distribution
  EXPECT_GT(f.first.degrees, 2);
  EXPECT_GT(f.first.p_value, 1e-4)
      << "first token: chi2 " << f.first.statistic << " on " << f.first.degrees << " df";
  EXPECT_GT(f.pair.p_value, 1e-4) << "two tokens: chi2 " << f.pair.statistic << " on "
                                  << f.pair.degrees << " df";
}

}  // namespace tessera::testing
