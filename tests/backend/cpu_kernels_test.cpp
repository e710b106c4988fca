// Every CPU kernel but attention (cpu_attention_test.cpp) against a naive
// double-precision reference written here, plus the reproducibility
// guarantees: bitwise the same for 1, 2 or 3 threads and for a batch versus
// one token at a time.
#include "backends/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "backends/cpu/dot_kernels.h"
#include "backends/cpu/interleaved_rows.h"
#include "core/tensor/block_quant.h"
#include "core/tensor/dtype.h"
#include "tests/backend/kernel_test_util.h"

namespace tessera::cpu {
namespace {

using test::bitwise_equal;
using test::expect_close;
using test::random_values;
using test::round_to_half;
using test::to_half;
using test::view;

// ---------------------------------------------------------------- embedding

TEST(CpuEmbedding, CopiesRowsOfF32AndF16Tables) {
  const int64_t vocab = 11, dim = 13;
  std::vector<float> table = random_values(vocab * dim, 1);
  std::vector<uint16_t> table16 = to_half(table);
  const std::vector<int32_t> tokens = {3, 0, 10, 3, 7};
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * dim, -1.0f), out16(n * dim, -1.0f);
    embedding(view(table, {vocab, dim}), tokens, view(out, {n, dim}), &pool);
    embedding(Tensor::contiguous(table16.data(), DType::kF16, {vocab, dim}), tokens,
              view(out16, {n, dim}), &pool);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < dim; ++i) {
        const std::size_t src = static_cast<std::size_t>(tokens[t] * dim + i);
        EXPECT_EQ(out[t * dim + i], table[src]);
        EXPECT_EQ(out16[t * dim + i], half_to_float(table16[src]));
      }
    }
  }
}

// ------------------------------------------------------------------- matmul

std::vector<double> matmul_reference(const std::vector<float>& x, const std::vector<float>& w,
                                     int64_t n, int64_t k, int64_t m) {
  std::vector<double> out(static_cast<std::size_t>(n * m));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += static_cast<double>(x[t * k + i]) * w[j * k + i];
      out[static_cast<std::size_t>(t * m + j)] = s;
    }
  return out;
}

struct MatmulShape {
  int64_t n, k, m;
};

void PrintTo(const MatmulShape& s, std::ostream* os) {
  *os << "n=" << s.n << " k=" << s.k << " m=" << s.m;
}

class CpuMatmul : public ::testing::TestWithParam<MatmulShape> {};

TEST_P(CpuMatmul, MatchesReferenceForF32AndF16Weights) {
  const auto [n, k, m] = GetParam();
  std::vector<float> x = random_values(n * k, 10 + n);
  std::vector<float> w = random_values(m * k, 20 + k);
  std::vector<uint16_t> w16 = to_half(w);
  std::vector<float> w_rounded = round_to_half(w);

  std::vector<float> first, first16;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * m), out16(n * m);
    matmul(view(x, {n, k}), view(w, {m, k}), view(out, {n, m}), &pool);
    matmul(view(x, {n, k}), Tensor::contiguous(w16.data(), DType::kF16, {m, k}),
           view(out16, {n, m}), &pool);

    expect_close(out, matmul_reference(x, w, n, k, m), 1e-5, "f32 weights");
    // f16 weights are exactly f32 weights rounded to f16 (summed in the
    // half-row order, not f32's: close, not the same bits).
    expect_close(out16, matmul_reference(x, w_rounded, n, k, m), 1e-5, "f16 weights");
    if (first.empty()) {
      first = out;
      first16 = out16;
    }
    EXPECT_TRUE(bitwise_equal(out, first)) << threads << " threads differ from 1";
    EXPECT_TRUE(bitwise_equal(out16, first16)) << threads << " threads differ from 1 (f16)";
  }
}

// A token's output must not depend on which other tokens share its batch.
TEST_P(CpuMatmul, BatchEqualsOneTokenAtATime) {
  const auto [n, k, m] = GetParam();
  std::vector<float> x = random_values(n * k, 30);
  std::vector<float> w = random_values(m * k, 31);
  ThreadPool pool(2);
  std::vector<float> batch(n * m);
  matmul(view(x, {n, k}), view(w, {m, k}), view(batch, {n, m}), &pool);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> row(m);
    matmul(Tensor::contiguous(x.data() + t * k, DType::kF32, {1, k}), view(w, {m, k}),
           view(row, {1, m}), &pool);
    EXPECT_TRUE(std::memcmp(row.data(), batch.data() + t * m, m * sizeof(float)) == 0)
        << "token " << t;
  }
}

// A matrix whose rows are not whole groups of 16 (Qwen's 151,669-row
// classifier) is held as its whole groups interleaved and the rest plain:
// the product and the embedding rows equal the plain matrix's, bit for bit.
TEST(CpuMatmulInterleaved, RowsPastTheLastGroupStayPlainAndGiveTheSameProducts) {
  const int64_t m = 37, k = 256;
  ThreadPool pool(2);
  for (const DType dtype :
       {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    if (!reads_interleaved(best_dot_kernels(), dtype)) continue;
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const std::vector<float> values = random_values(m * k, 41);
    const std::size_t row_bytes = dtype_row_bytes(dtype, k);
    std::vector<uint8_t> plain(row_bytes * m);
    quantize_row(dtype, values.data(), m * k, plain.data());
    std::vector<uint8_t> grouped = plain;
    ASSERT_EQ(grouped_rows(dtype, m), 32);
    for (int64_t g = 0; g < 32; g += 16)
      interleave_group(dtype, plain.data() + g * row_bytes, row_bytes, k,
                       grouped.data() + g * row_bytes);
    const Tensor w_plain = Tensor::contiguous(plain.data(), dtype, {m, k});
    const Tensor w_grouped = Tensor::contiguous(grouped.data(), dtype, {m, k});
    for (const int64_t n : {1, 5}) {
      std::vector<float> x = random_values(n * k, 42);
      std::vector<float> want(n * m), got(n * m);
      matmul(view(x, {n, k}), w_plain, view(want, {n, m}), &pool, false);
      matmul(view(x, {n, k}), w_grouped, view(got, {n, m}), &pool, true);
      EXPECT_TRUE(bitwise_equal(got, want)) << n << " tokens";
    }
    const std::vector<int32_t> tokens = {0, 15, 31, 32, 36};
    std::vector<float> want(tokens.size() * k), got(tokens.size() * k);
    const auto rows = static_cast<int64_t>(tokens.size());
    embedding(w_plain, tokens, view(want, {rows, k}), &pool, false);
    embedding(w_grouped, tokens, view(got, {rows, k}), &pool, true);
    EXPECT_TRUE(bitwise_equal(got, want));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuMatmul,
                         ::testing::Values(MatmulShape{1, 16, 8}, MatmulShape{1, 37, 5},
                                           MatmulShape{3, 37, 19}, MatmulShape{4, 64, 33},
                                           MatmulShape{9, 128, 70}, MatmulShape{2, 3, 1}));

TEST(CpuMatmulStrided, HonoursRowStridesOfXWAndOut) {
  const int64_t n = 3, k = 20, m = 7, pad = 5;
  std::vector<float> xs = random_values(n * (k + pad), 40);
  std::vector<float> ws = random_values(m * (k + pad), 41);
  std::vector<float> x(n * k), w(m * k);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < k; ++i) x[t * k + i] = xs[t * (k + pad) + i];
  for (int64_t j = 0; j < m; ++j)
    for (int64_t i = 0; i < k; ++i) w[j * k + i] = ws[j * (k + pad) + i];

  Tensor xv = view(xs, {n, k});
  xv.stride[0] = k + pad;
  Tensor wv = view(ws, {m, k});
  wv.stride[0] = k + pad;
  std::vector<float> outs(n * (m + pad), 7.0f);
  Tensor ov = view(outs, {n, m});
  ov.stride[0] = m + pad;
  ThreadPool pool(2);
  matmul(xv, wv, ov, &pool);

  std::vector<float> out(n * m), expect(n * m);
  matmul(view(x, {n, k}), view(w, {m, k}), view(expect, {n, m}), &pool);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < m; ++j) EXPECT_EQ(outs[t * (m + pad) + j], expect[t * m + j]);
    for (int64_t j = m; j < m + pad; ++j) EXPECT_EQ(outs[t * (m + pad) + j], 7.0f);
  }
}

#ifndef NDEBUG
TEST(CpuKernelsDeathTest, DebugBuildsCheckShapes) {
  std::vector<float> x(8), w(8), out(8);
  ThreadPool pool(1);
  EXPECT_DEATH(matmul(view(x, {2, 4}), view(w, {2, 4}), view(out, {4, 2}), &pool),
               "out is \\[n, m\\]");
}
#endif

// ----------------------------------------------------------------- rms_norm

TEST(CpuRmsNorm, MatchesReferenceAndWorksInPlace) {
  for (const auto& [n, d] : {std::pair<int64_t, int64_t>{1, 8}, {3, 37}, {5, 260}}) {
    std::vector<float> x = random_values(n * d, 50 + d, 3.0f);
    std::vector<float> weight = random_values(d, 51);
    const float eps = 1e-5f;
    std::vector<double> want(n * d);
    for (int64_t t = 0; t < n; ++t) {
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[t * d + i]) * x[t * d + i];
      const double scale = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
      for (int64_t i = 0; i < d; ++i) want[t * d + i] = x[t * d + i] * scale * weight[i];
    }
    std::vector<float> first;
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      std::vector<float> out(n * d);
      rms_norm(view(x, {n, d}), view(weight, {d}), eps, view(out, {n, d}), &pool);
      expect_close(out, want, 1e-5, "rms_norm");
      if (first.empty()) first = out;
      EXPECT_TRUE(bitwise_equal(out, first));
      std::vector<float> in_place = x;
      rms_norm(view(in_place, {n, d}), view(weight, {d}), eps, view(in_place, {n, d}), &pool);
      EXPECT_TRUE(bitwise_equal(in_place, out));
    }
  }
}

// --------------------------------------------------------------------- rope

TEST(CpuRope, MatchesReferenceForHeadDims8And16) {
  const float theta = 10000.0f;
  for (const int64_t head_dim : {8, 16}) {
    const int64_t n = 4, heads = 3;
    const std::vector<int32_t> positions = {0, 1, 17, 300};
    std::vector<float> x = random_values(n * heads * head_dim, 60 + head_dim);
    std::vector<double> want(x.size());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < head_dim / 2; ++i) {
          const double angle =
              positions[t] * std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * head_dim + 2 * i);
          const double v0 = x[at], v1 = x[at + 1];
          want[at] = v0 * std::cos(angle) - v1 * std::sin(angle);
          want[at + 1] = v0 * std::sin(angle) + v1 * std::cos(angle);
        }
    std::vector<float> first;
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      std::vector<float> y = x;
      RopeTable table;  // positions 0, 1, 17 from the table; 300 past it
      ASSERT_TRUE(table.prepare(head_dim, llama_rope(theta), 64));
      rope(view(y, {n, heads, head_dim}), positions, table, &pool);
      // Float angles at position 300 carry ~1e-5 relative error.
      expect_close(y, want, 1e-4, "rope");
      if (first.empty()) first = y;
      EXPECT_TRUE(bitwise_equal(y, first));
    }
  }
}

TEST(CpuRope, PositionZeroIsTheIdentity) {
  const int64_t n = 2, heads = 4, head_dim = 16;
  std::vector<float> x = random_values(n * heads * head_dim, 70);
  std::vector<float> y = x;
  ThreadPool pool(2);
  const std::vector<int32_t> positions = {0, 0};
  RopeTable table;
  ASSERT_TRUE(table.prepare(head_dim, llama_rope(10000.0f), 4));
  rope(view(y, {n, heads, head_dim}), positions, table, &pool);
  EXPECT_TRUE(bitwise_equal(x, y));
}

// ------------------------------------------------------------ swiglu / add

TEST(CpuElementwise, SwigluAndAddMatchReference) {
  const int64_t n = 3, h = 1000;
  std::vector<float> g = random_values(n * h, 80, 6.0f);
  std::vector<float> u = random_values(n * h, 81, 2.0f);
  std::vector<double> want_swiglu(n * h), want_add(n * h);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double gi = g[i];
    want_swiglu[i] = gi / (1.0 + std::exp(-gi)) * u[i];
    want_add[i] = static_cast<double>(g[i]) + u[i];
  }
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * h);
    swiglu(view(g, {n, h}), view(u, {n, h}), view(out, {n, h}), &pool);
    expect_close(out, want_swiglu, 1e-6, "swiglu");
    add(view(g, {n, h}), view(u, {n, h}), view(out, {n, h}), &pool);
    expect_close(out, want_add, 1e-7, "add");
    std::vector<float> in_place = g;  // out aliases a
    add(view(in_place, {n, h}), view(u, {n, h}), view(in_place, {n, h}), &pool);
    EXPECT_TRUE(bitwise_equal(in_place, out));
  }
}

}  // namespace
}  // namespace tessera::cpu
