// The median the timed figures of `tessera bench` and `tessera sweep` report:
// robust to the odd run a shared, noisy machine slows down.
#pragma once

#include <algorithm>
#include <vector>

namespace tessera::sweep {

// The median of `values` (not empty): the middle one, or the mean of the two
// middle ones.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace tessera::sweep
