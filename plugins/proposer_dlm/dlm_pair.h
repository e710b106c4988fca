// Whether a block-diffusion model can draft for an autoregressive target:
// its vocabulary must be the target's (the same piece for every target token
// id) plus its mask token, which lies outside the target's ids. Then the
// drafter's logits over the target's ids are a distribution over exactly the
// tokens the target can emit, and the mask can never be drafted.
#pragma once

#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

// InvalidArgument naming both files, what differs and how to fix it, when
// `drafter` is not a block-diffusion model on `target`'s tokenizer.
Status check_dlm_pair(const LoadedModel& drafter, const LoadedModel& target);

}  // namespace tessera
