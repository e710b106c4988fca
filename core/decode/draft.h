// What a proposer hands the verifier: drafted tokens as a tree hanging off the
// lane's last token.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

// Drafted tokens as a tree: parents[i] is the index of token i's parent in
// `tokens`, or -1 for a child of the lane's last token (a chain has parents
// = -1, 0, 1, ...). Every parent comes before its children, and depths never
// decrease along `tokens` (breadth-first order), so the accepted path's
// positions never decrease when it is committed. Siblings are distinct
// tokens, tried in order.
//
// probs holds, per token, the draft distribution q it was sampled from (the
// distribution at its parent, [n, vocab] row-major), and is empty for
// deterministic drafts (each token a point mass: a lookup, an argmax, a
// top-k child); the verifier's acceptance rule depends on which.
struct Draft {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;

  bool empty() const { return tokens.empty(); }
  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  void clear() {
    tokens.clear();
    parents.clear();
    probs.clear();
  }
  // Appends a token under `parent` (-1: the lane's last token); returns its index.
  int32_t add(int32_t token, int32_t parent) {
    tokens.push_back(token);
    parents.push_back(parent);
    return size() - 1;
  }
};

// Depth of every token (1 for a child of the lane's last token), into `depths`
// (resized). Parents must precede children.
void draft_depths(const Draft& draft, std::vector<int32_t>& depths);

}  // namespace tessera
