// The data inputs of the fixed-shape step (algorithms.md §2.5, DiffuLex
// Edge's exported graph, with the correct mask): everything that changes
// from one step to the next is data in tensors of fixed size, never a shape.
// One helper builds them from the batch and the cache's stored count:
//
//   tokens, positions [block]       the batch's, then padding
//   mask [block, slots + block]     additive: cache slot s seen iff s < stored
//                                   (written); batch key j seen iff j is a real
//                                   token the batch lets query i see (block
//                                   mates, ancestors); padding rows and columns
//                                   hidden, and unwritten slots hidden (the
//                                   reference runtime's bug was to show them)
//   keep [slots], insert [slots, block]
//                                   the cache update cache * keep + insert x
//                                   rows: the batch's kWriteKv tokens, in batch
//                                   order, into slots stored, stored + 1, ...
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/batch.h"
#include "core/status/status.h"

namespace tessera {

struct FixedStepInputs {
  int block = 0;      // tokens per step
  int64_t slots = 0;  // cache slots per sequence
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<float> mask;
  std::vector<float> keep;
  std::vector<float> insert;
  std::vector<int32_t> written_positions;  // the positions of the entries the update writes
  int32_t real_tokens = 0;                 // the batch's tokens (the rest is padding)
  std::vector<uint64_t> visibility;        // scratch: the batch's own rule as bits

  // Sizes everything once; build_fixed_step_inputs never allocates after.
  void reserve(int block_tokens, int64_t cache_slots);
};

// Fills `in` for `batch` (one sequence, branch 0, at most in.block tokens)
// over a cache sequence holding `stored` entries in slots [0, stored).
// Padding tokens are `pad_token` at the positions after the batch's last.
// InvalidArgument for a batch the step cannot run; ResourceExhausted when the
// written entries would not fit the slots.
Status build_fixed_step_inputs(const Batch& batch, int64_t stored, int32_t pad_token,
                               FixedStepInputs& in);

}  // namespace tessera
