// One call of a codec's attention on records, for tests that check it against
// plain per-record loops: n N(0, 1) vectors encoded, one query scored against
// them (dot_encoded) and n weights summing them (accumulate_encoded) into an
// accumulator that starts at kAccumulatorStart, so the sum adds to a value.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "core/compressor/compressor.h"
#include "tests/codec/gaussian_vectors.h"

namespace tessera::test {

constexpr float kAccumulatorStart = 0.5f;

struct EncodedAttentionRun {
  std::vector<uint8_t> records;  // n records, encoded_bytes(1, dim) apart
  std::vector<float> q;          // [dim]
  std::vector<float> weights;    // [n]
  std::vector<float> scores;     // [n]: dot_encoded's output
  std::vector<float> acc;        // [dim]: accumulate_encoded's output
};

inline EncodedAttentionRun run_encoded_attention(const Compressor& codec, int64_t n, int dim,
                                                 uint64_t seed) {
  GaussianSource gauss(seed);
  EncodedAttentionRun run;
  const std::vector<float> x = gauss.vectors(n, dim);
  run.records.resize(codec.encoded_bytes(n, dim));
  codec.encode(x.data(), n, dim, run.records.data());
  run.q = gauss.vectors(1, dim);
  run.weights = gauss.vectors(1, static_cast<int>(n));
  run.scores.resize(static_cast<std::size_t>(n));
  codec.dot_encoded(run.q.data(), run.records.data(), n, dim, run.scores.data());
  run.acc.assign(static_cast<std::size_t>(dim), kAccumulatorStart);
  codec.accumulate_encoded(run.weights.data(), run.records.data(), n, dim, run.acc.data());
  return run;
}

// Floats compared bit for bit (a NaN equals itself, -0 differs from 0).
inline uint32_t float_bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

}  // namespace tessera::test
