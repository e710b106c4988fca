// Named K/V record formats (docs/backends.md, step 5; ABI 8.2). A codec whose
// records are exactly one of these layouts says so (Compressor::
// record_layout), and a backend that implements the format
// (Backend::supports_kv_records) then encodes, round-trips and reads the
// records in its own memory, fused into its attention, with no host pass.
// A codec with a layout of its own (kOpaque) still works everywhere: its
// layers are split at the codec point on a device backend.
//
// Named formats rather than kernels shipped by the codec plugin: a device
// pays for a codec only when the decode is fused into its attention, which a
// separately compiled kernel cannot be (ggml's type traits make the same
// choice). The layouts are the contract; each is defined here, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

enum class KVRecordFormat : uint8_t {
  kOpaque = 0,  // the codec's own: only the codec reads it
  kF32 = 1,     // width floats, little-endian (the identity codec)
  // width int8 codes in element order, then an fp16 scale (little-endian):
  // width + 2 bytes. scale = the smallest half >= max|x| / 127 (65504 at
  // most; NaN when an element is not finite), codes = round-half-even(x /
  // scale) clamped to [-127, 127], all 0 for a zero or NaN scale; element i
  // decodes to code_i * scale. (The int8 codec.)
  kInt8Symmetric = 2,
  // width / 2 bytes of codes, element 2k in the low nibble of byte k and 2k +
  // 1 in the high one, each code + 8; then width / group fp16 scales, group
  // order. Per group: scale and codes as kInt8Symmetric with 7 for 127.
  // (The int4 codec.)
  kInt4Symmetric = 3,
  // width IEEE half floats in element order, little-endian: 2 * width bytes.
  // Each is round-to-nearest-even of x clamped to [-65504, 65504] (a NaN
  // stays a NaN). (The f16 codec; ABI 8.4.)
  kF16 = 4,
  // width bfloat16s (the top 16 bits of the f32, round-to-nearest-even, a NaN
  // kept a NaN), little-endian: 2 * width bytes. (The bf16 codec; ABI 8.4.)
  kBF16 = 5,
};

struct KVRecordLayout {
  KVRecordFormat format = KVRecordFormat::kOpaque;
  int width = 0;       // floats per vector
  int group_size = 0;  // elements per scale (kInt4Symmetric; width for kInt8Symmetric)

  bool named() const { return format != KVRecordFormat::kOpaque && width > 0; }
};

// Bytes of one record of a named layout; 0 for kOpaque or a layout that
// cannot be (an int4 group that does not divide an even width).
inline std::size_t kv_record_bytes(const KVRecordLayout& layout) {
  const auto width = static_cast<std::size_t>(layout.width);
  switch (layout.format) {
    case KVRecordFormat::kF32:
      return 4 * width;
    case KVRecordFormat::kF16:
    case KVRecordFormat::kBF16:
      return 2 * width;
    case KVRecordFormat::kInt8Symmetric:
      return width + 2;
    case KVRecordFormat::kInt4Symmetric:
      if (layout.width % 2 != 0 || layout.group_size <= 0 || layout.width % layout.group_size != 0)
        return 0;
      return width / 2 + 2 * (width / static_cast<std::size_t>(layout.group_size));
    case KVRecordFormat::kOpaque:
      break;
  }
  return 0;
}

}  // namespace tessera
