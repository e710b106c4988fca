// Drafts tokens for the verifier to check. The `none` proposer drafts nothing
// (plain autoregressive decoding).
#pragma once

#include <span>

#include "core/decode/draft.h"
#include "core/plugin/plugin_object.h"
#include "core/status/status.h"

namespace tessera {

class Proposer : public PluginObject {
 public:
  // Fills `draft` (cleared by the caller) with tokens that may follow the sequence.
  virtual Status propose(DecodeContext& context, Draft& draft) = 0;
  // Told which tokens the verifier emitted, to keep any own state in step. (optional)
  virtual void observe(std::span<const int32_t> emitted) { (void)emitted; }
};

}  // namespace tessera
