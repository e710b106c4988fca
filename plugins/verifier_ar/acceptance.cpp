#include "plugins/verifier_ar/acceptance.h"

#include <cmath>

namespace tessera {
namespace {

// Children of `node` (-1: the root) within max_depth, in draft order.
void children_of(const Draft& draft, std::span<const int32_t> depths, int32_t max_depth,
                 int32_t node, std::vector<int32_t>& out) {
  out.clear();
  for (int32_t i = node + 1; i < draft.size(); ++i)
    if (draft.parents[static_cast<std::size_t>(i)] == node &&
        depths[static_cast<std::size_t>(i)] <= max_depth)
      out.push_back(i);
}

void accept_greedy(const Draft& draft, std::span<const int32_t> depths, int32_t max_depth,
                   const NodeLogits& logits, Sampler& sampler, AcceptanceScratch& scratch,
                   Acceptance& out) {
  int32_t node = -1;
  for (;;) {
    const int32_t best = argmax(sampler.penalised(logits(node)));
    children_of(draft, depths, max_depth, node, scratch.children);
    int32_t match = -1;
    for (const int32_t child : scratch.children)
      if (draft.tokens[static_cast<std::size_t>(child)] == best) {
        match = child;
        break;
      }
    if (match < 0) {
      out.next = best;
      sampler.observe(best);
      return;
    }
    out.path.push_back(match);
    sampler.observe(best);
    node = match;
  }
}

// One child against the residual p' (normalised to `mass`): accepted or not;
// on rejection p' loses the child's share.
bool try_child(const Draft& draft, int32_t child, Sampler& sampler, std::vector<float>& residual) {
  const auto token = static_cast<std::size_t>(draft.tokens[static_cast<std::size_t>(child)]);
  double mass = 0;
  for (const float p : residual) mass += p;
  if (draft.probs.empty()) {  // a point mass: accept with p'(c)
    const bool accepted = sampler.uniform() * mass < residual[token];
    if (!accepted) residual[token] = 0;
    return accepted;
  }
  const std::size_t vocab = residual.size();
  const float* q = draft.probs.data() + static_cast<std::size_t>(child) * vocab;
  // accept with min(1, p'(c) / q(c)), p' normalised.
  const bool accepted = sampler.uniform() * static_cast<double>(q[token]) * mass <
                        static_cast<double>(residual[token]);
  if (!accepted)
    for (std::size_t x = 0; x < vocab; ++x)
      residual[x] = std::max(0.0f, static_cast<float>(residual[x] / mass) - q[x]);
  return accepted;
}

void accept_sampled(const Draft& draft, std::span<const int32_t> depths, int32_t max_depth,
                    const NodeLogits& logits, Sampler& sampler, AcceptanceScratch& scratch,
                    Acceptance& out) {
  int32_t node = -1;
  for (;;) {
    const std::span<const float> row = logits(node);
    children_of(draft, depths, max_depth, node, scratch.children);
    if (scratch.children.empty()) {  // nothing to try: the sampler's own draw
      out.next = sampler.sample(row);
      sampler.observe(out.next);
      return;
    }
    sampler.distribution(row, scratch.residual);
    int32_t accepted = -1;
    for (const int32_t child : scratch.children)
      if (try_child(draft, child, sampler, scratch.residual)) {
        accepted = child;
        break;
      }
    if (accepted < 0) {
      double mass = 0;
      for (const float p : scratch.residual) mass += p;
      // p and q equal up to rounding: the residual has no mass left; p itself
      // is then the exact law (algorithms.md §4.1).
      if (!(mass > 0)) sampler.distribution(row, scratch.residual);
      out.next = sampler.sample_from(scratch.residual);
      sampler.observe(out.next);
      return;
    }
    out.path.push_back(accepted);
    sampler.observe(draft.tokens[static_cast<std::size_t>(accepted)]);
    node = accepted;
  }
}

}  // namespace

void accept_draft(const Draft& draft, std::span<const int32_t> depths, int32_t max_depth,
                  const NodeLogits& logits, Sampler& sampler, AcceptanceScratch& scratch,
                  Acceptance& out) {
  out.path.clear();
  out.next = -1;
  if (sampler.greedy())
    accept_greedy(draft, depths, max_depth, logits, sampler, scratch, out);
  else
    accept_sampled(draft, depths, max_depth, logits, sampler, scratch, out);
}

}  // namespace tessera
