// What a lattice codec instance is: which lattice, how fine, and how it keeps
// points inside the box [-Q, Q].
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera::lattice {

enum class LatticeKind : uint8_t {
  kD4,  // blocks of 4 (KakeyaLattice v1.4)
  kE8,  // blocks of 8 (v1.5)
};

enum class ClampMode : uint8_t {
  // The closest lattice point inside the box, so every block is a lattice
  // point with a compact code (what the codec is for).
  kBox,
  // The reference: closest point, then clamp each coordinate to [-Q, Q]. An E8
  // block can leave the lattice, so blocks are stored in the wider box code.
  // For reproducing the reference's quality numbers, not for deployment.
  kReference,
};

struct LatticeConfig {
  LatticeKind lattice = LatticeKind::kE8;
  int32_t q = 37;
  ClampMode clamp = ClampMode::kBox;
};

inline int block_dim(LatticeKind lattice) {
  return lattice == LatticeKind::kD4 ? 4 : 8;
}

inline std::string_view lattice_name(LatticeKind lattice) {
  return lattice == LatticeKind::kD4 ? "D4" : "E8";
}

}  // namespace tessera::lattice
