#include "plugins/diffusion_common/block_batch.h"

namespace tessera {

int32_t add_block(Batch& batch, SequenceId seq, BranchId branch, std::span<const int32_t> tokens,
                  int32_t first_position, int16_t block_id, uint8_t flags, int32_t parent) {
  for (std::size_t i = 0; i < tokens.size(); ++i)
    parent = batch.add(tokens[i], seq, first_position + static_cast<int32_t>(i), parent, flags,
                       block_id, branch);
  return parent;
}

int16_t block_id_at(int64_t position, int block) {
  return static_cast<int16_t>(position / block % 32767 + 1);
}

}  // namespace tessera
