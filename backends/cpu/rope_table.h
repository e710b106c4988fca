// RoPE's rotation of one head vector as a RopeSpec says (core/backend/backend.h):
// pair i, either (2i, 2i+1) or (i, i + head_dim/2), turned by
// position * position_scale * theta^(-2i/head_dim) / freq_factors[i]. One
// formula for the rope op and for keys rotated when attention reads them
// (stored before RoPE), so both give bitwise the same floats. A table caches
// cos and sin for the first positions; past it they are computed on the spot,
// with the same expressions.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend/backend.h"

namespace tessera::cpu {

class RopeTable {
 public:
  // Covers positions [0, positions) for this head size and rotation;
  // allocates only when one of them changes or more positions are asked for.
  // False when the memory cannot be had (rotation then computes every angle).
  bool prepare(int64_t head_dim, const RopeSpec& rope, int64_t positions);

  // Whether the table is for this head size and rotation (factors compared by value).
  bool is_for(int64_t head_dim, const RopeSpec& rope) const;

  // dst = src rotated at `position` (dst may equal src).
  void rotate(const float* src, int64_t position, float* dst) const;

 private:
  // The pair's cos and sin at `position`, from the table or computed.
  void cos_sin(int64_t position, int64_t pair, float& c, float& s) const;

  int64_t head_dim_ = 0;
  RopeSpec rope_ = llama_rope(0.0f);
  std::vector<float> factors_;  // rope_.freq_factors points here
  int64_t positions_ = 0;
  std::unique_ptr<float[]> cos_sin_;  // [positions, head_dim / 2, 2]
};

}  // namespace tessera::cpu
