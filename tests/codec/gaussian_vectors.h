// Reproducible N(0, 1) test vectors on every standard library:
// std::normal_distribution's algorithm is unspecified, so this draws
// splitmix64 bits and turns them into normals with Box-Muller.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

namespace tessera::test {

class GaussianSource {
 public:
  explicit GaussianSource(uint64_t seed) : state_(seed) {}

  // splitmix64 (Steele, Lea and Flood 2014).
  uint64_t next_bits() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in (0, 1]: never 0, so the logarithm below is finite.
  double uniform() { return static_cast<double>((next_bits() >> 11) + 1) * 0x1.0p-53; }

  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = static_cast<float>(radius * std::sin(angle));
    has_spare_ = true;
    return static_cast<float>(radius * std::cos(angle));
  }

  // n vectors of dim elements, row after row.
  std::vector<float> vectors(int64_t n, int dim) {
    std::vector<float> out(static_cast<std::size_t>(n * dim));
    for (float& x : out) x = next();
    return out;
  }

 private:
  uint64_t state_;
  bool has_spare_ = false;
  float spare_ = 0.0f;
};

// mean ||x - x̂||² / mean ||x||² over all vectors (the harness's rel-MSE).
inline double relative_mse(const std::vector<float>& x, const std::vector<float>& decoded) {
  double error = 0.0;
  double energy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - decoded[i];
    error += d * d;
    energy += static_cast<double>(x[i]) * x[i];
  }
  return error / energy;
}

}  // namespace tessera::test
