// The KakeyaLattice KV codec (D4 = v1.4, E8 = v1.5; algorithms note §1): per
// vector, normalise, rotate by the normalised Hadamard matrix, scale so the
// largest coordinate maps to Q, snap each block of 4 (D4) or 8 (E8) to the
// nearest lattice point, and bit-pack the block codes after the fp16 norm and
// qmax. Deterministic, no calibration, no state across vectors.
//
// Record layout: record_format.h. Norm range handling: record_scalars.h.
// Degenerate inputs: quantizer.h (zero -> exactly 0, NaN/inf -> NaN).
//
// Beyond the Compressor interface it offers attention on encoded vectors
// without decoding them: queries are rotated once (transform_query), scores
// and weighted sums are taken against the integer lattice coordinates, and the
// weighted sum is rotated back once (finish_output). H is symmetric and
// orthonormal, so dot(q, H·y) = dot(H·q, y).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/compressor/compressor.h"
#include "core/plugin/options.h"
#include "core/status/status.h"
#include "plugins/compressor_lattice/lattice_config.h"
#include "plugins/compressor_lattice/quantizer.h"
#include "plugins/compressor_lattice/record_format.h"

namespace tessera {

// Defaults: E8 at Q = 37 is 832 bits per vector at head_dim 128 (2.46x vs
// fp16), the same bytes as D4 at Q = 38, with about 30% lower error (rel-MSE
// 4.25e-4 vs 6.11e-4 on Gaussian vectors, note §1.8), for about 1.3x D4's
// encode+decode time on a CPU (benchmarks/codec_bench.cpp). A sweep sets both
// explicitly. q is capped at 16383 so every block code fits 128 bits; past a
// few thousand the fp16 scalars, not the grid, bound the error anyway.
inline constexpr OptionSpec kLatticeCodecOptions[] = {
    {.name = "lattice",
     .type = OptionType::kString,
     .default_value = "\"E8\"",
     .description = "lattice per block: D4 (blocks of 4) or E8 (blocks of 8, better per bit)",
     .choices = "D4|E8"},
    {.name = "q",
     .type = OptionType::kInt,
     .default_value = "37",
     .description = "lattice range Q: coordinates in [-Q, Q]; larger is finer and costs more bits",
     .min = 1,
     .max = lattice::BlockCode::kMaxQ},
    {.name = "clamp",
     .type = OptionType::kString,
     .default_value = "\"box\"",
     .description = "box: closest lattice point inside [-Q, Q] (compact codes); reference: "
                    "the reference clamp, stored in wider per-block codes (for parity runs)",
     .choices = "box|reference"},
};

class LatticeCodec final : public Compressor {
 public:
  explicit LatticeCodec(const lattice::LatticeConfig& config = {});
  // The plugin factory's constructor (options already checked against
  // kLatticeCodecOptions; an unexpected value throws std::invalid_argument).
  explicit LatticeCodec(const OptionValues& options);

  // OK when head_dim is a power of two, a multiple of the block size and at
  // most kMaxHeadDim; otherwise InvalidArgument naming head_dim.
  Status check_head_dim(int head_dim) const;
  Status supports(int head_dim) const override { return check_head_dim(head_dim); }

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override;
  // Box mode: the nominal (head_dim / bd) · bits_per_block + 32 of note §1.5.
  // Reference mode: the same formula with its wider box code, i.e. what it
  // really stores.
  double bits_per_vector(int head_dim) const override;
  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override;
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override;

  // Attention on records (D = head_dim; every pointer holds what its name
  // says for D-vectors; records: n · encoded_bytes(1, D) bytes).
  // q_out = H·q.
  bool attends_encoded() const override { return true; }
  void transform_query(const float* q, int D, float* q_out) const override;
  // scores[j] = dot(q, decode(record j)), given q_t = transform_query(q).
  void dot_encoded(const float* q_t, const uint8_t* records, int64_t n, int D,
                   float* scores) const override;
  // acc += Σ_j weights[j] · H·decode(record j) (the rotated domain).
  void accumulate_encoded(const float* weights, const uint8_t* records, int64_t n, int D,
                          float* acc) const override;
  // out = H·acc: back to the original domain.
  void finish_output(const float* acc, int D, float* out) const override;
  // Several query heads: each record is unpacked once for all of them.
  void dot_encoded_heads(const float* q_t, int n_heads, const uint8_t* records, int64_t n, int D,
                         float* scores) const override;
  void accumulate_encoded_heads(const float* weights, int n_heads, const uint8_t* records,
                                int64_t n, int D, float* acc) const override;

  const lattice::LatticeConfig& config() const { return quantizer_.config(); }
  const lattice::Quantizer& quantizer() const { return quantizer_; }
  const lattice::RecordFormat& format() const { return format_; }
  std::string describe() const;  // "lattice E8 Q=37 clamp=box"

 private:
  void check_or_abort(int head_dim) const;

  lattice::Quantizer quantizer_;
  lattice::RecordFormat format_;
};

}  // namespace tessera
