// LatticeCodec's attention primitives: work on the integer lattice coordinates
// in the rotated domain, so each record is unpacked but never rotated back.
#include <algorithm>

#include "plugins/compressor_lattice/hadamard.h"
#include "plugins/compressor_lattice/lattice_codec.h"

namespace tessera {

void LatticeCodec::transform_query(const float* q, int D, float* q_out) const {
  check_or_abort(D);
  std::copy(q, q + D, q_out);
  lattice::hadamard_rotate(q_out, D);
}

void LatticeCodec::dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                               float* scores) const {
  if (n == 0) return;
  check_or_abort(D);
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    float dot = 0.0f;
    for (int i = 0; i < D; ++i) dot += q_t[i] * static_cast<float>(coords[i]);
    scores[j] = dot * quantizer_.coordinate_scale(scalars);
  }
}

void LatticeCodec::accumulate_encoded(const float* weights, const uint8_t* records, int64_t n,
                                      int D, float* acc) const {
  if (n == 0) return;
  check_or_abort(D);
  const std::size_t record_bytes = format_.record_bytes(D);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t j = 0; j < n; ++j) {
    const lattice::RecordScalars scalars = format_.unpack(records + j * record_bytes, D, coords);
    const float factor = weights[j] * quantizer_.coordinate_scale(scalars);
    for (int i = 0; i < D; ++i) acc[i] += factor * static_cast<float>(coords[i]);
  }
}

void LatticeCodec::finish_output(const float* acc, int D, float* out) const {
  check_or_abort(D);
  std::copy(acc, acc + D, out);
  lattice::hadamard_rotate(out, D);
}

}  // namespace tessera
