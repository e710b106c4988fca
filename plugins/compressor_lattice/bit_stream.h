// Fixed-width codes concatenated MSB first into bytes: the first code's most
// significant bit is bit 7 of byte 0. The last byte is padded with zero bits.
#pragma once

#include <cstdint>

namespace tessera::lattice {

class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}

  // Appends the low `bits` bits of code (bits <= 128; higher bits must be zero).
  template <typename Word>
  void put(Word code, int bits) {
    while (bits > 32) {
      bits -= 32;
      put_small(static_cast<uint32_t>(code >> bits), 32);
    }
    put_small(static_cast<uint32_t>(code) & low_mask(bits), bits);
  }

  // Writes the partial last byte, if any.
  void finish() {
    if (pending_ > 0) *out_++ = static_cast<uint8_t>(buffer_ << (8 - pending_));
    pending_ = 0;
  }

 private:
  static uint32_t low_mask(int bits) {
    return bits >= 32 ? 0xFFFFFFFFu : (uint32_t{1} << bits) - 1;
  }
  // bits <= 32, so the buffer never holds more than 7 + 32 bits.
  void put_small(uint32_t value, int bits) {
    buffer_ = (buffer_ << bits) | value;
    pending_ += bits;
    while (pending_ >= 8) {
      pending_ -= 8;
      *out_++ = static_cast<uint8_t>(buffer_ >> pending_);
    }
  }

  uint8_t* out_;
  uint64_t buffer_ = 0;
  int pending_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const uint8_t* in) : in_(in) {}

  // Reads the next `bits` bits (<= 128). Never reads a byte past the one
  // holding the last bit asked for.
  template <typename Word>
  Word get(int bits) {
    Word code = 0;
    while (bits > 32) {
      bits -= 32;
      code = (code << 32) | get_small(32);
    }
    return (code << bits) | get_small(bits);
  }

 private:
  uint32_t get_small(int bits) {
    while (available_ < bits) {
      buffer_ = (buffer_ << 8) | *in_++;
      available_ += 8;
    }
    available_ -= bits;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    return static_cast<uint32_t>((buffer_ >> available_) & mask);
  }

  const uint8_t* in_;
  uint64_t buffer_ = 0;
  int available_ = 0;
};

}  // namespace tessera::lattice
