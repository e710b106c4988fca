// Hands a loaded model's weights to the backend (Backend::adopt_weights) and,
// when the backend took them all into memory of its own, releases the file
// mapping, so the weights are resident once, not twice.
#pragma once

#include <vector>

#include "core/backend/backend.h"
#include "core/model/model.h"

namespace tessera {

// Every weight tensor of `weights`. A tied output matrix is listed with the
// embedding it shares data with; the backend keeps the two shared.
std::vector<Tensor*> weight_tensors(ModelWeights& weights);

// Calls backend.adopt_weights on the model's tensors; if it took them, drops
// model.file (the mapping stays only while another holder has it). Internal
// when the backend breaks the all-or-nothing contract.
Status hand_weights_to(Backend& backend, LoadedModel& model);

}  // namespace tessera
