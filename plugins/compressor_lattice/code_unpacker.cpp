#include "plugins/compressor_lattice/code_unpacker.h"

#include <algorithm>

#include "core/status/status.h"

namespace tessera::lattice {

// Why the digits are exact. Let v < M ≤ 2^32 and c = ceil(2^64 / M) =
// 2^64 / M + e with 0 ≤ e < 1. Then v · c / 2^64 = v / M + δ with
// δ = v · e / 2^64 < (M - 1) / 2^64 < 1 / M, as M · (M - 1) < 2^64. The sum is
// below 1, so F = (v · c mod 2^64) / 2^64 = v / M + δ exactly. With M = r · M'
// and v = d · M' + v' (d the leading digit, v' < M'):
// F · r = d + v' / M' + r · δ, where v' / M' ≤ (M' - 1) / M' and r · δ < 1 / M',
// so floor(F · r) = d, and the fraction left is v' / M' + δ' with
// δ' = r · δ < 1 / M': the same statement one digit down. Every product is
// exact in 128 bits, so no rounding enters.
//
// Splitting the digits in two: for v < 2^N and a divisor m with 2^(l-1) < m ≤ 2^l,
// magic = ceil(2^(N+l) / m) satisfies 2^(N+l) ≤ magic · m < 2^(N+l) + 2^l,
// so floor(v · magic / 2^(N+l)) = floor(v / m) (Granlund & Montgomery 1994,
// theorem 4.2), and magic < 2^(N+1) ≤ 2^64.
namespace {

__extension__ typedef unsigned __int128 Wide;

// ceil(2^64 / m) for 2 <= m <= 2^32.
uint64_t reciprocal(uint64_t m) {
  return UINT64_MAX / m + 1;
}

}  // namespace

CodeUnpacker::CodeUnpacker(const BlockCode& code)
    : block_dim_(code.dim()),
      bits_(code.bits()),
      q_(code.q()),
      radix_(code.radix()),
      last_radix_(code.kind() == BlockCode::Kind::kBox ? code.radix()
                                                       : static_cast<uint64_t>(code.q()) + 1) {
  TESSERA_CHECK(supports(code), "lattice code unpacker: codes above 63 bits take the wide path");
  constexpr Wide kRunLimit = Wide{1} << 32;
  const auto power = [](uint64_t base, int exponent) {
    Wide result = 1;
    for (int i = 0; i < exponent; ++i) result *= base;
    return result;
  };
  // Everything the digits are worth, and the split point if they are worth
  // more than 2^32.
  int digit_count = block_dim_;
  int value_bits = bits_;
  Wide all = 0;
  switch (code.kind()) {
    case BlockCode::Kind::kD4:
      all = power(radix_, 3) * last_radix_;
      layout_ = all <= kRunLimit ? Layout::kD4 : Layout::kD4Split;
      break;
    case BlockCode::Kind::kE8:
      value_bits = bits_ - 1;  // the parity bit comes off first
      all = power(radix_, 7) * last_radix_;
      layout_ = Layout::kE8Split;
      break;
    case BlockCode::Kind::kBox:
      all = power(radix_, digit_count);
      if (digit_count == 8) {
        layout_ = Layout::kBox8Split;
      } else {
        TESSERA_CHECK(digit_count == 4, "lattice code unpacker: box of 4 or 8 coordinates");
        layout_ = all <= kRunLimit ? Layout::kBox4 : Layout::kBox4Split;
      }
      break;
  }
  const bool split = layout_ != Layout::kD4 && layout_ != Layout::kBox4;
  if (!split) {
    low_modulus_ = static_cast<uint64_t>(all);
    low_reciprocal_ = reciprocal(low_modulus_);
    return;
  }
  const int half = digit_count / 2;
  const Wide low = power(radix_, half - 1) * last_radix_;
  const Wide high = power(radix_, half);
  // At most 63 bits leave both halves within 2^32, which the proof needs (E8:
  // R <= 233; boxes of 8: R <= 233; D4 and boxes of 4: R <= 32767).
  TESSERA_CHECK(low <= kRunLimit && high <= kRunLimit,
                "lattice code unpacker: a half of the digits is worth more than 2^32");
  low_modulus_ = static_cast<uint64_t>(low);
  low_reciprocal_ = reciprocal(low_modulus_);
  high_reciprocal_ = reciprocal(static_cast<uint64_t>(high));
  int l = 0;
  while ((uint64_t{1} << l) < low_modulus_) ++l;
  // Any N with value < 2^N and N <= 63 will do; N = 64 - l when the value
  // fits makes the shift at least 64, so only the high word of the product
  // is shifted.
  const int n = std::max(value_bits, 64 - l);
  TESSERA_CHECK(n <= 63, "lattice code unpacker: codes above 63 bits take the wide path");
  const int shift = n + l;
  const Wide magic = ((Wide{1} << shift) + low_modulus_ - 1) / low_modulus_;
  TESSERA_CHECK(magic >> 64 == 0, "lattice code unpacker: magic past 64 bits");
  magic_ = static_cast<uint64_t>(magic);
  high_shift_ = shift - 64;
}

}  // namespace tessera::lattice
