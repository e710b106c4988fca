// Every CPU kernel against a naive double-precision reference written here,
// plus the reproducibility guarantees: bitwise the same for 1, 2 or 3
// threads and for a batch versus one token at a time.
#include "backends/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "core/sampling/rng.h"
#include "core/tensor/dtype.h"

namespace tessera::cpu {
namespace {

std::vector<float> random_values(std::size_t count, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>((rng.uniform() * 2.0 - 1.0) * scale);
  return v;
}

std::vector<uint16_t> to_half(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
  return h;
}

std::vector<float> round_to_half(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = half_to_float(float_to_half(v[i]));
  return r;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// |got - want| <= tol * (1 + |want|) element by element.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

Tensor view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return Tensor::contiguous(v.data(), DType::kF32, shape);
}

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

  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(n * m), out16(n * m), out_rounded(n * m);
    matmul(view(x, {n, k}), view(w, {m, k}), view(out, {n, m}), &pool);
    matmul(view(x, {n, k}), Tensor::contiguous(w16.data(), DType::kF16, {m, k}),
           view(out16, {n, m}), &pool);
    matmul(view(x, {n, k}), view(w_rounded, {m, k}), view(out_rounded, {n, m}), &pool);

    expect_close(out, matmul_reference(x, w, n, k, m), 1e-5, "f32 weights");
    // f16 weights are exactly f32 weights rounded to f16.
    EXPECT_TRUE(bitwise_equal(out16, out_rounded)) << threads << " threads";
    expect_close(out16, matmul_reference(x, w_rounded, n, k, m), 1e-5, "f16 weights");
    if (first.empty()) first = out;
    EXPECT_TRUE(bitwise_equal(out, first)) << threads << " threads differ from 1";
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
      rope(view(y, {n, heads, head_dim}), positions, theta, &pool);
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
  rope(view(y, {n, heads, head_dim}), positions, 10000.0f, &pool);
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

// ---------------------------------------------------------------- attention

// The K/V cache as stored by a typical store, [capacity, kv_heads, head_dim]
// token-major, and seen through a strided [kv_heads, cached, head_dim] view.
struct Cache {
  int64_t kv_heads, cached, head_dim, capacity;
  std::vector<float> k, v;

  Cache(int64_t kvh, int64_t c, int64_t hd, uint64_t seed)
      : kv_heads(kvh), cached(c), head_dim(hd), capacity(c + 3) {
    k = random_values(capacity * kvh * hd, seed);
    v = random_values(capacity * kvh * hd, seed + 1);
  }
  float k_at(int64_t h, int64_t j, int64_t d) const { return k[(j * kv_heads + h) * head_dim + d]; }
  float v_at(int64_t h, int64_t j, int64_t d) const { return v[(j * kv_heads + h) * head_dim + d]; }
  Tensor view_of(std::vector<float>& data) const {
    Tensor t = Tensor::contiguous(data.data(), DType::kF32, {kv_heads, cached, head_dim});
    t.stride = {head_dim, kv_heads * head_dim, 1, 0};
    return t;
  }
};

struct AttentionCase {
  int64_t n, heads, kv_heads, head_dim, cached;
  BatchVisibility visibility;
};

std::string name_of(const AttentionCase& c) {
  return "n" + std::to_string(c.n) + "_h" + std::to_string(c.heads) + "_kv" +
         std::to_string(c.kv_heads) + "_d" + std::to_string(c.head_dim) + "_c" +
         std::to_string(c.cached) +
         (c.visibility == BatchVisibility::kCausal ? "_causal" : "_bidirectional");
}

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << name_of(c);
}

std::vector<double> attention_reference(const AttentionCase& c, const std::vector<float>& q,
                                        const Cache& cache, const std::vector<float>& bk,
                                        const std::vector<float>& bv) {
  const int64_t group = c.heads / c.kv_heads;
  std::vector<double> out(static_cast<std::size_t>(c.n * c.heads * c.head_dim), 0.0);
  for (int64_t t = 0; t < c.n; ++t)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kvh = h / group;
      const int64_t in_batch = c.visibility == BatchVisibility::kCausal ? t + 1 : c.n;
      std::vector<double> scores;
      std::vector<const float*> values;
      std::vector<double> key(c.head_dim);
      auto score = [&](const double* k) {
        double s = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) s += q[(t * c.heads + h) * c.head_dim + d] * k[d];
        return s / std::sqrt(static_cast<double>(c.head_dim));
      };
      for (int64_t j = 0; j < c.cached; ++j) {
        for (int64_t d = 0; d < c.head_dim; ++d) key[d] = cache.k_at(kvh, j, d);
        scores.push_back(score(key.data()));
        values.push_back(&cache.v[(j * c.kv_heads + kvh) * c.head_dim]);
      }
      for (int64_t j = 0; j < in_batch; ++j) {
        for (int64_t d = 0; d < c.head_dim; ++d)
          key[d] = bk[(j * c.kv_heads + kvh) * c.head_dim + d];
        scores.push_back(score(key.data()));
        values.push_back(&bv[(j * c.kv_heads + kvh) * c.head_dim]);
      }
      double max = scores[0], sum = 0;
      for (double s : scores) max = std::max(max, s);
      for (double& s : scores) sum += (s = std::exp(s - max));
      for (std::size_t j = 0; j < scores.size(); ++j)
        for (int64_t d = 0; d < c.head_dim; ++d)
          out[(t * c.heads + h) * c.head_dim + d] += scores[j] / sum * values[j][d];
    }
  return out;
}

class CpuAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(CpuAttention, MatchesReferenceAndIsThreadCountIndependent) {
  const AttentionCase c = GetParam();
  std::vector<float> q = random_values(c.n * c.heads * c.head_dim, 90, 2.0f);
  Cache cache(c.kv_heads, c.cached, c.head_dim, 91);
  std::vector<float> bk = random_values(c.n * c.kv_heads * c.head_dim, 93, 2.0f);
  std::vector<float> bv = random_values(c.n * c.kv_heads * c.head_dim, 94);
  const std::vector<double> want = attention_reference(c, q, cache, bk, bv);

  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> out(q.size(), 123.0f);
    attention(view(q, {c.n, c.heads, c.head_dim}), cache.view_of(cache.k), cache.view_of(cache.v),
              view(bk, {c.n, c.kv_heads, c.head_dim}), view(bv, {c.n, c.kv_heads, c.head_dim}),
              c.visibility, view(out, {c.n, c.heads, c.head_dim}), &pool);
    expect_close(out, want, 2e-6, name_of(c));
    if (first.empty()) first = out;
    EXPECT_TRUE(bitwise_equal(out, first)) << threads << " threads differ from 1";
  }
}

// Causal: running the batch at once equals running token t alone after
// tokens 0..t-1 have been appended to the cache.
class CpuCausalAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(CpuCausalAttention, BatchEqualsOneTokenAtATime) {
  const AttentionCase c = GetParam();
  const int64_t row = c.kv_heads * c.head_dim;
  const int64_t hd = c.head_dim;
  std::vector<float> q = random_values(c.n * c.heads * hd, 95, 2.0f);
  std::vector<float> bk = random_values(c.n * row, 96, 2.0f);
  std::vector<float> bv = random_values(c.n * row, 97);
  // Cache storage with room for the batch: [cached + n, kv_heads, head_dim].
  Cache cache(c.kv_heads, c.cached, hd, 98);
  cache.k.resize((c.cached + c.n) * row);
  cache.v.resize((c.cached + c.n) * row);
  ThreadPool pool(2);
  std::vector<float> batch_out(q.size());
  attention(view(q, {c.n, c.heads, hd}), cache.view_of(cache.k), cache.view_of(cache.v),
            view(bk, {c.n, c.kv_heads, hd}), view(bv, {c.n, c.kv_heads, hd}), c.visibility,
            view(batch_out, {c.n, c.heads, hd}), &pool);
  for (int64_t t = 0; t < c.n; ++t) {
    Cache grown = cache;
    grown.cached = c.cached + t;
    for (int64_t j = 0; j < t; ++j) {
      std::copy_n(bk.data() + j * row, row, grown.k.data() + (c.cached + j) * row);
      std::copy_n(bv.data() + j * row, row, grown.v.data() + (c.cached + j) * row);
    }
    std::vector<float> out(c.heads * hd);
    attention(Tensor::contiguous(q.data() + t * c.heads * hd, DType::kF32, {1, c.heads, hd}),
              grown.view_of(grown.k), grown.view_of(grown.v),
              Tensor::contiguous(bk.data() + t * row, DType::kF32, {1, c.kv_heads, hd}),
              Tensor::contiguous(bv.data() + t * row, DType::kF32, {1, c.kv_heads, hd}),
              c.visibility, view(out, {1, c.heads, hd}), &pool);
    EXPECT_TRUE(std::memcmp(out.data(), batch_out.data() + t * c.heads * hd,
                            out.size() * sizeof(float)) == 0)
        << "token " << t;
  }
}

std::vector<AttentionCase> attention_cases(bool causal_only) {
  std::vector<AttentionCase> cases;
  for (int64_t n : {1, 4})
    for (int64_t ratio : {1, 2})
      for (int64_t head_dim : {8, 16})
        for (int64_t cached : {0, 5})
          for (BatchVisibility v : {BatchVisibility::kCausal, BatchVisibility::kBidirectional})
            if (!causal_only || v == BatchVisibility::kCausal)
              cases.push_back({n, 4, 4 / ratio, head_dim, cached, v});
  cases.push_back({7, 6, 2, 16, 33, BatchVisibility::kCausal});  // ratio 3, longer context
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuAttention, ::testing::ValuesIn(attention_cases(false)),
                         [](const auto& test) { return name_of(test.param); });
INSTANTIATE_TEST_SUITE_P(Cases, CpuCausalAttention, ::testing::ValuesIn(attention_cases(true)),
                         [](const auto& test) { return name_of(test.param); });

TEST(CpuAttentionSingle, OneVisibleEntryReturnsItsValue) {
  // n = 1, no cache: each query head sees only its kv head's batch entry.
  const int64_t heads = 4, kv_heads = 2, hd = 8;
  std::vector<float> q = random_values(heads * hd, 100, 5.0f);
  std::vector<float> bk = random_values(kv_heads * hd, 101);
  std::vector<float> bv = random_values(kv_heads * hd, 102);
  std::vector<float> out(heads * hd);
  ThreadPool pool(2);
  const Tensor empty;  // cached = 0 as a default view
  attention(view(q, {1, heads, hd}), empty, empty, view(bk, {1, kv_heads, hd}),
            view(bv, {1, kv_heads, hd}), BatchVisibility::kCausal, view(out, {1, heads, hd}),
            &pool);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t d = 0; d < hd; ++d) EXPECT_EQ(out[h * hd + d], bv[(h / 2) * hd + d]);
}

TEST(CpuAttentionSingle, FirstCausalTokenSeesOnlyItself) {
  // n = 3 causal, no cache: token 0 returns its own V whatever the others are.
  const int64_t n = 3, heads = 2, hd = 16;
  std::vector<float> q = random_values(n * heads * hd, 103, 5.0f);
  std::vector<float> bk = random_values(n * heads * hd, 104);
  std::vector<float> bv = random_values(n * heads * hd, 105);
  Tensor empty_cache = Tensor::contiguous(nullptr, DType::kF32, {heads, 0, hd});
  std::vector<float> out(n * heads * hd);
  ThreadPool pool(1);
  attention(view(q, {n, heads, hd}), empty_cache, empty_cache, view(bk, {n, heads, hd}),
            view(bv, {n, heads, hd}), BatchVisibility::kCausal, view(out, {n, heads, hd}), &pool);
  for (int64_t i = 0; i < heads * hd; ++i) EXPECT_EQ(out[i], bv[i]);
}

}  // namespace
}  // namespace tessera::cpu
