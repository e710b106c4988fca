// Cached decoding must equal full recomputation, on the shared llama models
// and on each architecture's tiny synthetic model, and the two model formats
// must give the same logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tests/model/arch_models.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using testing::batched_logits;
using testing::greedy_sequence;
using testing::incremental_logits;
using testing::make_engine;

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

// A shared model's file name, or "tiny-<arch>" for make-model's tiny shape.
std::string model_for(const std::string& param) {
  if (param.rfind("tiny-", 0) == 0) return testing::arch_model(param.substr(5));
  return param;
}

class CachedDecoding : public ::testing::TestWithParam<std::string> {};

TEST_P(CachedDecoding, EqualsFullRecomputeAtEveryPosition) {
  auto engine = make_engine(model_for(GetParam()));
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
                         ::testing::Values("stories260K.gguf", "tok512-ar-1m.gguf", "tiny-llama",
                                           "tiny-llama3", "tiny-qwen2", "tiny-qwen3",
                                           "tiny-gemma3"),
                         [](const auto& param_info) {
                           const std::string& param = param_info.param;
                           std::string name = param.substr(0, param.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

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
