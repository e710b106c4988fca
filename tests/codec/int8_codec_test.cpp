// The int8 baseline: every element within half a step of its value, the
// record size, and the degenerate vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "core/tensor/dtype.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "tests/codec/encoded_attention_run.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

float record_scale(const uint8_t* record, int head_dim) {
  return half_to_float(static_cast<uint16_t>(record[head_dim] | (record[head_dim + 1] << 8)));
}

TEST(Int8Codec, EveryElementWithinHalfAStep) {
  const Int8Codec codec;
  for (int dim : {8, 128}) {
    std::vector<float> x = test::GaussianSource(31).vectors(400, dim);
    for (int v = 0; v < 400; ++v) {  // norms from 1e-4 to 1e4
      const float factor = std::pow(10.0f, static_cast<float>(v % 9) - 4.0f);
      for (int i = 0; i < dim; ++i) x[v * dim + i] *= factor;
    }
    std::vector<uint8_t> bytes(codec.encoded_bytes(400, dim));
    codec.encode(x.data(), 400, dim, bytes.data());
    std::vector<float> decoded(x.size());
    codec.decode(bytes.data(), 400, dim, decoded.data());
    for (int v = 0; v < 400; ++v) {
      const float* xv = &x[v * dim];
      const float scale = record_scale(&bytes[v * (dim + 2)], dim);
      const float max_abs = std::fabs(*std::max_element(
          xv, xv + dim, [](float a, float b) { return std::fabs(a) < std::fabs(b); }));
      EXPECT_GE(scale, max_abs / 127.0f) << "the scale rounds up, so no code clips";
      // One half ulp above the exact scale: 2^-10 relative, or 2^-24 (the
      // subnormal spacing) for scales below 2^-14.
      EXPECT_LE(scale, max_abs / 127.0f * (1.0f + 1.0f / 1024.0f) + 0x1.0p-24f);
      for (int i = 0; i < dim; ++i)
        ASSERT_LE(std::fabs(xv[i] - decoded[v * dim + i]), 0.5f * scale * (1.0f + 1e-6f))
            << "vector " << v << " element " << i;
    }
  }
  const std::vector<float> x = test::GaussianSource(32).vectors(1500, 128);
  std::vector<uint8_t> bytes(codec.encoded_bytes(1500, 128));
  codec.encode(x.data(), 1500, 128, bytes.data());
  std::vector<float> decoded(x.size());
  codec.decode(bytes.data(), 1500, 128, decoded.data());
  std::cout << "  int8: rel-MSE " << test::relative_mse(x, decoded) << " on N(0, 1), D = 128\n";
}

TEST(Int8Codec, RecordIsTheCodesThenTheScale) {
  const Int8Codec codec;
  EXPECT_EQ(codec.encoded_bytes(1, 128), 130u);
  EXPECT_EQ(codec.encoded_bytes(5, 128), 650u);
  EXPECT_DOUBLE_EQ(codec.bits_per_vector(128), 1040.0);
  EXPECT_DOUBLE_EQ(codec.bits_per_vector(8), 80.0);
  EXPECT_TRUE(codec.check_head_dim(8).ok());
  EXPECT_FALSE(codec.check_head_dim(0).ok());

  const float x[4] = {1.27f, -1.27f, 0.0f, 0.5f};  // scale 0.01 (as a half: 0.010002)
  uint8_t record[6];
  codec.encode(x, 1, 4, record);
  EXPECT_EQ(static_cast<int8_t>(record[0]), 127);
  EXPECT_EQ(static_cast<int8_t>(record[1]), -127);
  EXPECT_EQ(static_cast<int8_t>(record[2]), 0);
  EXPECT_EQ(static_cast<int8_t>(record[3]), 50);
  EXPECT_GE(record_scale(record, 4), 0.01f);
}

TEST(Int8Codec, ZeroHugeAndNonFiniteVectors) {
  const Int8Codec codec;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float x[12] = {0, 0, 0, 0, 1e9f, -2e9f, 3.0f, 0, 1.0f, nan, 2.0f, 3.0f};
  uint8_t bytes[18];
  codec.encode(x, 3, 4, bytes);
  float decoded[12];
  codec.decode(bytes, 3, 4, decoded);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(decoded[i], 0.0f);
  // Past 65504 · 127 the scale saturates: finite, clipped, signs kept.
  EXPECT_FLOAT_EQ(decoded[4], 65504.0f * 127.0f);
  EXPECT_FLOAT_EQ(decoded[5], -65504.0f * 127.0f);
  for (int i = 8; i < 12; ++i) EXPECT_TRUE(std::isnan(decoded[i]));
}

// dot_encoded and accumulate_encoded give exactly the floats of the plain
// per-record loops, for tiles of records and the tail after them.
TEST(Int8Codec, AttentionOnRecordsEqualsThePlainLoopsBitForBit) {
  using test::float_bits;
  const Int8Codec codec;
  for (int dim : {1, 8, 16, 128}) {
    for (int64_t n : {1, 8, 13}) {
      const test::EncodedAttentionRun run =
          test::run_encoded_attention(codec, n, dim, static_cast<uint64_t>(dim * 100 + n));
      const std::vector<uint8_t>& records = run.records;
      const std::vector<float>& q = run.q;
      const std::vector<float>& weights = run.weights;

      std::vector<float> expected_acc(static_cast<std::size_t>(dim), test::kAccumulatorStart);
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t* record = records.data() + j * codec.encoded_bytes(1, dim);
        const float scale =
            half_to_float(static_cast<uint16_t>(record[dim] | record[dim + 1] << 8));
        float dot = 0.0f;
        for (int i = 0; i < dim; ++i)
          dot += q[i] * static_cast<float>(static_cast<int8_t>(record[i]));
        EXPECT_EQ(float_bits(run.scores[j]), float_bits(dot * scale))
            << "dim " << dim << " n " << n << " record " << j;
        const float factor = weights[j] * scale;
        for (int i = 0; i < dim; ++i)
          expected_acc[i] += factor * static_cast<float>(static_cast<int8_t>(record[i]));
      }
      for (int i = 0; i < dim; ++i)
        EXPECT_EQ(float_bits(run.acc[i]), float_bits(expected_acc[i]))
            << "dim " << dim << " n " << n << " element " << i;
    }
  }
}

}  // namespace
}  // namespace tessera
