// Whether a restorer model can stand in for the target's K/V: the same K/V
// shapes (layers, KV heads, head size) and the same tokenizer, its vocabulary
// the target's with perhaps extra tokens at the end (a diffusion model's
// mask token), so every target token means the same to it.
#pragma once

#include "core/model/model.h"
#include "core/status/status.h"

namespace tessera {

Status check_restorer_matches(const LoadedModel& target, const LoadedModel& restorer);

}  // namespace tessera
