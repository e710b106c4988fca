#include "core/plugin/sdk.h"
#include "plugins/verifier_block_diffusion/block_diffusion_verifier.h"

namespace {

constexpr tessera::OptionSpec kOptions[] = {
    {"denoise_steps", tessera::OptionType::kInt, "0",
     "denoise forwards a block may take (0: the model's block size); the last one reveals "
     "whatever is still masked",
     0, 1024},
    {"unmask", tessera::OptionType::kString, "\"threshold\"",
     "which masked positions a denoise forward reveals: every one more confident than "
     "decode.threshold (at least the step's quota), the leftmost, the most confident, or the "
     "lowest-entropy ones up to decode.entropy_bound",
     0, 0, "threshold|sequential|low_confidence|entropy_bounded"},
    {"threshold", tessera::OptionType::kFloat, "0.9",
     "confidence above which a candidate is revealed (unmask = \"threshold\")", 0, 1},
    {"fixed_shape", tessera::OptionType::kBool, "false",
     "run every forward through the fixed-shape step (one block, an additive mask over every "
     "slot of the static store, a keep/insert cache update: the embedded graph); needs "
     "cache.plugin = \"static\" with the identity codec"},
    {"fuse_commit", tessera::OptionType::kBool, "false",
     "write a finished block's K/V in the next block's first denoise forward (the clean block "
     "and the masked one chained after it, one batch) instead of a commit forward of its own: "
     "the same tokens, one forward per block fewer"},
    {"entropy_bound", tessera::OptionType::kFloat, "0.35",
     "summed entropy (nats) of the candidates one step reveals (unmask = \"entropy_bounded\")", 0,
     1e6},
};

}  // namespace

TESSERA_PLUGIN(verifier, "block_diffusion", "1.0.0",
               "decodes a block-diffusion model (SDAR): the prompt's whole blocks prefilled "
               "block-causally, then per block up to decode.denoise_steps denoise forwards that "
               "write nothing, and one commit forward that writes the finished block's K/V",
               kOptions, tessera::BlockDiffusionVerifier)
