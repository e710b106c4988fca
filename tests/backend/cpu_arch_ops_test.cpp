// The ops the architectures beyond llama add (qwen2's biases, gemma3's
// GELU-tanh gate and embedding scale, NEOX RoPE, Llama 3's frequency factors,
// linear RoPE scaling) against double-precision references, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "tests/backend/kernel_test_util.h"

namespace tessera::cpu {
namespace {

using test::expect_close;
using test::random_values;
using test::view;

TEST(CpuArchOps, AddBiasAddsTheRowToEveryToken) {
  const int64_t n = 5, d = 24;
  const std::vector<float> x = random_values(n * d, 1);
  std::vector<float> bias = random_values(d, 2);
  std::vector<double> want(static_cast<std::size_t>(n * d));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < d; ++i)
      want[static_cast<std::size_t>(t * d + i)] =
          double{x[static_cast<std::size_t>(t * d + i)]} + bias[static_cast<std::size_t>(i)];
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> y = x;  // in place
    add_bias(view(y, {n, d}), view(bias, {d}), view(y, {n, d}), &pool);
    expect_close(y, want, 1e-6, "add_bias");
  }
}

TEST(CpuArchOps, GegluIsTanhGeluTimesUp) {
  const int64_t count = 300;
  std::vector<float> gate = random_values(count, 3);
  for (float& g : gate) g *= 4.0f;  // reach the tails
  std::vector<float> up = random_values(count, 4);
  std::vector<double> want(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = gate[i];
    want[i] = 0.5 * g *
              (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (g + 0.044715 * g * g * g))) * up[i];
  }
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> out(static_cast<std::size_t>(count));
    geglu(view(gate, {count}), view(up, {count}), view(out, {count}), &pool);
    expect_close(out, want, 1e-5, "geglu");
  }
}

TEST(CpuArchOps, ScaleMultipliesInPlace) {
  std::vector<float> x = random_values(100, 5);
  std::vector<double> want(x.begin(), x.end());
  for (double& w : want) w *= 8.0;
  ThreadPool pool(2);
  scale(view(x, {100}), 8.0f, view(x, {100}), &pool);
  expect_close(x, want, 1e-7, "scale");
}

// RoPE in both pairings, with factors and a position scale, against the
// formula in double.
TEST(CpuArchOps, RopeVariantsMatchTheFormula) {
  const int64_t n = 3, heads = 2, head_dim = 16, half = head_dim / 2;
  const std::vector<float> x = random_values(n * heads * head_dim, 6);
  const std::vector<int32_t> positions = {0, 5, 40};  // 40 past the table
  std::vector<float> factors(static_cast<std::size_t>(half));
  for (int64_t i = 0; i < half; ++i) factors[static_cast<std::size_t>(i)] = 1.0f + 0.5f * i;
  for (const RopePairs pairs : {RopePairs::kAdjacent, RopePairs::kHalves}) {
    for (const bool with_factors : {false, true}) {
      RopeSpec rope;
      rope.theta = 1000.0f;
      rope.position_scale = 0.125f;
      rope.pairs = pairs;
      if (with_factors) rope.freq_factors = factors;
      std::vector<double> want(x.begin(), x.end());
      for (int64_t t = 0; t < n; ++t)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t i = 0; i < half; ++i) {
            double freq = std::pow(1000.0, -2.0 * i / head_dim);
            if (with_factors) freq /= factors[static_cast<std::size_t>(i)];
            const double angle = positions[static_cast<std::size_t>(t)] * 0.125 * freq;
            const int64_t base = (t * heads + h) * head_dim;
            const int64_t a = base + (pairs == RopePairs::kAdjacent ? 2 * i : i);
            const int64_t b = base + (pairs == RopePairs::kAdjacent ? 2 * i + 1 : i + half);
            const double v0 = x[static_cast<std::size_t>(a)], v1 = x[static_cast<std::size_t>(b)];
            want[static_cast<std::size_t>(a)] = v0 * std::cos(angle) - v1 * std::sin(angle);
            want[static_cast<std::size_t>(b)] = v0 * std::sin(angle) + v1 * std::cos(angle);
          }
      ThreadPool pool(2);
      RopeTable table;
      ASSERT_TRUE(table.prepare(head_dim, rope, 16));
      EXPECT_TRUE(table.is_for(head_dim, rope));
      std::vector<float> y = x;
      cpu::rope(view(y, {n, heads, head_dim}), positions, table, &pool);
      expect_close(y, want, 1e-5, "rope");
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
