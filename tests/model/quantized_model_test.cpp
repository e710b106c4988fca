// Quantized GGUF weights through the whole forward: stories260K quantized by
// `tessera quantize`'s code path scores the TinyStories excerpt close to its
// f32 self, and each quantized file scores like the same weights dequantized
// back to f32 (the kernels read the blocks exactly as GGUF lays them out).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/engine/perplexity.h"
#include "core/io/text_file.h"
#include "core/model/model.h"
#include "tests/model/quantized_models.h"
#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

using testing::kSharedModels;
using testing::quantized;
const std::string& kModels = kSharedModels;

// Mean NLL over the first 256 predictions of the TinyStories excerpt.
double mean_nll(const std::string& model_path) {
  auto config = Config::parse("[model]\npath = \"" + model_path + "\"\n", "q.toml");
  EXPECT_TRUE(config.ok());
  auto engine = Engine::create(*config, support::build_tree_registry());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return NAN;
  auto text = read_text_file(std::string(TESSERA_SHARED_DIR) + "/data/tinystories_train_head.txt",
                             "text file", uint64_t{1} << 26);
  EXPECT_TRUE(text.ok());
  auto ids = (*engine)->tokenizer().encode(text->substr(0, 6000), true);
  EXPECT_TRUE(ids.ok());
  ids->resize(257);
  auto scored = score_tokens(**engine, *ids);
  EXPECT_TRUE(scored.ok()) << scored.status().to_string();
  return scored.ok() ? scored->mean_nll : NAN;
}

TEST(QuantizedModels, TypesAreMixedAsRealFilesAre) {
  const std::string q8 = quantized(kModels + "stories260K.gguf", "q8_0", "stories260K");
  auto model = load_model(q8, std::nullopt);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  int q8_count = 0, f16_count = 0, f32_count = 0;
  for (const TensorInfo& t : model->tensors) {
    if (t.dtype == DType::kQ8_0) ++q8_count;
    if (t.dtype == DType::kF16) {
      ++f16_count;
      // Only matrices whose rows are not whole q8_0 blocks (ffn_down: 172).
      EXPECT_NE(t.shape.back() % 32, 0) << t.name;
    }
    if (t.dtype == DType::kF32) {
      ++f32_count;
      EXPECT_EQ(t.shape.size(), 1u) << t.name << " (only norms stay f32)";
    }
  }
  EXPECT_GT(q8_count, 0);
  EXPECT_EQ(f16_count, model->config.n_layers);
  EXPECT_EQ(f32_count, 2 * model->config.n_layers + 1);
}

TEST(QuantizedModels, Q8_0StaysWithinOnePercentOfF32) {
  const double f32 = mean_nll(kModels + "stories260K.gguf");
  const double q8 = mean_nll(quantized(kModels + "stories260K.gguf", "q8_0", "stories260K"));
  const double q4 = mean_nll(quantized(kModels + "stories260K.gguf", "q4_0", "stories260K"));
  const double q4km = mean_nll(quantized(kModels + "stories260K.gguf", "q4_K_M", "stories260K"));
  std::printf(
      "stories260K perplexity over 256 tokens: f32 %.4f, q8_0 %.4f, q4_K_M %.4f, q4_0 %.4f\n",
      std::exp(f32), std::exp(q8), std::exp(q4km), std::exp(q4));
  EXPECT_LT(std::abs(std::exp(q8) / std::exp(f32) - 1), 0.01);
  // What 4 bits cost a 260K-parameter model is reported, not bounded, but it
  // must still be a model (not noise: ppl far below the 512-token vocab).
  EXPECT_LT(std::exp(q4), 100);
  EXPECT_LT(std::exp(q4km), 100);
}

class QuantizedEqualsDequantized : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizedEqualsDequantized, WithinHalfAPercent) {
  const std::string target = GetParam();
  const std::string q = quantized(kModels + "stories260K.gguf", target, "stories260K");
  // The same weights, decoded back to f32 by the reference decoder.
  auto t = find_quantize_target("f32");
  ASSERT_TRUE(t.ok());
  const std::string back =
      std::string(TESSERA_BINARY_DIR) + "/test-models/stories260K-" + target + "-as-f32.gguf";
  ASSERT_TRUE(quantize_gguf(q, back, *t).ok());
  const double ppl_q = std::exp(mean_nll(q));
  const double ppl_back = std::exp(mean_nll(back));
  EXPECT_LT(std::abs(ppl_q / ppl_back - 1), 0.005) << target << ": " << ppl_q << " vs " << ppl_back;
}

// The shipped models' rows (64 to 384 wide) are no whole 256-blocks, so the
// k-quants are checked on a small model of random weights made for it.
TEST(QuantizedModels, KQuantsScoreLikeTheirWeightsInF32) {
  const std::string dir = testing::test_model_dir();
  const std::string f32 = testing::synthetic_256();
  const std::string q4km = quantized(f32, "q4_K_M", "synthetic-256");
  auto model = load_model(q4km, std::nullopt);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  bool q4k = false, q6k = false;
  for (const TensorInfo& t : model->tensors) {
    q4k = q4k || t.dtype == DType::kQ4_K;
    q6k = q6k || t.dtype == DType::kQ6_K;
  }
  EXPECT_TRUE(q4k && q6k) << "q4_K_M mixes q4_K and q6_K";
  auto t = find_quantize_target("f32");
  ASSERT_TRUE(t.ok());
  const std::string back = dir + "/synthetic-256-q4_K_M-as-f32.gguf";
  ASSERT_TRUE(quantize_gguf(q4km, back, *t).ok());
  // Random weights give near-uniform predictions, so compare the logits
  // themselves: the differences come from the activations' q8 rounding (the
  // k-quant kernels' integer dot products), small against the logits' spread.
  const auto logits = [](const std::string& path) {
    auto config = Config::parse("[model]\npath = \"" + path + "\"\n", "k.toml");
    auto engine = Engine::create(*config, support::build_tree_registry());
    EXPECT_TRUE(engine.ok()) << engine.status().to_string();
    const std::vector<int32_t> tokens = {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366};
    std::vector<int32_t> positions(tokens.size());
    for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
    SequenceState seq;
    EXPECT_TRUE((*engine)->begin_sequence(seq).ok());
    auto out = (*engine)->transformer().forward((*engine)->cache(), seq.id, tokens, positions,
                                                LogitsWanted::kAll);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return std::vector<float>(out->begin(), out->end());
  };
  const std::vector<float> a = logits(q4km), b = logits(back);
  ASSERT_EQ(a.size(), b.size());
  double mean = 0;
  for (float v : b) mean += v;
  mean /= static_cast<double>(b.size());
  double diff = 0, spread = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - static_cast<double>(b[i])) * (a[i] - static_cast<double>(b[i]));
    spread += (b[i] - mean) * (b[i] - mean);
  }
  const double relative = std::sqrt(diff / spread);
  std::printf("q4_K_M logits against their weights in f32: relative RMS difference %.4f\n",
              relative);
  EXPECT_GT(spread, 0);
  EXPECT_LT(relative, 0.02);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedEqualsDequantized,
                         ::testing::Values("q8_0", "q4_0", "bf16", "q4_K_M"));

}  // namespace
}  // namespace tessera
