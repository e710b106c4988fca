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

TEST(DotKernels, IntegerRowsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const DotKernels* fast : fast_kernels())
    for (const int64_t blocks : {1, 2, 3, 7, 8, 24, 64, 129}) {
      const int64_t k = 32 * blocks;
      std::vector<float> x = gaussian(static_cast<std::size_t>(k), 5);
      x[3] = 0;  // a zero, and a block of zeros (scale 0)
      if (blocks > 2) std::fill_n(x.begin() + 32, 32, 0.0f);
      std::vector<Q8Block> xq_ref(static_cast<std::size_t>(blocks)), xq_fast(xq_ref.size());
      ref.quantize_q8(x.data(), k, xq_ref.data());
      fast->quantize_q8(x.data(), k, xq_fast.data());
      for (int64_t b = 0; b < blocks; ++b) {
        ASSERT_TRUE(same_bits(xq_ref[b].d, xq_fast[b].d)) << fast->name << " block " << b;
        ASSERT_EQ(std::memcmp(xq_ref[b].q, xq_fast[b].q, 32), 0) << fast->name << " block " << b;
        ASSERT_EQ(xq_ref[b].sum, xq_fast[b].sum) << fast->name << " block " << b;
      }
      for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
        if (blocks % (dtype_layout(dtype).block_elements / 32) != 0) continue;
        const BlockRow w = block_row(dtype, blocks, 6);
        const auto kernel = [&](const DotKernels& set) {
          return integer_dot_for(set, dtype)(w.bytes.data(), xq_ref.data(), blocks);
        };
        EXPECT_TRUE(same_bits(kernel(*fast), kernel(ref)))
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
    std::vector<Q8Block> xq(static_cast<std::size_t>(blocks));
    ref.quantize_q8(x.data(), k, xq.data());
    double exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      exact += static_cast<double>(w.decoded[i]) * x[i];
      magnitude += std::abs(static_cast<double>(w.decoded[i]) * x[i]);
    }
    const float got = integer_dot_for(ref, dtype)(w.bytes.data(), xq.data(), blocks);
    // The activations' q8 rounding: about 1/254 of each |x| at worst, far
    // less on average over 2048 products.
    EXPECT_NEAR(got, exact, 0.01 * magnitude) << dtype_name(dtype);
  }
}

TEST(DotKernels, TheBestSetIsOneOfThem) {
  const DotKernels& best = best_dot_kernels();
  const DotKernels* avx2 = avx2_dot_kernels();
  EXPECT_TRUE(&best == &scalar_dot_kernels() || &best == avx2);
  std::printf("dot kernels on this CPU: %s\n", best.name);
}

}  // namespace
}  // namespace tessera::cpu
