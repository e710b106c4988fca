// Finds weights that are NaN or infinite. Not run on every load: the forward
// checks its logits (a non-finite logit is an error), and this full scan runs
// only to explain such an error, or on request (`tessera inspect --check-weights`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace tessera {

struct NonFiniteTensor {
  std::string name;
  uint64_t count = 0;          // NaN or +-inf elements
  uint64_t first_element = 0;  // index of the first one
  float first_value = 0;       // what it is (NaN, inf or -inf)
};

// Every tensor of model.tensors with at least one non-finite element, in file
// order. Reads the whole mapped file once (mapping model.path again when the
// model no longer holds it: the backend took its own copy of the weights).
std::vector<NonFiniteTensor> find_non_finite_weights(const LoadedModel& model);

// "tensor 'blk.0.attn_q.weight' holds 3 non-finite values (the first, element
// 17, is nan)", plus how many more tensors do; "" when the list is empty.
std::string describe_non_finite(const std::vector<NonFiniteTensor>& tensors);

}  // namespace tessera
