// Scores drafts with the target model and decides which tokens to emit. With
// empty drafts it is plain decoding: feed the uncached tokens, sample one.
#pragma once

#include <span>

#include "core/decode/decode_context.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Verifier : public PluginObject {
 public:
  // Feeds into the cache the lane's waiting tokens that decoding need not see
  // uncached (a prompt, a long history), without sampling, and sets
  // lane.cached. By default every uncached token but the last, causally
  // (core/decode/lane_prefill.h). A verifier whose model attends otherwise
  // overrides it: block diffusion prefills whole blocks with block-causal
  // attention and leaves a partial block waiting (ABI 3.1).
  virtual Status prefill(DecodeContext& context, SequenceState& lane);
  // Whether it checks a proposer's drafts. One that decodes by other means
  // (block diffusion) takes none, and the engine refuses a proposer with it
  // (ABI 3.1).
  virtual bool takes_drafts() const { return true; }

  // Runs the target over every lane's uncached tokens and draft (one
  // verification forward for all of them for the `ar` verifier), keeps in the
  // cache only K/V of tokens the lane keeps (no rejected draft K/V stays),
  // sets lane.cached to how many of the lane's tokens, with the emitted ones
  // appended, the cache then holds (`ar`: all but the last emitted one; block
  // diffusion: all of them), and appends each lane's emitted tokens (at least
  // one) to its `emitted`. The lanes' tokens are not changed: the engine
  // appends what was emitted.
  virtual Status verify(DecodeContext& context, std::span<const LaneStep> lanes) = 0;

  // Continuous batching (ABI 6.0). Whether prefill() may be split into
  // chunks fed beside other lanes' decoding: true for a causal model, where
  // any run of a history's tokens may be fed after the ones before it.
  virtual bool chunks_prefill() const { return false; }
  // Feeds each chunk (no sampling; its lane's cached grows by chunk.tokens)
  // and verifies `lanes` (possibly none) as verify() does. The default feeds
  // each chunk in a forward of its own, then verifies; `ar` puts the chunks
  // in the verification forward. Only called with chunks when
  // chunks_prefill() is true.
  virtual Status feed_and_verify(DecodeContext& context, std::span<const PrefillChunk> chunks,
                                 std::span<const LaneStep> lanes);
};

}  // namespace tessera
