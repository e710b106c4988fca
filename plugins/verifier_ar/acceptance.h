// Which draft tokens a lane keeps, given the target's logits at the root (the
// lane's last token) and at every draft node: the rules of
// ../shared/research/algorithms.md §4.1 to §4.3, for chains and trees alike
// (a chain is a tree with one child each).
//
//  - greedy: walk from the root, taking the child whose token is the target's
//    argmax; emit the argmax where no child matches. The emitted tokens are
//    exactly those of plain greedy decoding.
//  - sampled, deterministic draft (point masses, Draft::probs empty): at each
//    node try its children in order; accept child c with probability
//    p'(c) / sum p', else set p'(c) = 0 and try the next (EAGLE's
//    multi-candidate rule); emit a draw from p' where no child is accepted.
//  - sampled, sampled draft (Draft::probs holds q): accept child c with
//    probability min(1, p'(c) / q(c)), else p' <- norm(max(0, p' - q))
//    (SpecInfer; for a chain, Leviathan et al.'s rule).
// p' starts as the target's sampling distribution at the node (the lane
// sampler's temperature / top-k / top-p); where nothing was rejected the emitted
// token is the sampler's own draw from the logits. Either way every emitted
// token follows the target's distribution exactly. Every row is first
// penalised by the sampler (presence / frequency penalties), and each token
// is observed as it is accepted, so a path's later positions are penalised
// for its earlier tokens exactly as plain decoding would penalise them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/decode/draft.h"
#include "core/sampling/sampler.h"

namespace tessera {

// The target's logits of one lane's nodes, as rows of the verification batch.
struct NodeLogits {
  std::span<const float> logits;  // the batch's rows, [rows, vocab]
  std::size_t vocab = 0;
  int32_t root_row = 0;                // the lane's last token
  std::span<const int32_t> node_rows;  // draft index -> row

  // node -1: the root; i: draft token i.
  std::span<const float> operator()(int32_t node) const {
    const int32_t row = node < 0 ? root_row : node_rows[static_cast<std::size_t>(node)];
    return logits.subspan(static_cast<std::size_t>(row) * vocab, vocab);
  }
};

struct Acceptance {
  std::vector<int32_t> path;  // accepted draft indices, root to leaf
  int32_t next = -1;          // the token emitted after them
};

// Reusable buffers, so a warmed-up step allocates nothing.
struct AcceptanceScratch {
  std::vector<float> residual;  // p'
  std::vector<int32_t> children;
};

// Nodes deeper than `max_depth` are left out (no room to keep them).
// `depths` from draft_depths().
void accept_draft(const Draft& draft, std::span<const int32_t> depths, int32_t max_depth,
                  const NodeLogits& logits, Sampler& sampler, AcceptanceScratch& scratch,
                  Acceptance& out);

}  // namespace tessera
