// Each architecture's forward (llama, llama 3, qwen2, qwen3, gemma3) against
// a numpy reference written from llama.cpp's graphs
// (tests/model/reference/forward_reference.py), on the tiny synthetic models
// make-model writes: the logits of every position of a prompt agree within
// 1e-4 of their scale, measured as max |tessera - reference| over all
// positions and tokens divided by max |reference|. And the reference with any
// one of the architecture's layer differences left out is at least ten times
// that tolerance away from tessera (so each difference is exercised, and a
// forward that skipped it would fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/model/arch_models.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

const std::string kScript =
    std::string(TESSERA_SOURCE_DIR) + "/tests/model/reference/forward_reference.py";

// 12 tokens: past gemma3's tiny sliding window (4), and long enough for the
// RoPE variants to turn the keys apart.
const std::vector<int32_t> kPrompt = {1, 415, 264, 86, 310, 291, 403, 32, 260, 268, 336, 291};

// The differences each architecture's layers have, as the script names them.
const std::map<std::string, std::vector<std::string>> kDifferences = {
    {"llama", {}},
    {"llama3", {"rope_freqs"}},
    {"qwen2", {"bias", "rope_neox"}},
    {"qwen3", {"qk_norm", "rope_neox"}},
    {"gemma3",
     {"qk_norm", "post_norms", "gelu", "rope_neox", "rope_scale", "swa", "swa_base",
      "embed_scale"}},
};

// The reference's logits [positions, vocab], `skip` left out when not empty.
std::vector<float> reference_logits(const std::string& model, const std::string& skip = "") {
  std::string tokens;
  for (const int32_t t : kPrompt) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
  const std::string out = model + (skip.empty() ? "" : "." + skip) + ".reference.f32";
  const std::string command = "/usr/bin/python3 " + kScript + " " + model + " " + tokens + " " +
                              out + (skip.empty() ? "" : " --skip " + skip);
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out, std::ios::binary);
  std::vector<float> logits;
  float value = 0;
  while (in.read(reinterpret_cast<char*>(&value), sizeof value)) logits.push_back(value);
  return logits;
}

// max |a - b| / max |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

// The largest softmax probability of a row of logits.
double top_probability(const float* row, std::size_t vocab) {
  const double top = *std::max_element(row, row + vocab);
  double sum = 0;
  for (std::size_t i = 0; i < vocab; ++i) sum += std::exp(row[i] - top);
  return 1.0 / sum;
}

class ArchitectureForward : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchitectureForward, EqualsTheNumpyReferenceAtEveryPosition) {
  const std::string model = testing::arch_model(GetParam());
  auto engine = testing::engine_for_file(model, "");
  ASSERT_NE(engine, nullptr);
  const std::size_t vocab = static_cast<std::size_t>(engine->model().config.vocab_size);
  const std::vector<float> ours = testing::batched_logits(*engine, kPrompt, kPrompt.size());
  const std::vector<float> reference = reference_logits(model);
  ASSERT_EQ(reference.size(), kPrompt.size() * vocab);
  ASSERT_EQ(ours.size(), reference.size());
  const double difference = relative_difference(ours, reference);
  std::printf("%s: max |tessera - numpy| / max |numpy| = %.3g\n", GetParam().c_str(), difference);
  EXPECT_LE(difference, 1e-4);
  // Far from uniform: the first position's top token is likelier than 10x a
  // uniform guess (a wrong layer must be able to show).
  EXPECT_GT(top_probability(reference.data(), vocab), 10.0 / static_cast<double>(vocab));
  // Each difference left out moves the reference ten times the tolerance or more.
  for (const std::string& skip : kDifferences.at(GetParam())) {
    SCOPED_TRACE("reference without " + skip);
    const double without = relative_difference(ours, reference_logits(model, skip));
    std::printf("%s without %s: %.3g\n", GetParam().c_str(), skip.c_str(), without);
    EXPECT_GT(without, 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchitectureForward,
                         ::testing::ValuesIn(testing::kArchitectures),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace tessera
