// K/V restoration (docs/kv-restoration.md): decoding over a store that keeps
// only sinks and a window, attending as if nothing had been evicted. At every
// step the K/V of the positions the store dropped are recomputed by a
// cache-free forward of a restorer (the target itself, or another model of the
// same shapes and tokenizer) over the history, passed through a projection,
// handed to the target's forward as transient K/V (through the layer's codec
// like stored ones) with the window lifted, and discarded after the step. The
// store's sustained memory stays that of sinks + window; the restored K/V are
// a per-step peak (DecodeCounters::restoration_peak_bytes).
//
// With restorer = "self" and the identity projection the output equals full
// attention (a static store), whatever the store's positions and codec stage:
// restored keys and the lifted window use every key's own position. The
// prompt is prefilled the same way, by a cache-free forward of the target
// over all of it. Plain decoding: it takes no drafts, and one lane at a time.
#pragma once

#include <memory>
#include <vector>

#include "core/decode/verifier.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "plugins/verifier_restored/restoration_settings.h"
#include "plugins/verifier_restored/restoring_forward.h"

namespace tessera {

class RestoredVerifier final : public Verifier {
 public:
  RestoredVerifier(const OptionValues& options, PluginServices& services);
  Status prefill(DecodeContext& context, SequenceState& lane) override;
  bool takes_drafts() const override { return false; }
  Status verify(DecodeContext& context, std::span<const LaneStep> lanes) override;

 private:
  Status step(DecodeContext& context, const LaneStep& lane_step);
  // A linear projection's file names the key stage it was fitted at; the
  // cache's is known from the first step.
  Status check_key_stage(const DecodeContext& context);

  RestorationSettings settings_;
  RestorerParts parts_;
  std::unique_ptr<RestoringForward> forward_;
  bool key_stage_checked_ = false;
};

}  // namespace tessera
