// What decoding a block-diffusion model needs to know about it (SDAR-style:
// blocks aligned to absolute positions, a mask token, no logit shift), read
// from its ModelConfig, with the error a user sees when the model is not one.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

struct DiffusionModel {
  int block = 0;      // tokens per block; block b holds positions [b * block, (b + 1) * block)
  int32_t mask = -1;  // the mask token: never emitted
  int32_t vocab = 0;

  // The first position of the block holding `position`.
  int64_t block_start(int64_t position) const { return position - position % block; }
};

// The model's block-diffusion settings, or FailedPrecondition naming `who`
// (the plugin and option that needs them) and `model_path` when the model
// has none (an autoregressive model).
Result<DiffusionModel> diffusion_model(const LoadedModel& model, std::string_view who);

}  // namespace tessera
