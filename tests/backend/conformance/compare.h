// How a backend's output is judged against the reference's: normalised mean
// squared error, NMSE = sum (a - b)^2 / sum b^2 (b the reference), in double,
// and a count of the NaN and Inf values the backend produced.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tessera::conformance {

struct Comparison {
  double nmse = 0.0;       // sum (a-b)^2 / sum b^2; sum (a-b)^2 itself when b is all zeros
  int64_t non_finite = 0;  // NaN or Inf in `got`
  int64_t reference_non_finite = 0;  // in `want`: the case itself is broken
  int64_t size_mismatch = 0;         // got.size() - want.size()
  int64_t worst_index = -1;          // the element of the largest |a - b|
  double worst_got = 0.0, worst_want = 0.0;

  // "nmse 3.1e-09, worst at 17: 0.25 vs 0.2500001"
  std::string describe() const;
};

Comparison compare(std::span<const float> got, std::span<const float> want);

}  // namespace tessera::conformance
