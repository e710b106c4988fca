// GGUF value types and ggml tensor types: ids as stored in the file, names and
// sizes. Shared by the reader, the writer and `tessera inspect`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/tensor/dtype.h"

namespace tessera {

// The type tag of a GGUF metadata value (uint32 in the file).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

inline constexpr uint32_t kGgufTypeCount = 13;

// "u32", "f32", "string", "array", ...
std::string_view gguf_type_name(GgufType type);
// Bytes of one value of a fixed-size type; 0 for string and array.
std::size_t gguf_type_size(GgufType type);

// ggml tensor type ids (uint32 in the file). Ids that ggml has removed (4, 5,
// 31-33, 36-38) are not listed and are rejected as unknown.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

// Storage layout of a ggml type: `block_elements` elements take `block_bytes`.
struct GgmlTypeTraits {
  std::string_view name;  // "f32", "q4_0", ...
  int64_t block_elements = 0;
  int64_t block_bytes = 0;
};

// nullopt for an id that is not a (current) ggml type.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
// "q4_0", or "unknown type 77".
std::string ggml_type_name(uint32_t type_id);
// The tessera dtype of a type the runtime can load (f32, f16, bf16, q8_0,
// q4_0, q4_K, q6_K); nullopt otherwise.
std::optional<DType> ggml_type_to_dtype(uint32_t type_id);
GgmlType dtype_to_ggml_type(DType dtype);
// "f32, f16, bf16, ...": the types ggml_type_to_dtype knows, for messages.
std::string loadable_ggml_type_names();

}  // namespace tessera
