// Which tokens of a batch each token sees, by the batch's own rule
// (core/model/batch.h): itself, its ancestors through `parent`, and the
// tokens sharing its nonzero block id (same sequence and branch). One bit
// per pair, rows of ceil(count / 64) words. The transformer's attention and
// the fixed-shape step's additive mask are both built from it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/batch.h"

namespace tessera {

// Rows for tokens [begin, begin + count) of `batch` into `bits` (grown to
// count * words if smaller; sized once by callers that must not allocate).
// A parent before `begin` is outside the chunk (already in the cache).
void build_in_batch_visibility(const Batch& batch, int32_t begin, int32_t count,
                               std::vector<uint64_t>& bits);

}  // namespace tessera
