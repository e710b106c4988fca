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
  // Runs the target over every lane's uncached tokens and draft (one
  // verification forward for all of them), keeps in the cache exactly each
  // lane's tokens before its last emitted one (no rejected draft K/V stays),
  // sets lane.cached accordingly, and appends each lane's emitted tokens (at
  // least one) to its `emitted`. The lanes' tokens are not changed: the engine
  // appends what was emitted.
  virtual Status verify(DecodeContext& context, std::span<const LaneStep> lanes) = 0;
};

}  // namespace tessera
