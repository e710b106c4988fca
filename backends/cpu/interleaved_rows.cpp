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

// f16 and bf16: element by element, not in blocks (interleaved_rows.h).
bool half_rows(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16;
}

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
    case DType::kQ6_K:
      return kQ6_K;
    default:
      return {};  // f16 / bf16 go element by element (half_rows)
  }
}

// fn(offset in row r's block, offset in the group block, bytes, flip) for
// every unit of every field.
template <typename Fn>
void for_each_unit(DType dtype, int64_t r, Fn&& fn) {
  const int64_t group = group_rows(dtype);
  int64_t field_start = 0;
  for (const Field& f : fields_of(dtype)) {
    for (int k = 0; k < f.bytes / f.unit; ++k)
      fn(f.offset + k * f.unit, field_start + (k * group + r) * f.unit, f.unit, f.flip);
    field_start += group * f.bytes;
  }
}

// Copies a unit, XORing every byte with flip.
void move_unit(const uint8_t* from, uint8_t* to, int bytes, uint8_t flip) {
  std::memcpy(to, from, static_cast<std::size_t>(bytes));
  if (flip != 0)
    for (int i = 0; i < bytes; ++i) to[i] ^= flip;
}

}  // namespace

int64_t group_rows(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kF16:
    case DType::kBF16:
      return kGroupRows;
    default:
      return 0;
  }
}

bool interleavable(DType dtype, int64_t rows, int64_t k) {
  const int64_t group = group_rows(dtype);
  return group > 0 && rows >= group && k > 0 &&
         (half_rows(dtype) || k % dtype_layout(dtype).block_elements == 0);
}

void interleave_group(DType dtype, const uint8_t* rows, std::size_t row_bytes, int64_t k,
                      uint8_t* out) {
  if (half_rows(dtype)) {
    // Element-major: sixteen row streams in, one stream out.
    for (int64_t i = 0; i < k; ++i)
      for (int64_t r = 0; r < kGroupRows; ++r)
        std::memcpy(out + 2 * (i * kGroupRows + r),
                    rows + static_cast<std::size_t>(r) * row_bytes + 2 * i, 2);
    return;
  }
  const int64_t group = group_rows(dtype);
  const auto elements = static_cast<int64_t>(dtype_layout(dtype).block_elements);
  const auto block_bytes = static_cast<int64_t>(dtype_row_bytes(dtype, elements));
  for (int64_t b = 0; b < k / elements; ++b)
    for (int64_t r = 0; r < group; ++r) {
      const uint8_t* block = rows + static_cast<std::size_t>(r) * row_bytes + b * block_bytes;
      uint8_t* group_block = out + b * group * block_bytes;
      for_each_unit(dtype, r, [&](int64_t plain, int64_t grouped, int bytes, uint8_t flip) {
        move_unit(block + plain, group_block + grouped, bytes, flip);
      });
    }
}

void dequantize_interleaved_row(DType dtype, const uint8_t* data, std::size_t row_bytes,
                                int64_t rows, int64_t row, int64_t k, float* out) {
  if (row >= grouped_rows(dtype, rows)) {  // past the groups: as in GGUF
    dequantize_row(dtype, data + static_cast<std::size_t>(row) * row_bytes, k, out);
    return;
  }
  const int64_t group = group_rows(dtype);
  const uint8_t* first = data + static_cast<std::size_t>(row - row % group) * row_bytes;
  if (half_rows(dtype)) {
    uint16_t half[1];
    for (int64_t i = 0; i < k; ++i) {
      std::memcpy(half, first + 2 * (i * group + row % group), 2);
      dequantize_row(dtype, half, 1, out + i);
    }
    return;
  }
  const auto elements = static_cast<int64_t>(dtype_layout(dtype).block_elements);
  const auto block_bytes = static_cast<int64_t>(dtype_row_bytes(dtype, elements));
  uint8_t block[256];
  for (int64_t b = 0; b < k / elements; ++b) {
    const uint8_t* group_block = first + b * group * block_bytes;
    for_each_unit(dtype, row % group, [&](int64_t plain, int64_t grouped, int bytes, uint8_t flip) {
      move_unit(group_block + grouped, block + plain, bytes, flip);
    });
    dequantize_row(dtype, block, elements, out + b * elements);
  }
}

}  // namespace tessera::cpu
