#include "plugins/compressor_lattice/lattice_codec.h"

#include <stdexcept>

#include "plugins/compressor_lattice/hadamard.h"

namespace tessera {
namespace {

lattice::LatticeConfig config_from(const OptionValues& options) {
  lattice::LatticeConfig config;
  const std::string& name = options.get_string("lattice");
  if (name == "D4") {
    config.lattice = lattice::LatticeKind::kD4;
  } else if (name == "E8") {
    config.lattice = lattice::LatticeKind::kE8;
  } else {
    throw std::invalid_argument("lattice codec: lattice must be D4 or E8, not " + name);
  }
  const int64_t q = options.get_int("q");
  if (q < 1 || q > lattice::BlockCode::kMaxQ)
    throw std::invalid_argument("lattice codec: q must be in [1, 16383], not " + std::to_string(q));
  config.q = static_cast<int32_t>(q);
  const std::string& clamp = options.get_string("clamp");
  if (clamp == "box") {
    config.clamp = lattice::ClampMode::kBox;
  } else if (clamp == "reference") {
    config.clamp = lattice::ClampMode::kReference;
  } else {
    throw std::invalid_argument("lattice codec: clamp must be box or reference, not " + clamp);
  }
  return config;
}

}  // namespace

LatticeCodec::LatticeCodec(const lattice::LatticeConfig& config)
    : quantizer_(config), format_(config) {
  TESSERA_CHECK(config.q >= 1 && config.q <= lattice::BlockCode::kMaxQ, "q out of [1, 16383]");
}

LatticeCodec::LatticeCodec(const OptionValues& options) : LatticeCodec(config_from(options)) {}

std::string LatticeCodec::describe() const {
  return "lattice " + std::string(lattice::lattice_name(config().lattice)) +
         " Q=" + std::to_string(config().q) +
         (config().clamp == lattice::ClampMode::kBox ? " clamp=box" : " clamp=reference");
}

Status LatticeCodec::check_head_dim(int head_dim) const {
  const int block = format_.block_dim();
  // Attention checks on every call: build no message when all is well.
  if (lattice::is_power_of_two(head_dim) && head_dim % block == 0 &&
      head_dim <= lattice::kMaxHeadDim)
    return ok_status();
  const std::string who = describe() + ": head_dim " + std::to_string(head_dim);
  if (!lattice::is_power_of_two(head_dim))
    return invalid_argument(who + " is not a power of two (the Hadamard rotation needs one)");
  if (head_dim % block != 0)
    return invalid_argument(who + " is not a multiple of the " +
                            std::string(lattice::lattice_name(config().lattice)) + " block size " +
                            std::to_string(block));
  if (head_dim > lattice::kMaxHeadDim)
    return invalid_argument(who + " is above the largest supported, " +
                            std::to_string(lattice::kMaxHeadDim));
  return ok_status();
}

void LatticeCodec::check_or_abort(int head_dim) const {
  const Status status = check_head_dim(head_dim);
  TESSERA_CHECK(status.ok(), status.message());
}

std::size_t LatticeCodec::encoded_bytes(int64_t n_vectors, int head_dim) const {
  return static_cast<std::size_t>(n_vectors) * format_.record_bytes(head_dim);
}

double LatticeCodec::bits_per_vector(int head_dim) const {
  return format_.bits_per_vector(head_dim);
}

void LatticeCodec::encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  const std::size_t record_bytes = format_.record_bytes(head_dim);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t v = 0; v < n_vectors; ++v) {
    const lattice::RecordScalars scalars =
        quantizer_.quantize(src + v * head_dim, head_dim, coords);
    format_.pack(coords, scalars, head_dim, dst + v * record_bytes);
  }
}

void LatticeCodec::decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const {
  if (n_vectors == 0) return;
  check_or_abort(head_dim);
  const std::size_t record_bytes = format_.record_bytes(head_dim);
  int32_t coords[lattice::kMaxHeadDim];
  for (int64_t v = 0; v < n_vectors; ++v) {
    const lattice::RecordScalars scalars = format_.unpack(src + v * record_bytes, head_dim, coords);
    quantizer_.reconstruct(coords, scalars, head_dim, dst + v * head_dim);
  }
}

}  // namespace tessera
