// Backend-owned weights through the engine ([backend] weights): the CPU
// backend's copy gives the same logits, bitwise, as reading the file mapping
// in place (tests/backend/weight_adoption_test.cpp checks the handover).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/model/engine_test_util.h"
#include "tests/model/quantized_models.h"

namespace tessera {
namespace {

// The same logits, bitwise, from the copy as from the mapping: f32, f16,
// bf16 and the block types. (The copy holds f16 / bf16 rows, and with
// AVX-512 q8_0 / q4_0 / q4_K / q6_K rows, interleaved in groups of 16, read
// by other kernels than the mapping's GGUF layout, embedding table
// included; stories260K's 172-row feed-forward matrices stay in GGUF's
// layout in both.)
TEST(BackendWeights, CopiedWeightsGiveTheSameLogitsAsMappedOnes) {
  const std::string stories = testing::kSharedModels + "stories260K.gguf";
  const std::vector<int32_t> tokens = {1, 415, 264, 86, 310, 291, 403, 32};
  for (const std::string& path :
       {stories, testing::quantized(stories, "f16", "stories260K"),
        testing::quantized(stories, "bf16", "stories260K"),
        testing::quantized(stories, "q4_0", "stories260K"),
        testing::quantized(stories, "q8_0", "stories260K"),
        testing::quantized(testing::synthetic_256(), "q4_K_M", "synthetic-256")}) {
    std::vector<float> logits[2];
    int k = 0;
    for (const char* weights : {"mapped", "copied"}) {
      auto engine =
          testing::engine_for_file(path, std::string("[backend]\nweights = \"") + weights + "\"\n");
      ASSERT_NE(engine, nullptr);
      logits[k++] = testing::batched_logits(*engine, tokens, tokens.size());
    }
    ASSERT_EQ(logits[0].size(), logits[1].size());
    EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
        << path;
  }
}

}  // namespace
}  // namespace tessera
