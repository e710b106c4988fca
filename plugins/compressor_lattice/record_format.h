// The bytes of one lattice record (one K or V vector of one head). Every
// record of a codec instance has the same size, so n records take n times the
// bytes of one and record j starts at j · record_bytes(head_dim):
//
//   [0, P)        the head_dim / bd block codes, block 0 first, each exactly
//                 bits_per_block() bits, concatenated MSB first and
//                 zero-padded to a whole byte: P = ceil(head_dim / bd ·
//                 bits_per_block() / 8)
//   [P, P + 2)    norm16, IEEE half, little-endian
//   [P + 2, P + 4) qmax16, IEEE half, little-endian
//
// Block codes (block_code.h): the D4 or E8 code in box mode; in reference mode
// the box code over [-Q, Q]^4 (D4) or, doubled, [-2Q, 2Q]^8 (E8), since the
// reference clamp can leave the lattice. Codes wider than 64 bits (E8 at
// Q = 152 needs 67) are written the same way, just wider: the record stays
// fixed-size and lossless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "plugins/compressor_lattice/block_code.h"
#include "plugins/compressor_lattice/code_unpacker.h"
#include "plugins/compressor_lattice/lattice_config.h"
#include "plugins/compressor_lattice/quantizer.h"
#include "plugins/compressor_lattice/record_scalars.h"

namespace tessera::lattice {

class RecordFormat {
 public:
  explicit RecordFormat(const LatticeConfig& config);

  const BlockCode& block_code() const { return code_; }
  int block_dim() const { return code_.dim(); }
  int bits_per_block() const { return code_.bits(); }

  // The two halves after the payload.
  static constexpr std::size_t kScalarBytes = 4;
  // The largest payload the unpacker reads: head_dim kMaxHeadDim in blocks of
  // 4, codes of at most CodeUnpacker::kMaxBits (bounds its readers' buffers).
  static constexpr std::size_t kMaxUnpackerPayload =
      (kMaxHeadDim / 4 * CodeUnpacker::kMaxBits + 7) / 8;

  std::size_t payload_bytes(int head_dim) const;
  // 0 for head_dim <= 0 (which check_head_dim refuses).
  std::size_t record_bytes(int head_dim) const {
    return head_dim <= 0 ? 0 : payload_bytes(head_dim) + kScalarBytes;
  }
  // The nominal size: (head_dim / bd) · bits_per_block() + 32 (no byte padding).
  double bits_per_vector(int head_dim) const;

  // coords: head_dim integers (D4: z; E8: 2z), each block in the code's set.
  void pack(const int32_t* coords, RecordScalars scalars, int head_dim, uint8_t* record) const;
  RecordScalars unpack(const uint8_t* record, int head_dim, int32_t* coords) const;

  // The division-free reader of codes up to 63 bits; null for wider codes.
  const CodeUnpacker* unpacker() const { return unpacker_ ? &*unpacker_ : nullptr; }
  // The two halves at the end of a record: tail = record + payload_bytes(head_dim).
  static RecordScalars scalars_at(const uint8_t* tail) {
    return {static_cast<uint16_t>(tail[0] | (tail[1] << 8)),
            static_cast<uint16_t>(tail[2] | (tail[3] << 8))};
  }

 private:
  template <typename Word>
  void pack_blocks(const int32_t* coords, int head_dim, uint8_t* payload) const;
  template <typename Word>
  void unpack_blocks(const uint8_t* payload, int head_dim, int32_t* coords) const;

  BlockCode code_;
  bool wide_;  // codes above 64 bits need 128-bit arithmetic
  std::optional<CodeUnpacker> unpacker_;
};

}  // namespace tessera::lattice
