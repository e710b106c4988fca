// Seeded values for the kernel benchmarks, from a xorshift generator: fast
// enough for the 65M weights of the largest matrix, and the same every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::bench {

// n values uniform in [-scale / 2, scale / 2).
inline std::vector<float> random_values(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  uint32_t state = seed * 2654435761u + 1;
  for (float& x : v) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    x = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * scale;
  }
  return v;
}

}  // namespace tessera::bench
