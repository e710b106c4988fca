#include "plugins/compressor_lattice/record_format.h"

#include <algorithm>
#include <cstring>

#include "plugins/compressor_lattice/bit_stream.h"

namespace tessera::lattice {
namespace {

BlockCode code_for(const LatticeConfig& config) {
  const bool d4 = config.lattice == LatticeKind::kD4;
  if (config.clamp == ClampMode::kBox)
    return d4 ? BlockCode::d4(config.q) : BlockCode::e8(config.q);
  // E8 coordinates are stored doubled, so their box is [-2Q, 2Q].
  return d4 ? BlockCode::box(4, config.q) : BlockCode::box(8, 2 * config.q);
}

void put_half(uint16_t h, uint8_t* out) {
  out[0] = static_cast<uint8_t>(h & 0xFF);
  out[1] = static_cast<uint8_t>(h >> 8);
}

template <CodeUnpacker::Layout kLayout>
void unpack_fast(const CodeUnpacker& unpacker, const uint8_t* payload, std::size_t payload_bytes,
                 int head_dim, int32_t* coords) {
  // The reads may run up to kReadBytes past a block's first byte: past the
  // record. A zero-padded copy keeps them inside.
  uint8_t padded[RecordFormat::kMaxUnpackerPayload + CodeUnpacker::kReadBytes];
  std::memcpy(padded, payload, payload_bytes);
  std::fill_n(padded + payload_bytes, CodeUnpacker::kReadBytes, uint8_t{0});
  const int dim = unpacker.block_dim();
  const int bits = unpacker.bits();
  for (int start = 0, bit = 0; start < head_dim; start += dim, bit += bits)
    unpacker.decode<kLayout>(unpacker.read(padded, bit), coords + start, 1);
}

}  // namespace

RecordFormat::RecordFormat(const LatticeConfig& config)
    : code_(code_for(config)), wide_(code_.bits() > 64) {
  if (CodeUnpacker::supports(code_)) unpacker_.emplace(code_);
}

std::size_t RecordFormat::payload_bytes(int head_dim) const {
  if (head_dim <= 0) return 0;  // refused by check_head_dim
  const auto bits =
      static_cast<std::size_t>(head_dim / block_dim()) * static_cast<std::size_t>(bits_per_block());
  return (bits + 7) / 8;
}

double RecordFormat::bits_per_vector(int head_dim) const {
  return static_cast<double>(head_dim / block_dim()) * bits_per_block() + 32.0;
}

template <typename Word>
void RecordFormat::pack_blocks(const int32_t* coords, int head_dim, uint8_t* payload) const {
  BitWriter writer(payload);
  for (int start = 0; start < head_dim; start += block_dim())
    writer.put(code_.encode<Word>(coords + start), bits_per_block());
  writer.finish();
}

template <typename Word>
void RecordFormat::unpack_blocks(const uint8_t* payload, int head_dim, int32_t* coords) const {
  BitReader reader(payload);
  for (int start = 0; start < head_dim; start += block_dim())
    code_.decode<Word>(reader.get<Word>(bits_per_block()), coords + start);
}

void RecordFormat::pack(const int32_t* coords, RecordScalars scalars, int head_dim,
                        uint8_t* record) const {
  if (wide_) {
    pack_blocks<WideCode>(coords, head_dim, record);
  } else {
    pack_blocks<uint64_t>(coords, head_dim, record);
  }
  uint8_t* tail = record + payload_bytes(head_dim);
  put_half(scalars.norm16, tail);
  put_half(scalars.qmax16, tail + 2);
}

RecordScalars RecordFormat::unpack(const uint8_t* record, int head_dim, int32_t* coords) const {
  const std::size_t payload = payload_bytes(head_dim);
  if (unpacker_) {
    unpacker_->with_layout([&](auto layout) {
      unpack_fast<decltype(layout)::value>(*unpacker_, record, payload, head_dim, coords);
    });
  } else if (wide_) {
    unpack_blocks<WideCode>(record, head_dim, coords);
  } else {
    unpack_blocks<uint64_t>(record, head_dim, coords);
  }
  return scalars_at(record + payload);
}

}  // namespace tessera::lattice
