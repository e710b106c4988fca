#include "core/plugin/sdk.h"
#include "plugins/proposer_dlm/dlm_proposer.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"draft_model", tessera::OptionType::kString, "\"\"",
     "the block-diffusion drafter's file: the target's tokenizer plus a mask token (found like "
     "model.path)"},
    {"draft_tokens", tessera::OptionType::kInt, "4",
     "tokens drafted per step, at least: the masked rest of the block holding the next position, "
     "then whole blocks of masks",
     1, 256},
    {"denoise_passes", tessera::OptionType::kInt, "1",
     "denoise forwards per drafted block (1: every masked position revealed by argmax at once, "
     "DFlash-style; more: the threshold rule in between, everything at the last)",
     1, 64},
    {"denoise_blocks", tessera::OptionType::kString, "\"together\"",
     "how a draft of several blocks is denoised: every block in each forward (a later block "
     "sees the earlier as they stand), or one block at a time (each sees the earlier revealed; "
     "a forward per block and pass)",
     0, 0, "together|in_order"},
    {"threshold", tessera::OptionType::kFloat, "0.9",
     "confidence above which a masked position is revealed before the last denoise pass", 0, 1},
};

}  // namespace

TESSERA_PLUGIN(proposer, "dlm", "1.0.0",
               "a block-diffusion model on the target's tokenizer plus a mask token "
               "(decode.draft_model) drafts whole blocks in decode.denoise_passes forwards; its "
               "own cache holds the lane's whole blocks of accepted tokens",
               kOptions, tessera::DlmProposer)
