// The CPU attention kernel against a double-precision reference that applies
// the visibility and RoPE rules literally (docs/architecture.md): stored
// segments, in-batch parents and blocks, the sink + window rule, keys stored
// before RoPE, and StreamingLLM's renumbering done the way the spec states it
// (visible keys at 0..n-1, the query at n-1). Plus the bitwise guarantees:
// any thread count, a batch versus one token at a time, one segment versus
// several, several sequences versus each alone. Branches (BIM): a query's
// output is, bit for bit, that of the store without the other branches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/rope_table.h"
#include "tests/backend/kernel_test_util.h"

namespace tessera::cpu {
namespace {

using test::bitwise_equal;
using test::random_values;
using test::view;

constexpr float kTheta = 10000.0f;

// Rotates x (head_dim) at position p, in double.
std::vector<double> rotate(const float* x, int64_t head_dim, double p) {
  std::vector<double> out(static_cast<std::size_t>(head_dim));
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double angle =
        p * std::pow(static_cast<double>(kTheta), -static_cast<double>(i) / head_dim);
    out[i] = x[i] * std::cos(angle) - x[i + 1] * std::sin(angle);
    out[i + 1] = x[i] * std::sin(angle) + x[i + 1] * std::cos(angle);
  }
  return out;
}

std::vector<float> rotate_f(const float* x, int64_t head_dim, int64_t p) {
  std::vector<float> out(x, x + head_dim);
  for (int64_t i = 0; i < head_dim; i += 2) {
    float c = 0, s = 0;
    rope_cos_sin(p, i / 2, head_dim, llama_rope(kTheta), c, s);
    const float v0 = out[static_cast<std::size_t>(i)], v1 = out[static_cast<std::size_t>(i + 1)];
    out[static_cast<std::size_t>(i)] = v0 * c - v1 * s;
    out[static_cast<std::size_t>(i + 1)] = v0 * s + v1 * c;
  }
  return out;
}

// One attention problem, in the raw (unrotated) form the reference reads; the
// kernel gets queries rotated at their positions, and keys (stored and batch)
// rotated or not as `stored_keys` says.
struct Problem {
  int64_t n = 1, heads = 2, kv_heads = 1, head_dim = 8;
  std::vector<int32_t> stored_positions;  // one sequence's stored entries
  std::vector<int32_t> positions;         // the batch tokens'
  std::vector<std::vector<bool>> sees;    // in-batch visibility [n][n]
  WindowRule rule;
  StoredKeys stored_keys = StoredKeys::kRotated;
  std::vector<float> q_raw, k_raw, v, bk_raw,
      bv;                                 // stored [kv_heads, m, hd]; batch [n, kv_heads, hd]
  std::vector<BranchId> stored_branches;  // [m], or empty: all of the shared prefix
  std::vector<BranchId> branches;         // [n], or empty: likewise

  int64_t stored() const { return static_cast<int64_t>(stored_positions.size()); }
  static Problem causal(int64_t n, int64_t heads, int64_t kv_heads, int64_t head_dim,
                        int64_t cached, uint64_t seed) {
    Problem p;
    p.n = n;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.head_dim = head_dim;
    for (int64_t j = 0; j < cached; ++j) p.stored_positions.push_back(static_cast<int32_t>(j));
    for (int64_t i = 0; i < n; ++i) p.positions.push_back(static_cast<int32_t>(cached + i));
    p.sees.assign(static_cast<std::size_t>(n), std::vector<bool>(static_cast<std::size_t>(n)));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) p.sees[i][j] = true;
    p.q_raw = random_values(n * heads * head_dim, seed, 2.0f);
    p.k_raw = random_values(kv_heads * cached * head_dim, seed + 1, 2.0f);
    p.v = random_values(kv_heads * cached * head_dim, seed + 2);
    p.bk_raw = random_values(n * kv_heads * head_dim, seed + 3, 2.0f);
    p.bv = random_values(n * kv_heads * head_dim, seed + 4);
    return p;
  }
};

// Runs the kernel; `segments` splits the stored entries into that many views.
std::vector<float> run(const Problem& p, int threads, int segments = 1) {
  const int64_t hd = p.head_dim, m = p.stored();
  std::vector<float> q(p.q_raw.size()), bk = p.bk_raw;
  for (int64_t t = 0; t < p.n; ++t) {
    for (int64_t h = 0; h < p.heads; ++h) {
      const auto r = rotate_f(&p.q_raw[(t * p.heads + h) * hd], hd, p.positions[t]);
      std::copy(r.begin(), r.end(), q.begin() + (t * p.heads + h) * hd);
    }
    for (int64_t h = 0; h < p.kv_heads && p.stored_keys == StoredKeys::kRotated; ++h) {
      const auto r = rotate_f(&p.bk_raw[(t * p.kv_heads + h) * hd], hd, p.positions[t]);
      std::copy(r.begin(), r.end(), bk.begin() + (t * p.kv_heads + h) * hd);
    }
  }
  std::vector<float> k = p.k_raw;
  if (p.stored_keys == StoredKeys::kRotated)
    for (int64_t h = 0; h < p.kv_heads; ++h)
      for (int64_t j = 0; j < m; ++j) {
        const auto r = rotate_f(&p.k_raw[(h * m + j) * hd], hd, p.stored_positions[j]);
        std::copy(r.begin(), r.end(), k.begin() + (h * m + j) * hd);
      }
  std::vector<float> v = p.v, bv = p.bv;
  std::vector<KVSegment> parts(static_cast<std::size_t>(segments));
  int64_t start = 0;
  for (int s = 0; s < segments; ++s) {
    const int64_t end = m * (s + 1) / segments;
    KVSegment& seg = parts[static_cast<std::size_t>(s)];
    seg.count = end - start;
    seg.positions = p.stored_positions.data() + start;
    seg.k = Tensor::contiguous(k.data() + start * hd, DType::kF32, {p.kv_heads, seg.count, hd});
    seg.k.stride = {m * hd, hd, 1, 0};
    seg.v = Tensor::contiguous(v.data() + start * hd, DType::kF32, {p.kv_heads, seg.count, hd});
    seg.v.stride = {m * hd, hd, 1, 0};
    if (!p.stored_branches.empty()) seg.branches = p.stored_branches.data() + start;
    start = end;
  }
  KVView kv{parts};
  const int64_t words = (p.n + 63) / 64;
  std::vector<uint64_t> mask(static_cast<std::size_t>(p.n * words));
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      if (p.sees[i][j]) mask[i * words + j / 64] |= uint64_t{1} << (j % 64);
  std::vector<int32_t> view_of(static_cast<std::size_t>(p.n), 0);
  std::vector<float> out(q.size(), 123.0f);
  AttentionParams a;
  a.q = view(q, {p.n, p.heads, hd});
  a.batch_k = view(bk, {p.n, p.kv_heads, hd});
  a.batch_v = view(bv, {p.n, p.kv_heads, hd});
  a.positions = p.positions;
  a.views = std::span<const KVView>(&kv, 1);
  a.view_of = view_of;
  a.branches = p.branches;
  a.in_batch = {mask, words};
  a.rule = p.rule;
  a.stored_keys = p.stored_keys;
  a.rope.theta = kTheta;
  a.out = view(out, {p.n, p.heads, hd});
  ThreadPool pool(threads);
  RopeTable rope;
  EXPECT_TRUE(
      rope.prepare(hd, llama_rope(kTheta), 16));  // short table: later positions take the slow path
  attention(a, rope, &pool);
  return out;
}

// The spec, literally: visible keys by position (and in-batch rule), rotated
// at their own positions, or under reassign at 0..n-1 with the query at n-1.
std::vector<double> reference(const Problem& p) {
  const int64_t hd = p.head_dim, m = p.stored(), group = p.heads / p.kv_heads;
  std::vector<double> out(p.q_raw.size(), 0.0);
  for (int64_t t = 0; t < p.n; ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t kvh = h / group;
      const int64_t pos = p.positions[t];
      struct Key {
        int64_t position;
        const float* k;
        const float* v;
      };
      std::vector<Key> visible;
      for (int64_t j = 0; j < m; ++j)
        if (p.rule.sees(pos, p.stored_positions[j]))
          visible.push_back(
              {p.stored_positions[j], &p.k_raw[(kvh * m + j) * hd], &p.v[(kvh * m + j) * hd]});
      for (int64_t j = 0; j < p.n; ++j)
        if (p.sees[t][j] && p.rule.sees(pos, p.positions[j]))
          visible.push_back({p.positions[j], &p.bk_raw[(j * p.kv_heads + kvh) * hd],
                             &p.bv[(j * p.kv_heads + kvh) * hd]});
      std::vector<double> scores;
      const auto n_vis = static_cast<int64_t>(visible.size());
      // Visible keys in position order for renumbering (ties keep their order).
      std::vector<int64_t> order(visible.size());
      for (int64_t i = 0; i < n_vis; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return visible[a].position < visible[b].position;
      });
      std::vector<int64_t> index_of(visible.size());
      for (int64_t i = 0; i < n_vis; ++i) index_of[order[i]] = i;
      const bool renumber = p.rule.reassign;
      const auto qr = rotate(&p.q_raw[(t * p.heads + h) * hd], hd, renumber ? n_vis - 1 : pos);
      for (int64_t i = 0; i < n_vis; ++i) {
        const auto kr = rotate(visible[i].k, hd, renumber ? index_of[i] : visible[i].position);
        double s = 0;
        for (int64_t d = 0; d < hd; ++d) s += qr[d] * kr[d];
        scores.push_back(s / std::sqrt(static_cast<double>(hd)));
      }
      if (scores.empty()) continue;
      double max = scores[0], sum = 0;
      for (double s : scores) max = std::max(max, s);
      for (double& s : scores) sum += (s = std::exp(s - max));
      for (int64_t i = 0; i < n_vis; ++i)
        for (int64_t d = 0; d < hd; ++d)
          out[(t * p.heads + h) * hd + d] += scores[i] / sum * visible[i].v[d];
    }
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
}

struct Case {
  std::string name;
  Problem problem;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : {1, 5})
    for (int64_t kv_heads : {1, 2, 4})  // 4: one query head per kv head
      for (int64_t cached : {0, 7})
        for (int mode = 0; mode < 5; ++mode) {
          Problem p = Problem::causal(n, 4, kv_heads, 8, cached, 100 + n * 10 + cached);
          std::string name = "n" + std::to_string(n) + "_kv" + std::to_string(kv_heads) + "_c" +
                             std::to_string(cached);
          switch (mode) {
            case 0:
              name += "_causal";
              break;
            case 1:  // keys stored before RoPE
              p.stored_keys = StoredKeys::kBeforeRope;
              name += "_before_rope";
              break;
            case 2:  // sinks + window, original positions
              p.rule = {2, 3, false};
              name += "_window";
              break;
            case 3:  // StreamingLLM renumbering over post-RoPE keys
              p.rule = {2, 3, true};
              name += "_reassign";
              break;
            case 4:  // renumbering over keys stored before RoPE
              p.rule = {1, 4, true};
              p.stored_keys = StoredKeys::kBeforeRope;
              name += "_reassign_before_rope";
              break;
          }
          out.push_back({name, p});
        }
  // Bidirectional within the batch (a block) after a stored prefix; a tree.
  Problem block = Problem::causal(4, 4, 2, 16, 5, 300);
  for (auto& row : block.sees) row.assign(4, true);
  out.push_back({"block", block});
  Problem tree = Problem::causal(5, 2, 1, 8, 3, 310);
  // 0 -> {1, 2}, 1 -> 3, 2 -> 4: siblings share positions and do not see each other.
  tree.positions = {3, 4, 4, 5, 5};
  const std::vector<std::vector<int>> ancestors = {{0}, {0, 1}, {0, 2}, {0, 1, 3}, {0, 2, 4}};
  for (int i = 0; i < 5; ++i) {
    tree.sees[i].assign(5, false);
    for (int j : ancestors[i]) tree.sees[i][j] = true;
  }
  out.push_back({"tree", tree});
  // Long context past the RoPE table (16 positions), window and renumbering.
  Problem longer = Problem::causal(3, 6, 2, 16, 40, 320);
  longer.rule = {4, 9, true};
  longer.stored_keys = StoredKeys::kBeforeRope;
  out.push_back({"long_reassign_before_rope", longer});
  // Contexts of several softmax chunks (256 keys each): one token and one kv
  // head (split across threads, one work item per chunk), a window cutting
  // the stored entries, and a batch (chunks walked in place).
  out.push_back({"chunks_one_token", Problem::causal(1, 4, 1, 16, 700, 330)});
  Problem chunks_window = Problem::causal(1, 2, 1, 16, 900, 340);
  chunks_window.rule = {4, 600, false};
  out.push_back({"chunks_window", chunks_window});
  out.push_back({"chunks_batch", Problem::causal(5, 4, 2, 8, 520, 350)});
  out.push_back({"chunks_one_head_per_kv_head", Problem::causal(3, 2, 2, 16, 600, 360)});
  return out;
}

class CpuAttention : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttention, MatchesTheSpecAndAnyThreadCount) {
  const Case& c = GetParam();
  const std::vector<double> want = reference(c.problem);
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    const std::vector<float> got = run(c.problem, threads);
    expect_near(got, want, 2e-5, c.name);
    if (first.empty()) first = got;
    EXPECT_TRUE(bitwise_equal(got, first)) << threads << " threads differ from 1";
  }
}

TEST_P(CpuAttention, SegmentsSplitNothing) {
  const Case& c = GetParam();
  const std::vector<float> one = run(c.problem, 2, 1);
  EXPECT_TRUE(bitwise_equal(run(c.problem, 2, 3), one));
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuAttention, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// A causal batch gives bitwise what feeding its tokens one by one gives, each
// after the earlier ones were stored: prefill and decode agree, windowed and
// renumbered too, with keys stored before or after RoPE.
TEST(CpuAttentionChunks, BatchEqualsOneTokenAtATime) {
  for (int mode = 0; mode < 4; ++mode) {
    // Mode 3: the tokens' contexts cross a softmax chunk (256 keys), and each
    // token alone is split across three threads by chunk.
    Problem whole = mode == 3 ? Problem::causal(6, 4, 1, 8, 253, 403)
                              : Problem::causal(6, 4, 2, 8, 4, 400 + mode);
    if (mode == 1) whole.rule = {2, 3, false};
    if (mode == 2) {
      whole.rule = {1, 3, true};
      whole.stored_keys = StoredKeys::kBeforeRope;
    }
    const std::vector<float> batch = run(whole, 2);
    const int64_t hd = whole.head_dim;
    for (int64_t t = 0; t < whole.n; ++t) {
      Problem one = whole;
      one.n = 1;
      one.positions = {whole.positions[t]};
      one.sees = {{true}};
      one.q_raw.assign(whole.q_raw.begin() + t * whole.heads * hd,
                       whole.q_raw.begin() + (t + 1) * whole.heads * hd);
      one.bk_raw.assign(whole.bk_raw.begin() + t * whole.kv_heads * hd,
                        whole.bk_raw.begin() + (t + 1) * whole.kv_heads * hd);
      one.bv.assign(whole.bv.begin() + t * whole.kv_heads * hd,
                    whole.bv.begin() + (t + 1) * whole.kv_heads * hd);
      // The earlier batch tokens, stored: [kv_heads, cached + t, hd].
      const int64_t m0 = whole.stored(), m = m0 + t;
      one.stored_positions.clear();
      for (int64_t j = 0; j < m0; ++j) one.stored_positions.push_back(whole.stored_positions[j]);
      for (int64_t j = 0; j < t; ++j) one.stored_positions.push_back(whole.positions[j]);
      one.k_raw.assign(static_cast<std::size_t>(whole.kv_heads * m * hd), 0.0f);
      one.v.assign(one.k_raw.size(), 0.0f);
      for (int64_t h = 0; h < whole.kv_heads; ++h) {
        for (int64_t j = 0; j < m0; ++j)
          for (int64_t d = 0; d < hd; ++d) {
            one.k_raw[(h * m + j) * hd + d] = whole.k_raw[(h * m0 + j) * hd + d];
            one.v[(h * m + j) * hd + d] = whole.v[(h * m0 + j) * hd + d];
          }
        for (int64_t j = 0; j < t; ++j)
          for (int64_t d = 0; d < hd; ++d) {
            one.k_raw[(h * m + m0 + j) * hd + d] = whole.bk_raw[(j * whole.kv_heads + h) * hd + d];
            one.v[(h * m + m0 + j) * hd + d] = whole.bv[(j * whole.kv_heads + h) * hd + d];
          }
      }
      const std::vector<float> alone = run(one, mode == 3 ? 3 : 1);
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batch.begin() + t * whole.heads * hd))
          << "mode " << mode << " token " << t;
    }
  }
}

// Branches (BIM): a shared prefix of `prefix` entries (branch 0, positions
// 0..), then `steps` positions at each of which branches 1 and 2 stored one
// entry; the batch continues branch `query` (causal).
Problem branched(int64_t n, int64_t kv_heads, int64_t prefix, int64_t steps, BranchId query,
                 uint64_t seed) {
  Problem p = Problem::causal(n, 4, kv_heads, 16, prefix + 2 * steps, seed);
  p.stored_positions.clear();
  for (int64_t j = 0; j < prefix; ++j) {
    p.stored_positions.push_back(static_cast<int32_t>(j));
    p.stored_branches.push_back(0);
  }
  for (int64_t step = 0; step < steps; ++step)
    for (BranchId b : {1, 2}) {
      p.stored_positions.push_back(static_cast<int32_t>(prefix + step));
      p.stored_branches.push_back(b);
    }
  for (int64_t i = 0; i < n; ++i) p.positions[i] = static_cast<int32_t>(prefix + steps + i);
  p.branches.assign(static_cast<std::size_t>(n), query);
  return p;
}

// The store a query of `branch` should see: the entries of other branches
// taken out, and no branches left to test.
Problem without_other_branches(const Problem& p, BranchId branch) {
  const int64_t m = p.stored(), hd = p.head_dim;
  Problem kept = p;
  kept.stored_positions.clear();
  kept.stored_branches.clear();
  kept.branches.clear();
  kept.k_raw.clear();
  kept.v.clear();
  for (int64_t h = 0; h < p.kv_heads; ++h)
    for (int64_t j = 0; j < m; ++j) {
      if (!branch_sees(branch, p.stored_branches[j])) continue;
      if (h == 0) kept.stored_positions.push_back(p.stored_positions[j]);
      const auto from = (h * m + j) * hd;
      kept.k_raw.insert(kept.k_raw.end(), p.k_raw.begin() + from, p.k_raw.begin() + from + hd);
      kept.v.insert(kept.v.end(), p.v.begin() + from, p.v.begin() + from + hd);
    }
  return kept;
}

// Every way the kernel walks the keys: one or several segments, one thread
// or several (the split by chunk where the context has several).
void expect_same_bits(const Problem& filtered, const Problem& reference, const std::string& what) {
  for (int segments : {1, 3})
    for (int threads : {1, 3})
      EXPECT_TRUE(bitwise_equal(run(filtered, threads, segments), run(reference, threads, 1)))
          << what << ", " << segments << " segments, " << threads << " threads";
}

// A batch of `query`'s branch (branched()) against the store without the
// other branches.
void expect_prefix_and_own_branch(Problem p, BranchId query, WindowRule rule) {
  p.rule = rule;
  expect_same_bits(p, without_other_branches(p, query),
                   "branch " + std::to_string(query) + ", window " + std::to_string(rule.window));
}

TEST(CpuAttentionBranches, AQuerySeesThePrefixAndItsBranchOnly) {
  for (BranchId query : {1, 2, 0})  // 0: a query of the prefix sees the prefix only
    for (const WindowRule rule : {WindowRule{}, WindowRule{2, 5, false}})
      expect_prefix_and_own_branch(branched(3, 2, 5, 6, query, 600), query, rule);
}

// Long enough for several softmax chunks: one token and kv head is split by
// chunk across threads, the other branch's entries taking no place in them.
TEST(CpuAttentionBranches, LongContextSplitByChunk) {
  for (BranchId query : {1, 0})
    for (const WindowRule rule : {WindowRule{}, WindowRule{4, 250, false}})
      expect_prefix_and_own_branch(branched(1, 1, 100, 300, query, 610), query, rule);
}

// Tokens of branches 1 and 2 in one batch (each sees the earlier ones of its
// branch): each token's rows are those of its branch alone.
TEST(CpuAttentionBranches, TokensOfTwoBranchesInOneBatch) {
  Problem p = branched(4, 2, 5, 6, 1, 620);
  p.branches = {1, 2, 1, 2};
  p.positions = {11, 11, 12, 12};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) p.sees[i][j] = j <= i && p.branches[j] == p.branches[i];
  const std::vector<float> both = run(p, 2);
  const int64_t row = p.heads * p.head_dim;
  for (BranchId b : {1, 2}) {
    const std::vector<float> alone = run(without_other_branches(p, b), 2);
    for (int64_t t = 0; t < p.n; ++t) {
      if (p.branches[t] != b) continue;
      EXPECT_TRUE(
          std::equal(both.begin() + t * row, both.begin() + (t + 1) * row, alone.begin() + t * row))
          << "token " << t;
    }
  }
}

// Entries all of the prefix or of the query's branch: the filter tests each
// entry and keeps them all, and the bits are those of no filter at all.
TEST(CpuAttentionBranches, AFilterThatRemovesNothingChangesNoBit) {
  for (const WindowRule rule : {WindowRule{}, WindowRule{2, 5, false}, WindowRule{4, 250, false}})
    for (int64_t steps : {6, 300}) {
      Problem p = branched(2, 1, 5, steps, 1, 630);
      p.rule = rule;
      for (BranchId& b : p.stored_branches) b = b == 2 ? 0 : b;
      Problem plain = p;
      plain.stored_branches.clear();
      plain.branches.clear();
      expect_same_bits(p, plain, "window " + std::to_string(rule.window));
    }
}

TEST(CpuAttentionSingle, OneVisibleEntryReturnsItsValue) {
  Problem p = Problem::causal(1, 4, 2, 8, 0, 500);
  const std::vector<float> out = run(p, 2);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(out[h * 8 + d], p.bv[(h / 2) * 8 + d]);
}

TEST(CpuAttentionSingle, ATokenThatSeesNothingGetsZeros) {
  Problem p = Problem::causal(2, 2, 1, 8, 0, 510);
  p.sees = {{false, false}, {true, true}};
  const std::vector<float> out = run(p, 1);
  for (int64_t i = 0; i < 2 * 8; ++i) EXPECT_EQ(out[i], 0.0f);
}

}  // namespace
}  // namespace tessera::cpu
