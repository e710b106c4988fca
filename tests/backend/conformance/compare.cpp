#include "tests/backend/conformance/compare.h"

#include <cmath>
#include <cstdio>

namespace tessera::conformance {

Comparison compare(std::span<const float> got, std::span<const float> want) {
  Comparison c;
  c.size_mismatch = static_cast<int64_t>(got.size()) - static_cast<int64_t>(want.size());
  if (c.size_mismatch != 0) return c;
  double err = 0.0, norm = 0.0, worst = -1.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    if (!std::isfinite(b)) {
      ++c.reference_non_finite;
      continue;
    }
    if (!std::isfinite(a)) {
      ++c.non_finite;
      continue;
    }
    const double d = a - b;
    err += d * d;
    norm += b * b;
    if (std::abs(d) > worst) {
      worst = std::abs(d);
      c.worst_index = static_cast<int64_t>(i);
      c.worst_got = a;
      c.worst_want = b;
    }
  }
  c.nmse = norm > 0.0 ? err / norm : err;
  return c;
}

std::string Comparison::describe() const {
  char text[256];
  if (size_mismatch != 0) {
    std::snprintf(text, sizeof(text), "%lld values more than the reference's",
                  static_cast<long long>(size_mismatch));
    return text;
  }
  std::snprintf(text, sizeof(text), "nmse %.3g, %lld NaN/Inf, worst at %lld: %.9g vs %.9g", nmse,
                static_cast<long long>(non_finite), static_cast<long long>(worst_index), worst_got,
                worst_want);
  return text;
}

}  // namespace tessera::conformance
