// Scores a draft with the target model and decides which tokens to emit. With
// an empty draft it is plain decoding: feed the uncached tokens, sample one.
#pragma once

#include <vector>

#include "core/decode/draft.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Verifier : public PluginObject {
 public:
  // Runs the target on the sequence's uncached tokens plus the draft, leaves the
  // cache holding exactly the tokens that precede the last emitted one, and
  // appends the emitted tokens (at least one) to `emitted`.
  virtual Status verify(DecodeContext& context, const Draft& draft,
                        std::vector<int32_t>& emitted) = 0;
};

}  // namespace tessera
