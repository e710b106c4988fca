#include "plugins/compressor_lattice/quantizer.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/tensor/dtype.h"
#include "plugins/compressor_lattice/closest_point.h"
#include "plugins/compressor_lattice/hadamard.h"

namespace tessera::lattice {
namespace {

constexpr float kEps = FLT_EPSILON;  // the reference's floor for the norm and qmax

}  // namespace

RecordScalars Quantizer::quantize(const float* x, int head_dim, int32_t* coords) const {
  double sum_squares = 0.0;
  for (int i = 0; i < head_dim; ++i) sum_squares += static_cast<double>(x[i]) * x[i];
  if (!std::isfinite(sum_squares)) {  // finite floats cannot overflow a double sum here
    std::fill(coords, coords + head_dim, 0);
    return {kHalfNaN, 0};
  }
  const double norm = std::sqrt(sum_squares);
  const float r = std::max(static_cast<float>(norm), kEps);

  float rotated[kMaxHeadDim];
  if (std::isfinite(r)) {
    for (int i = 0; i < head_dim; ++i) rotated[i] = x[i] / r;
  } else {  // the norm exceeds FLT_MAX: divide in double
    for (int i = 0; i < head_dim; ++i) rotated[i] = static_cast<float>(x[i] / norm);
  }
  hadamard_rotate(rotated, head_dim);

  float qmax = kEps;
  for (int i = 0; i < head_dim; ++i) qmax = std::max(qmax, std::fabs(rotated[i]));
  const uint16_t qmax16 = float_to_half(qmax);
  // The scale uses the fp16-rounded qmax, so |t| may pass Q by up to Q·2^-11.
  const float scale = half_to_float(qmax16) / static_cast<float>(config_.q);
  closest_points(rotated, scale, head_dim, coords);
  return fit_record_scalars(std::isfinite(r) ? static_cast<double>(r) : norm, qmax16);
}

void Quantizer::closest_points(const float* rotated, float scale, int head_dim,
                               int32_t* coords) const {
  const int32_t q = config_.q;
  const bool box = config_.clamp == ClampMode::kBox;
  const int dim = block_dim(config_.lattice);
  float t[8];
  for (int start = 0; start < head_dim; start += dim) {
    for (int i = 0; i < dim; ++i) t[i] = rotated[start + i] / scale;
    int32_t* block = coords + start;
    if (config_.lattice == LatticeKind::kD4) {
      if (box) {
        closest_d4_in_box(t, q, block);
      } else {
        closest_d4(t, block);
        clamp_coordinates(block, 4, q);
      }
    } else {
      if (box) {
        closest_e8_in_box(t, q, block);
      } else {
        closest_e8(t, block);
        clamp_coordinates(block, 8, 2 * q);  // doubled coordinates
      }
    }
  }
}

void Quantizer::reconstruct(const int32_t* coords, RecordScalars scalars, int head_dim,
                            float* x) const {
  // (c · unit) · s equals c · (unit · s) exactly: unit is a power of two.
  const float step =
      coordinate_unit() * (half_to_float(scalars.qmax16) / static_cast<float>(config_.q));
  for (int i = 0; i < head_dim; ++i) x[i] = static_cast<float>(coords[i]) * step;
  hadamard_rotate(x, head_dim);
  const float norm = half_to_float(scalars.norm16);
  for (int i = 0; i < head_dim; ++i) x[i] *= norm;
}

}  // namespace tessera::lattice
