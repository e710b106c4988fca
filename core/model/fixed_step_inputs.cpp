#include "core/model/fixed_step_inputs.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/model/batch_visibility.h"

namespace tessera {

void FixedStepInputs::reserve(int block_tokens, int64_t cache_slots) {
  block = block_tokens;
  slots = cache_slots;
  const auto b = static_cast<std::size_t>(block_tokens);
  const auto s = static_cast<std::size_t>(cache_slots);
  tokens.assign(b, 0);
  positions.assign(b, 0);
  mask.assign(b * (s + b), 0.0f);
  keep.assign(s, 1.0f);
  insert.assign(s * b, 0.0f);
  written_positions.reserve(b);
  visibility.assign(b * ((b + 63) / 64), 0);
}

Status build_fixed_step_inputs(const Batch& batch, int64_t stored, int32_t pad_token,
                               FixedStepInputs& in) {
  const int32_t n = batch.size();
  if (n < 1 || n > in.block)
    return invalid_argument("a fixed-shape step runs 1 to " + std::to_string(in.block) +
                            " tokens, not " + std::to_string(n));
  for (int32_t i = 0; i < n; ++i)
    if (batch.seqs()[static_cast<std::size_t>(i)] != batch.seqs()[0] ||
        batch.branches()[static_cast<std::size_t>(i)] != 0)
      return invalid_argument(
          "a fixed-shape step runs one sequence without branches; this batch mixes them");
  int64_t writes = 0;
  for (const uint8_t f : batch.flags()) writes += (f & kWriteKv) ? 1 : 0;
  if (stored + writes > in.slots)
    return resource_exhausted("the fixed-shape step's cache has " + std::to_string(in.slots) +
                              " slots; " + std::to_string(stored) + " are written and the step " +
                              "writes " + std::to_string(writes) + " more");

  const auto b = static_cast<std::size_t>(in.block);
  const auto width = static_cast<std::size_t>(in.slots) + b;
  constexpr float kHidden = -std::numeric_limits<float>::infinity();
  in.real_tokens = n;
  for (std::size_t i = 0; i < b; ++i) {
    const bool real = i < static_cast<std::size_t>(n);
    in.tokens[i] = real ? batch.tokens()[i] : pad_token;
    in.positions[i] =
        real ? batch.positions()[i]
             : batch.positions()[static_cast<std::size_t>(n - 1)] + static_cast<int32_t>(i) - n + 1;
  }
  build_in_batch_visibility(batch, 0, n, in.visibility);
  const auto words = static_cast<std::size_t>((n + 63) / 64);
  for (std::size_t i = 0; i < b; ++i) {
    float* row = in.mask.data() + i * width;
    const bool real = i < static_cast<std::size_t>(n);
    for (std::size_t s = 0; s < static_cast<std::size_t>(in.slots); ++s)
      row[s] = real && static_cast<int64_t>(s) < stored ? 0.0f : kHidden;
    for (std::size_t j = 0; j < b; ++j) {
      const bool seen = real && j < static_cast<std::size_t>(n) &&
                        ((in.visibility[i * words + j / 64] >> (j % 64)) & 1u);
      row[static_cast<std::size_t>(in.slots) + j] = seen ? 0.0f : kHidden;
    }
  }
  std::fill(in.keep.begin(), in.keep.end(), 1.0f);
  std::fill(in.insert.begin(), in.insert.end(), 0.0f);
  in.written_positions.clear();
  int64_t slot = stored;
  for (int32_t i = 0; i < n; ++i) {
    if (!(batch.flags()[static_cast<std::size_t>(i)] & kWriteKv)) continue;
    in.keep[static_cast<std::size_t>(slot)] = 0.0f;
    in.insert[static_cast<std::size_t>(slot) * b + static_cast<std::size_t>(i)] = 1.0f;
    in.written_positions.push_back(batch.positions()[static_cast<std::size_t>(i)]);
    ++slot;
  }
  return ok_status();
}

}  // namespace tessera
