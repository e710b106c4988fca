#include "core/plugin/sdk.h"
#include "plugins/proposer_self_draft/self_draft.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"draft_tokens", tessera::OptionType::kInt, "4",
     "tokens drafted per step (a chain; one draft forward each)", 1, 256},
    {"draft_layers", tessera::OptionType::kInt, "2",
     "how many of the target's first layers draft (then its final norm and head)", 1, 4096},
};

}  // namespace

TESSERA_PLUGIN(proposer, "self_draft", "1.0.0",
               "the target drafts for itself with its first decode.draft_layers layers and its "
               "head (no second model)",
               kOptions, tessera::SelfDraftProposer)
