// The int4 baseline: half-step error per group, the nibble layout, record
// sizes, and group sizes clamped to (or refused by) the head size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "core/tensor/dtype.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "tests/codec/encoded_attention_run.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

float group_scale(const uint8_t* record, int head_dim, int group) {
  const uint8_t* h = record + head_dim / 2 + 2 * group;
  return half_to_float(static_cast<uint16_t>(h[0] | (h[1] << 8)));
}

TEST(Int4Codec, EveryElementWithinHalfAStepOfItsGroup) {
  for (int dim : {8, 64, 128}) {
    const Int4Codec codec(32);
    const int group = codec.effective_group_size(dim);
    std::vector<float> x = test::GaussianSource(41).vectors(300, dim);
    for (int v = 0; v < 300; ++v) {
      const float factor = std::pow(10.0f, static_cast<float>(v % 7) - 3.0f);
      for (int i = 0; i < dim; ++i) x[v * dim + i] *= factor;
    }
    const std::size_t record_bytes = codec.encoded_bytes(1, dim);
    std::vector<uint8_t> bytes(codec.encoded_bytes(300, dim));
    codec.encode(x.data(), 300, dim, bytes.data());
    std::vector<float> decoded(x.size());
    codec.decode(bytes.data(), 300, dim, decoded.data());
    for (int v = 0; v < 300; ++v) {
      for (int g = 0; g < dim / group; ++g) {
        const float* xg = &x[v * dim + g * group];
        const float scale = group_scale(&bytes[v * record_bytes], dim, g);
        float max_abs = 0.0f;
        for (int i = 0; i < group; ++i) max_abs = std::max(max_abs, std::fabs(xg[i]));
        EXPECT_GE(scale, max_abs / 7.0f);
        EXPECT_LE(scale, max_abs / 7.0f * (1.0f + 1.0f / 1024.0f) + 0x1.0p-24f);
        for (int i = 0; i < group; ++i)
          ASSERT_LE(std::fabs(xg[i] - decoded[v * dim + g * group + i]),
                    0.5f * scale * (1.0f + 1e-6f))
              << "dim " << dim << " vector " << v << " group " << g << " element " << i;
      }
    }
  }
  const Int4Codec codec(32);
  const std::vector<float> x = test::GaussianSource(42).vectors(1500, 128);
  std::vector<uint8_t> bytes(codec.encoded_bytes(1500, 128));
  codec.encode(x.data(), 1500, 128, bytes.data());
  std::vector<float> decoded(x.size());
  codec.decode(bytes.data(), 1500, 128, decoded.data());
  std::cout << "  int4 g32: rel-MSE " << test::relative_mse(x, decoded) << " on N(0, 1), D = 128\n";
}

TEST(Int4Codec, TwoCodesPerByteLowNibbleFirstThenTheScales) {
  const Int4Codec codec(2);
  const float x[4] = {7.0f, -7.0f, 0.0f, 3.5f};  // scales 1.0 and 0.5
  uint8_t record[6];
  ASSERT_EQ(codec.encoded_bytes(1, 4), sizeof(record));
  codec.encode(x, 1, 4, record);
  EXPECT_EQ(record[0], 0x1F);  // element 0: 7 + 8 = 15 low; element 1: -7 + 8 = 1 high
  EXPECT_EQ(record[1], 0xF8);  // element 2: 0 + 8 low; element 3: 7 + 8 high
  EXPECT_EQ(record[2] | (record[3] << 8), 0x3C00);  // 1.0
  EXPECT_EQ(record[4] | (record[5] << 8), 0x3800);  // 0.5
}

TEST(Int4Codec, BitsPerVectorCountOneScalePerGroup) {
  EXPECT_DOUBLE_EQ(Int4Codec(32).bits_per_vector(128), 576.0);  // 4.5 bits, like q4_0
  EXPECT_DOUBLE_EQ(Int4Codec(128).bits_per_vector(128), 528.0);
  EXPECT_DOUBLE_EQ(Int4Codec(32).bits_per_vector(8), 48.0);  // clamped to one group of 8
  EXPECT_EQ(Int4Codec(32).encoded_bytes(3, 128), 3u * (64 + 8));
}

TEST(Int4Codec, GroupSizeIsClampedToASmallHeadDim) {
  const Int4Codec codec(32);
  EXPECT_EQ(codec.effective_group_size(8), 8);
  EXPECT_EQ(codec.effective_group_size(128), 32);
  EXPECT_TRUE(codec.check_head_dim(8).ok());
  EXPECT_THAT(codec.group_size_note(8), HasSubstr("group size clamped to head_dim 8"));
  EXPECT_EQ(codec.group_size_note(128), "");
}

TEST(Int4Codec, RefusesHeadDimsTheGroupsDoNotTile) {
  const Status uneven = Int4Codec(48).check_head_dim(128);
  EXPECT_EQ(uneven.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(uneven.message(), HasSubstr("head_dim 128 is not a multiple of group_size 48"));
  EXPECT_THAT(Int4Codec(32).check_head_dim(7).message(), HasSubstr("head_dim 7"));
  EXPECT_FALSE(Int4Codec(32).check_head_dim(0).ok());
}

TEST(Int4Codec, ZeroAndNonFiniteGroups) {
  const Int4Codec codec(4);
  const float inf = std::numeric_limits<float>::infinity();
  const float x[8] = {0, 0, 0, 0, 1.0f, inf, 2.0f, 3.0f};
  std::vector<uint8_t> record(codec.encoded_bytes(1, 8));
  codec.encode(x, 1, 8, record.data());
  float decoded[8];
  codec.decode(record.data(), 1, 8, decoded);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(decoded[i], 0.0f);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(decoded[i]));
}

TEST(Int4Codec, OptionsSetTheGroupSize) {
  OptionValues options;
  options.set("group_size", int64_t{64});
  EXPECT_EQ(Int4Codec(options).group_size(), 64);
  options.set("group_size", int64_t{0});
  EXPECT_THROW(Int4Codec{options}, std::invalid_argument);
}

// dot_encoded and accumulate_encoded give exactly the floats of the plain
// per-record loops (code by code, group by group), for tiles of records, the
// tail after them and group sizes even, odd and clamped.
TEST(Int4Codec, AttentionOnRecordsEqualsThePlainLoopsBitForBit) {
  using test::float_bits;
  for (const auto& [group, dim] : {std::pair{32, 8}, {16, 32}, {8, 16}, {3, 6}, {32, 128}}) {
    const Int4Codec codec(group);
    const int g = codec.effective_group_size(dim);
    for (int64_t n : {1, 8, 13}) {
      const test::EncodedAttentionRun run =
          test::run_encoded_attention(codec, n, dim, static_cast<uint64_t>(dim * 100 + n + group));
      const std::vector<uint8_t>& records = run.records;
      const std::vector<float>& q = run.q;
      const std::vector<float>& weights = run.weights;

      std::vector<float> expected_acc(static_cast<std::size_t>(dim), test::kAccumulatorStart);
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t* codes = records.data() + j * codec.encoded_bytes(1, dim);
        const auto code = [&](int i) {
          return static_cast<float>(((codes[i / 2] >> (4 * (i % 2))) & 0x0F) - 8);
        };
        float score = 0.0f;
        for (int start = 0; start < dim; start += g) {
          const uint8_t* scale_bytes = codes + dim / 2 + 2 * (start / g);
          const float scale =
              half_to_float(static_cast<uint16_t>(scale_bytes[0] | scale_bytes[1] << 8));
          float dot = 0.0f;
          for (int i = start; i < start + g; ++i) dot += q[i] * code(i);
          score += dot * scale;
          const float factor = weights[j] * scale;
          for (int i = start; i < start + g; ++i) expected_acc[i] += factor * code(i);
        }
        EXPECT_EQ(float_bits(run.scores[j]), float_bits(score))
            << "group " << group << " dim " << dim << " n " << n << " record " << j;
      }
      for (int i = 0; i < dim; ++i)
        EXPECT_EQ(float_bits(run.acc[i]), float_bits(expected_acc[i]))
            << "group " << group << " dim " << dim << " n " << n << " element " << i;
    }
  }
}

}  // namespace
}  // namespace tessera
