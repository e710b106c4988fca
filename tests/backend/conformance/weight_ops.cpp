// embedding and matmul, for every weight dtype: the weights stored as
// `tessera quantize` stores them (quantize_row), uploaded with usage weights.
#include <vector>

#include "tests/backend/conformance/cases.h"
#include "tests/backend/conformance/device_io.h"
#include "tests/backend/conformance/fixture.h"

namespace tessera::conformance {
namespace {

void embedding_case(Conformance& t, DType dtype, const EmbeddingCase& c, uint64_t seed) {
  SCOPED_TRACE(c.label());
  Backend& b = t.backend();
  const int64_t n = static_cast<int64_t>(c.tokens.size());
  const std::vector<float> values =
      random_values(static_cast<std::size_t>(c.vocab * c.dim), seed, 2.0f);
  std::vector<std::byte> table = encode_rows(dtype, values, c.vocab, c.dim);
  std::vector<float> want(static_cast<std::size_t>(n * c.dim));
  t.reference().embedding(host_tensor(table.data(), dtype, {c.vocab, c.dim}), c.tokens,
                          host_tensor(want.data(), DType::kF32, {n, c.dim}));

  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dtable,
                             upload(b, BufferUsage::kWeights, dtype, {c.vocab, c.dim}, table));
  CONFORMANCE_ASSIGN_OR_FAIL(
      DeviceTensor dout, allocate_tensor(b, BufferUsage::kActivations, DType::kF32, {n, c.dim}));
  b.embedding(dtable.tensor, c.tokens, dout.tensor);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dout.tensor));
  t.expect_conforms(BackendOp::kEmbedding, dtype, c.label(), got, want);
}

void matmul_case(Conformance& t, DType dtype, const MatmulCase& c, uint64_t seed) {
  SCOPED_TRACE(c.label());
  Backend& b = t.backend();
  std::vector<float> x = random_values(static_cast<std::size_t>(c.n * c.k), seed, 2.0f);
  const std::vector<float> w = random_values(static_cast<std::size_t>(c.m * c.k), seed + 1);
  std::vector<std::byte> wbytes = encode_rows(dtype, w, c.m, c.k);
  std::vector<float> want(static_cast<std::size_t>(c.n * c.m));
  t.reference().matmul(host_tensor(x.data(), DType::kF32, {c.n, c.k}),
                       host_tensor(wbytes.data(), dtype, {c.m, c.k}),
                       host_tensor(want.data(), DType::kF32, {c.n, c.m}));

  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dx,
                             upload_f32(b, BufferUsage::kActivations, {c.n, c.k}, x));
  CONFORMANCE_ASSIGN_OR_FAIL(DeviceTensor dw,
                             upload(b, BufferUsage::kWeights, dtype, {c.m, c.k}, wbytes));
  CONFORMANCE_ASSIGN_OR_FAIL(
      DeviceTensor dout, allocate_tensor(b, BufferUsage::kActivations, DType::kF32, {c.n, c.m}));
  b.matmul(dx.tensor, dw.tensor, dout.tensor);
  CONFORMANCE_SYNC(b);
  CONFORMANCE_ASSIGN_OR_FAIL(std::vector<float> got, download_f32(b, dout.tensor));
  t.expect_conforms(BackendOp::kMatmul, dtype, c.label(), got, want);
}

void run_embedding(Conformance& t, DType dtype) {
  uint64_t seed = 1000;
  for (const EmbeddingCase& c : embedding_cases(dtype)) embedding_case(t, dtype, c, seed++);
}

void run_matmul(Conformance& t, DType dtype) {
  uint64_t seed = 2000;
  for (const MatmulCase& c : matmul_cases(dtype)) matmul_case(t, dtype, c, seed += 2);
}

}  // namespace

#define CONFORMANCE_WEIGHT_TESTS(suffix, dtype)        \
  TEST_P(Conformance, Embedding_##suffix) {            \
    CONFORMANCE_REQUIRE(BackendOp::kEmbedding, dtype); \
    run_embedding(*this, dtype);                       \
  }                                                    \
  TEST_P(Conformance, Matmul_##suffix) {               \
    CONFORMANCE_REQUIRE(BackendOp::kMatmul, dtype);    \
    run_matmul(*this, dtype);                          \
  }

CONFORMANCE_WEIGHT_TESTS(f32, DType::kF32)
CONFORMANCE_WEIGHT_TESTS(f16, DType::kF16)
CONFORMANCE_WEIGHT_TESTS(bf16, DType::kBF16)
CONFORMANCE_WEIGHT_TESTS(q8_0, DType::kQ8_0)
CONFORMANCE_WEIGHT_TESTS(q4_0, DType::kQ4_0)
CONFORMANCE_WEIGHT_TESTS(q4_K, DType::kQ4_K)
CONFORMANCE_WEIGHT_TESTS(q6_K, DType::kQ6_K)

}  // namespace tessera::conformance
