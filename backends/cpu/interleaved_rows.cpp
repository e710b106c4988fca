#include "backends/cpu/interleaved_rows.h"

#include <cstring>
#include <span>

#include "core/tensor/block_quant.h"

namespace tessera::cpu {
namespace {

// A run of bytes of every row's block (GGUF's layout), interleaved in units:
// unit k of row r goes to k * 16 * unit + r * unit past the field's start in
// the group block (so a 64-byte load of four-byte units holds one per row).
struct Field {
  int offset;  // in a row's block
  int bytes;
  int unit;
  uint8_t flip = 0;  // XORed into every byte
};

// The fields of a block, in the order the group block holds them.
std::span<const Field> fields_of(DType dtype) {
  static constexpr Field kQ8_0[] = {{0, 2, 2}, {2, 32, 4, 0x80}};
  static constexpr Field kQ4_0[] = {{0, 2, 2}, {2, 16, 4}};
  static constexpr Field kQ4_K[] = {{0, 2, 2}, {2, 2, 2}, {4, 12, 4}, {16, 128, 4}};
  static constexpr Field kQ6_K[] = {{208, 2, 2}, {192, 16, 4}, {0, 128, 4}, {128, 64, 4}};
  switch (dtype) {
    case DType::kQ8_0:
      return kQ8_0;
    case DType::kQ4_0:
      return kQ4_0;
    case DType::kQ4_K:
      return kQ4_K;
    default:
      return kQ6_K;
  }
}

// fn(byte in row r's block, byte in the group block, flip) for every byte.
template <typename Fn>
void for_each_byte(DType dtype, int64_t r, Fn&& fn) {
  int64_t field_start = 0;
  for (const Field& f : fields_of(dtype)) {
    for (int k = 0; k < f.bytes / f.unit; ++k)
      for (int j = 0; j < f.unit; ++j)
        fn(f.offset + k * f.unit + j, field_start + (k * kGroupRows + r) * f.unit + j, f.flip);
    field_start += kGroupRows * f.bytes;
  }
}

}  // namespace

bool interleavable(DType dtype, int64_t rows) {
  return (dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_K ||
          dtype == DType::kQ6_K) &&
         rows > 0 && rows % kGroupRows == 0;
}

void interleave_group(DType dtype, const uint8_t* rows, std::size_t row_bytes, int64_t blocks,
                      uint8_t* out) {
  const auto block_bytes = static_cast<int64_t>(dtype_layout(dtype).block_bytes);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t r = 0; r < kGroupRows; ++r) {
      const uint8_t* block = rows + static_cast<std::size_t>(r) * row_bytes + b * block_bytes;
      uint8_t* group_block = out + b * kGroupRows * block_bytes;
      for_each_byte(dtype, r, [&](int64_t plain, int64_t grouped, uint8_t flip) {
        group_block[grouped] = block[plain] ^ flip;
      });
    }
}

void dequantize_interleaved_row(DType dtype, const uint8_t* data, std::size_t row_bytes,
                                int64_t row, int64_t k, float* out) {
  const DTypeLayout layout = dtype_layout(dtype);
  const auto block_bytes = static_cast<int64_t>(layout.block_bytes);
  const auto elements = static_cast<int64_t>(layout.block_elements);
  const uint8_t* group = data + static_cast<std::size_t>(row - row % kGroupRows) * row_bytes;
  uint8_t block[256];
  for (int64_t b = 0; b < k / elements; ++b) {
    const uint8_t* group_block = group + b * kGroupRows * block_bytes;
    for_each_byte(dtype, row % kGroupRows, [&](int64_t plain, int64_t grouped, uint8_t flip) {
      block[plain] = group_block[grouped] ^ flip;
    });
    dequantize_row(dtype, block, elements, out + b * elements);
  }
}

}  // namespace tessera::cpu
