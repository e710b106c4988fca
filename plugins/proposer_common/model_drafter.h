// Drafting with a model's forward: the lane's last token (not in the cache
// the forward reads) followed by draft tokens held in the batch, never
// written. What `self_draft` (the target's first layers over the target's
// cache) and `ar_draft` (a second model over its own cache) share: a chain
// drafted one token per forward, and the next-token distributions at nodes
// of a tree for the `tree` proposer.
#pragma once

#include <span>
#include <vector>

#include "core/cache/checked_cache_store.h"
#include "core/decode/draft.h"
#include "core/decode/sequence_state.h"
#include "core/model/batch.h"
#include "core/model/transformer.h"

namespace tessera {

// Where a lane's context lives for the drafting forward: the cache sequence
// (and branch) holding the lane's tokens before `feed`, the tokens `feed`
// not stored yet (written by the first forward of the call, so catching up
// costs no forward of its own), and the lane's last token after them.
struct DraftContext {
  CheckedCacheStore* cache = nullptr;
  SequenceId seq = 0;
  BranchId branch = 0;
  std::span<const int32_t> feed;
  int32_t last_token = 0;
  int32_t last_position = 0;
  // Draft chains write their tokens to the cache (the last token, then each
  // drafted token as the next forward's input, one token per forward); the
  // caller truncates the rejected ones later. Without it every forward
  // carries the chain so far and writes nothing but the feed.
  bool write = false;
};

class ModelDrafter {
 public:
  // `forward` runs with `options` (self_draft: layer_end); it must outlive this.
  ModelDrafter(Transformer& forward, ForwardOptions options);

  // A chain of `count` tokens, one forward each: the argmax for a greedy
  // lane, else a draw from the sampler's transform of the logits, whose row
  // goes to draft.probs (the q of exact acceptance).
  Status draft_chain(const DraftContext& at, int count, Sampler& sampler, Draft& draft,
                     DecodeCounters& counters);
  // The next-token distribution after the path to each node of `nodes` (-1:
  // after the last token alone) in one forward over the last token and the
  // ancestors of those nodes: the sampler's transform for a sampling lane,
  // the plain softmax for a greedy one. probs: [nodes.size(), vocab].
  Status expand(const DraftContext& at, const Draft& tree, std::span<const int32_t> nodes,
                const Sampler& sampler, std::span<float> probs, DecodeCounters& counters);

 private:
  // Starts the batch: the feed (with kWriteKv), then the last token (its
  // logits when `logits`, written when at.write); returns its batch index.
  int32_t start_batch(const DraftContext& at, bool logits);

  Transformer& forward_;
  ForwardOptions options_;
  Batch batch_;
  std::vector<int32_t> picked_;  // tree nodes in the expansion batch, ascending
  std::vector<float> row_probs_;
};

// The softmax of `logits` into `probs` (same size), in double, as the plain
// distribution a greedy lane's drafter ranks candidates by.
void softmax(std::span<const float> logits, std::span<float> probs);

}  // namespace tessera
