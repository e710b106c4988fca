// Vector <-> lattice coordinates (§1.2 encode, §1.4 decode of the algorithms
// note), before any bit packing. All arithmetic is fp32 except the norm,
// which is accumulated in double (order-independent for practical purposes,
// and it cannot overflow) and then rounded to fp32 as the reference's.
#pragma once

#include <cstdint>

#include "core/tensor/half.h"
#include "plugins/compressor_lattice/lattice_config.h"
#include "plugins/compressor_lattice/record_scalars.h"

namespace tessera::lattice {

// The encoder's working vector lives on the stack (a step never allocates),
// which bounds the head size.
inline constexpr int kMaxHeadDim = 1024;

class Quantizer {
 public:
  explicit Quantizer(const LatticeConfig& config) : config_(config) {}

  // x: head_dim floats -> coords: head_dim integers (D4: z; E8: 2z), every
  // coordinate in [-Q, Q] (E8: [-2Q, 2Q]). head_dim is a power of two, a
  // multiple of the block size and <= kMaxHeadDim (checked by the codec).
  //
  // The zero vector gives coords 0 (it decodes to exactly 0). A vector with a
  // NaN or inf element gives coords 0 and a NaN norm16, so it decodes to NaN:
  // a poisoned vector stays visibly poisoned.
  RecordScalars quantize(const float* x, int head_dim, int32_t* coords) const;

  // The decoder: x = H·(c · unit · qmax16/Q) · norm16 (unit = ½ for E8).
  void reconstruct(const int32_t* coords, RecordScalars scalars, int head_dim, float* x) const;

  // unit · qmax16/Q · norm16: one coordinate's value in the rotated domain, so
  // decode(record) = H · (coords · coordinate_scale). Inline: attention
  // takes one per record.
  float coordinate_scale(RecordScalars scalars) const {
    return coordinate_unit() * (f16_to_f32(scalars.qmax16) / static_cast<float>(config_.q)) *
           f16_to_f32(scalars.norm16);
  }

  const LatticeConfig& config() const { return config_; }
  // A lattice coordinate's step before scaling: ½ for E8 (coords hold 2z), 1 for D4.
  float coordinate_unit() const { return config_.lattice == LatticeKind::kE8 ? 0.5f : 1.0f; }

 private:
  // rotated: the unit vector after H; fills coords block by block.
  void closest_points(const float* rotated, float scale, int head_dim, int32_t* coords) const;

  LatticeConfig config_;
};

}  // namespace tessera::lattice
