#include "plugins/diffusion_common/diffusion_model.h"

#include <string>

namespace tessera {

Result<DiffusionModel> diffusion_model(const LoadedModel& model, std::string_view who) {
  const ModelConfig& c = model.config;
  if (!c.block_diffusion())
    return failed_precondition(
        std::string(who) + " needs a block-diffusion model, but " + model.path +
        " is autoregressive (its GGUF has no diffusion.block_size and diffusion.mask_token_id); "
        "use a block-diffusion model such as tok512-sdar-1m.gguf, or decode.verifier = \"ar\" for "
        "this one");
  if (c.mask_token_id < 0 || c.mask_token_id >= c.vocab_size)
    return failed_precondition(model.path + ": the mask token " + std::to_string(c.mask_token_id) +
                               " is outside the " + std::to_string(c.vocab_size) +
                               "-token vocabulary");
  return DiffusionModel{c.diffusion_block_size, c.mask_token_id, c.vocab_size};
}

}  // namespace tessera
