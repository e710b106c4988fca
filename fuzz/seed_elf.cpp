// The plugin_elf target's seed: a real plugin, ABI stamp included, as this
// toolchain links it.
#include "core/plugin/sdk.h"

namespace {

class SeedProposer final : public tessera::Proposer {
 public:
  explicit SeedProposer(const tessera::OptionValues&) {}
  tessera::Status propose(tessera::DecodeContext&, tessera::SequenceState&,
                          tessera::Draft&) override {
    return tessera::ok_status();
  }
};

}  // namespace

TESSERA_PLUGIN(proposer, "fuzzseed", "0.0.1", "the plugin_elf fuzz seed", tessera::sdk::kNoOptions,
               SeedProposer)
