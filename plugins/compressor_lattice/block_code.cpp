#include "plugins/compressor_lattice/block_code.h"

namespace tessera::lattice {
namespace {

WideCode power(WideCode base, int exponent) {
  WideCode result = 1;
  for (int i = 0; i < exponent; ++i) result *= base;
  return result;
}

// ceil(log2(count)): the width of the largest code, count - 1.
int bits_for(WideCode count) {
  int bits = 0;
  for (WideCode largest = count - 1; largest != 0; largest >>= 1) ++bits;
  return bits;
}

}  // namespace

BlockCode::BlockCode(Kind kind, int dim, int32_t q, WideCode count)
    : kind_(kind),
      dim_(dim),
      q_(q),
      radix_(static_cast<uint32_t>(2 * q + 1)),
      bits_(bits_for(count)) {}

BlockCode BlockCode::d4(int32_t q) {
  const WideCode radix = static_cast<WideCode>(2 * q + 1);
  return BlockCode(Kind::kD4, 4, q, power(radix, 3) * static_cast<WideCode>(q + 1));
}

BlockCode BlockCode::e8(int32_t q) {
  const WideCode radix = static_cast<WideCode>(2 * q + 1);
  return BlockCode(Kind::kE8, 8, q, 2 * power(radix, 7) * static_cast<WideCode>(q + 1));
}

BlockCode BlockCode::box(int dim, int32_t bound) {
  return BlockCode(Kind::kBox, dim, bound, power(static_cast<WideCode>(2 * bound + 1), dim));
}

template <typename Word>
Word BlockCode::encode(const int32_t* coords) const {
  const Word radix = radix_;
  const Word half_radix = static_cast<Word>(q_) + 1;  // Q + 1 values of (u >> 1)
  Word code = 0;
  switch (kind_) {
    case Kind::kD4: {
      for (int i = 0; i < 3; ++i) code = code * radix + static_cast<Word>(coords[i] + q_);
      return code * half_radix + static_cast<Word>((coords[3] + q_) >> 1);
    }
    case Kind::kE8: {
      const int32_t parity = coords[0] & 1;  // two's complement: odd negatives give 1
      const auto digit = [&](int i) { return ((coords[i] - parity) >> 1) + q_; };
      for (int i = 0; i < 7; ++i) code = code * radix + static_cast<Word>(digit(i));
      code = code * half_radix + static_cast<Word>(digit(7) >> 1);
      return code * 2 + static_cast<Word>(parity);
    }
    case Kind::kBox:
      for (int i = 0; i < dim_; ++i) code = code * radix + static_cast<Word>(coords[i] + q_);
      return code;
  }
  return code;
}

template <typename Word>
void BlockCode::decode(Word code, int32_t* coords) const {
  const Word radix = radix_;
  const Word half_radix = static_cast<Word>(q_) + 1;
  switch (kind_) {
    case Kind::kD4: {
      const auto u3_half = static_cast<int32_t>(code % half_radix);
      code /= half_radix;
      int32_t digit_sum = 0;
      for (int i = 2; i >= 0; --i) {
        const auto u = static_cast<int32_t>(code % radix);
        code /= radix;
        coords[i] = u - q_;
        digit_sum += u;
      }
      coords[3] = 2 * u3_half + (digit_sum & 1) - q_;
      return;
    }
    case Kind::kE8: {
      const auto parity = static_cast<int32_t>(code & 1);
      code >>= 1;
      const auto a7_half = static_cast<int32_t>(code % half_radix);
      code /= half_radix;
      int32_t digit_sum = 0;
      for (int i = 6; i >= 0; --i) {
        const auto a = static_cast<int32_t>(code % radix);
        code /= radix;
        coords[i] = 2 * (a - q_) + parity;
        digit_sum += a;
      }
      coords[7] = 2 * (2 * a7_half + (digit_sum & 1) - q_) + parity;
      return;
    }
    case Kind::kBox:
      for (int i = dim_ - 1; i >= 0; --i) {
        coords[i] = static_cast<int32_t>(code % radix) - q_;
        code /= radix;
      }
      return;
  }
}

template uint64_t BlockCode::encode<uint64_t>(const int32_t*) const;
template WideCode BlockCode::encode<WideCode>(const int32_t*) const;
template void BlockCode::decode<uint64_t>(uint64_t, int32_t*) const;
template void BlockCode::decode<WideCode>(WideCode, int32_t*) const;

}  // namespace tessera::lattice
