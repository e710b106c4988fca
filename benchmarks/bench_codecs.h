// The KV codecs the codec benchmarks compare, each under the name its
// benchmarks print. Each benchmark puts its own baseline first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/compressor/compressor.h"
#include "plugins/compressor_int4/int4_codec.h"
#include "plugins/compressor_int8/int8_codec.h"
#include "plugins/compressor_lattice/lattice_codec.h"

namespace tessera::bench {

struct NamedCodec {
  std::string name;
  std::shared_ptr<const Compressor> codec;  // null: a benchmark's plain f32 baseline
};

// int8, int4 g32, lattice D4 q 10 and 38, E8 q 37 and 152 (codes past 64
// bits), E8 q 37 with the reference clamp.
inline std::vector<NamedCodec> lossy_codecs() {
  using lattice::ClampMode;
  using lattice::LatticeConfig;
  using lattice::LatticeKind;
  const auto lattice_codec = [](LatticeKind kind, int32_t q, ClampMode clamp) {
    return std::make_shared<const LatticeCodec>(LatticeConfig{kind, q, clamp});
  };
  return {
      {"int8", std::make_shared<const Int8Codec>()},
      {"int4-g32", std::make_shared<const Int4Codec>(32)},
      {"d4-q10", lattice_codec(LatticeKind::kD4, 10, ClampMode::kBox)},
      {"d4-q38", lattice_codec(LatticeKind::kD4, 38, ClampMode::kBox)},
      {"e8-q37", lattice_codec(LatticeKind::kE8, 37, ClampMode::kBox)},
      {"e8-q152", lattice_codec(LatticeKind::kE8, 152, ClampMode::kBox)},
      {"e8-q37-reference", lattice_codec(LatticeKind::kE8, 37, ClampMode::kReference)},
  };
}

// `baseline` first, then every lossy codec.
inline std::vector<NamedCodec> codecs_after(NamedCodec baseline) {
  std::vector<NamedCodec> all = {std::move(baseline)};
  for (NamedCodec& c : lossy_codecs()) all.push_back(std::move(c));
  return all;
}

}  // namespace tessera::bench
