// The two IEEE half floats that end a lattice record: norm16 (the vector's
// norm) and qmax16 (the largest rotated coordinate of the unit vector).
//
// The decoder only ever uses their product: x̂ = H·z · (qmax16 / Q) · norm16.
// So a power of two may move from one to the other without changing any
// decoded value. The encoder moves one when the norm alone does not fit a
// normal half: a norm above 65504 (it would be inf) or below 2^-14 (a
// subnormal keeps fewer than 11 significant bits). Moving it is exact as long
// as qmax16 stays exactly representable, which bounds the reach: about
// 65504 / qmax (>= 4.2e9) above, and down to the fp32 eps clamp (2^-23) below.
// Past the upper reach the norm saturates at 65504 · 2^e: the vector keeps its
// direction, its length is clipped. For norms inside [2^-14, 65504] nothing
// moves and the pair is exactly the reference's (fp16(norm), fp16(qmax)).
#pragma once

#include <cstdint>

namespace tessera::lattice {

struct RecordScalars {
  uint16_t norm16 = 0;
  uint16_t qmax16 = 0;
};

// The half encodings of a quiet NaN: a record holding it decodes to NaN.
inline constexpr uint16_t kHalfNaN = 0x7E00;

// norm: the vector's norm (> 0, finite; computed wider than fp32 so norms
// beyond FLT_MAX still arrive); qmax16: fp16(qmax), already used for scaling.
RecordScalars fit_record_scalars(double norm, uint16_t qmax16);

}  // namespace tessera::lattice
