#include "plugins/compressor_lattice/record_scalars.h"

#include <cmath>

#include "core/tensor/dtype.h"

namespace tessera::lattice {
namespace {

constexpr double kHalfMax = 65504.0;
constexpr double kHalfMinNormal = 1.0 / 16384.0;  // 2^-14
constexpr int kMaxShift = 64;

// h · 2^exponent as a half, if that is exact (and finite).
bool scale_half_exactly(uint16_t h, int exponent, uint16_t* out) {
  const float scaled = std::ldexp(half_to_float(h), exponent);
  const uint16_t candidate = float_to_half(scaled);
  if (!std::isfinite(scaled) || half_to_float(candidate) != scaled) return false;
  *out = candidate;
  return true;
}

uint16_t norm_to_half(double norm, int exponent) {
  return float_to_half(static_cast<float>(std::ldexp(norm, -exponent)));
}

}  // namespace

RecordScalars fit_record_scalars(double norm, uint16_t qmax16) {
  RecordScalars fitted{norm_to_half(norm, 0), qmax16};
  if (norm >= kHalfMinNormal && std::isfinite(half_to_float(fitted.norm16))) return fitted;

  // Shift by 2^e, one binade at a time: store fp16(norm · 2^-e) and the exact
  // qmax16 · 2^e, until the norm is a finite normal half.
  const int direction = norm > 1.0 ? 1 : -1;  // shrink a large norm, grow a small one
  for (int e = direction; std::abs(e) <= kMaxShift; e += direction) {
    uint16_t qmax_shifted;
    if (!scale_half_exactly(qmax16, e, &qmax_shifted)) break;  // further shifts fail too
    fitted = {norm_to_half(norm, e), qmax_shifted};
    const double stored_norm = std::ldexp(norm, -e);
    if (direction > 0 && std::isfinite(half_to_float(fitted.norm16))) return fitted;
    if (direction < 0 && stored_norm >= kHalfMinNormal) return fitted;
  }
  // Out of reach. A small norm keeps the last (subnormal) fit; a large one
  // saturates rather than becoming inf.
  if (direction > 0 && !std::isfinite(half_to_float(fitted.norm16)))
    fitted.norm16 = float_to_half(static_cast<float>(kHalfMax));
  return fitted;
}

}  // namespace tessera::lattice
