// Every SIMD panel kernel gives the scalar reference's bits, on random rows
// of many lengths (tails included) in panels of many shapes (partial register
// tiles included), and the integer kernels compute what the
// blocks mean (the dot of the decoded rows, within the activations' q8
// rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/dot_order.h"
#include "backends/cpu/interleaved_rows.h"
#include "core/tensor/block_quant.h"
#include "core/tensor/dtype.h"

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
  if (const DotKernels* avx512 = avx512_dot_kernels()) out.push_back(avx512);
  return out;
}

constexpr int64_t kLengths[] = {1, 7, 15, 16, 17, 31, 32, 33, 64, 100, 172, 256, 999, 4101};

// Panel shapes: one token (decode tiles) and several (prompt tiles), with
// rows and tokens that leave partial tiles at the edges (70 rows of one
// token: four groups of 16 read at once in decode, then a partial one).
struct Shape {
  int64_t rows, tokens;
};
constexpr Shape kShapes[] = {{1, 1}, {3, 1}, {13, 1}, {70, 1}, {2, 2}, {5, 4}, {9, 7}, {17, 9}};

// Weight rows in one of the float types, `row_elements` apart (more than k:
// the row stride is the panel's, not k).
struct FloatRows {
  std::vector<uint8_t> bytes;
  std::size_t row_bytes;
};
FloatRows float_rows(DType dtype, int64_t rows, int64_t k, uint32_t seed) {
  const int64_t row_elements = k + 3;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(rows * row_elements), seed);
  FloatRows out{std::vector<uint8_t>(dtype_row_bytes(dtype, rows * row_elements)),
                dtype_row_bytes(dtype, row_elements)};
  quantize_row(dtype, w.data(), rows * row_elements, out.bytes.data());
  return out;
}

// out[t][r] of a panel (out_stride rows + 1, so stride matters).
std::vector<float> float_panel(const DotKernels& set, DType dtype, const FloatRows& w,
                               const std::vector<float>& x, Shape shape, int64_t k) {
  std::vector<float> out(static_cast<std::size_t>(shape.tokens * (shape.rows + 1)), -1.0f);
  float_panel_for(set, dtype)({w.bytes.data(), w.row_bytes, shape.rows, x.data(), k + 5,
                               shape.tokens, k, out.data(), shape.rows + 1});
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DotKernels, FloatPanelsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16})
    for (const int64_t k : kLengths)
      for (const Shape shape : kShapes) {
        const FloatRows w = float_rows(dtype, shape.rows, k, 1);
        const std::vector<float> x = gaussian(static_cast<std::size_t>(shape.tokens * (k + 5)), 2);
        const std::vector<float> expected = float_panel(ref, dtype, w, x, shape, k);
        for (const DotKernels* fast : fast_kernels())
          EXPECT_TRUE(same_bits(float_panel(*fast, dtype, w, x, shape, k), expected))
              << fast->name << " " << dtype_name(dtype) << " k " << k << " rows " << shape.rows
              << " tokens " << shape.tokens;
      }
}

// Half-float rows in the f32-row order (K/V read as stored): in every set,
// the bits of the f32 panel over the rows converted to floats.
TEST(DotKernels, HalfRowsInTheF32OrderGiveTheF32PanelsBits) {
  std::vector<const DotKernels*> sets = fast_kernels();
  sets.push_back(&scalar_dot_kernels());
  for (const DType dtype : {DType::kF16, DType::kBF16})
    for (const int64_t k : kLengths)
      for (const Shape shape : kShapes) {
        const FloatRows w = float_rows(dtype, shape.rows, k, 1);
        std::vector<float> widened(w.bytes.size() / 2);  // the rows' padding too
        for (std::size_t i = 0; i < widened.size(); ++i) {
          uint16_t h;
          std::memcpy(&h, w.bytes.data() + 2 * i, 2);
          widened[i] = dtype == DType::kF16 ? half_to_float(h) : bf16_to_float(h);
        }
        FloatRows f32{std::vector<uint8_t>(widened.size() * 4), w.row_bytes * 2};
        std::memcpy(f32.bytes.data(), widened.data(), f32.bytes.size());
        const std::vector<float> x = gaussian(static_cast<std::size_t>(shape.tokens * (k + 5)), 2);
        const std::vector<float> expected =
            float_panel(scalar_dot_kernels(), DType::kF32, f32, x, shape, k);
        for (const DotKernels* set : sets) {
          std::vector<float> out(expected.size(), -1.0f);
          (dtype == DType::kF16 ? set->f16_as_f32 : set->bf16_as_f32)(
              {w.bytes.data(), w.row_bytes, shape.rows, x.data(), k + 5, shape.tokens, k,
               out.data(), shape.rows + 1});
          EXPECT_TRUE(same_bits(out, expected))
              << set->name << " " << dtype_name(dtype) << " k " << k << " rows " << shape.rows
              << " tokens " << shape.tokens;
        }
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
    float got = 0;
    ref.f32({reinterpret_cast<const uint8_t*>(w.data()), w.size() * sizeof(float), 1, x.data(), k,
             1, k, &got, 1});
    EXPECT_NEAR(got, exact, 1e-6 * magnitude + 1e-6) << k;
  }
}

// Random weight rows of `blocks` blocks in `dtype` (from Gaussian values, so
// the scales are realistic) and their decoded floats.
struct BlockRows {
  std::vector<uint8_t> bytes;
  std::size_t row_bytes;
  std::vector<float> decoded;
};
BlockRows block_rows(DType dtype, int64_t rows, int64_t blocks, uint32_t seed) {
  const int64_t k = 32 * blocks;
  const std::vector<float> w = gaussian(static_cast<std::size_t>(rows * k), seed);
  BlockRows out{std::vector<uint8_t>(dtype_row_bytes(dtype, rows * k)), dtype_row_bytes(dtype, k),
                std::vector<float>(w.size())};
  quantize_row(dtype, w.data(), rows * k, out.bytes.data());
  dequantize_row(dtype, out.bytes.data(), rows * k, out.decoded.data());
  return out;
}

// Tokens quantized both ways by `set`: Q8Blocks (per 32) and Q8KBlocks (per
// 256), token after token.
struct QuantizedX {
  std::vector<Q8Block> q8;
  std::vector<Q8KBlock> q8k;
};
QuantizedX quantize_both(const DotKernels& set, const std::vector<float>& x, int64_t tokens) {
  const auto k = static_cast<int64_t>(x.size()) / tokens;
  QuantizedX out{std::vector<Q8Block>(static_cast<std::size_t>(x.size() / 32)),
                 std::vector<Q8KBlock>(static_cast<std::size_t>(x.size() / 256))};
  for (int64_t t = 0; t < tokens; ++t) {
    set.quantize_q8(x.data() + t * k, k, out.q8.data() + t * (k / 32));
    if (k >= 256) set.quantize_q8k(x.data() + t * k, k, out.q8k.data() + t * (k / 256));
  }
  return out;
}

// A panel of `dtype` rows against the tokens through `set`'s kernel for it
// (for rows interleaved in groups of 16, when `interleaved`).
std::vector<float> integer_panel(const DotKernels& set, DType dtype, const BlockRows& w,
                                 const QuantizedX& x, Shape shape, int64_t blocks,
                                 bool interleaved = false) {
  std::vector<float> out(static_cast<std::size_t>(shape.tokens * (shape.rows + 1)), -1.0f);
  if (QuantPanelKernel kernel = integer_panel_for(set, dtype, interleaved)) {
    // The set's arrangement of the same Q8Blocks (when it has one).
    const IntegerActivationLayout layout = integer_activation_layout(set, blocks);
    std::vector<uint8_t> arranged(layout.token_bytes * static_cast<std::size_t>(shape.tokens));
    const void* xq = x.q8.data();
    if (set.arrange_q8 != nullptr) {
      for (int64_t t = 0; t < shape.tokens; ++t)
        set.arrange_q8(dtype, x.q8.data() + t * blocks, blocks,
                       arranged.data() + static_cast<std::size_t>(t) * layout.token_bytes);
      xq = arranged.data();
    }
    kernel({w.bytes.data(), w.row_bytes, shape.rows, xq, layout.stride, shape.tokens, blocks,
            out.data(), shape.rows + 1});
  } else {
    kquant_panel_for(
        set, dtype, interleaved)({w.bytes.data(), w.row_bytes, shape.rows, x.q8k.data(), blocks / 8,
                                  shape.tokens, blocks / 8, out.data(), shape.rows + 1});
  }
  return out;
}

TEST(DotKernels, IntegerPanelsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const int64_t blocks : {1, 2, 3, 7, 8, 24, 64, 129})
    for (const Shape shape : kShapes) {
      const int64_t k = 32 * blocks;
      std::vector<float> x = gaussian(static_cast<std::size_t>(k * shape.tokens), 5);
      x[3] = 0;  // a zero, and a block of zeros (scale 0)
      if (blocks > 2) std::fill_n(x.begin() + 32, 32, 0.0f);
      const QuantizedX xr = quantize_both(ref, x, shape.tokens);
      for (const DotKernels* fast : fast_kernels()) {
        const QuantizedX xf = quantize_both(*fast, x, shape.tokens);
        for (std::size_t b = 0; b < xr.q8.size(); ++b) {
          ASSERT_TRUE(same_bits(xr.q8[b].d, xf.q8[b].d)) << fast->name << " block " << b;
          ASSERT_EQ(std::memcmp(xr.q8[b].q, xf.q8[b].q, 32), 0) << fast->name << " block " << b;
        }
        for (std::size_t b = 0; b < xr.q8k.size(); ++b) {
          ASSERT_TRUE(same_bits(xr.q8k[b].d, xf.q8k[b].d)) << fast->name << " super " << b;
          ASSERT_EQ(std::memcmp(xr.q8k[b].q, xf.q8k[b].q, 256), 0) << fast->name << " super " << b;
          ASSERT_EQ(std::memcmp(xr.q8k[b].sums, xf.q8k[b].sums, sizeof xr.q8k[b].sums), 0)
              << fast->name << " super " << b;
          ASSERT_EQ(
              std::memcmp(xr.q8k[b].half_sums, xf.q8k[b].half_sums, sizeof xr.q8k[b].half_sums), 0)
              << fast->name << " super " << b;
        }
      }
      for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
        if (blocks % (dtype_layout(dtype).block_elements / 32) != 0) continue;
        const BlockRows w = block_rows(dtype, shape.rows, blocks, 6);
        const std::vector<float> expected = integer_panel(ref, dtype, w, xr, shape, blocks);
        for (const DotKernels* fast : fast_kernels())
          EXPECT_TRUE(same_bits(integer_panel(*fast, dtype, w, xr, shape, blocks), expected))
              << fast->name << " " << dtype_name(dtype) << " blocks " << blocks << " rows "
              << shape.rows << " tokens " << shape.tokens;
      }
    }
}

TEST(DotKernels, IntegerRowsComputeTheDotOfTheDecodedRows) {
  const DotKernels& ref = scalar_dot_kernels();
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const int64_t blocks = 64, k = 32 * blocks;
    const BlockRows w = block_rows(dtype, 1, blocks, 7);
    const std::vector<float> x = gaussian(static_cast<std::size_t>(k), 8);
    double exact = 0, magnitude = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      exact += static_cast<double>(w.decoded[i]) * x[i];
      magnitude += std::abs(static_cast<double>(w.decoded[i]) * x[i]);
    }
    // The activations' q8 rounding: about 1/254 of the block's largest |x|
    // at worst, far less on average over 2048 products.
    const float got = integer_panel(ref, dtype, w, quantize_both(ref, x, 1), {1, 1}, blocks)[0];
    EXPECT_NEAR(got, exact, 0.01 * magnitude) << dtype_name(dtype);
  }
}

// GGUF rows of k elements rewritten in groups (what the CPU backend does at
// load for the sets that read them).
std::vector<uint8_t> interleaved(DType dtype, const std::vector<uint8_t>& bytes,
                                 std::size_t row_bytes, int64_t rows, int64_t k) {
  std::vector<uint8_t> out = bytes;  // rows past the last whole group stay as they are
  for (int64_t g = 0; g + group_rows(dtype) <= rows; g += group_rows(dtype))
    interleave_group(dtype, bytes.data() + static_cast<std::size_t>(g) * row_bytes, row_bytes, k,
                     out.data() + static_cast<std::size_t>(g) * row_bytes);
  return out;
}
BlockRows interleaved(DType dtype, const BlockRows& w, int64_t rows, int64_t blocks) {
  BlockRows out = w;
  out.bytes = interleaved(dtype, w.bytes, w.row_bytes, rows, 32 * blocks);
  return out;
}

TEST(DotKernels, InterleavedFloatGroupsMatchTheReferenceBitwise) {
  const DotKernels& ref = scalar_dot_kernels();
  int sets_with_groups = 0;
  for (const DotKernels* fast : fast_kernels())
    for (const DType dtype : {DType::kF16, DType::kBF16}) {
      if (!reads_interleaved(*fast, dtype)) continue;
      ++sets_with_groups;
      // 80 and 144 rows of one token: decode reads several groups at a time
      // (four on AVX-512, two on AVX2; group_decode_streams), then the rest
      // one by one; 48 rows of several tokens: a 32-row prompt tile and a
      // 16-row one. Odd k: the last element alone; 300 and 2048: prompts
      // over stretches of 256 converted at a time, the last one short.
      for (const int64_t k : {1, 2, 7, 16, 48, 113, 300, 2048})
        for (const Shape shape : {Shape{16, 1}, Shape{80, 1}, Shape{144, 1}, Shape{32, 2},
                                  Shape{48, 3}, Shape{16, 5}, Shape{48, 9}, Shape{32, 17}}) {
          ASSERT_TRUE(interleavable(dtype, shape.rows, k));
          const std::vector<float> w = gaussian(static_cast<std::size_t>(shape.rows * k), 30);
          std::vector<uint8_t> rows(dtype_row_bytes(dtype, shape.rows * k));
          quantize_row(dtype, w.data(), shape.rows * k, rows.data());
          const std::size_t row_bytes = dtype_row_bytes(dtype, k);
          const std::vector<uint8_t> groups = interleaved(dtype, rows, row_bytes, shape.rows, k);
          const std::vector<float> x =
              gaussian(static_cast<std::size_t>(shape.tokens * (k + 5)), 31);
          const auto panel = [&](const DotKernels& set, const std::vector<uint8_t>& bytes,
                                 bool grouped) {
            std::vector<float> out(static_cast<std::size_t>(shape.tokens * (shape.rows + 1)),
                                   -1.0f);
            float_panel_for(set, dtype,
                            grouped)({bytes.data(), row_bytes, shape.rows, x.data(), k + 5,
                                      shape.tokens, k, out.data(), shape.rows + 1});
            return out;
          };
          EXPECT_TRUE(same_bits(panel(*fast, groups, true), panel(ref, rows, false)))
              << fast->name << " " << dtype_name(dtype) << " k " << k << " rows " << shape.rows
              << " tokens " << shape.tokens;
        }
    }
  if (sets_with_groups == 0) GTEST_SKIP() << "no kernel set here reads interleaved float rows";
}

TEST(DotKernels, InterleavedGroupsMatchTheReferenceBitwise) {
  const DotKernels& ref = scalar_dot_kernels();
  int sets_with_groups = 0;
  for (const DotKernels* fast : fast_kernels()) {
    if (!reads_interleaved(*fast, DType::kQ4_0)) continue;
    ++sets_with_groups;
    for (const int64_t blocks : {1, 3, 8, 64, 136})
      // One token over 5 and 9 groups: decode reads four groups at a time
      // (group_panel), then the rest one by one.
      for (const Shape shape :
           {Shape{16, 1}, Shape{80, 1}, Shape{144, 1}, Shape{32, 3}, Shape{48, 9}, Shape{16, 17}}) {
        const int64_t k = 32 * blocks;
        std::vector<float> x = gaussian(static_cast<std::size_t>(k * shape.tokens), 9);
        if (blocks > 2) std::fill_n(x.begin() + 32, 32, 0.0f);
        const QuantizedX xq = quantize_both(ref, x, shape.tokens);
        for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
          if (!reads_interleaved(*fast, dtype) ||
              blocks % (dtype_layout(dtype).block_elements / 32) != 0)
            continue;
          const BlockRows w = block_rows(dtype, shape.rows, blocks, 10);
          const BlockRows groups = interleaved(dtype, w, shape.rows, blocks);
          EXPECT_TRUE(same_bits(integer_panel(*fast, dtype, groups, xq, shape, blocks, true),
                                integer_panel(ref, dtype, w, xq, shape, blocks)))
              << fast->name << " " << dtype_name(dtype) << " blocks " << blocks << " rows "
              << shape.rows << " tokens " << shape.tokens;
        }
      }
  }
  if (sets_with_groups == 0) GTEST_SKIP() << "no kernel set here reads interleaved rows";
}

// Every byte of the codes, sub-scales and minimums random (any GGUF file may
// hold them; the fp16 scales kept, so the outputs stay finite): the SIMD
// kernels' integer shortcuts (int16 sums, signs) must hold for all of them,
// on -128 codes and full-range 6-bit values too.
TEST(DotKernels, ArbitraryCodeBytesMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  std::mt19937 rng(12);
  const int64_t blocks = 16, k = 32 * blocks;
  const Shape shape{32, 5};
  std::vector<float> x = gaussian(static_cast<std::size_t>(k * shape.tokens), 13);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] *= 40.0f;  // codes at +-127
  const QuantizedX xq = quantize_both(ref, x, shape.tokens);
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    BlockRows w = block_rows(dtype, shape.rows, blocks, 14);
    const auto block_bytes = static_cast<std::size_t>(dtype_layout(dtype).block_bytes);
    // The fp16 scale fields of each block: d (and dmin) first, q6_K's d last.
    const std::size_t scale_at = dtype == DType::kQ6_K ? 208 : 0;
    const std::size_t scale_bytes = dtype == DType::kQ4_K ? 4 : 2;
    for (std::size_t i = 0; i < w.bytes.size(); ++i) {
      const std::size_t in_block = i % block_bytes;
      if (in_block < scale_at || in_block >= scale_at + scale_bytes)
        w.bytes[i] = static_cast<uint8_t>(rng());
    }
    const std::vector<float> expected = integer_panel(ref, dtype, w, xq, shape, blocks);
    for (const DotKernels* fast : fast_kernels()) {
      EXPECT_TRUE(same_bits(integer_panel(*fast, dtype, w, xq, shape, blocks), expected))
          << fast->name << " " << dtype_name(dtype) << " in GGUF's layout";
      if (reads_interleaved(*fast, dtype)) {
        EXPECT_TRUE(same_bits(integer_panel(*fast, dtype, interleaved(dtype, w, shape.rows, blocks),
                                            xq, shape, blocks, true),
                              expected))
            << fast->name << " " << dtype_name(dtype) << " interleaved";
      }
    }
  }
}

TEST(DotKernels, InterleavedRowsDecodeToTheOriginalValues) {
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const int64_t rows = 32, blocks = 16, k = 32 * blocks;
    EXPECT_TRUE(interleavable(dtype, rows, k));
    EXPECT_FALSE(interleavable(dtype, 15, k));  // not one whole group
    // 37 rows: two groups and five plain rows after them.
    const int64_t ragged = rows + 5;
    EXPECT_TRUE(interleavable(dtype, ragged, k));
    EXPECT_EQ(grouped_rows(dtype, ragged), 32);
    const BlockRows w = block_rows(dtype, ragged, blocks, 11);
    const BlockRows groups = interleaved(dtype, w, ragged, blocks);
    std::vector<float> row(static_cast<std::size_t>(k));
    for (int64_t r = 0; r < ragged; ++r) {
      dequantize_interleaved_row(dtype, groups.bytes.data(), w.row_bytes, ragged, r, k, row.data());
      EXPECT_EQ(std::memcmp(row.data(), w.decoded.data() + r * k, row.size() * sizeof(float)), 0)
          << dtype_name(dtype) << " row " << r;
    }
  }
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    const int64_t rows = 32, k = 45;  // any row length: element by element
    ASSERT_TRUE(interleavable(dtype, rows, k));
    EXPECT_TRUE(interleavable(dtype, rows + 4, k));
    EXPECT_FALSE(interleavable(dtype, 4, k));
    const std::vector<float> w = gaussian(static_cast<std::size_t>(rows * k), 32);
    std::vector<uint8_t> bytes(dtype_row_bytes(dtype, rows * k));
    quantize_row(dtype, w.data(), rows * k, bytes.data());
    std::vector<float> decoded(w.size());
    dequantize_row(dtype, bytes.data(), rows * k, decoded.data());
    const std::vector<uint8_t> groups =
        interleaved(dtype, bytes, dtype_row_bytes(dtype, k), rows, k);
    std::vector<float> row(static_cast<std::size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_interleaved_row(dtype, groups.data(), dtype_row_bytes(dtype, k), rows, r, k,
                                 row.data());
      EXPECT_EQ(std::memcmp(row.data(), decoded.data() + r * k, row.size() * sizeof(float)), 0)
          << dtype_name(dtype) << " row " << r;
    }
  }
  EXPECT_FALSE(interleavable(DType::kF32, 32, 64));
}

// NaN matches NaN (payloads may differ); anything else bit for bit.
bool same_value(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || same_bits(a, b);
}

// Values for the elementwise steps: scores shifted below zero, far below
// (underflow to 0), the edges of the clamp, and non-finite ones.
std::vector<float> elementwise_inputs(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = wide(rng);
  const float special[] = {0.0f,  -0.0f,  -86.9f, -87.0f,    -87.0001f, 88.0f,
                           88.5f, -1e-8f, 1e-8f,  -INFINITY, INFINITY,  NAN};
  for (std::size_t i = 0; i < std::size(special) && i < n; ++i) v[i * 3 % n] = special[i];
  return v;
}

TEST(DotKernels, AttentionStepsMatchTheReferenceBitwise) {
  if (fast_kernels().empty()) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const DotKernels& ref = scalar_dot_kernels();
  for (const int64_t n : {1, 5, 8, 15, 16, 17, 33, 64, 100, 128, 257}) {
    const auto count = static_cast<std::size_t>(n);
    const std::vector<float> b = gaussian(count, 21);
    const std::vector<float> scores = elementwise_inputs(count, 22), up = gaussian(count, 23);
    for (const DotKernels* fast : fast_kernels()) {
      for (const float shift : {0.0f, 3.5f, -2.0f}) {
        std::vector<float> want = scores, got = scores;
        ref.exp_shifted(want.data(), n, shift);
        fast->exp_shifted(got.data(), n, shift);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_TRUE(same_value(got[i], want[i])) << fast->name << " exp of " << scores[i] << " - "
                                                   << shift << ": " << got[i] << " vs " << want[i];
      }
      // Runs of 0, 1, 3 and 7 value rows, n + 3 floats apart, by their weights.
      const std::vector<float> rows = gaussian(7 * (count + 3), 24), weights = gaussian(7, 25);
      std::vector<float> want = b, got = b;
      for (const int64_t run : {0, 1, 3, 7}) {
        ref.axpy_rows(weights.data(), rows.data(), n + 3, run, want.data(), n);
        fast->axpy_rows(weights.data(), rows.data(), n + 3, run, got.data(), n);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_TRUE(same_bits(got[i], want[i]))
              << fast->name << " axpy_rows n " << n << " run " << run << " at " << i;
      }
      // The same over f16 and bf16 rows (half-float K/V, read as stored).
      std::vector<uint16_t> f16_rows(rows.size()), bf16_rows(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        f16_rows[i] = float_to_half(rows[i]);
        bf16_rows[i] = float_to_bf16(rows[i]);
      }
      for (const bool bf16 : {false, true}) {
        const auto axpy = [&](const DotKernels& set) {
          return bf16 ? set.axpy_bf16_rows : set.axpy_f16_rows;
        };
        const uint16_t* halves = bf16 ? bf16_rows.data() : f16_rows.data();
        std::vector<float> want_h = b, got_h = b;
        for (const int64_t run : {0, 1, 3, 7}) {
          axpy(ref)(weights.data(), halves, n + 3, run, want_h.data(), n);
          axpy (*fast)(weights.data(), halves, n + 3, run, got_h.data(), n);
          for (std::size_t i = 0; i < count; ++i)
            ASSERT_TRUE(same_bits(got_h[i], want_h[i]))
                << fast->name << (bf16 ? " axpy_bf16_rows" : " axpy_f16_rows") << " n " << n
                << " run " << run << " at " << i;
        }
      }
      // int8 rows as the int8 codec stores them (codes, then an fp16
      // scale), the row n + 5 bytes long with the scale after two more codes
      // (a record of several heads): scores of three heads and value sums.
      {
        const int64_t row_bytes = n + 5, rows_count = 7;
        std::vector<uint8_t> records(static_cast<std::size_t>(row_bytes * rows_count));
        std::mt19937 codes_rng(31);
        for (uint8_t& byte : records) byte = static_cast<uint8_t>(codes_rng() & 0xffu);
        for (int64_t j = 0; j < rows_count; ++j) {
          const uint16_t scale = float_to_half(0.01f * static_cast<float>(j + 1));
          std::memcpy(&records[static_cast<std::size_t>(j * row_bytes + n + 2)], &scale, 2);
        }
        const std::vector<float> queries = gaussian(3 * (count + 1), 26);
        for (const int64_t run : {0, 1, 3, 7}) {
          const Int8Rows int8{records.data(), row_bytes, n + 2, run, n};
          std::vector<float> want_s(3 * 8, 0.0f), got_s(want_s.size(), 0.0f);
          ref.int8_row_scores(int8, queries.data(), n + 1, 3, want_s.data(), 8);
          fast->int8_row_scores(int8, queries.data(), n + 1, 3, got_s.data(), 8);
          for (std::size_t i = 0; i < want_s.size(); ++i)
            ASSERT_TRUE(same_bits(got_s[i], want_s[i]))
                << fast->name << " int8_row_scores n " << n << " run " << run << " at " << i;
          std::vector<float> want_y = b, got_y = b;
          ref.axpy_int8_rows(weights.data(), int8, want_y.data());
          fast->axpy_int8_rows(weights.data(), int8, got_y.data());
          for (std::size_t i = 0; i < count; ++i)
            ASSERT_TRUE(same_bits(got_y[i], want_y[i]))
                << fast->name << " axpy_int8_rows n " << n << " run " << run << " at " << i;
        }
      }
      // int4 records as the int4 codec stores them (codes two to a byte,
      // then fp16 scales), a row's elements from element 4 on, groups of 2
      // (a scale per pair: the per-lane path) and of the whole record.
      if (n % 2 == 0) {
        const int64_t width = n + 4, rows_count = 7;
        for (const int64_t group : {int64_t{2}, width}) {
          const int64_t row_bytes = width / 2 + 2 * (width / group);
          std::vector<uint8_t> records(static_cast<std::size_t>(row_bytes * rows_count));
          std::mt19937 codes_rng(41);
          for (uint8_t& byte : records) byte = static_cast<uint8_t>(codes_rng() & 0xffu);
          for (int64_t j = 0; j < rows_count; ++j)
            for (int64_t g = 0; g < width / group; ++g) {
              const uint16_t scale = float_to_half(0.01f * static_cast<float>(j + g + 1));
              std::memcpy(&records[static_cast<std::size_t>(j * row_bytes + width / 2 + 2 * g)],
                          &scale, 2);
            }
          const std::vector<float> queries = gaussian(3 * (count + 1), 27);
          for (const int64_t run : {0, 1, 3, 7}) {
            const Int4Rows int4{records.data(), row_bytes, width / 2, 4, group, run, n};
            std::vector<float> want_s(3 * 8, 0.0f), got_s(want_s.size(), 0.0f);
            ref.int4_row_scores(int4, queries.data(), n + 1, 3, want_s.data(), 8);
            fast->int4_row_scores(int4, queries.data(), n + 1, 3, got_s.data(), 8);
            for (std::size_t i = 0; i < want_s.size(); ++i)
              ASSERT_TRUE(same_bits(got_s[i], want_s[i]))
                  << fast->name << " int4_row_scores n " << n << " group " << group << " run "
                  << run << " at " << i;
            std::vector<float> want_y = b, got_y = b;
            ref.axpy_int4_rows(weights.data(), int4, want_y.data());
            fast->axpy_int4_rows(weights.data(), int4, got_y.data());
            for (std::size_t i = 0; i < count; ++i)
              ASSERT_TRUE(same_bits(got_y[i], want_y[i]))
                  << fast->name << " axpy_int4_rows n " << n << " group " << group << " run " << run
                  << " at " << i;
          }
        }
      }
      ref.silu_mul(scores.data(), up.data(), want.data(), n);
      fast->silu_mul(scores.data(), up.data(), got.data(), n);
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_TRUE(same_value(got[i], want[i]))
            << fast->name << " silu_mul of " << scores[i] << ": " << got[i] << " vs " << want[i];
    }
  }
}

TEST(DotKernels, SoftmaxExpIsWithinTwoUlpsOfExp) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp_reference(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2.5e-7);  // two float ulps are 2.4e-7 at most
  EXPECT_EQ(exp_reference(0.0f), 1.0f);
  EXPECT_EQ(exp_reference(-87.5f), 0.0f);
  EXPECT_EQ(exp_reference(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(exp_reference(NAN)));
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
  EXPECT_TRUE(&best == &scalar_dot_kernels() || &best == avx2_dot_kernels() ||
              &best == avx512_dot_kernels());
  std::printf("dot kernels on this CPU: %s\n", best.name);
}

}  // namespace
}  // namespace tessera::cpu
