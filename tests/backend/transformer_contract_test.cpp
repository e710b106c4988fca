// Transformer::create refuses models the forward would read out of bounds:
// norm weights that are not f32, and odd head sizes (RoPE rotates pairs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "core/gguf/gguf_file.h"
#include "core/model/gguf_model.h"
#include "core/model/transformer.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::tiny_llama_writer;

LoadedModel load_tiny(DType dtype) {
  auto g =
      GgufFile::parse(MappedFile::from_bytes("tiny.gguf", tiny_llama_writer(dtype).serialize()));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  auto m = load_gguf_model(*g);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

class TransformerContract : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(backend_.init({}).ok()); }
  CpuBackend backend_;
};

TEST_F(TransformerContract, AcceptsTheTinyF32Model) {
  const LoadedModel model = load_tiny(DType::kF32);
  EXPECT_TRUE(Transformer::create(model, backend_).ok());
}

TEST_F(TransformerContract, RefusesF16NormWeights) {
  const LoadedModel model = load_tiny(DType::kF16);  // every tensor f16, norms too
  ASSERT_EQ(model.weights.output_norm.dtype, DType::kF16);
  auto t = Transformer::create(model, backend_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(t.status().message(), HasSubstr("norm weight"));
  EXPECT_THAT(t.status().message(), HasSubstr("needs f32"));
}

TEST_F(TransformerContract, RefusesAnOddHeadSize) {
  LoadedModel model = load_tiny(DType::kF32);
  model.config.head_dim = 3;
  auto t = Transformer::create(model, backend_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("head size 3"));
}

}  // namespace
}  // namespace tessera
