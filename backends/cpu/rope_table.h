// RoPE's rotation of one head vector: pairs (2i, 2i+1) turned by
// position * theta^(-2i/head_dim). One formula for the rope op and for keys
// rotated when attention reads them (stored before RoPE), so both give bitwise
// the same floats. A table caches cos and sin for the first positions; past
// it they are computed on the spot, with the same expressions.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>

namespace tessera::cpu {

// The angle's cos and sin for the pair starting at even index i; as llama2.c:
// freq = theta^(-i/head_dim).
inline void rope_cos_sin(int64_t position, int64_t i, int64_t head_dim, float theta, float& c,
                         float& s) {
  const float freq = 1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(head_dim));
  const float angle = static_cast<float>(position) * freq;
  c = std::cos(angle);
  s = std::sin(angle);
}

// Rotates the pair in place with a given cos and sin.
inline void rope_rotate_pair(float* v, float c, float s) {
  const float v0 = v[0];
  const float v1 = v[1];
  v[0] = v0 * c - v1 * s;
  v[1] = v0 * s + v1 * c;
}

class RopeTable {
 public:
  // Covers positions [0, positions) for this head size and theta; allocates
  // only when one of them changes or more positions are asked for. False when
  // the memory cannot be had (rotation then computes every angle).
  bool prepare(int64_t head_dim, float theta, int64_t positions);

  // Whether the table is for this head size and theta.
  bool is_for(int64_t head_dim, float theta) const {
    return head_dim == head_dim_ && theta == theta_;
  }

  // dst = src rotated at `position` (dst may equal src).
  void rotate(const float* src, int64_t position, float* dst) const;

 private:
  int64_t head_dim_ = 0;
  float theta_ = 0;
  int64_t positions_ = 0;
  std::unique_ptr<float[]> cos_sin_;  // [positions, head_dim / 2, 2]
};

}  // namespace tessera::cpu
