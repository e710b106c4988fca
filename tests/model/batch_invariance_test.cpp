// Batch invariance, bitwise, for every weight type: a token's logits are the
// same bits whether it is decoded alone (reading the cache), inside a whole
// prompt, or inside uneven chunks of one, at 1 and at 2 threads; and for
// every architecture (make-model's tiny shapes, f32 and q8_0). Sessions and
// speculative decoding rely on it; the kernels' fixed summation order
// (backends/cpu/dot_kernels.h) is what makes it hold.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/model/arch_models.h"
#include "tests/model/engine_test_util.h"
#include "tests/model/quantized_models.h"

namespace tessera {
namespace {

using testing::batched_logits;
using testing::incremental_logits;

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct TypedModel {
  std::string name;
  std::string path;
};

std::vector<TypedModel> typed_models() {
  const std::string stories = testing::kSharedModels + "stories260K.gguf";
  std::vector<TypedModel> out = {{"f32", stories}};
  for (const char* target : {"f16", "bf16", "q8_0", "q4_0"})
    out.push_back({target, testing::quantized(stories, target, "stories260K")});
  out.push_back(
      {"q4_K_M", testing::quantized(testing::synthetic_256(), "q4_K_M", "synthetic-256")});
  for (const std::string& arch : testing::kArchitectures)
    for (const DType dtype : {DType::kF32, DType::kQ8_0})
      out.push_back(
          {arch + " " + std::string(dtype_name(dtype)), testing::arch_model(arch, dtype)});
  return out;
}

TEST(BatchInvariance, EveryWeightTypeAtOneAndTwoThreads) {
  const std::vector<int32_t> tokens = {1,   415, 264, 86,  310, 291, 403, 32,  260, 268, 336, 291,
                                       371, 278, 264, 401, 299, 345, 310, 323, 427, 261, 302, 311};
  for (const TypedModel& model : typed_models()) {
    std::vector<float> first;
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(model.name + " at " + std::to_string(threads) + " threads");
      auto engine = testing::engine_for_file(
          model.path, "[backend]\nthreads = " + std::to_string(threads) + "\n");
      ASSERT_NE(engine, nullptr);
      const std::vector<float> alone = incremental_logits(*engine, tokens);
      EXPECT_TRUE(bitwise_equal(batched_logits(*engine, tokens, tokens.size()), alone));
      EXPECT_TRUE(bitwise_equal(batched_logits(*engine, tokens, 5), alone));
      if (first.empty()) {
        first = alone;
      } else {
        EXPECT_TRUE(bitwise_equal(alone, first)) << "thread counts differ";
      }
    }
  }
}

}  // namespace
}  // namespace tessera
