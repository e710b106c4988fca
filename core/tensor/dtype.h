// Element types of weights and activations.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

// f32, f16 and bf16 store one element per value; the others are GGUF's block
// formats, exactly as ggml lays them out (docs/performance.md): a block of
// `block_elements` consecutive elements of a row takes `block_bytes` bytes.
// A tensor of a block format is addressed by rows of whole blocks; its
// strides still count elements.
enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kQ8_0 = 3,  // 32 elements: fp16 scale, 32 int8
  kQ4_0 = 4,  // 32 elements: fp16 scale, 32 4-bit codes (offset 8)
  kQ4_K = 5,  // 256 elements: fp16 scale and min, 8 x 6-bit sub-scales and mins, 4-bit codes
  kQ6_K = 6,  // 256 elements: 6-bit codes, 16 int8 sub-scales, fp16 scale
  // Bytes: K/V records of a named layout in a device's memory
  // (core/compressor/kv_records.h); never a weight type. (ABI 8.2)
  kU8 = 7,
};
inline constexpr DType kAllDTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                                       DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};

struct DTypeLayout {
  int64_t block_elements = 1;
  int64_t block_bytes = 4;
};

std::string_view dtype_name(DType dtype);
// "q4_0" -> kQ4_0 (the names dtype_name gives); nullopt for anything else.
std::optional<DType> dtype_from_name(std::string_view name);
DTypeLayout dtype_layout(DType dtype);
// Whether elements come in blocks with shared scales (q8_0, q4_0, q4_K, q6_K).
inline bool dtype_is_blocked(DType dtype) {
  return dtype_layout(dtype).block_elements > 1;
}
// Bytes of one element of an unblocked dtype (f32 4, f16 and bf16 2); 0 for a
// block format, which has no per-element size.
std::size_t dtype_size(DType dtype);
// Bytes of `elements` consecutive elements of one row; `elements` must be a
// multiple of the block size (else 0).
std::size_t dtype_row_bytes(DType dtype, int64_t elements);

// IEEE half <-> float, exact for every finite half, round-to-nearest-even the other way.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
// bfloat16 (the top half of an f32) <-> float; round-to-nearest-even, NaN kept NaN.
inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(uint32_t{b} << 16);
}
uint16_t float_to_bf16(float f);

}  // namespace tessera
