// The rotary embedding a layer applies: the Backend's rope op and attention
// (keys rotated at read) take it.
#pragma once

#include <algorithm>
#include <cmath>
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

// Whether a and b turn every pair by the same angle (their factors compared
// by value: a span's address says nothing about what it holds).
inline bool same_rope(const RopeSpec& a, const RopeSpec& b) {
  return a.theta == b.theta && a.position_scale == b.position_scale && a.pairs == b.pairs &&
         std::equal(a.freq_factors.begin(), a.freq_factors.end(), b.freq_factors.begin(),
                    b.freq_factors.end());
}

// The cos and sin of pair `pair`'s angle at `position`: the one formula every
// backend turns by (the CPU's rope op and its keys rotated at read, the Vulkan
// backend's angle tables), so all give bitwise the same floats. As llama2.c:
// freq = theta^(-2 pair/head_dim), divided by the pair's factor when there is
// one. Callers compile it without FMA contraction (-ffp-contract=off).
inline void rope_cos_sin(int64_t position, int64_t pair, int64_t head_dim, const RopeSpec& rope,
                         float& c, float& s) {
  float freq =
      1.0f / std::pow(rope.theta, static_cast<float>(2 * pair) / static_cast<float>(head_dim));
  if (!rope.freq_factors.empty()) freq /= rope.freq_factors[static_cast<std::size_t>(pair)];
  const float angle = static_cast<float>(position) * rope.position_scale * freq;
  c = std::cos(angle);
  s = std::sin(angle);
}

}  // namespace tessera
