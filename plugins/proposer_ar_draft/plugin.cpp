#include "core/plugin/sdk.h"
#include "plugins/proposer_ar_draft/ar_draft.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"draft_tokens", tessera::OptionType::kInt, "4",
     "tokens drafted per step (a chain; one draft forward each)", 1, 256},
    {"draft_model", tessera::OptionType::kString, "\"\"",
     "the draft model file, on the target's tokenizer (found like model.path)"},
    {"draft_tokenizer", tessera::OptionType::kString, "\"\"",
     "the draft's tokenizer file, only for a llama2.c .bin draft model"},
};

}  // namespace

TESSERA_PLUGIN(proposer, "ar_draft", "1.0.0",
               "a second, smaller model on the same tokenizer drafts a chain "
               "(decode.draft_model); its own cache follows the accepted tokens",
               kOptions, tessera::ArDraftProposer)
