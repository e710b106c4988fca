// Lossless integer codes for one lattice block (§1.5 of the algorithms note).
// A block's code is a number in [0, count); it is stored in bits() =
// ceil(log2(count)) bits. Three numberings:
//
//   D4   z ∈ D4 ∩ [-Q, Q]^4. u_i = z_i + Q ∈ [0, R), R = 2Q + 1. Σz even fixes
//        the parity of u_3, so only u_3 >> 1 ∈ [0, Q] is kept:
//        code = ((u0·R + u1)·R + u2)·(Q + 1) + (u3 >> 1); count = R³(Q + 1).
//   E8   w = 2z for z ∈ E8 ∩ [-Q, Q]^8: all w_i share a parity p and Σw ≡ 0
//        (mod 4). w_i = 2(a_i - Q) + p with a_i ∈ [0, R); the mod-4 condition is
//        "Σa even", which fixes the parity of a_7:
//        code = ((a0·R + ... + a6)·(Q + 1) + (a7 >> 1))·2 + p; count = 2R⁷(Q + 1).
//   box  any integer vector in [-B, B]^n (no lattice condition), digits
//        c_i + B in base 2B + 1; count = (2B + 1)^n. Used for blocks the
//        reference clamp may have pushed off the lattice.
//
// For every Q in the §1.5 table, bits() equals the note's per-block formula
// (ceil(4·log2 R - 1) for D4, ceil(8·log2 R) for E8). For a few Q (1, 9, 90,
// 430, 469, 5792, 6888) the formula is one bit short of the code count;
// bits() is the count's true width there, so packing stays lossless.
#pragma once

#include <cstdint>

namespace tessera::lattice {

// Block codes reach 128 bits (the widest is the E8 box code at Q = 16383).
__extension__ typedef unsigned __int128 WideCode;

class BlockCode {
 public:
  enum class Kind : uint8_t { kD4, kE8, kBox };

  // The largest Q every numbering supports within 128 bits.
  static constexpr int32_t kMaxQ = 16383;

  static BlockCode d4(int32_t q);
  static BlockCode e8(int32_t q);
  // dim coordinates, each in [-bound, bound].
  static BlockCode box(int dim, int32_t bound);

  Kind kind() const { return kind_; }
  int dim() const { return dim_; }
  int bits() const { return bits_; }
  int32_t q() const { return q_; }           // Q (D4, E8) or the bound B (box)
  uint32_t radix() const { return radix_; }  // R = 2Q + 1 or 2B + 1

  // Word: uint64_t when bits() <= 64, else WideCode. coords: dim() integers in
  // the set the numbering covers (not checked: the quantizer guarantees it).
  template <typename Word>
  Word encode(const int32_t* coords) const;
  template <typename Word>
  void decode(Word code, int32_t* coords) const;

 private:
  BlockCode(Kind kind, int dim, int32_t q, WideCode count);

  Kind kind_;
  int dim_;
  int32_t q_;       // Q for D4/E8, the bound B for box
  uint32_t radix_;  // R = 2Q + 1 (D4, E8) or 2B + 1 (box)
  int bits_;
};

}  // namespace tessera::lattice
