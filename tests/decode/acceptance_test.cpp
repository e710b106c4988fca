// The acceptance rules of the ar verifier (plugins/verifier_ar/acceptance.h)
// on synthetic distributions: whatever the draft, the first emitted token
// follows the target's distribution (chi-square over many draws), and a
// broken rule is caught by the same test.
#include "plugins/verifier_ar/acceptance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <vector>

#include "core/sampling/rng.h"
#include "tests/decode/chi_square.h"

namespace tessera {
namespace {

constexpr std::size_t kVocab = 8;
constexpr int kDraws = 20000;

// Logits for a node: a fixed pattern turned by the node's token, so each
// node's distribution differs.
std::vector<float> node_logits(int32_t token_or_root) {
  std::vector<float> row(kVocab);
  for (std::size_t i = 0; i < kVocab; ++i)
    row[i] = std::sin(1.7f * static_cast<float>(i) + 0.9f * static_cast<float>(token_or_root + 1));
  return row;
}

// The verification batch's rows: the root, then one row per draft node.
struct Rows {
  std::vector<float> logits;
  std::vector<int32_t> node_rows;
};

Rows rows_for(const Draft& draft) {
  Rows rows;
  const std::vector<float> root = node_logits(-1);
  rows.logits.insert(rows.logits.end(), root.begin(), root.end());
  for (int32_t i = 0; i < draft.size(); ++i) {
    const std::vector<float> row = node_logits(draft.tokens[static_cast<std::size_t>(i)]);
    rows.logits.insert(rows.logits.end(), row.begin(), row.end());
    rows.node_rows.push_back(i + 1);
  }
  return rows;
}

// The first emitted token of `draws` steps, against p at the root.
testing::ChiSquare first_token_fit(const SamplingParams& params,
                                   const std::function<void(Rng&, Draft&)>& make_draft,
                                   bool corrupt = false) {
  Sampler sampler(params);
  Rng draft_rng(99);
  AcceptanceScratch scratch;
  Acceptance acceptance;
  std::vector<int32_t> depths;
  std::map<int32_t, int64_t> counts;
  for (int d = 0; d < kDraws; ++d) {
    Draft draft;
    make_draft(draft_rng, draft);
    draft_depths(draft, depths);
    const Rows rows = rows_for(draft);
    accept_draft(draft, depths, 64, {rows.logits, kVocab, 0, rows.node_rows}, sampler, scratch,
                 acceptance);
    int32_t first = acceptance.path.empty()
                        ? acceptance.next
                        : draft.tokens[static_cast<std::size_t>(acceptance.path[0])];
    // A rule that trusts the draft: its first token always.
    if (corrupt && !draft.empty()) first = draft.tokens[0];
    ++counts[first];
  }
  std::vector<float> p;
  Sampler(params).distribution(node_logits(-1), p);
  std::map<int32_t, double> expected;
  for (std::size_t i = 0; i < kVocab; ++i)
    if (p[i] > 0) expected[static_cast<int32_t>(i)] = p[i];
  return testing::chi_square(counts, expected, kDraws);
}

// weights[i % weights.size()] for every token, normalised: a draft
// distribution q unlike the target's.
std::vector<float> draft_distribution(std::initializer_list<float> weights) {
  std::vector<float> q(kVocab);
  double total = 0;
  for (std::size_t i = 0; i < kVocab; ++i) total += q[i] = weights.begin()[i % weights.size()];
  for (float& x : q) x = static_cast<float>(x / total);
  return q;
}

// A token drawn from q by one uniform draw.
int32_t draw(Rng& rng, const std::vector<float>& q) {
  double u = rng.uniform(), acc = 0;
  for (std::size_t i = 0; i < kVocab; ++i)
    if (u < (acc += q[i])) return static_cast<int32_t>(i);
  return static_cast<int32_t>(kVocab) - 1;
}

// A chain drafted from q (its probs rows are q).
void sampled_chain(Rng& rng, Draft& draft) {
  const std::vector<float> q = draft_distribution({1, 2, 3});
  for (int depth = 0; depth < 3; ++depth) {
    draft.add(draw(rng, q), depth - 1);
    draft.probs.insert(draft.probs.end(), q.begin(), q.end());
  }
}

// A deterministic tree: three root children, two grandchildren under each.
void point_mass_tree(Rng& rng, Draft& draft) {
  const auto first = static_cast<int32_t>(rng.next_u64() % kVocab);
  for (int32_t c = 0; c < 3; ++c) draft.add((first + c) % static_cast<int32_t>(kVocab), -1);
  for (int32_t c = 0; c < 3; ++c)
    for (int32_t g = 0; g < 2; ++g) draft.add((first + 4 + g) % static_cast<int32_t>(kVocab), c);
}

// SpecInfer's case: several children drawn i.i.d. from q at the root (a
// sampled tree), each with its q row; siblings may repeat a token.
void sampled_siblings(Rng& rng, Draft& draft) {
  const std::vector<float> q = draft_distribution({1, 2, 3, 4});
  for (int child = 0; child < 3; ++child) {
    draft.add(draw(rng, q), -1);
    draft.probs.insert(draft.probs.end(), q.begin(), q.end());
  }
}

const SamplingParams kWarm{1.0f, 0, 1.0f, 7};
const SamplingParams kShaped{0.7f, 5, 0.9f, 11};

TEST(Acceptance, SampledChainKeepsTheTargetDistribution) {
  for (const SamplingParams& params : {kWarm, kShaped}) {
    const testing::ChiSquare fit = first_token_fit(params, sampled_chain);
    EXPECT_GT(fit.p_value, 1e-4) << "chi2 " << fit.statistic << " on " << fit.degrees << " df";
  }
}

TEST(Acceptance, PointMassTreeKeepsTheTargetDistribution) {
  for (const SamplingParams& params : {kWarm, kShaped}) {
    const testing::ChiSquare fit = first_token_fit(params, point_mass_tree);
    EXPECT_GT(fit.p_value, 1e-4) << "chi2 " << fit.statistic << " on " << fit.degrees << " df";
  }
}

TEST(Acceptance, SampledSiblingsKeepTheTargetDistribution) {
  for (const SamplingParams& params : {kWarm, kShaped}) {
    const testing::ChiSquare fit = first_token_fit(params, sampled_siblings);
    EXPECT_GT(fit.p_value, 1e-4) << "chi2 " << fit.statistic << " on " << fit.degrees << " df";
  }
}

TEST(Acceptance, TheTestCatchesARuleThatTrustsTheDraft) {
  const testing::ChiSquare fit = first_token_fit(kWarm, point_mass_tree, /*corrupt=*/true);
  EXPECT_LT(fit.p_value, 1e-6);
}

TEST(Acceptance, GreedyWalksTheArgmaxPath) {
  // Root argmax, then the argmax after it, drafted as the first child of each.
  const auto argmax_after = [](int32_t node_token) { return argmax(node_logits(node_token)); };
  Draft draft;
  const int32_t a = argmax_after(-1);
  draft.add((a + 1) % static_cast<int32_t>(kVocab), -1);  // a wrong sibling first
  draft.add(a, -1);
  const int32_t b = argmax_after(a);
  draft.add((b + 3) % static_cast<int32_t>(kVocab), 1);  // rejected: not the argmax
  std::vector<int32_t> depths;
  draft_depths(draft, depths);
  const Rows rows = rows_for(draft);
  Sampler greedy(SamplingParams{});
  AcceptanceScratch scratch;
  Acceptance acceptance;
  accept_draft(draft, depths, 64, {rows.logits, kVocab, 0, rows.node_rows}, greedy, scratch,
               acceptance);
  EXPECT_EQ(acceptance.path, std::vector<int32_t>{1});
  EXPECT_EQ(acceptance.next, b);
  // With no room for any node, the root's argmax alone.
  accept_draft(draft, depths, 0, {rows.logits, kVocab, 0, rows.node_rows}, greedy, scratch,
               acceptance);
  EXPECT_TRUE(acceptance.path.empty());
  EXPECT_EQ(acceptance.next, a);
}

}  // namespace
}  // namespace tessera
