// Drafts tokens for the verifier to check. The `none` proposer drafts nothing
// (plain autoregressive decoding). A proposer is one object for every lane;
// what it remembers about a lane lives in lane.proposer_state.
#pragma once

#include <span>

#include "core/decode/decode_context.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Proposer : public PluginObject {
 public:
  // A lane starts (its tokens are its prompt, nothing cached): make its state.
  virtual Status begin(DecodeContext& context, SequenceState& lane) {
    (void)context;
    (void)lane;
    return ok_status();
  }
  // Fills `draft` (cleared by the caller) with tokens that may follow the
  // lane's tokens. Every token but the last is in the target's cache (the
  // engine feeds a waiting prompt first); the last is not (the verifier feeds
  // it). A proposer must not change the target's cache.
  virtual Status propose(DecodeContext& context, SequenceState& lane, Draft& draft) = 0;
  // The verifier emitted `emitted` for the lane (already appended to
  // lane.tokens), to keep the lane's state in step.
  virtual void observe(DecodeContext& context, SequenceState& lane,
                       std::span<const int32_t> emitted) {
    (void)context;
    (void)lane;
    (void)emitted;
  }
  // The lane is done: release what begin() took.
  virtual void end(DecodeContext& context, SequenceState& lane) {
    (void)context;
    (void)lane;
  }

  // Tree drafting (the `tree` proposer grows a tree over any drafter that
  // implements this). For each entry of `at` (an index into `tree`, or -1 for
  // the lane's tokens alone), the drafter's distribution of the next token
  // after the lane's tokens and the tree path to that node, into `probs`
  // ([at.size(), vocab] row-major, each row summing to 1, or all zeros where
  // the drafter has nothing to propose): the lane sampler's transform when it
  // samples, the plain softmax when it is greedy.
  virtual bool can_expand() const { return false; }
  virtual Status expand(DecodeContext& context, SequenceState& lane, const Draft& tree,
                        std::span<const int32_t> at, std::span<float> probs) {
    (void)context;
    (void)lane;
    (void)tree;
    (void)at;
    (void)probs;
    return unimplemented("this proposer cannot expand a draft tree");
  }
};

}  // namespace tessera
