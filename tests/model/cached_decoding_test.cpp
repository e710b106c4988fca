// Cached decoding must equal full recomputation, and the two model formats
// must give the same logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using testing::make_engine;

// Greedy tokens from BOS, generated through the engine.
std::vector<int32_t> greedy_sequence(Engine& engine, int64_t length) {
  GenerationRequest request;
  request.prompt = {engine.tokenizer().bos()};
  request.max_new_tokens = length - 1;
  request.stop_at_eos = false;
  std::vector<int32_t> tokens = request.prompt;
  auto stats = engine.generate(request, [&](int32_t t) {
    tokens.push_back(t);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return tokens;
}

// Logits at every position, one token per forward (reading the cache).
std::vector<float> incremental_logits(Engine& engine, const std::vector<int32_t>& tokens) {
  const std::size_t vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  SequenceState seq;
  EXPECT_TRUE(engine.begin_sequence(seq).ok());
  std::vector<float> all;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const int32_t position = static_cast<int32_t>(i);
    auto logits =
        engine.transformer().forward(engine.cache(), seq.id, {&tokens[i], 1}, {&position, 1});
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    EXPECT_EQ(logits->size(), vocab);
    all.insert(all.end(), logits->begin(), logits->end());
  }
  EXPECT_TRUE(engine.end_sequence(seq).ok());
  return all;
}

// Logits at every position from fresh sequences fed the whole prefix at once
// in chunks of `chunk` tokens (no cache from an earlier step when chunk >= n).
std::vector<float> batched_logits(Engine& engine, const std::vector<int32_t>& tokens,
                                  std::size_t chunk) {
  SequenceState seq;
  EXPECT_TRUE(engine.begin_sequence(seq).ok());
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<float> all;
  for (std::size_t start = 0; start < tokens.size(); start += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - start);
    auto logits = engine.transformer().forward(engine.cache(), seq.id, {&tokens[start], n},
                                               {&positions[start], n}, LogitsWanted::kAll);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    all.insert(all.end(), logits->begin(), logits->end());
  }
  EXPECT_TRUE(engine.end_sequence(seq).ok());
  return all;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, std::size_t vocab,
                  double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, std::fabs(static_cast<double>(b[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / scale);
  }
  EXPECT_LE(worst, tolerance) << "largest relative difference";
  for (std::size_t row = 0; row < a.size() / vocab; ++row) {
    const auto begin_a = a.begin() + static_cast<std::ptrdiff_t>(row * vocab);
    const auto begin_b = b.begin() + static_cast<std::ptrdiff_t>(row * vocab);
    EXPECT_EQ(std::max_element(begin_a, begin_a + static_cast<std::ptrdiff_t>(vocab)) - begin_a,
              std::max_element(begin_b, begin_b + static_cast<std::ptrdiff_t>(vocab)) - begin_b)
        << "greedy token differs at position " << row;
  }
}

class CachedDecoding : public ::testing::TestWithParam<const char*> {};

TEST_P(CachedDecoding, EqualsFullRecomputeAtEveryPosition) {
  auto engine = make_engine(GetParam());
  ASSERT_NE(engine, nullptr);
  const auto tokens = greedy_sequence(*engine, 64);
  ASSERT_EQ(tokens.size(), 64u);
  const std::size_t vocab = static_cast<std::size_t>(engine->model().config.vocab_size);
  const auto cached = incremental_logits(*engine, tokens);
  const auto full = batched_logits(*engine, tokens, tokens.size());
  expect_close(cached, full, vocab, 1e-5);
  // Prefill in uneven chunks mixes both paths.
  expect_close(batched_logits(*engine, tokens, 7), full, vocab, 1e-5);
  // Greedy decoding picked exactly the argmax of the recomputed logits.
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    const auto row = full.begin() + static_cast<std::ptrdiff_t>(i * vocab);
    EXPECT_EQ(std::max_element(row, row + static_cast<std::ptrdiff_t>(vocab)) - row, tokens[i + 1]);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CachedDecoding,
                         ::testing::Values("stories260K.gguf", "tok512-ar-1m.gguf"));

TEST(ModelFormats, GgufAndLlama2cGiveIdenticalLogits) {
  for (const auto& [gguf, bin] : {std::pair{"stories260K.gguf", "stories260K.bin"},
                                  std::pair{"tok512-ar-1m.gguf", "tok512-ar-1m.bin"}}) {
    auto a = make_engine(gguf);
    auto b = make_engine(bin, "", "tok512.bin");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    const auto tokens = greedy_sequence(*a, 48);
    EXPECT_EQ(greedy_sequence(*b, 48), tokens) << gguf;
    EXPECT_EQ(batched_logits(*a, tokens, tokens.size()), batched_logits(*b, tokens, tokens.size()))
        << gguf << " vs " << bin << ": logits must be bit-identical";
  }
}

}  // namespace
}  // namespace tessera
