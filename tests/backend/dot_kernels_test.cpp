// Every SIMD dot kernel gives the scalar reference's bits, on random rows of
// many lengths (tails included), and the integer kernels compute what the
// blocks mean (the dot of the decoded rows, within the activations' q8
// rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "core/tensor/block_quant.h"

namespace tessera::cpu {
namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::vector<float> gaussian(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// The kernel sets to hold against the reference: every one this CPU runs.
std::vector<const DotKernels*> fast_kernels() {
  std::vector<const DotKernels*> out;
  if (const DotKernels* avx2 = avx2_dot_kernels()) out.push_back(avx2);
  return out;
}

constexpr int64_t kLengths[] = {1, 7, 31, 32, 33, 64, 100, 172, 256, 999, 4101};

TEST(DotKernels, FloatRowsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const DotKernels* fast : fast_kernels())
    for (const int64_t k : kLengths) {
      const std::vector<float> w = gaussian(static_cast<std::size_t>(k), 1),
                               x = gaussian(w.size(), 2);
      std::vector<uint16_t> w16(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) w16[i] = float_to_half(w[i]);
      EXPECT_TRUE(same_bits(fast->f32(w.data(), x.data(), k), ref.f32(w.data(), x.data(), k)))
          << fast->name << " f32 k " << k;
      EXPECT_TRUE(same_bits(fast->f16(w16.data(), x.data(), k), ref.f16(w16.data(), x.data(), k)))
          << fast->name << " f16 k " << k;
      std::vector<uint16_t> wb(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) wb[i] = float_to_bf16(w[i]);
      EXPECT_TRUE(same_bits(fast->bf16(wb.data(), x.data(), k), ref.bf16(wb.data(), x.data(), k)))
          << fast->name << " bf16 k " << k;
    }
}

TEST(DotKernels, FloatRowsComputeTheDotProduct) {
  const DotKernels& ref = scalar_dot_kernels();
  for (const int64_t k : kLengths) {
    const std::vector<float> w = gaussian(static_cast<std::size_t>(k), 3),
                             x = gaussian(w.size(), 4);
    double exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      exact += static_cast<double>(w[i]) * x[i];
      magnitude += std::abs(static_cast<double>(w[i]) * x[i]);
    }
    EXPECT_NEAR(ref.f32(w.data(), x.data(), k), exact, 1e-6 * magnitude + 1e-6) << k;
  }
}

// Random weight rows of `blocks` blocks in `dtype` (from Gaussian values, so
// the scales are realistic) and their decoded floats.
struct BlockRow {
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
};
BlockRow block_row(DType dtype, int64_t blocks, uint32_t seed) {
  const int64_t k = 32 * blocks;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(k), seed);
  BlockRow row;
  row.bytes.resize(dtype_row_bytes(dtype, k));
  quantize_row(dtype, w.data(), k, row.bytes.data());
  row.decoded.resize(w.size());
  dequantize_row(dtype, row.bytes.data(), k, row.decoded.data());
  return row;
}

// x quantized both ways: Q8Blocks (per 32) and Q8KBlocks (per 256), by `set`.
struct QuantizedX {
  std::vector<Q8Block> q8;
  std::vector<Q8KBlock> q8k;
};
QuantizedX quantize_both(const DotKernels& set, const std::vector<float>& x) {
  const auto k = static_cast<int64_t>(x.size());
  QuantizedX out{std::vector<Q8Block>(static_cast<std::size_t>(k / 32)),
                 std::vector<Q8KBlock>(static_cast<std::size_t>(k / 256))};
  set.quantize_q8(x.data(), k, out.q8.data());
  if (k >= 256) set.quantize_q8k(x.data(), k, out.q8k.data());
  return out;
}

// The dot of a `dtype` row with x through `set`'s kernel for it.
float integer_dot(const DotKernels& set, DType dtype, const BlockRow& w, const QuantizedX& x) {
  const int64_t blocks = static_cast<int64_t>(x.q8.size());
  if (IntegerDot dot = integer_dot_for(set, dtype)) return dot(w.bytes.data(), x.q8.data(), blocks);
  return kquant_dot_for(set, dtype)(w.bytes.data(), x.q8k.data(), blocks / 8);
}

TEST(DotKernels, IntegerRowsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const DotKernels* fast : fast_kernels())
    for (const int64_t blocks : {1, 2, 3, 7, 8, 24, 64, 129}) {
      const int64_t k = 32 * blocks;
      std::vector<float> x = gaussian(static_cast<std::size_t>(k), 5);
      x[3] = 0;  // a zero, and a block of zeros (scale 0)
      if (blocks > 2) std::fill_n(x.begin() + 32, 32, 0.0f);
      const QuantizedX xr = quantize_both(ref, x), xf = quantize_both(*fast, x);
      for (std::size_t b = 0; b < xr.q8.size(); ++b) {
        ASSERT_TRUE(same_bits(xr.q8[b].d, xf.q8[b].d)) << fast->name << " block " << b;
        ASSERT_EQ(std::memcmp(xr.q8[b].q, xf.q8[b].q, 32), 0) << fast->name << " block " << b;
      }
      for (std::size_t b = 0; b < xr.q8k.size(); ++b) {
        ASSERT_TRUE(same_bits(xr.q8k[b].d, xf.q8k[b].d)) << fast->name << " super " << b;
        ASSERT_EQ(std::memcmp(xr.q8k[b].q, xf.q8k[b].q, 256), 0) << fast->name << " super " << b;
        ASSERT_EQ(std::memcmp(xr.q8k[b].sums, xf.q8k[b].sums, sizeof xr.q8k[b].sums), 0)
            << fast->name << " super " << b;
      }
      for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
        if (blocks % (dtype_layout(dtype).block_elements / 32) != 0) continue;
        const BlockRow w = block_row(dtype, blocks, 6);
        EXPECT_TRUE(same_bits(integer_dot(*fast, dtype, w, xr), integer_dot(ref, dtype, w, xr)))
            << fast->name << " " << dtype_name(dtype) << " blocks " << blocks;
      }
    }
}

TEST(DotKernels, IntegerRowsComputeTheDotOfTheDecodedRows) {
  const DotKernels& ref = scalar_dot_kernels();
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const int64_t blocks = 64, k = 32 * blocks;
    const BlockRow w = block_row(dtype, blocks, 7);
    const std::vector<float> x = gaussian(static_cast<std::size_t>(k), 8);
    double exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      exact += static_cast<double>(w.decoded[i]) * x[i];
      magnitude += std::abs(static_cast<double>(w.decoded[i]) * x[i]);
    }
    // The activations' q8 rounding: about 1/254 of the block's largest |x|
    // at worst, far less on average over 2048 products.
    EXPECT_NEAR(integer_dot(ref, dtype, w, quantize_both(ref, x)), exact, 0.01 * magnitude)
        << dtype_name(dtype);
  }
}

// The kernels' block sizes are the formats'.
TEST(DotKernels, BlockSizesAreTheFormats) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 32), static_cast<std::size_t>(kQ8_0Bytes));
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 32), static_cast<std::size_t>(kQ4_0Bytes));
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_K, 256), static_cast<std::size_t>(kQ4_KBytes));
  EXPECT_EQ(dtype_row_bytes(DType::kQ6_K, 256), static_cast<std::size_t>(kQ6_KBytes));
}

TEST(DotKernels, TheBestSetIsOneOfThem) {
  const DotKernels& best = best_dot_kernels();
  const DotKernels* avx2 = avx2_dot_kernels();
  EXPECT_TRUE(&best == &scalar_dot_kernels() || &best == avx2);
  std::printf("dot kernels on this CPU: %s\n", best.name);
}

}  // namespace
}  // namespace tessera::cpu
