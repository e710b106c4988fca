#include "core/model/batch_visibility.h"

#include <algorithm>

namespace tessera {

void build_in_batch_visibility(const Batch& batch, int32_t begin, int32_t count,
                               std::vector<uint64_t>& bits) {
  const auto words = static_cast<std::size_t>((count + 63) / 64);
  if (bits.size() < words * static_cast<std::size_t>(count))
    bits.resize(words * static_cast<std::size_t>(count));
  std::fill(bits.begin(), bits.begin() + static_cast<std::ptrdiff_t>(words * count), 0);
  const auto row = [&](int32_t i) { return bits.data() + static_cast<std::size_t>(i) * words; };
  const auto at = [&](int32_t i) { return static_cast<std::size_t>(begin + i); };
  // Ancestors: a token's row is its parent's plus itself (parents come first).
  for (int32_t i = 0; i < count; ++i) {
    const int32_t parent = batch.parents()[at(i)] - begin;
    if (parent >= 0) std::copy_n(row(parent), words, row(i));  // earlier chunks are in the cache
    row(i)[i / 64] |= uint64_t{1} << (i % 64);
  }
  // Block mates see each other; not the block mates of an ancestor
  // (plugins/diffusion_common/block_batch.h says why parents must chain).
  for (int32_t i = 0; i < count; ++i) {
    const int16_t block = batch.blocks()[at(i)];
    if (block == 0) continue;
    for (int32_t j = 0; j < count; ++j)
      if (batch.blocks()[at(j)] == block && batch.seqs()[at(j)] == batch.seqs()[at(i)] &&
          batch.branches()[at(j)] == batch.branches()[at(i)])
        row(i)[j / 64] |= uint64_t{1} << (j % 64);
  }
}

}  // namespace tessera
