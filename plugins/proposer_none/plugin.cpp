// The `none` proposer drafts nothing: every step is plain autoregressive decoding.
#include "core/plugin/sdk.h"

namespace tessera {
namespace {

class NoProposer final : public Proposer {
 public:
  explicit NoProposer(const OptionValues&) {}
  Status propose(DecodeContext&, SequenceState&, Draft& draft) override {
    draft.clear();
    return ok_status();
  }
};

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN(proposer, "none", "1.0.0", "drafts nothing (plain autoregressive decoding)",
               tessera::sdk::kNoOptions, tessera::NoProposer)
