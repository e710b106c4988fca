#include "plugins/proposer_dlm/dlm_pair.h"

#include <string>

namespace tessera {

Status check_dlm_pair(const LoadedModel& drafter, const LoadedModel& target) {
  const std::string both =
      "decode.draft_model " + drafter.path + " (proposer 'dlm') and target model " + target.path;
  const std::string fix = "; name a block-diffusion model trained on " + target.path +
                          "'s tokenizer plus a mask token (e.g. tok512-sdar-1m.gguf for "
                          "tok512-ar-1m.gguf) in decode.draft_model";
  const ModelConfig& c = drafter.config;
  if (!c.block_diffusion())
    return invalid_argument(
        both + ": " + drafter.path +
        " is autoregressive, not a block-diffusion model (its GGUF has no diffusion.block_size "
        "and diffusion.mask_token_id)" +
        fix + ", or draft with an autoregressive model through decode.proposer = \"ar_draft\"");
  const int32_t target_vocab = target.config.vocab_size;
  if (c.vocab_size != target_vocab + 1 || drafter.vocab.size() != target_vocab + 1)
    return invalid_argument(both + ": the drafter's vocabulary must be the target's " +
                            std::to_string(target_vocab) + " tokens plus its mask token (" +
                            std::to_string(target_vocab + 1) + " tokens), but it has " +
                            std::to_string(c.vocab_size) + fix);
  if (c.mask_token_id != target_vocab)
    return invalid_argument(both + ": the drafter's mask token " + std::to_string(c.mask_token_id) +
                            " is one of the target's token ids [0, " +
                            std::to_string(target_vocab) +
                            "); the mask must be the one token the drafter adds (id " +
                            std::to_string(target_vocab) + ")" + fix);
  for (int32_t i = 0; i < target_vocab; ++i) {
    const auto index = static_cast<std::size_t>(i);
    if (drafter.vocab.pieces[index] != target.vocab.pieces[index])
      return invalid_argument(both + " differ at token " + std::to_string(i) + " ('" +
                              drafter.vocab.pieces[index] + "' against '" +
                              target.vocab.pieces[index] +
                              "'): the drafter must share the target's tokenizer" + fix);
  }
  return ok_status();
}

}  // namespace tessera
