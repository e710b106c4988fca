// Autoregressive verification of chain and tree drafts (algorithms.md §4).
// One step: a lane's waiting prompt is fed first (all but its last token);
// then one forward carries other lanes' prefill chunks (continuous
// batching), and for every lane its last token (K/V written) and
// its draft nodes (K/V held pending, tree visibility from the parents,
// positions = the last token's + depth). Each lane accepts a path
// (acceptance.h); only the accepted nodes' K/V are committed to the cache
// (Transformer::commit_pending), so rejected K/V never reach the store and
// every store and codec works unchanged. Drafts deeper than the cache has
// room for are cut, so speculation stops exactly where plain decoding would.
#pragma once

#include <vector>

#include "core/decode/verifier.h"
#include "core/model/batch.h"
#include "core/plugin/options.h"
#include "core/plugin/services.h"
#include "plugins/verifier_ar/acceptance.h"

namespace tessera {

class ArVerifier final : public Verifier {
 public:
  explicit ArVerifier(const OptionValues& options);
  Status verify(DecodeContext& context, std::span<const LaneStep> lanes) override;
  bool chunks_prefill() const override { return true; }
  // The chunks' rows go into the verification forward, before the lanes'.
  Status feed_and_verify(DecodeContext& context, std::span<const PrefillChunk> chunks,
                         std::span<const LaneStep> lanes) override;

 private:
  // Per lane of the step: where its nodes sit in the batch.
  struct LaneRows {
    int32_t root_row = 0;
    int32_t max_depth = 0;
    std::vector<int32_t> depths;     // per draft token
    std::vector<int32_t> node_rows;  // per draft token: its batch row, or -1 (cut)
    Acceptance acceptance;
  };

  // How deep each lane's draft may go so that what it keeps fits its cache.
  Status plan_depths(DecodeContext& context, std::span<const LaneStep> lanes);
  // The verification batch: the chunks' tokens, then per lane its last
  // token and its draft nodes.
  Status build_batch(DecodeContext& context, std::span<const PrefillChunk> chunks,
                     std::span<const LaneStep> lanes);

  Batch batch_;
  Batch prefill_batch_;
  std::vector<LaneRows> rows_;
  std::vector<int32_t> commit_rows_;
  AcceptanceScratch scratch_;
};

}  // namespace tessera
