// The rotary embedding a layer applies: the Backend's rope op and attention
// (keys rotated at read) take it.
#pragma once

#include <cstdint>
#include <span>

namespace tessera {

// How RoPE pairs a head's dimensions: llama.cpp's NORM (adjacent pairs (2i,
// 2i+1), llama) or NEOX (halves: (i, i + head_dim/2), qwen2, qwen3, gemma3).
enum class RopePairs : uint8_t { kAdjacent, kHalves };

// One layer's rotary embedding. Pair i turns by
// position * position_scale * theta^(-2i/head_dim) / freq_factors[i].
struct RopeSpec {
  float theta = 10000.0f;
  // Linear scaling: 1 / rope.scaling.factor (gemma3's global layers).
  float position_scale = 1.0f;
  RopePairs pairs = RopePairs::kAdjacent;
  // [head_dim / 2] divisors of each pair's frequency (Llama 3's rope_freqs),
  // empty for none; must outlive the op (the model's weights do).
  std::span<const float> freq_factors;
};

// Llama's RoPE: adjacent pairs at `theta`, unscaled.
inline RopeSpec llama_rope(float theta) {
  RopeSpec rope;
  rope.theta = theta;
  return rope;
}

}  // namespace tessera
