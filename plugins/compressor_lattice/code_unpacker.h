// Reads block codes of at most 63 bits out of a record and splits them into
// coordinates without a division: the same coordinates as BlockCode::decode,
// several times faster. Attention on records and decode use it; wider codes
// (E8 past Q = 116, reference-mode E8 past Q = 58) keep BlockCode's 128-bit
// path.
//
// A code is a number in mixed radix (block_code.h), most significant digit
// first: D4 (R, R, R, Q + 1); E8, after its parity bit, (R × 7, Q + 1); box
// (R × dim). Digits come out of a fixed-point fraction: for a value v < M with
// M ≤ 2^32, F = v · ceil(2^64 / M) mod 2^64 is v / M in 0.64 fixed point,
// high by less than 1 / M; then, per radix r, F · r = digit · 2^64 + next F
// exactly, and the error stays below the gap to the next digit all the way
// (the proof is in code_unpacker.cpp). One 64×64 -> 128-bit multiply per
// digit.
//
// When the radices multiply past 2^32 the digits are cut into two halves (2 + 2
// for D4, 4 + 4 for E8 and 8-coordinate boxes), each worth at most 2^32 for
// every code of at most 63 bits, by one exact division by an invariant integer
// (Granlund & Montgomery 1994): a multiply and a shift.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "plugins/compressor_lattice/block_code.h"

namespace tessera::lattice {

class CodeUnpacker {
 public:
  static constexpr int kMaxBits = 63;
  // Bytes a read may touch from the first byte of a block on: reading a code
  // is one unaligned 8-byte load (plus one byte for codes above 56 bits).
  static constexpr int kReadBytes = 9;

  // The digit layouts, fixed at compile time in the loops that use them.
  enum class Layout : uint8_t {
    kD4,         // 4 digits worth at most 2^32 (Q <= 151)
    kD4Split,    // 2 + 2
    kE8Split,    // parity, then 4 + 4
    kBox4,       // D4 in reference mode: 4 digits worth at most 2^32
    kBox4Split,  // 2 + 2
    kBox8Split,  // E8 in reference mode: 4 + 4
  };

  static bool supports(const BlockCode& code) { return code.bits() <= kMaxBits; }
  // code.bits() <= kMaxBits.
  explicit CodeUnpacker(const BlockCode& code);

  Layout layout() const { return layout_; }
  // fn(std::integral_constant<Layout, layout()>{}): runs the loops built for
  // this codec's layout.
  template <typename Fn>
  void with_layout(Fn&& fn) const {
    switch (layout_) {
      case Layout::kD4:
        return fn(std::integral_constant<Layout, Layout::kD4>{});
      case Layout::kD4Split:
        return fn(std::integral_constant<Layout, Layout::kD4Split>{});
      case Layout::kE8Split:
        return fn(std::integral_constant<Layout, Layout::kE8Split>{});
      case Layout::kBox4:
        return fn(std::integral_constant<Layout, Layout::kBox4>{});
      case Layout::kBox4Split:
        return fn(std::integral_constant<Layout, Layout::kBox4Split>{});
      case Layout::kBox8Split:
        return fn(std::integral_constant<Layout, Layout::kBox8Split>{});
    }
  }
  int block_dim() const { return block_dim_; }
  int bits() const { return bits_; }

  // The code whose most significant bit is bit `bit` of `payload` (MSB-first
  // bit stream, bit_stream.h). Reads 8 bytes from payload + bit / 8 (9 for
  // codes above 56 bits), so they must be readable.
  [[gnu::always_inline]] uint64_t read(const uint8_t* payload, int64_t bit) const {
    return read_at(payload + (bit >> 3), static_cast<int>(bit & 7));
  }
  // The same for the code starting at bit `shift` (< 8) of byte `at`.
  [[gnu::always_inline]] uint64_t read_at(const uint8_t* at, int shift) const {
    uint64_t word;
    std::memcpy(&word, at, sizeof(word));
    word = __builtin_bswap64(word) << shift;  // the code's first bit is now bit 63
    if (bits_ > 56) word |= static_cast<uint64_t>(at[8]) >> (8 - shift);
    return word >> (64 - bits_);
  }

  // coords[k · stride] for k < block_dim(): the block's coordinates, exactly
  // as BlockCode::decode gives them. kLayout == layout(). Loops over many
  // blocks should work on a local copy of the unpacker: the coordinate
  // stores could otherwise alias its fields, which then reload every block.
  template <Layout kLayout>
  [[gnu::always_inline]] void decode(uint64_t code, int32_t* coords, int stride) const {
    if constexpr (kLayout == Layout::kE8Split) {
      // w_i = 2(a_i - Q) + p = 2 a_i + offset.
      const int32_t offset = static_cast<int32_t>(code & 1) - 2 * q_;
      uint32_t a[8];
      digits<8, true>(code >> 1, a);
      int32_t digit_sum = 0;
      for (int i = 0; i < 7; ++i) {
        coords[i * stride] = 2 * static_cast<int32_t>(a[i]) + offset;
        digit_sum += static_cast<int32_t>(a[i]);
      }
      // The dropped low bit of a7 is the parity that makes Σa even.
      coords[7 * stride] = 2 * (2 * static_cast<int32_t>(a[7]) + (digit_sum & 1)) + offset;
    } else if constexpr (kLayout == Layout::kD4 || kLayout == Layout::kD4Split) {
      uint32_t u[4];
      digits<4, kLayout == Layout::kD4Split>(code, u);
      const auto digit = [&](int i) { return static_cast<int32_t>(u[i]); };
      coords[0] = digit(0) - q_;
      coords[stride] = digit(1) - q_;
      coords[2 * stride] = digit(2) - q_;
      // The dropped low bit of u3 is the parity that makes Σz even.
      coords[3 * stride] = 2 * digit(3) + ((digit(0) + digit(1) + digit(2)) & 1) - q_;
    } else {
      constexpr int kDim = kLayout == Layout::kBox8Split ? 8 : 4;
      uint32_t d[kDim];
      digits<kDim, kLayout != Layout::kBox4>(code, d);
      for (int i = 0; i < kDim; ++i) coords[i * stride] = static_cast<int32_t>(d[i]) - q_;
    }
  }

 private:
  __extension__ typedef unsigned __int128 Product;

  // d[0..kCount): the digits of value, most significant first. Every radix is
  // R except the last, last_radix_.
  template <int kCount, bool kSplit>
  [[gnu::always_inline]] void digits(uint64_t value, uint32_t* d) const {
    if constexpr (kSplit) {
      constexpr int kHalf = kCount / 2;
      const auto high =
          static_cast<uint64_t>((static_cast<Product>(value) * magic_) >> 64) >> high_shift_;
      run<kHalf>(value - high * low_modulus_, low_reciprocal_, d + kHalf, last_radix_);
      run<kHalf>(high, high_reciprocal_, d, radix_);
    } else {
      run<kCount>(value, low_reciprocal_, d, last_radix_);
    }
  }

  // d[0..kCount) for value < modulus, given reciprocal = ceil(2^64 / modulus).
  template <int kCount>
  [[gnu::always_inline]] void run(uint64_t value, uint64_t reciprocal, uint32_t* d,
                                  uint64_t last_radix) const {
    uint64_t fraction = value * reciprocal;  // value / modulus in 0.64 fixed point
    for (int k = 0; k < kCount; ++k) {
      const Product product =
          static_cast<Product>(fraction) * (k + 1 < kCount ? radix_ : last_radix);
      d[k] = static_cast<uint32_t>(product >> 64);
      fraction = static_cast<uint64_t>(product);
    }
  }

  Layout layout_;
  int block_dim_;
  int bits_;
  int32_t q_;            // Q, or the box bound B
  uint64_t radix_;       // R
  uint64_t last_radix_;  // the least significant digit's: Q + 1 (D4, E8) or R (box)
  // The low digits (all of them when there is no split): the product of their
  // radices and ceil(2^64 / it); the high digits' reciprocal.
  uint64_t low_modulus_ = 1;
  uint64_t low_reciprocal_ = 0;
  uint64_t high_reciprocal_ = 0;
  // high = (value · magic_) >> (64 + high_shift_) = value / low_modulus_, for
  // every value of at most bits_ bits.
  uint64_t magic_ = 0;
  int high_shift_ = 0;
};

}  // namespace tessera::lattice
