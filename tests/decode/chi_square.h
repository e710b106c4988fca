// Pearson's chi-square goodness-of-fit test for the sampling tests: counts
// against a distribution, cells with small expected counts pooled so the
// approximation holds, and the upper tail by the Wilson-Hilferty cube-root
// normal approximation. The draws come from fixed seeds, so a test built on
// it passes or fails the same way every run.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace tessera::testing {

struct ChiSquare {
  double statistic = 0;
  int degrees = 0;
  double p_value = 1;
};

// counts[key] observed, expected[key] the probability of key (summing to 1
// over every key that can occur). Cells expected below `min_expected` are
// pooled into one.
template <typename Key>
ChiSquare chi_square(const std::map<Key, int64_t>& counts, const std::map<Key, double>& expected,
                     int64_t draws, double min_expected = 5.0) {
  double pooled_observed = 0, pooled_expected = 0;
  ChiSquare out;
  int cells = 0;
  for (const auto& [key, p] : expected) {
    const double e = p * static_cast<double>(draws);
    const auto found = counts.find(key);
    const double o = found == counts.end() ? 0.0 : static_cast<double>(found->second);
    if (e < min_expected) {
      pooled_observed += o;
      pooled_expected += e;
      continue;
    }
    out.statistic += (o - e) * (o - e) / e;
    ++cells;
  }
  // Keys seen that the distribution says cannot occur go to the pool too.
  for (const auto& [key, count] : counts)
    if (!expected.count(key)) pooled_observed += static_cast<double>(count);
  if (pooled_expected > 0 || pooled_observed > 0) {
    const double e = std::max(pooled_expected, 1e-9);
    out.statistic += (pooled_observed - e) * (pooled_observed - e) / e;
    ++cells;
  }
  out.degrees = std::max(cells - 1, 1);
  const double k = out.degrees;
  const double z = (std::cbrt(out.statistic / k) - (1 - 2 / (9 * k))) / std::sqrt(2 / (9 * k));
  out.p_value = 0.5 * std::erfc(z / std::sqrt(2.0));
  return out;
}

}  // namespace tessera::testing
